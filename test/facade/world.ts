/**
 * A populated facade for the API-wide tests (OpenAPI contract, cross-tenant matrix, fuzz): the
 * real Coordinator on LevelDB, two in-process probe sessions answered by a tiny fake probe,
 * a real webhook receiver, and three accounts:
 *
 * - alice: monitors with history, a delivered webhook and a pending one — the data that must
 *   never reach another token (`aliceSecrets`);
 * - bob: one monitor of his own, the token the matrix and the fuzz attack alice with;
 * - carol: API deactivated (403).
 *
 * Only uptime runs are answered (certificate runs stay in flight): an uptime run of one of
 * `failing` fails, every other one succeeds.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { MonitorView, UserView, WebhookView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { buildApp, type BuildAppOptions } from '../../src/facade/app.js';
import { answer, FakeSession, startReceiver, waitFor, type Receiver } from '../helpers.js';

export const silent = pino({ level: 'silent' });

/** See the file comment. */
export interface World {
  dir: string;
  coordinator: Coordinator;
  app: ReturnType<typeof buildApp>;
  receiver: Receiver;
  alice: UserView;
  bob: UserView;
  carol: UserView;
  /** alice's https monitor (uptime down, a delivered webhook) and http monitor (pending one). */
  aliceMonitors: MonitorView[];
  aliceCheckIds: number[];
  /** Delivered first, then pending. */
  aliceWebhooks: WebhookView[];
  bobMonitor: MonitorView;
  /** Strings of alice's that must appear in no answer to anyone else. */
  aliceSecrets: string[];
  /** Uptime checks whose runs fail. */
  failing: Set<number>;
  /** Builds another app on the same coordinator (closed by `close`). */
  extraApp(opts: Partial<BuildAppOptions>): ReturnType<typeof buildApp>;
  close(): Promise<void>;
}

/**
 * Opens a world (see the file comment). `appOptions` go to the main app's `buildApp`, e.g. a
 * high `rateLimitPerMinute` for the fuzz.
 */
export async function openWorld(appOptions: Partial<BuildAppOptions> = {}): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'vigil-facade-world-'));
  const coordinator = await Coordinator.open({
    dataDir: dir,
    logger: silent,
    allowPrivateWebhooks: true,
  });
  coordinator.start();
  const tag = randomBytes(4).toString('hex');
  const aliceHttpUrl = `http://alice-${tag}-plain.example.test/secret-path`;
  // alice's webhooks about her http monitor are refused (500), so one stays pending.
  const receiver = await startReceiver((req) => (req.body.includes(aliceHttpUrl) ? 500 : 200));

  const failing = new Set<number>();
  const probes = [
    new FakeSession('world-a', 'loc-a', 50, Date.now()),
    new FakeSession('world-b', 'loc-b', 50, Date.now()),
  ];
  for (const p of probes) coordinator.scheduler.sessionOpened(p);
  let paused = false;
  const pump = setInterval(() => {
    if (paused) return;
    for (const p of probes) {
      p.lastSeenAt = Date.now();
      for (const req of p.take()) {
        if (req.check_name !== 'uptime') continue;
        answer(coordinator.scheduler, p, req, {
          ok: !failing.has(req.check_id),
          startedAt: Date.now(),
        });
      }
    }
  }, 5);
  pump.unref();

  const apps: ReturnType<typeof buildApp>[] = [];
  const extraApp = (opts: Partial<BuildAppOptions>): ReturnType<typeof buildApp> => {
    const app = buildApp({
      service: coordinator,
      admin: coordinator,
      adminToken: 'world-admin-token',
      logger: silent,
      ...opts,
    });
    apps.push(app);
    return app;
  };
  const close = async (): Promise<void> => {
    clearInterval(pump);
    for (const app of apps) await app.close();
    await coordinator.close();
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const alice = await coordinator.createUser({
      email: `alice-${tag}@example.test`,
      plan: 'pro',
      apiEnabled: true,
      webhookUrl: `${receiver.url}/alice-${tag}`,
    });
    const bob = await coordinator.createUser({
      email: `bob-${tag}@example.test`,
      plan: 'free',
      apiEnabled: true,
      webhookUrl: `${receiver.url}/bob`,
    });
    const carol = await coordinator.createUser({
      email: `carol-${tag}@example.test`,
      plan: 'business',
      apiEnabled: false,
    });

    // alice's monitors: their uptime checks are marked failing before the fake probe answers
    // their first runs.
    const aliceMonitors: MonitorView[] = [];
    paused = true;
    for (const [url, alias] of [
      [`https://alice-${tag}.example.test/private`, `Alice private ${tag}`],
      [aliceHttpUrl, `Alice plain ${tag}`],
    ] as const) {
      const monitor = await coordinator.createMonitor(alice.id, { url, alias });
      for (const check of monitor.checks) if (check.name === 'uptime') failing.add(check.id);
      aliceMonitors.push(monitor);
    }
    paused = false;
    const bobMonitor = await coordinator.createMonitor(bob.id, {
      url: 'https://bob.example.test/',
      alias: 'Bob',
    });

    // Down, verified from the other location → one webhook per monitor; the first is
    // answered 200, the second 500 (pending, retried in 10 s).
    const aliceWebhooks = await waitFor(
      () => {
        const page = coordinator.listWebhooks(alice.id, {});
        const delivered = page.data.find((w) => w.status === 'delivered');
        const pending = page.data.find((w) => w.status === 'pending' && w.attempts.length > 0);
        return delivered && pending ? [delivered, pending] : undefined;
      },
      'alice’s webhooks (one delivered, one pending)',
      10_000,
    );
    const aliceCheckIds = aliceMonitors.flatMap((m) => m.checks.map((c) => c.id));
    await waitFor(
      async () => (await coordinator.listResults(alice.id, aliceCheckIds[0] ?? 0, 10)).length > 0,
      'alice’s results',
    );

    const aliceSecrets = [
      alice.email,
      alice.api_token,
      `alice-${tag}`, // every URL, alias and the webhook URL of alice carry it
      ...aliceWebhooks.map((w) => w.signature),
    ];
    const app = extraApp(appOptions);
    await app.ready();
    return {
      dir,
      coordinator,
      app,
      receiver,
      alice,
      bob,
      carol,
      aliceMonitors,
      aliceCheckIds,
      aliceWebhooks,
      bobMonitor,
      aliceSecrets,
      failing,
      extraApp,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

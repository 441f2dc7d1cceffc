/**
 * End to end against a real nginx (issue 2): `vigil start` with two locations, a user made
 * with the CLI while the service runs, a monitor added over /webapi, and the Down / Recovered
 * webhooks of spec §6 arriving signed at a real receiver — for a refused connection and for a
 * 503 — plus a restart mid-outage that loses nothing and sends nothing twice.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  freePort,
  Nginx,
  Receiver,
  VigilProcess,
  waitFor,
  sleep,
  type ReceivedWebhook,
} from './harness.js';

interface CheckJson {
  id: number;
  name: string;
  status: string | null;
  interval: number;
  notification_threshold: number;
  enabled: boolean;
}
interface MonitorJson {
  id: number;
  url: string;
  alias: string;
  checks: CheckJson[];
}

let dir: string;
let nginx: Nginx;
let receiver: Receiver;
let vigil: VigilProcess;
let token: string;
let monitor: MonitorJson;
let checkId: number;

const hmac = (raw: string, key: string): string =>
  createHmac('sha1', key).update(raw).digest('hex');

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigil-e2e-'));
  await chmod(dir, 0o755); // nginx workers run as an unprivileged user and stat the maint file
  nginx = new Nginx(join(dir, 'nginx'), await freePort());
  await nginx.start();
  receiver = new Receiver();
  await receiver.start();
  vigil = new VigilProcess(join(dir, 'data'));
  await vigil.start();
});

after(async () => {
  await vigil?.stop('SIGKILL');
  await nginx?.stop();
  await receiver?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Make the check run now (enabling runs a check at once, CONTRACT §5). */
async function runNow(): Promise<void> {
  assert.equal((await vigil.api('POST', `/webapi/checks/${checkId}/disable`, token)).status, 200);
  assert.equal((await vigil.api('POST', `/webapi/checks/${checkId}/enable`, token)).status, 200);
}

async function uptimeStatus(): Promise<string | null> {
  const res = await vigil.api('GET', `/webapi/checks/${checkId}`, token);
  return (res.json as CheckJson).status;
}

function assertSigned(hook: ReceivedWebhook): void {
  assert.equal(hook.headers['content-type'], 'application/json');
  assert.equal(hook.headers['user-agent'], 'Vigil/1.0');
  assert.match(String(hook.headers['x-service-signature']), /^[0-9a-f]{40}$/);
  assert.equal(
    hook.headers['x-service-signature'],
    hmac(hook.raw, token),
    'signature is HMAC-SHA1(body, token)',
  );
  assert.match(String(hook.headers['x-service-webhook']), /^\d+$/);
  assert.equal(hook.headers['x-service-current-try'], '1');
  assert.equal(hook.headers['x-service-parent-webhook'], hook.headers['x-service-webhook']);
  assert.deepEqual(Object.keys(hook.body), ['check', 'monitor']);
  assert.deepEqual(hook.body.monitor, { id: monitor.id, url: monitor.url, alias: monitor.alias });
  assert.match(String(hook.body.check.last_check_at), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
}

async function nextWebhook(count: number): Promise<ReceivedWebhook> {
  return waitFor(`webhook #${count}`, () => receiver.received[count - 1], 15_000);
}

function assertDown(hook: ReceivedWebhook, status: number, error: string): void {
  assertSigned(hook);
  const { check } = hook.body;
  assert.deepEqual(Object.keys(check).sort(), ['error', 'last_check_at', 'meta', 'name', 'status']);
  assert.equal(check.name, 'uptime');
  assert.equal(check.status, 'nok');
  assert.equal(check.error, error);
  assert.deepEqual(Object.keys(check.meta ?? {}).sort(), [
    'detected_by',
    'http_status_code',
    'verified_via',
  ]);
  assert.equal(check.meta?.http_status_code, status);
  const locations = ['local-a', 'local-b'];
  assert.ok(locations.includes(String(check.meta?.detected_by)));
  assert.ok(locations.includes(String(check.meta?.verified_via)));
  assert.notEqual(
    check.meta?.detected_by,
    check.meta?.verified_via,
    'verified from another location',
  );
}

function assertRecovered(hook: ReceivedWebhook): void {
  assertSigned(hook);
  const { check } = hook.body;
  assert.deepEqual(Object.keys(check).sort(), ['last_check_at', 'meta', 'name', 'status']);
  assert.equal(check.name, 'uptime');
  assert.equal(check.status, 'ok');
  assert.deepEqual(Object.keys(check.meta ?? {}).sort(), ['downtime', 'http_status_code']);
  assert.equal(check.meta?.http_status_code, 200);
  assert.match(String(check.meta?.downtime), /^\d{2,}:\d{2}:\d{2}$/);
}

test(
  'a user created with the CLI while the service runs adds a monitor that turns ok',
  { timeout: 60_000 },
  async () => {
    const created = await VigilProcess.cli([
      'users',
      'create',
      '--data-dir',
      vigil.dataDir,
      '--email',
      'a@example.com',
      '--plan',
      'business',
      '--webhook-url',
      receiver.url,
      '--api-enabled',
    ]);
    assert.equal(created.code, 0, created.stderr);
    const user = JSON.parse(created.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(user), [
      'id',
      'email',
      'plan',
      'api_token',
      'api_enabled',
      'webhook_url',
    ]);
    token = String(user.api_token);

    const res = await vigil.api('POST', '/webapi/monitors', token, {
      url: `http://127.0.0.1:${nginx.port}/site`,
      alias: 'nginx',
    });
    assert.equal(res.status, 201);
    monitor = res.json as MonitorJson;
    const uptime = monitor.checks.find((c) => c.name === 'uptime');
    assert.ok(uptime);
    checkId = uptime.id;
    await waitFor('status ok', async () => ((await uptimeStatus()) === 'ok' ? true : undefined));

    const put = await vigil.api('PUT', `/webapi/checks/${checkId}`, token, {
      interval: 30,
      notification_threshold: 0,
    });
    assert.equal(put.status, 200);
    assert.deepEqual(put.json, []);
    const listed = (await vigil.api('GET', '/webapi/monitors', token)).json as MonitorJson[];
    assert.equal(listed.length, 1);
    assert.equal(listed[0]?.checks.find((c) => c.id === checkId)?.interval, 30);
  },
);

test(
  'nginx stopped: a verified, signed Down; started again: Recovered with downtime',
  { timeout: 60_000 },
  async () => {
    await nginx.stop();
    const t0 = Date.now();
    await runNow();
    const down = await nextWebhook(1);
    assertDown(down, 0, '0 - Connection refused');
    assert.ok(down.at - t0 < 10_000, `Down arrived ${down.at - t0} ms after the failing run`);
    assert.equal(await uptimeStatus(), 'nok');

    await nginx.start();
    await runNow();
    assertRecovered(await nextWebhook(2));
    assert.equal(await uptimeStatus(), 'ok');
  },
);

test(
  'nginx answering 503 for the path: Down "503 - Service Unavailable", then Recovered',
  { timeout: 60_000 },
  async () => {
    await nginx.setMaintenance(true);
    await runNow();
    assertDown(await nextWebhook(3), 503, '503 - Service Unavailable');
    await nginx.setMaintenance(false);
    await runNow();
    assertRecovered(await nextWebhook(4));
  },
);

test(
  'restart mid-outage keeps users, monitors, settings and the open outage; nothing is sent twice',
  { timeout: 90_000 },
  async () => {
    await nginx.stop();
    await runNow();
    assertDown(await nextWebhook(5), 0, '0 - Connection refused');

    assert.equal(await vigil.stop('SIGTERM'), 0);
    await vigil.start();
    const listed = (await vigil.api('GET', '/webapi/monitors', token)).json as MonitorJson[];
    assert.equal(listed.length, 1);
    const check = listed[0]?.checks.find((c) => c.id === checkId);
    assert.equal(check?.interval, 30);
    assert.equal(check?.status, 'nok');

    // Still down after the restart: a run confirms it, but the outage was already announced.
    await runNow();
    await sleep(3_000);
    assert.equal(receiver.received.length, 5, 'no second Down for the same outage');

    // A SIGKILL too, then recovery: exactly one Recovered.
    await vigil.stop('SIGKILL');
    await vigil.start();
    await nginx.start();
    await runNow();
    assertRecovered(await nextWebhook(6));
    await sleep(2_000);
    assert.equal(receiver.received.length, 6);
    const parents = new Set(receiver.received.map((h) => h.headers['x-service-webhook']));
    assert.equal(parents.size, 6, 'every POST has its own X-Service-Webhook id');
  },
);

/**
 * `POST /webapi/monitors/bulk` (issue 7, docs/architecture.md "API edge"): many monitors in one
 * atomic write, in request order, each with its own uptime interval; any bad item refuses the
 * whole request with errors that name it; the new checks run at once; a restart keeps them.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { MonitorView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { buildApp } from '../../src/facade/app.js';
import { waitFor } from '../helpers.js';
import { openWorld, silent, type World } from './world.js';

let world: World;

before(async () => {
  world = await openWorld({ rateLimitPerMinute: 100_000 });
});

after(async () => {
  await world?.close();
});

function post(token: string, payload: unknown): Promise<LightMyRequestResponse> {
  return world.app.inject({
    method: 'POST',
    url: '/webapi/monitors/bulk',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: JSON.stringify(payload),
  });
}

describe('POST /webapi/monitors/bulk', () => {
  it('creates every monitor in order, with its interval, and their checks run at once', async () => {
    const t = world.alice.api_token;
    const before = world.coordinator.listMonitors(world.alice.id).length;
    const res = await post(t, {
      monitors: [
        { url: 'http://bulk-1.example.test/a', alias: 'one', interval: 60 },
        { url: 'https://bulk-2.example.test/', unknown: 'ignored' },
        { url: 'http://bulk-3.example.test/', alias: null, interval: 120 },
      ],
    });
    assert.equal(res.statusCode, 201, res.body);
    const { monitors } = res.json<{ monitors: MonitorView[] }>();
    assert.deepEqual(
      monitors.map((m) => [m.url, m.alias]),
      [
        ['http://bulk-1.example.test/a', 'one'],
        ['https://bulk-2.example.test/', 'bulk-2.example.test'],
        ['http://bulk-3.example.test/', 'bulk-3.example.test'],
      ],
    );
    const intervals = monitors.map((m) => m.checks.map((c) => `${c.name}:${c.interval}`));
    assert.deepEqual(intervals, [
      ['uptime:60'],
      ['uptime:300', 'certificate_health:3600'],
      ['uptime:120'],
    ]);
    assert.equal(world.coordinator.listMonitors(world.alice.id).length, before + 3);
    // The world's probes answer uptime runs: each new uptime check has run.
    const uptimeIds = monitors.map((m) => m.checks[0]?.id ?? 0);
    await waitFor(
      () => uptimeIds.every((id) => world.coordinator.getCheck(world.alice.id, id).status === 'ok'),
      'the new uptime checks to run',
    );
  });

  it('refuses the whole request when one item is bad, naming the item', async () => {
    const t = world.alice.api_token;
    const before = world.coordinator.listMonitors(world.alice.id).length;
    const res = await post(t, {
      monitors: [
        { url: 'http://fine.example.test/' },
        { url: 'ftp://bad.example.test/', alias: 'x'.repeat(256) },
        { url: 'http://fine-too.example.test/', interval: 30 },
        { url: 'http://fine-three.example.test/', interval: 45 },
      ],
    });
    assert.equal(res.statusCode, 422, res.body);
    const body = res.json<{ message: string; errors: Record<string, string[]> }>();
    assert.deepEqual(Object.keys(body.errors).sort(), [
      'monitors.1.alias',
      'monitors.1.url',
      'monitors.2.interval',
      'monitors.3.interval',
    ]);
    assert.match(body.errors['monitors.2.interval']?.[0] ?? '', /not available on the pro plan/);
    assert.match(body.errors['monitors.3.interval']?.[0] ?? '', /must be one of/);
    assert.equal(world.coordinator.listMonitors(world.alice.id).length, before, 'none created');
  });

  it('refuses an empty list, more than 1000, and items of the wrong shape', async () => {
    const t = world.bob.api_token;
    const before = world.coordinator.listMonitors(world.bob.id).length;
    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ url: `http://m${i}.example.test/` }));
    for (const payload of [
      { monitors: [] },
      { monitors: tooMany },
      { monitors: [{ url: 42 }] },
      { monitors: 'http://x.example.test/' },
      {},
    ]) {
      const res = await post(t, payload);
      assert.equal(res.statusCode, 422, JSON.stringify(payload).slice(0, 80));
      const errors = res.json<{ errors: Record<string, string[]> }>().errors;
      assert.ok(errors.monitors?.[0], res.body);
    }
    assert.equal(world.coordinator.listMonitors(world.bob.id).length, before);
  });

  it('keeps bulk-created monitors across a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vigil-bulk-'));
    try {
      let coordinator = await Coordinator.open({ dataDir: dir, logger: silent });
      const user = await coordinator.createUser({
        email: 'bulk@example.test',
        plan: 'business',
        apiEnabled: true,
      });
      const app = buildApp({
        service: coordinator,
        admin: coordinator,
        adminToken: 'bulk-admin-token',
        logger: silent,
      });
      const res = await app.inject({
        method: 'POST',
        url: '/webapi/monitors/bulk',
        headers: { authorization: `Bearer ${user.api_token}`, 'content-type': 'application/json' },
        payload: JSON.stringify({
          monitors: Array.from({ length: 50 }, (_, i) => ({
            url: `http://restart-${i}.example.test/`,
            interval: 30,
          })),
        }),
      });
      assert.equal(res.statusCode, 201, res.body);
      const created = res.json<{ monitors: MonitorView[] }>().monitors;
      await app.close();
      await coordinator.close();
      coordinator = await Coordinator.open({ dataDir: dir, logger: silent });
      try {
        assert.deepEqual(
          coordinator.listMonitors(user.id).map((m) => [m.id, m.url, m.checks[0]?.interval]),
          created.map((m) => [m.id, m.url, 30]),
        );
      } finally {
        await coordinator.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * Check history over the API (issue 6): `GET /webapi/checks/{id}/results?limit=N` lists the
 * runs newest first with the documented fields, and the check object carries the uptime
 * percentages over 24 h / 7 d / 30 d. Runs come from in-process probe sessions answered by the
 * world's fake probe (alice's uptime checks fail, bob's succeed).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CheckResultView, CheckView, MonitorView } from '../../src/common/service.js';
import { waitFor } from '../helpers.js';
import { loadContract, type Contract } from './contract.js';
import { openWorld, type World } from './world.js';

let world: World;
let contract: Contract;

async function get<T>(url: string, token: string): Promise<T> {
  const res = await world.app.inject({
    method: 'GET',
    url,
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(res.statusCode, 200, url);
  contract.check('GET', url, res);
  return res.json<T>();
}

before(async () => {
  world = await openWorld({ rateLimitPerMinute: 100_000 });
  contract = await loadContract(world.app);
});

after(async () => {
  await world?.close();
});

describe('GET /webapi/checks/{id}/results', () => {
  it('lists the runs newest first, with every documented field', async () => {
    const id = world.aliceCheckIds[0];
    const results = await get<CheckResultView[]>(
      `/webapi/checks/${id}/results`,
      world.alice.api_token,
    );
    assert.ok(results.length >= 2, 'the failed run and its verification from the other location');
    for (const r of results) {
      assert.deepEqual(Object.keys(r).sort(), [
        'checked_at',
        'error',
        'http_status_code',
        'location',
        'response_time_ms',
        'status',
      ]);
      assert.match(r.checked_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      assert.equal(r.status, 'nok');
      assert.equal(r.http_status_code, 503);
      assert.equal(r.error, '503 - Service Unavailable');
      assert.ok(['loc-a', 'loc-b'].includes(r.location));
      assert.equal(typeof r.response_time_ms, 'number');
    }
    assert.ok(new Set(results.map((r) => r.location)).size === 2, 'verified elsewhere');
    const times = results.map((r) => r.checked_at);
    assert.deepEqual([...times].sort().reverse(), times, 'newest first');
  });

  it('limit=N returns at most N, the newest', async () => {
    const id = world.aliceCheckIds[0];
    const all = await get<CheckResultView[]>(`/webapi/checks/${id}/results`, world.alice.api_token);
    const one = await get<CheckResultView[]>(
      `/webapi/checks/${id}/results?limit=1`,
      world.alice.api_token,
    );
    assert.deepEqual(one, all.slice(0, 1));
  });

  it('a successful run is ok with a null error; a check that never ran has no results', async () => {
    const bobUptime = world.bobMonitor.checks.find((c) => c.name === 'uptime') as CheckView;
    const results = await waitFor(async () => {
      const r = await get<CheckResultView[]>(
        `/webapi/checks/${bobUptime.id}/results`,
        world.bob.api_token,
      );
      return r.length > 0 ? r : undefined;
    }, 'bob’s first run');
    assert.equal(results[0]?.status, 'ok');
    assert.equal(results[0]?.http_status_code, 200);
    assert.equal(results[0]?.error, null);
    // Certificate runs are never answered by the fake probe.
    const bobCert = world.bobMonitor.checks.find((c) => c.name === 'certificate_health');
    assert.deepEqual(await get(`/webapi/checks/${bobCert?.id}/results`, world.bob.api_token), []);
  });
});

describe('uptime percentages in the check object', () => {
  it('0 % for a check that only failed, 100 % for one that only succeeded, null with no run', async () => {
    const [https] = world.aliceMonitors as [MonitorView];
    const monitor = await get<MonitorView>(`/webapi/monitors/${https.id}`, world.alice.api_token);
    const failing = monitor.checks.find((c) => c.name === 'uptime') as CheckView;
    assert.deepEqual(failing.uptime, { '24h': 0, '7d': 0, '30d': 0 });
    const cert = monitor.checks.find((c) => c.name === 'certificate_health') as CheckView;
    assert.deepEqual(cert.uptime, { '24h': null, '7d': null, '30d': null });

    const bobUptime = world.bobMonitor.checks.find((c) => c.name === 'uptime') as CheckView;
    const check = await waitFor(async () => {
      const c = await get<CheckView>(`/webapi/checks/${bobUptime.id}`, world.bob.api_token);
      return c.uptime['24h'] !== null ? c : undefined;
    }, 'bob’s uptime figure');
    assert.deepEqual(check.uptime, { '24h': 100, '7d': 100, '30d': 100 });
    assert.equal(check.status, 'ok');
    assert.equal(check.last_location === 'loc-a' || check.last_location === 'loc-b', true);
  });
});

/**
 * Cross-tenant matrix (issue 6, CONTRACT §4): bob's token, in each of the ways a token can be
 * presented, against every documented route that takes an id, with each of alice's ids of
 * that kind → 404, the very answer a missing id gets, never a byte of alice's data; and
 * nothing of alice's changed afterwards. The routes come from the OpenAPI document, so a new
 * id route cannot be left out of the matrix.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CheckView, MonitorView, WebhookPage } from '../../src/common/service.js';
import { loadContract, type Contract } from './contract.js';
import { openWorld, type World } from './world.js';

let world: World;
let contract: Contract;

before(async () => {
  world = await openWorld({ rateLimitPerMinute: 100_000 });
  contract = await loadContract(world.app);
});

after(async () => {
  await world?.close();
});

type Kind = 'check' | 'monitor' | 'webhook';

/** Which kind of id a documented path takes. */
function kindOf(template: string): Kind {
  if (template.startsWith('/webapi/checks/{id}')) return 'check';
  if (template.startsWith('/webapi/monitors/{id}')) return 'monitor';
  if (template.startsWith('/webapi/webhooks/{id}')) return 'webhook';
  assert.fail(`no id kind for ${template}: add it to the matrix`);
}

/** A request body that would be accepted from the owner. */
function bodyFor(method: string, template: string): string | undefined {
  if (method === 'PUT' && template === '/webapi/checks/{id}') {
    return '{"interval": 900, "notification_threshold": 60}';
  }
  return undefined;
}

/** The ways to present bob's token, as headers and a query suffix. */
function credentials(): { name: string; headers: Record<string, string>; query: string }[] {
  const t = world.bob.api_token;
  return [
    { name: 'Authorization: Bearer', headers: { authorization: `Bearer ${t}` }, query: '' },
    { name: 'Authentication: Bearer', headers: { authentication: `Bearer ${t}` }, query: '' },
    { name: 'Authentication: <token>', headers: { authentication: t }, query: '' },
    { name: '?api_key', headers: {}, query: `api_key=${encodeURIComponent(t)}` },
    {
      // The header decides; alice's token in the query must not make it alice's request.
      name: 'Authorization with alice’s api_key',
      headers: { authorization: `Bearer ${t}` },
      query: `api_key=${encodeURIComponent(world.alice.api_token)}`,
    },
  ];
}

function assertNoAliceData(text: string, where: string): void {
  for (const secret of world.aliceSecrets) {
    assert.ok(!text.includes(secret), `${where}: the answer holds alice’s ${secret.slice(0, 12)}…`);
  }
}

describe('bob’s token against alice’s ids', () => {
  it('every id route, every token form, every id: 404 exactly like a missing id', async () => {
    const ids: Record<Kind, number[]> = {
      check: world.aliceCheckIds,
      monitor: world.aliceMonitors.map((m) => m.id),
      webhook: world.aliceWebhooks.map((w) => w.id),
    };
    let cells = 0;
    const routes: string[] = [];
    for (const [template, operations] of Object.entries(contract.document.paths)) {
      if (!template.includes('{id}')) continue;
      for (const method of Object.keys(operations).map((m) => m.toUpperCase())) {
        routes.push(`${method} ${template}`);
        const kind = kindOf(template);
        const payload = bodyFor(method, template);
        const suffix = template.endsWith('/results') ? 'limit=10' : '';
        for (const credential of credentials()) {
          const query = [suffix, credential.query].filter((q) => q !== '').join('&');
          const url = (id: number): string =>
            template.replace('{id}', String(id)) + (query === '' ? '' : `?${query}`);
          const headers = {
            ...credential.headers,
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          };
          const missing = await world.app.inject({ method, url: url(987654), headers, payload });
          assert.equal(missing.statusCode, 404, `${method} ${template} missing id`);
          for (const id of ids[kind]) {
            const where = `${method} ${url(id)} with ${credential.name}`;
            const res = await world.app.inject({ method, url: url(id), headers, payload });
            assert.equal(res.statusCode, 404, where);
            assert.deepEqual(res.json(), missing.json(), `${where}: same body as a missing id`);
            assertNoAliceData(res.body + JSON.stringify(res.headers), where);
            contract.check(method, url(id), res);
            cells++;
          }
        }
      }
    }
    assert.deepEqual(routes.sort(), [
      'DELETE /webapi/monitors/{id}',
      'GET /webapi/checks/{id}',
      'GET /webapi/checks/{id}/results',
      'GET /webapi/monitors/{id}',
      'POST /webapi/checks/{id}/disable',
      'POST /webapi/checks/{id}/enable',
      'POST /webapi/webhooks/{id}/redeliver',
      'PUT /webapi/checks/{id}',
    ]);
    assert.ok(cells >= 8 * 5 * 2, `matrix ran (${cells} cells)`);
  });

  it('bob’s lists hold nothing of alice’s', async () => {
    const headers = { authorization: `Bearer ${world.bob.api_token}` };
    for (const url of [
      '/webapi/monitors',
      '/webapi/account',
      '/webapi/webhooks',
      '/webapi/webhooks?status=delivered',
      '/webapi/webhooks?status=pending',
      '/webapi/webhooks?status=failed',
      `/webapi/monitors?api_key=${encodeURIComponent(world.alice.api_token)}`,
    ]) {
      const res = await world.app.inject({ method: 'GET', url, headers });
      assert.equal(res.statusCode, 200, url);
      assertNoAliceData(res.body, url);
      contract.check('GET', url, res);
    }
    const monitors = (
      await world.app.inject({ method: 'GET', url: '/webapi/monitors', headers })
    ).json<MonitorView[]>();
    const aliceMonitorIds = new Set(world.aliceMonitors.map((m) => m.id));
    assert.ok(monitors.every((m) => !aliceMonitorIds.has(m.id)));
    assert.ok(
      monitors.some((m) => m.id === world.bobMonitor.id),
      'bob sees his own monitor',
    );
    const webhooks = (
      await world.app.inject({ method: 'GET', url: '/webapi/webhooks', headers })
    ).json<WebhookPage>();
    const aliceWebhookIds = new Set(world.aliceWebhooks.map((w) => w.id));
    assert.ok(webhooks.data.every((w) => !aliceWebhookIds.has(w.id)));
  });

  it('alice’s data is all there and unchanged, and her own token still reaches it', async () => {
    const headers = { authorization: `Bearer ${world.alice.api_token}` };
    for (const monitor of world.aliceMonitors) {
      const res = await world.app.inject({
        method: 'GET',
        url: `/webapi/monitors/${monitor.id}`,
        headers,
      });
      assert.equal(res.statusCode, 200, 'the monitor was not deleted');
      const now = res.json<MonitorView>();
      for (const check of monitor.checks) {
        const c = now.checks.find((x) => x.id === check.id) as CheckView;
        assert.equal(c.enabled, true, `check ${check.id} still enabled`);
        assert.equal(c.interval, check.interval, `check ${check.id} interval unchanged`);
        assert.equal(c.notification_threshold, check.notification_threshold);
      }
    }
    const results = await world.app.inject({
      method: 'GET',
      url: `/webapi/checks/${world.aliceCheckIds[0]}/results`,
      headers,
    });
    assert.equal(results.statusCode, 200);
    assert.ok(results.json<unknown[]>().length > 0, 'alice’s history is hers to read');
    // No redelivery happened: each webhook still has only its own tries.
    for (const before of world.aliceWebhooks) {
      const page = world.coordinator.listWebhooks(world.alice.id, { per_page: '100' });
      const now = page.data.find((w) => w.id === before.id);
      assert.ok(now, `webhook ${before.id} still listed`);
      assert.equal(now.parent_webhook, before.parent_webhook);
      if (before.status === 'delivered') {
        assert.equal(now.status, 'delivered');
        assert.equal(now.attempts.length, before.attempts.length);
      }
    }
  });
});

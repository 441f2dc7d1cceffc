/**
 * The operator route `POST /_admin/users` (CONTRACT §1 while a service runs) over real HTTP
 * against the real coordinator: the admin token, each op, and the `{code, message}` errors.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { UserView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { buildApp } from '../../src/facade/app.js';
import { ADMIN_TOKEN_HEADER, ADMIN_USERS_PATH } from '../../src/facade/routes/admin.js';

interface Reply<T = unknown> {
  status: number;
  body: T;
}

interface ErrorReply {
  code: string;
  message: string;
  errors?: Record<string, string[]>;
}

const ADMIN_TOKEN = 'k3ep-th1s-s3cret-0123456789abcdef';
const silent = pino({ level: 'silent' });

let dir: string;
let coordinator: Coordinator;
let app: ReturnType<typeof buildApp>;
let base: string;

async function admin<T = unknown>(
  body: unknown,
  /** null: send no token header at all */
  token: string | null = ADMIN_TOKEN,
): Promise<Reply<T>> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== null) headers[ADMIN_TOKEN_HEADER] = token;
  const res = await fetch(base + ADMIN_USERS_PATH, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  return { status: res.status, body: JSON.parse(await res.text()) as T };
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigil-facade-admin-'));
  coordinator = await Coordinator.open({ dataDir: dir, logger: silent });
  app = buildApp({
    service: coordinator,
    admin: coordinator,
    adminToken: ADMIN_TOKEN,
    logger: silent,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

after(async () => {
  await app?.close();
  await coordinator?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('admin token', () => {
  it('missing, wrong, same-length-wrong and bearer-style tokens are 401 JSON', async () => {
    const wrongs: (string | null)[] = [
      null,
      '',
      'nope',
      ADMIN_TOKEN.slice(0, -1) + 'X',
      `${ADMIN_TOKEN}x`,
      `Bearer ${ADMIN_TOKEN}`,
    ];
    for (const token of wrongs) {
      const res = await admin<ErrorReply>({ op: 'list' }, token);
      assert.equal(res.status, 401, `token ${JSON.stringify(token)}`);
      assert.deepEqual(res.body, {
        code: 'VIGIL_ERR_UNAUTHENTICATED',
        message: 'Unauthenticated.',
      });
    }
  });

  it('an API token is not an admin token', async () => {
    const u = await coordinator.createUser({ email: 'ivan@example.test', apiEnabled: true });
    const res = await admin<ErrorReply>({ op: 'list' }, u.api_token);
    assert.equal(res.status, 401);
  });

  it('the token is checked before the body: 401 even for broken JSON', async () => {
    const res = await admin<ErrorReply>('{"op":', 'wrong');
    assert.equal(res.status, 401);
  });

  it('an app built with an empty admin token refuses everyone', async () => {
    const closed = buildApp({
      service: coordinator,
      admin: coordinator,
      adminToken: '',
      logger: silent,
    });
    try {
      for (const token of [undefined, '']) {
        const res = await closed.inject({
          method: 'POST',
          url: ADMIN_USERS_PATH,
          headers: token === undefined ? {} : { [ADMIN_TOKEN_HEADER]: token },
          payload: { op: 'list' },
        });
        assert.equal(res.statusCode, 401);
        assert.equal((res.json() as ErrorReply).code, 'VIGIL_ERR_UNAUTHENTICATED');
      }
    } finally {
      await closed.close();
    }
  });
});

describe('operations', () => {
  let created: UserView;

  it('create returns the user as the CLI prints it', async () => {
    const res = await admin<UserView>({
      op: 'create',
      args: {
        email: 'Judy@Example.test',
        plan: 'pro',
        webhookUrl: 'https://hooks.example.test/j',
        apiEnabled: true,
      },
    });
    assert.equal(res.status, 200);
    created = res.body;
    assert.deepEqual(Object.keys(created).sort(), [
      'api_enabled',
      'api_token',
      'email',
      'id',
      'plan',
      'webhook_url',
    ]);
    assert.equal(created.email, 'judy@example.test');
    assert.equal(created.plan, 'pro');
    assert.equal(created.api_enabled, true);
    assert.equal(created.webhook_url, 'https://hooks.example.test/j');
    assert.equal(typeof created.api_token, 'string');
    assert.ok(created.api_token.length >= 43);
  });

  it('show round-trips the created user', async () => {
    const res = await admin<UserView>({ op: 'show', args: { email: 'judy@example.test' } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, created);
  });

  it('the created user can use /webapi at once', async () => {
    const res = await fetch(`${base}/webapi/account`, {
      headers: { authorization: `Bearer ${created.api_token}` },
    });
    assert.equal(res.status, 200);
  });

  it('create with defaults: free plan, API off', async () => {
    const res = await admin<UserView>({ op: 'create', args: { email: 'ken@example.test' } });
    assert.equal(res.status, 200);
    assert.equal(res.body.plan, 'free');
    assert.equal(res.body.api_enabled, false);
    assert.equal(res.body.webhook_url, null);
  });

  it('list includes every user', async () => {
    const res = await admin<UserView[]>({ op: 'list' });
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body));
    const emails = res.body.map((u) => u.email);
    assert.ok(emails.includes('judy@example.test'));
    assert.ok(emails.includes('ken@example.test'));
  });

  it('set changes only what is given', async () => {
    const res = await admin<UserView>({
      op: 'set',
      args: { email: 'judy@example.test', plan: 'business' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.plan, 'business');
    assert.equal(res.body.webhook_url, 'https://hooks.example.test/j');
    const cleared = await admin<UserView>({
      op: 'set',
      args: { email: 'judy@example.test', webhookUrl: null },
    });
    assert.equal(cleared.body.webhook_url, null);
    assert.equal(cleared.body.plan, 'business');
  });

  it('api disables and enables /webapi access', async () => {
    const off = await admin<UserView>({
      op: 'api',
      args: { email: 'judy@example.test', enabled: false },
    });
    assert.equal(off.status, 200);
    assert.equal(off.body.api_enabled, false);
    const denied = await fetch(`${base}/webapi/monitors`, {
      headers: { authorization: `Bearer ${created.api_token}` },
    });
    assert.equal(denied.status, 403);
    const on = await admin<UserView>({
      op: 'api',
      args: { email: 'judy@example.test', enabled: true },
    });
    assert.equal(on.body.api_enabled, true);
  });

  it('rotate-token: a new token, the old one is refused at once', async () => {
    const res = await admin<UserView>({ op: 'rotate-token', args: { email: 'judy@example.test' } });
    assert.equal(res.status, 200);
    assert.notEqual(res.body.api_token, created.api_token);
    const old = await fetch(`${base}/webapi/monitors`, {
      headers: { authorization: `Bearer ${created.api_token}` },
    });
    assert.equal(old.status, 401);
    const fresh = await fetch(`${base}/webapi/monitors`, {
      headers: { authorization: `Bearer ${res.body.api_token}` },
    });
    assert.equal(fresh.status, 200);
  });
});

describe('admin errors', () => {
  it('an unknown email is a 404 VIGIL_ERR_USER_NOT_FOUND', async () => {
    for (const op of ['show', 'rotate-token'] as const) {
      const res = await admin<ErrorReply>({ op, args: { email: 'nobody@example.test' } });
      assert.equal(res.status, 404, op);
      assert.equal(res.body.code, 'VIGIL_ERR_USER_NOT_FOUND');
      assert.equal(typeof res.body.message, 'string');
    }
  });

  it('a taken email is a 409 VIGIL_ERR_EMAIL_TAKEN', async () => {
    await admin({ op: 'create', args: { email: 'leo@example.test' } });
    const res = await admin<ErrorReply>({ op: 'create', args: { email: 'LEO@example.test' } });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'VIGIL_ERR_EMAIL_TAKEN');
  });

  it('bad ops and args are 422 VIGIL_ERR_VALIDATION with field errors', async () => {
    const cases: [unknown, string][] = [
      [{ op: 'drop' }, 'op'],
      [{}, 'op'],
      [{ op: 'show' }, 'email'],
      [{ op: 'show', args: { email: 42 } }, 'email'],
      [{ op: 'api', args: { email: 'leo@example.test' } }, 'enabled'],
      [{ op: 'api', args: { email: 'leo@example.test', enabled: 'yes' } }, 'enabled'],
      [{ op: 'create', args: { email: 'mia@example.test', apiEnabled: 1 } }, 'apiEnabled'],
      [{ op: 'list', args: [] }, 'args'],
    ];
    for (const [body, field] of cases) {
      const res = await admin<ErrorReply>(body);
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.equal(res.body.code, 'VIGIL_ERR_VALIDATION');
      assert.ok(
        Array.isArray(res.body.errors?.[field]),
        `${JSON.stringify(body)} → errors.${field}`,
      );
    }
  });

  it('values the service rejects keep its 422 (unknown plan)', async () => {
    const res = await admin<ErrorReply>({
      op: 'create',
      args: { email: 'ned@example.test', plan: 'gold' },
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'VIGIL_ERR_VALIDATION');
    assert.ok(res.body.errors?.plan);
  });

  it('a body that is not a JSON object is a 400 VIGIL_ERR_BAD_REQUEST', async () => {
    for (const body of ['[]', '"list"', '{"op":']) {
      const res = await admin<ErrorReply>(body);
      assert.equal(res.status, 400, body);
      assert.equal(res.body.code, 'VIGIL_ERR_BAD_REQUEST');
    }
  });
});

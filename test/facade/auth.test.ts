/**
 * Token authentication of /webapi (spec §5, CONTRACT §3–§4) over real HTTP against the real
 * coordinator: the three ways to present a token, 401 and 403, and that tokens never reach
 * the log.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { UserView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { buildApp } from '../../src/facade/app.js';

interface Reply {
  status: number;
  body: unknown;
}

const UNAUTHENTICATED = { message: 'Unauthenticated.' };
const API_DISABLED = { message: 'API access is disabled for this account.' };

/** Every line the app logs, as written. */
const logLines: string[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    logLines.push(
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== ''),
    );
    done();
  },
});

let dir: string;
let coordinator: Coordinator;
let app: ReturnType<typeof buildApp>;
let base: string;
let user: UserView;

async function get(path: string, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(base + path, { headers: { accept: 'application/json', ...headers } });
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  return { status: res.status, body: JSON.parse(await res.text()) };
}

async function newUser(email: string, apiEnabled = true): Promise<UserView> {
  return coordinator.createUser({ email, plan: 'pro', apiEnabled, webhookUrl: null });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigil-facade-auth-'));
  coordinator = await Coordinator.open({ dataDir: dir, logger: pino({ level: 'silent' }) });
  app = buildApp({
    service: coordinator,
    admin: coordinator,
    adminToken: 'admin-secret',
    logger: pino({ level: 'debug' }, capture),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  user = await newUser('carol@example.test');
});

after(async () => {
  await app?.close();
  await coordinator?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the three ways to present a token', () => {
  it('Authorization: Bearer <token>', async () => {
    const res = await get('/webapi/monitors', { authorization: `Bearer ${user.api_token}` });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, []);
  });

  it('the Bearer scheme name is case-insensitive', async () => {
    const res = await get('/webapi/monitors', { authorization: `bearer ${user.api_token}` });
    assert.equal(res.status, 200);
  });

  it('Authentication: Bearer <token>', async () => {
    const res = await get('/webapi/monitors', { authentication: `Bearer ${user.api_token}` });
    assert.equal(res.status, 200);
  });

  it('Authentication: <token> (bare)', async () => {
    const res = await get('/webapi/monitors', { authentication: user.api_token });
    assert.equal(res.status, 200);
  });

  it('?api_key=<token>', async () => {
    const res = await get(`/webapi/monitors?api_key=${encodeURIComponent(user.api_token)}`);
    assert.equal(res.status, 200);
    const account = await get(`/webapi/account?api_key=${encodeURIComponent(user.api_token)}`);
    assert.equal(account.status, 200);
    assert.equal((account.body as { email: string }).email, 'carol@example.test');
  });

  it('a non-GET request with ?api_key', async () => {
    const res = await fetch(
      `${base}/webapi/monitors?api_key=${encodeURIComponent(user.api_token)}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'https://query-key.example.test/' }),
      },
    );
    assert.equal(res.status, 201);
  });
});

describe('401', () => {
  it('no token at all, on every /webapi route', async () => {
    for (const [method, path] of [
      ['GET', '/webapi/monitors'],
      ['POST', '/webapi/monitors'],
      ['GET', '/webapi/monitors/1'],
      ['DELETE', '/webapi/monitors/1'],
      ['GET', '/webapi/checks/1'],
      ['PUT', '/webapi/checks/1'],
      ['POST', '/webapi/checks/1/disable'],
      ['POST', '/webapi/checks/1/enable'],
      ['GET', '/webapi/account'],
      ['PUT', '/webapi/account'],
    ] as const) {
      const res = await fetch(base + path, { method });
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.deepEqual(JSON.parse(await res.text()), UNAUTHENTICATED);
    }
  });

  it('an unknown token in each position', async () => {
    const wrong = 'x'.repeat(43);
    const attempts: Record<string, string>[] = [
      { authorization: `Bearer ${wrong}` },
      { authentication: `Bearer ${wrong}` },
      { authentication: wrong },
    ];
    for (const headers of attempts) {
      const res = await get('/webapi/monitors', headers);
      assert.equal(res.status, 401);
      assert.deepEqual(res.body, UNAUTHENTICATED);
    }
    const q = await get(`/webapi/monitors?api_key=${wrong}`);
    assert.equal(q.status, 401);
    assert.deepEqual(q.body, UNAUTHENTICATED);
  });

  it('malformed credentials: another scheme, an empty bearer, an empty api_key', async () => {
    const malformed: Record<string, string>[] = [
      { authorization: `Basic ${Buffer.from(`u:${user.api_token}`).toString('base64')}` },
      { authorization: user.api_token }, // Authorization needs the Bearer scheme
      { authorization: 'Bearer ' },
      { authentication: 'Bearer' },
    ];
    for (const headers of malformed) {
      const res = await get('/webapi/monitors', headers);
      assert.equal(res.status, 401, JSON.stringify(Object.keys(headers)));
      assert.deepEqual(res.body, UNAUTHENTICATED);
    }
    const empty = await get('/webapi/monitors?api_key=');
    assert.equal(empty.status, 401);
  });

  it('the old token after rotateToken; the new one works at once', async () => {
    const dave = await newUser('dave@example.test');
    const rotated = await coordinator.rotateToken(dave.email);
    assert.notEqual(rotated.api_token, dave.api_token);
    const old = await get('/webapi/monitors', { authorization: `Bearer ${dave.api_token}` });
    assert.equal(old.status, 401);
    assert.deepEqual(old.body, UNAUTHENTICATED);
    const oldQuery = await get(`/webapi/monitors?api_key=${encodeURIComponent(dave.api_token)}`);
    assert.equal(oldQuery.status, 401);
    const fresh = await get('/webapi/monitors', { authorization: `Bearer ${rotated.api_token}` });
    assert.equal(fresh.status, 200);
  });

  it('authentication comes before the body: no token + broken JSON is a 401', async () => {
    const res = await fetch(`${base}/webapi/checks/1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"interval": ',
    });
    assert.equal(res.status, 401);
    assert.deepEqual(JSON.parse(await res.text()), UNAUTHENTICATED);
  });
});

describe('403', () => {
  it('a valid token whose API is deactivated, then reactivated', async () => {
    const erin = await newUser('erin@example.test');
    await coordinator.setApiEnabled(erin.email, false);
    const forms: Record<string, string>[] = [
      { authorization: `Bearer ${erin.api_token}` },
      { authentication: erin.api_token },
    ];
    for (const headers of forms) {
      const res = await get('/webapi/monitors', headers);
      assert.equal(res.status, 403);
      assert.deepEqual(res.body, API_DISABLED);
    }
    const q = await get(`/webapi/account?api_key=${encodeURIComponent(erin.api_token)}`);
    assert.equal(q.status, 403);
    assert.deepEqual(q.body, API_DISABLED);

    await coordinator.setApiEnabled(erin.email, true);
    const ok = await get('/webapi/monitors', { authorization: `Bearer ${erin.api_token}` });
    assert.equal(ok.status, 200);
  });

  it('a user created with the API off gets 403', async () => {
    const frank = await newUser('frank@example.test', false);
    const res = await get('/webapi/monitors', { authorization: `Bearer ${frank.api_token}` });
    assert.equal(res.status, 403);
    assert.deepEqual(res.body, API_DISABLED);
  });
});

describe('logging', () => {
  it('request lines carry method, path without query, status and time — never a token', async () => {
    const token = user.api_token;
    logLines.length = 0;
    await get(`/webapi/monitors?api_key=${encodeURIComponent(token)}&x=1`);
    await get('/webapi/account', { authorization: `Bearer ${token}` });
    await get('/webapi/monitors', { authentication: token });
    await get(`/webapi/nowhere?api_key=${encodeURIComponent(token)}`);
    await get(`/webapi/monitors?api_key=${encodeURIComponent(token)}x`);
    // pino writes asynchronously through the stream; let it drain.
    await new Promise((resolve) => setImmediate(resolve));

    const all = logLines.join('\n');
    assert.ok(!all.includes(token), 'the token is not in the log');
    assert.ok(!all.includes(encodeURIComponent(token)), 'the encoded token is not in the log');
    assert.ok(!all.includes('api_key'), 'no query string in the log');

    const completed = logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request completed');
    assert.equal(completed.length, 5);
    const first = completed[0]!;
    assert.equal(first.method, 'GET');
    assert.equal(first.url, '/webapi/monitors');
    assert.equal(first.statusCode, 200);
    assert.equal(typeof first.responseTimeMs, 'number');
    assert.deepEqual(
      completed.map((l) => [l.url, l.statusCode]),
      [
        ['/webapi/monitors', 200],
        ['/webapi/account', 200],
        ['/webapi/monitors', 200],
        ['/webapi/nowhere', 404],
        ['/webapi/monitors', 401],
      ],
    );
  });
});

/**
 * End to end for issue 3: `vigil start` (two locations) trusting a test CA through
 * `NODE_EXTRA_CA_CERTS`, a live HTTPS server on 127.0.0.1 whose certificate is swapped with
 * `server.setSecureContext()`, and the three certificate webhooks of spec §6 arriving signed
 * at a real receiver: Invalid (valid → expired) and Recovered (→ valid), then "Expires soon"
 * for a 5-day certificate exactly once per certificate per `expiry_threshold_days` value.
 * The monitor's uptime check runs too; only certificate_health webhooks are looked at.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { days, fromNow, INTERMEDIATE, TestPki, type TestCertificate } from '../tls-ca.js';
import { Receiver, sleep, VigilProcess, waitFor, type ReceivedWebhook } from './harness.js';

interface CheckJson {
  id: number;
  name: string;
  status: string | null;
  last_check_at: string | null;
  last_error: string | null;
  expiry_threshold_days?: number | null;
}
interface MonitorJson {
  id: number;
  url: string;
  alias: string;
  checks: CheckJson[];
}

const DAY_MS = 86_400_000;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const fmt = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
const parseTimestamp = (s: string): number => Date.parse(`${s.replace(' ', 'T')}Z`);

let dir: string;
let pki: TestPki;
let valid: TestCertificate;
let site: Server;
let receiver: Receiver;
let vigil: VigilProcess;
let token: string;
let monitor: MonitorJson;
let checkId: number;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigil-e2e-cert-'));
  pki = await TestPki.create();
  const trustFile = await pki.writeTrustFile(dir);
  valid = await pki.leaf();
  site = createServer({ key: valid.keyPem, cert: valid.chainPem }, (_req, res) => res.end('ok'));
  site.on('tlsClientError', () => undefined);
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  receiver = new Receiver();
  await receiver.start();
  vigil = new VigilProcess(join(dir, 'data'), { NODE_EXTRA_CA_CERTS: trustFile });
  await vigil.start();
});

after(async () => {
  await vigil?.stop('SIGKILL');
  site?.closeAllConnections();
  await new Promise<void>((r) => (site ? site.close(() => r()) : r()));
  await receiver?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Serve `cert` from now on (new connections only; every run opens one). */
function swap(cert: TestCertificate): void {
  site.setSecureContext({ key: cert.keyPem, cert: cert.chainPem });
}

/** The certificate_health webhooks received so far. */
const certHooks = (): ReceivedWebhook[] =>
  receiver.received.filter((h) => h.body.check.name === 'certificate_health');

async function getCheck(): Promise<CheckJson> {
  const res = await vigil.api('GET', `/webapi/checks/${checkId}`, token);
  assert.equal(res.status, 200);
  return res.json as CheckJson;
}

/**
 * Make the check run now (enabling runs a check at once, CONTRACT §5) and wait until the
 * run is applied, seen as a newer `last_check_at` (whole seconds: a new second is awaited
 * first so that the run's own timestamp differs from the previous one).
 */
async function runNow(): Promise<CheckJson> {
  const previous = (await getCheck()).last_check_at ?? '';
  while (fmt(Date.now()) <= previous) await sleep(100);
  assert.equal((await vigil.api('POST', `/webapi/checks/${checkId}/disable`, token)).status, 200);
  assert.equal((await vigil.api('POST', `/webapi/checks/${checkId}/enable`, token)).status, 200);
  return waitFor('the run to be applied', async () => {
    const check = await getCheck();
    return (check.last_check_at ?? '') > previous ? check : undefined;
  });
}

/** The `n`-th certificate webhook (1-based). */
function nthCertHook(n: number): Promise<ReceivedWebhook> {
  return waitFor(`certificate webhook #${n}`, () => certHooks()[n - 1], 20_000);
}

/** Give a webhook that should not come the time to arrive anyway, then count. */
async function assertCertHookCount(n: number): Promise<void> {
  await sleep(1_500);
  assert.equal(
    certHooks().length,
    n,
    `certificate webhooks: ${certHooks()
      .map((h) => h.raw)
      .join('\n')}`,
  );
}

function assertSigned(hook: ReceivedWebhook): void {
  assert.equal(hook.headers['content-type'], 'application/json');
  assert.equal(hook.headers['user-agent'], 'Vigil/1.0');
  assert.equal(
    hook.headers['x-service-signature'],
    createHmac('sha1', token).update(hook.raw).digest('hex'),
    'signature is HMAC-SHA1(raw body, api_token)',
  );
  assert.deepEqual(Object.keys(hook.body), ['check', 'monitor']);
  assert.deepEqual(hook.body.monitor, { id: monitor.id, url: monitor.url, alias: monitor.alias });
  assert.match(String(hook.body.check.last_check_at), TIMESTAMP);
}

/** The four certificate meta fields of spec §6, in order, for `cert`. */
function certificateMeta(cert: TestCertificate): Record<string, string> {
  return {
    issuer: INTERMEDIATE.o,
    signature_algorithm: 'ecdsa-with-SHA256',
    valid_from: fmt(cert.notBefore),
    valid_to: fmt(cert.notAfter),
  };
}

function assertExpiresSoon(hook: ReceivedWebhook, cert: TestCertificate): void {
  assertSigned(hook);
  const { check } = hook.body;
  assert.deepEqual(Object.keys(check).sort(), ['last_check_at', 'meta', 'name', 'status']);
  assert.equal(check.name, 'certificate_health');
  assert.equal(check.status, 'ok');
  const at = parseTimestamp(String(check.last_check_at));
  // Whole days left at the run, rounded down; the run's second is rounded down too, which
  // cannot change the day count of a certificate that ends an hour past a whole day.
  const left = Math.floor((cert.notAfter - at) / DAY_MS);
  assert.ok(left === 4 || left === 5, `days left ${left}`);
  // deepEqual: exactly these five fields, no others.
  assert.deepEqual(check.meta, { expires_in_days: left, ...certificateMeta(cert) });
}

test(
  'an https monitor gets a certificate_health check that turns ok',
  { timeout: 60_000 },
  async () => {
    const created = await VigilProcess.cli([
      'users',
      'create',
      '--data-dir',
      vigil.dataDir,
      '--email',
      'tls@example.com',
      '--plan',
      'business',
      '--webhook-url',
      receiver.url,
      '--api-enabled',
    ]);
    assert.equal(created.code, 0, created.stderr);
    token = String((JSON.parse(created.stdout) as { api_token: string }).api_token);

    const port = (site.address() as AddressInfo).port;
    const res = await vigil.api('POST', '/webapi/monitors', token, {
      url: `https://localhost:${port}/`,
      alias: 'tls site',
    });
    assert.equal(res.status, 201);
    monitor = res.json as MonitorJson;
    const cert = monitor.checks.find((c) => c.name === 'certificate_health');
    assert.ok(cert, 'an https monitor has a certificate_health check');
    checkId = cert.id;

    const ok = await waitFor('certificate status ok', async () => {
      const check = await getCheck();
      return check.status === 'ok' ? check : undefined;
    });
    assert.equal(ok.name, 'certificate_health');
    assert.equal(ok.expiry_threshold_days, null);
    assert.match(String(ok.last_check_at), TIMESTAMP);
    assert.equal(certHooks().length, 0, 'a first valid run sends nothing');
  },
);

test(
  'valid → expired → valid: a signed Invalid without meta, then Recovered with meta',
  { timeout: 90_000 },
  async () => {
    const expired = await pki.leaf({
      notBefore: fromNow(-days(100)),
      notAfter: fromNow(-days(10) - 3_600_000),
    });
    swap(expired);
    await runNow();
    const invalid = await nthCertHook(1);
    assertSigned(invalid);
    assert.deepEqual(Object.keys(invalid.body.check).sort(), [
      'error',
      'last_check_at',
      'name',
      'status',
    ]);
    assert.equal(invalid.body.check.name, 'certificate_health');
    assert.equal(invalid.body.check.status, 'nok');
    assert.equal(
      invalid.body.check.error,
      `Certificate expired on ${fmt(expired.notAfter)} (10 days ago)`,
    );
    assert.equal(invalid.body.check.meta, undefined, 'Invalid carries no meta');
    const seen = await getCheck();
    assert.equal(seen.status, 'nok');
    assert.equal(seen.last_error, invalid.body.check.error, 'the API shows the same error text');

    swap(valid);
    await runNow();
    const recovered = await nthCertHook(2);
    assertSigned(recovered);
    assert.deepEqual(Object.keys(recovered.body.check).sort(), [
      'last_check_at',
      'meta',
      'name',
      'status',
    ]);
    assert.equal(recovered.body.check.name, 'certificate_health');
    assert.equal(recovered.body.check.status, 'ok');
    assert.equal(recovered.body.check.error, undefined);
    // deepEqual: exactly issuer, signature_algorithm, valid_from, valid_to.
    assert.deepEqual(recovered.body.check.meta, certificateMeta(valid));
    assert.equal((await getCheck()).status, 'ok');
    await assertCertHookCount(2);
  },
);

test(
  'a 5-day certificate: Expires soon once per certificate and threshold',
  { timeout: 120_000 },
  async () => {
    const fiveDays = await pki.leaf({ notAfter: fromNow(days(5) + 3_600_000) });
    swap(fiveDays);
    const put = await vigil.api('PUT', `/webapi/checks/${checkId}`, token, {
      expiry_threshold_days: 7,
    });
    assert.equal(put.status, 200);
    assert.deepEqual(put.json, []);
    assert.equal((await getCheck()).expiry_threshold_days, 7);

    for (let i = 0; i < 3; i++) await runNow();
    assertExpiresSoon(await nthCertHook(3), fiveDays);
    await assertCertHookCount(3);

    // A new threshold value is a new notice for the same certificate.
    const raised = await vigil.api('PUT', `/webapi/checks/${checkId}`, token, {
      expiry_threshold_days: 14,
    });
    assert.equal(raised.status, 200);
    const check = await getCheck();
    assert.equal(check.expiry_threshold_days, 14);
    assert.equal(check.status, 'ok');
    for (let i = 0; i < 2; i++) await runNow();
    assertExpiresSoon(await nthCertHook(4), fiveDays);
    await assertCertHookCount(4);

    // A renewed certificate (new fingerprint) starts fresh.
    const renewed = await pki.leaf({ notAfter: fromNow(days(5) + 3_600_000) });
    assert.notEqual(renewed.fingerprint256, fiveDays.fingerprint256);
    swap(renewed);
    for (let i = 0; i < 2; i++) await runNow();
    assertExpiresSoon(await nthCertHook(5), renewed);
    await assertCertHookCount(5);
    assert.equal((await getCheck()).status, 'ok');
  },
);

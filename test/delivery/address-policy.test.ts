/**
 * Webhook destination policy (issue 4 item 7): which addresses count as internal, the 422 for
 * webhook URLs the coordinator refuses (private/loopback unless allowed; credentials and
 * non-http schemes always), and the dispatcher refusing at send time — the receiver never
 * sees a request.
 */
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { describe, test, type TestContext } from 'node:test';
import { VigilError } from '../../src/common/errors.js';
import { ManualClock } from '../../src/common/clock.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { LevelStore } from '../../src/coordinator/store/level-store.js';
import {
  allowPrivateFromEnv,
  internalDestinationProblem,
  isInternalAddress,
} from '../../src/delivery/address-policy.js';
import { Dispatcher } from '../../src/delivery/dispatcher.js';
import { quietLogger, sleep, startReceiver, tempDir, waitFor, storeNewEvent } from '../helpers.js';

const LIMIT = { timeout: 30_000 };
const QUIET_MS = 150;

describe('isInternalAddress', () => {
  const internal = [
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.0.1',
    '192.168.255.255',
    '169.254.169.254', // cloud metadata
    '100.64.0.1',
    '100.127.255.254',
    '0.0.0.0',
    '::1',
    '::',
    'fc00::1',
    'fd12:3456:789a::1',
    'fe80::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::FFFF:192.168.1.1',
    '::ffff:7f00:1', // the mapped loopback as WHATWG URL writes it
  ];
  const external = [
    '8.8.8.8',
    '1.1.1.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '192.169.0.1',
    '11.0.0.1',
    '2001:4860::8888',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
  ];
  for (const ip of internal) {
    test(`${ip} is internal`, () => assert.equal(isInternalAddress(ip), true));
  }
  for (const ip of external) {
    test(`${ip} is not internal`, () => assert.equal(isInternalAddress(ip), false));
  }
  test('names and garbage are not addresses (judged elsewhere)', () => {
    for (const v of ['localhost', 'example.com', '', '999.1.1.1', '1.2.3', 'fe80::zz']) {
      assert.equal(isInternalAddress(v), false, v);
    }
  });
});

describe('internalDestinationProblem', () => {
  test('literal internal addresses, in every spelling a URL allows, and localhost', () => {
    for (const url of [
      'http://127.0.0.1/hook',
      'http://127.1/hook', // WHATWG URL normalizes these to 127.0.0.1
      'http://2130706433/hook',
      'http://0x7f000001/hook',
      'http://0/hook',
      'http://10.0.0.1:8080/hook',
      'https://192.168.1.10/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[fe80::1]/hook',
      'http://localhost/hook',
      'http://LOCALHOST:3000/hook',
      'http://api.localhost/hook',
    ]) {
      const problem = internalDestinationProblem(url);
      assert.ok(problem, `${url} refused`);
      assert.match(problem, /private or loopback/);
    }
  });

  test('public addresses and names pass (names are checked again at connect time)', () => {
    for (const url of [
      'https://8.8.8.8/hook',
      'https://hooks.example.com/vigil',
      'http://[2001:4860::8888]/hook',
      'not a url',
    ]) {
      assert.equal(internalDestinationProblem(url), null, url);
    }
  });

  test('VIGIL_WEBHOOK_ALLOW_PRIVATE: 1 or true allows, anything else does not', () => {
    assert.equal(allowPrivateFromEnv({ VIGIL_WEBHOOK_ALLOW_PRIVATE: '1' }), true);
    assert.equal(allowPrivateFromEnv({ VIGIL_WEBHOOK_ALLOW_PRIVATE: 'true' }), true);
    assert.equal(allowPrivateFromEnv({ VIGIL_WEBHOOK_ALLOW_PRIVATE: '0' }), false);
    assert.equal(allowPrivateFromEnv({ VIGIL_WEBHOOK_ALLOW_PRIVATE: '' }), false);
    assert.equal(allowPrivateFromEnv({}), false);
  });
});

/** A started coordinator on a temp dir with the given policy, closed after the test. */
async function coordinator(t: TestContext, allowPrivateWebhooks: boolean): Promise<Coordinator> {
  const c = await Coordinator.open({
    dataDir: await tempDir(t),
    clock: new ManualClock(Date.UTC(2026, 0, 1)),
    logger: quietLogger,
    allowPrivateWebhooks,
  });
  c.start();
  t.after(() => c.close());
  return c;
}

/** Runs `fn`, expects a VigilError VIGIL_ERR_VALIDATION on webhook_url; returns its message. */
async function refusedWebhook(fn: () => Promise<unknown>, what: string): Promise<string> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof VigilError, `${what}: a VigilError`);
    assert.equal(err.code, 'VIGIL_ERR_VALIDATION', what);
    assert.equal(err.status, 422, what);
    const messages = err.fields?.webhook_url;
    assert.ok(messages && messages.length > 0, `${what}: a webhook_url field error`);
    assert.match(messages[0] as string, /webhook url/i);
    return messages[0] as string;
  }
  assert.fail(`${what}: accepted, expected a 422`);
}

const PRIVATE_URLS = [
  'http://127.0.0.1/hook',
  'http://localhost/hook',
  'http://10.0.0.1/hook',
  'http://192.168.1.20:8080/hook',
  'http://[::1]:9000/hook',
];
const ALWAYS_BAD = [
  'http://user:secret@hooks.example.com/hook',
  'https://user@hooks.example.com/hook',
  'http://user:secret@127.0.0.1/hook',
  'ftp://hooks.example.com/hook',
  'file:///etc/passwd',
  'javascript:alert(1)',
  'hooks.example.com/hook',
];

describe('webhook URL policy in the coordinator', () => {
  test(
    'private addresses refused (allowPrivateWebhooks false): createUser, updateAccount, setUser',
    LIMIT,
    async (t) => {
      const c = await coordinator(t, false);
      const user = await c.createUser({ email: 'pub@example.com', apiEnabled: true });
      for (const [i, url] of PRIVATE_URLS.entries()) {
        const msg = await refusedWebhook(
          () => c.createUser({ email: `p${i}@example.com`, webhookUrl: url }),
          `createUser ${url}`,
        );
        assert.match(msg, /private or loopback/);
        await refusedWebhook(
          () => c.updateAccount(user.id, { webhook_url: url }),
          `updateAccount ${url}`,
        );
        await refusedWebhook(
          () => c.setUser('pub@example.com', { webhookUrl: url }),
          `setUser ${url}`,
        );
      }
      assert.equal(c.getAccount(user.id).webhook_url, null, 'nothing was saved');
      assert.equal((await c.listUsers()).length, 1, 'no user was created');
      // Public URLs and null are fine.
      const ok = await c.updateAccount(user.id, { webhook_url: 'https://hooks.example.com/v' });
      assert.equal(ok.webhook_url, 'https://hooks.example.com/v');
      assert.equal((await c.updateAccount(user.id, { webhook_url: null })).webhook_url, null);
    },
  );

  test('private addresses accepted when allowed (vigil start, the tests)', LIMIT, async (t) => {
    const c = await coordinator(t, true);
    const user = await c.createUser({ email: 'dev@example.com', webhookUrl: PRIVATE_URLS[0] });
    assert.equal(user.webhook_url, PRIVATE_URLS[0]);
    for (const url of PRIVATE_URLS) {
      assert.equal((await c.updateAccount(user.id, { webhook_url: url })).webhook_url, url);
    }
    const other = await c.createUser({ email: 'dev2@example.com', webhookUrl: PRIVATE_URLS[1] });
    assert.equal(other.webhook_url, PRIVATE_URLS[1]);
  });

  for (const allow of [false, true]) {
    test(
      `credentials and non-http schemes are a 422 either way (allowPrivateWebhooks ${allow})`,
      LIMIT,
      async (t) => {
        const c = await coordinator(t, allow);
        const user = await c.createUser({ email: 'x@example.com' });
        for (const [i, url] of ALWAYS_BAD.entries()) {
          await refusedWebhook(
            () => c.createUser({ email: `b${i}@example.com`, webhookUrl: url }),
            `createUser ${url}`,
          );
          await refusedWebhook(
            () => c.updateAccount(user.id, { webhook_url: url }),
            `updateAccount ${url}`,
          );
        }
        const msg = await refusedWebhook(
          () => c.updateAccount(user.id, { webhook_url: ALWAYS_BAD[0] }),
          'credentials',
        );
        assert.match(msg, /credentials/);
        await refusedWebhook(
          () => c.updateAccount(user.id, { webhook_url: 42 }),
          'a number is not a URL',
        );
        assert.equal(c.getAccount(user.id).webhook_url, null);
      },
    );
  }
});

describe('dispatcher with allowPrivate false', () => {
  /** A dispatcher that refuses internal destinations, with one stored pending event. */
  async function refusing(t: TestContext, url: string) {
    const dir = await tempDir(t);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 8));
    const store = await LevelStore.open(dir);
    const seq = (await store.load()).seq;
    const dispatcher = new Dispatcher({
      clock,
      store,
      seq,
      webhookUrl: () => url,
      logger: quietLogger,
      allowPrivate: false,
      random: () => 0.5,
    });
    t.after(async () => {
      await dispatcher.stop();
      await store.close();
    });
    const body = '{"check":{"name":"uptime"},"monitor":{"id":1,"url":"http://x/","alias":"x"}}';
    const event = await storeNewEvent(store, seq, {
      userId: 1,
      monitorId: 1,
      checkId: 1,
      type: 'uptime.down',
      body,
      token: 'token',
      at: clock.now(),
    });
    dispatcher.start();
    dispatcher.enqueue(event);
    const stored = await waitFor(async () => {
      const e = (await store.load()).events.find((x) => x.id === event.id);
      return e && e.attempts.length === 1 ? e : null;
    }, 'the refused attempt recorded');
    return { stored, clock };
  }

  test(
    'a literal loopback URL: the attempt is recorded as refused, the receiver sees nothing',
    LIMIT,
    async (t) => {
      const receiver = await startReceiver();
      t.after(() => receiver.close());
      const { stored } = await refusing(t, receiver.url);
      const attempt = stored.attempts[0];
      assert.ok(attempt);
      assert.equal(attempt.status, null);
      assert.equal(attempt.try, 1);
      assert.equal(attempt.url, receiver.url);
      assert.match(attempt.error ?? '', /private or loopback address/);
      assert.equal(stored.status, 'pending', 'retried later, like any failure');
      await sleep(QUIET_MS);
      assert.equal(receiver.requests.length, 0, 'never reached the receiver');
    },
  );

  test(
    'a name that resolves to loopback is refused at connect time, naming the address',
    LIMIT,
    async (t) => {
      // This machine's own name; on most hosts (and CI containers) /etc/hosts maps it to a
      // loopback address. Without such a name there is nothing to test offline.
      const name = hostname();
      const resolved = await lookup(name, { all: true }).catch(() => []);
      const internal = resolved.find((a) => isInternalAddress(a.address));
      if (!internal || name === 'localhost' || name.endsWith('.localhost')) {
        t.skip(`${name} does not resolve to an internal address here`);
        return;
      }
      const receiver = await startReceiver();
      t.after(() => receiver.close());
      const url = `http://${name}:${receiver.port}/hook`;
      assert.equal(internalDestinationProblem(url), null, 'the URL alone looks public');
      const { stored } = await refusing(t, url);
      const attempt = stored.attempts[0];
      assert.ok(attempt);
      assert.equal(attempt.status, null);
      assert.match(attempt.error ?? '', /internal address/);
      assert.ok(
        resolved.some((a) => (attempt.error ?? '').includes(a.address)),
        `the error names the address: ${attempt.error}`,
      );
      await sleep(QUIET_MS);
      assert.equal(receiver.requests.length, 0, 'never reached the receiver');
    },
  );
});

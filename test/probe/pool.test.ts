/**
 * CheckPool's own behaviour (options, capacity, lifecycle), with real worker threads.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { describe, test } from 'node:test';
import { CheckPool, resolveCheckPoolOptions } from '../../src/probe/pool.js';

/** A loopback site answering after `delayMs` (never, for /hang), counting requests in flight. */
async function slowSite(delayMs: number): Promise<{
  url: string;
  maxInFlight: () => number;
  close: () => void;
}> {
  let inFlight = 0;
  let max = 0;
  const server = http.createServer((req, res) => {
    if (req.url === '/hang') return;
    inFlight += 1;
    max = Math.max(max, inFlight);
    setTimeout(() => {
      inFlight -= 1;
      res.end('ok');
    }, delayMs);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    maxInFlight: () => max,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe('CheckPool', () => {
  test('defaults and capacity', () => {
    const o = resolveCheckPoolOptions();
    assert.equal(o.threads, Math.min(2, availableParallelism()));
    assert.equal(o.concurrentTasksPerWorker, 256);
    assert.equal(o.localAddress, null);
    assert.ok(Object.isFrozen(o));
    assert.equal(
      resolveCheckPoolOptions({ threads: 3, concurrentTasksPerWorker: 10 })
        .concurrentTasksPerWorker,
      10,
    );
  });

  test('bad options are refused', () => {
    assert.throws(() => resolveCheckPoolOptions({ threads: 0 }), TypeError);
    assert.throws(() => resolveCheckPoolOptions({ threads: 1.5 }), TypeError);
    assert.throws(() => resolveCheckPoolOptions({ concurrentTasksPerWorker: -1 }), TypeError);
  });

  test('capacity is threads × concurrent tasks per worker', { timeout: 20_000 }, async () => {
    const pool = new CheckPool({ threads: 1, concurrentTasksPerWorker: 7 });
    try {
      assert.equal(pool.capacity, 7);
    } finally {
      await pool.close();
    }
  });

  test('run after close rejects; close is idempotent', { timeout: 20_000 }, async () => {
    const pool = new CheckPool({ threads: 1 });
    const first = pool.close();
    assert.equal(pool.close(), first);
    await first;
    await assert.rejects(
      pool.run({ checkName: 'uptime', url: 'http://127.0.0.1:1/', timeoutMs: 100 }),
      /closed/,
    );
  });

  test('runs beyond capacity wait for a free slot, in order', { timeout: 20_000 }, async () => {
    const site = await slowSite(200);
    const pool = new CheckPool({ threads: 1, concurrentTasksPerWorker: 2 });
    try {
      const started = performance.now();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          pool.run({ checkName: 'uptime', url: `${site.url}/${i}`, timeoutMs: 5000 }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.error),
        Array(6).fill(''),
      );
      assert.equal(site.maxInFlight(), 2, 'never more than capacity at once');
      assert.ok(performance.now() - started >= 550, 'three rounds of two');
    } finally {
      await pool.close();
      site.close();
    }
  });

  test('close rejects runs in flight and runs still queued', { timeout: 20_000 }, async () => {
    const site = await slowSite(0);
    const pool = new CheckPool({ threads: 1, concurrentTasksPerWorker: 1 });
    try {
      const ok = await pool.run({ checkName: 'uptime', url: `${site.url}/`, timeoutMs: 5000 });
      assert.equal(ok.ok, true, ok.error);
      const hanging = assert.rejects(
        pool.run({ checkName: 'uptime', url: `${site.url}/hang`, timeoutMs: 10_000 }),
      );
      const queued = assert.rejects(
        pool.run({ checkName: 'uptime', url: `${site.url}/hang`, timeoutMs: 10_000 }),
        /closed/,
      );
      await new Promise((r) => setTimeout(r, 200));
      await pool.close();
      await hanging;
      await queued;
    } finally {
      site.close();
    }
  });

  // Regression: Node 20 aborts the whole process (v8 FATAL ERROR in ModuleWrap) when a worker
  // is terminated while piscina is still require()-ing the ES module entry. close() now waits
  // for every thread to finish loading. Probabilistic: before the fix about 1 cycle in 200
  // crashed, so this catches a regression only sometimes, but never fails spuriously.
  test('closing right after creating never crashes the process', { timeout: 60_000 }, async () => {
    for (let i = 0; i < 25; i++) {
      const pool = new CheckPool({ threads: 2 });
      if (i % 2 === 1) await new Promise((r) => setTimeout(r, i % 7));
      await pool.close();
    }
  });
});

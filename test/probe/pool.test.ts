/**
 * CheckPool's own behaviour (options, capacity, lifecycle), with real worker threads.
 */
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { describe, test } from 'node:test';
import { CheckPool, resolveCheckPoolOptions } from '../../src/probe/pool.js';

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

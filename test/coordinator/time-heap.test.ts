/**
 * The scheduler's typed-array min-heap: it hands items out in time order through growth and
 * interleaved pushes and pops, checked against a sorted list.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TimeHeap } from '../../src/coordinator/time-heap.js';

/** A small deterministic generator (tests must replay). */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

test('pops in time order, with each item’s id and version, through growth', () => {
  const random = lcg(3);
  const heap = new TimeHeap(2);
  const model: Array<[number, number, number]> = [];
  const T = Date.UTC(2026, 0, 1);
  for (let step = 0; step < 20_000; step++) {
    if (random() < 0.6 || model.length === 0) {
      const item: [number, number, number] = [
        T + Math.floor(random() * 1e7) + random(), // fractional ms too
        Math.floor(random() * 2 ** 32),
        step,
      ];
      heap.push(...item);
      model.push(item);
    } else {
      model.sort((a, b) => a[0] - b[0]);
      const want = model[0];
      assert.ok(want);
      assert.equal(heap.topAt, want[0]);
      // Ties in time may come out in any order: find the popped one among the tied.
      const got: [number, number, number] = [heap.topAt, heap.topId, heap.topVersion];
      const i = model.findIndex((m) => m[0] === got[0] && m[1] === got[1] && m[2] === got[2]);
      assert.ok(i >= 0, `popped an item that was never pushed: ${got.join(' ')}`);
      model.splice(i, 1);
      heap.pop();
    }
    assert.equal(heap.size, model.length);
  }
});

test('an empty heap has no top and pop does nothing', () => {
  const heap = new TimeHeap();
  assert.equal(heap.topAt, Infinity);
  heap.pop();
  assert.equal(heap.size, 0);
  heap.push(5, 1, 1);
  heap.push(3, 2, 2);
  heap.pop();
  assert.deepEqual([heap.topAt, heap.topId, heap.topVersion], [5, 1, 1]);
  heap.pop();
  assert.equal(heap.topAt, Infinity);
});

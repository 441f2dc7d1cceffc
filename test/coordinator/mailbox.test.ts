/**
 * The serial mailbox of the check actors: one message at a time, in order, each to the end —
 * whether its handler finishes synchronously (a routine result, no promise made) or not.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Mailbox, type MailboxHandler } from '../../src/coordinator/mailbox.js';

type Msg = { name: string; wait?: number; fail?: 'throw' | 'reject' };

/** Records what happened, in order; `wait` makes a handler asynchronous for that many ms. */
class Recorder implements MailboxHandler<Msg> {
  readonly log: string[] = [];
  readonly failed: string[] = [];

  handleMessage(msg: Msg): Promise<void> | undefined {
    this.log.push(`start ${msg.name}`);
    if (msg.fail === 'throw') throw new Error(msg.name);
    if (msg.wait === undefined) {
      this.log.push(`end ${msg.name}`);
      return undefined;
    }
    return new Promise<void>((resolve, reject) =>
      setTimeout(() => {
        this.log.push(`end ${msg.name}`);
        if (msg.fail === 'reject') reject(new Error(msg.name));
        else resolve();
      }, msg.wait),
    );
  }

  messageFailed(err: unknown, msg: Msg): void {
    this.failed.push(`${msg.name}: ${(err as Error).message}`);
  }
}

describe('mailbox', () => {
  test('a synchronous handler runs within post(), and its promise resolves', async () => {
    const r = new Recorder();
    const box = new Mailbox(r);
    const done = box.post({ name: 'a' });
    assert.deepEqual(r.log, ['start a', 'end a'], 'handled before post() returned');
    await done;
    box.tell({ name: 'b' });
    assert.deepEqual(r.log, ['start a', 'end a', 'start b', 'end b']);
    assert.equal(box.depth, 0);
  });

  test('messages never interleave: the next starts only after an async one ends', async () => {
    const r = new Recorder();
    const box = new Mailbox(r);
    const all = [
      box.post({ name: 'slow', wait: 20 }),
      box.post({ name: 'sync' }),
      box.post({ name: 'fast', wait: 1 }),
    ];
    box.tell({ name: 'told' });
    assert.equal(box.depth, 3, 'three wait behind the slow one');
    await Promise.all(all);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(r.log, [
      'start slow',
      'end slow',
      'start sync',
      'end sync',
      'start fast',
      'end fast',
      'start told',
      'end told',
    ]);
  });

  test('a throw or rejection fails that message only; the mailbox goes on', async () => {
    const r = new Recorder();
    const box = new Mailbox(r);
    const thrown = box.post({ name: 'x', fail: 'throw' });
    const rejected = box.post({ name: 'y', wait: 1, fail: 'reject' });
    box.tell({ name: 'z', fail: 'throw' }); // told: its error goes to messageFailed only
    const after = box.post({ name: 'ok' });
    await assert.rejects(thrown, /x/);
    await assert.rejects(rejected, /y/);
    await after;
    assert.deepEqual(r.failed, ['x: x', 'y: y', 'z: z']);
    assert.deepEqual(r.log.slice(-2), ['start ok', 'end ok']);
  });

  test('a handler posting to its own mailbox queues behind itself', async () => {
    const log: string[] = [];
    const box: Mailbox<string> = new Mailbox<string>({
      handleMessage(msg) {
        log.push(msg);
        if (msg === 'first') box.tell('second');
        log.push(`/${msg}`);
        return undefined;
      },
      messageFailed: () => undefined,
    });
    await box.post('first');
    assert.deepEqual(log, ['first', '/first', 'second', '/second']);
  });
});

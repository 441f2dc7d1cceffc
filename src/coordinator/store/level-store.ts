/**
 * Store on LevelDB (`level`) in the data dir (CONTRACT §8): one sublevel per kind of record,
 * keys are zero-padded ids so iteration is in id order, values JSON (states and results in the
 * compact forms of codec.ts). Writes issued in the same tick are grouped into one batch (group
 * commit), which keeps each caller's ops atomic and turns thousands of small writes per second
 * into a few batches.
 */
import { Level } from 'level';
import { mkdir } from 'node:fs/promises';
import { VigilError } from '../../common/errors.js';
import type { Check, Monitor, User } from '../../domain/check.js';
import type { OutboxEvent } from '../../domain/events.js';
import type { StoredResult } from '../../domain/result.js';
import type { CheckState } from '../../domain/transition.js';
import type { PackedRunStats } from '../../domain/uptime.js';
import { decodeResult, decodeState, encodeResult, encodeState } from './codec.js';
import {
  INITIAL_SEQUENCES,
  type Sequences,
  type Snapshot,
  type Store,
  type StoreOp,
} from './store.js';

type Kind = Exclude<StoreOp['kind'], 'seq' | 'result'>;
type Sub = Kind | 'meta' | 'result';

/** Records read per step when loading. */
const LOAD_CHUNK = 1000;

/** The key prefix of each sublevel (abstract-level's `!name!`), for writes on the root db. */
const PREFIX: Readonly<Record<Sub, string>> = {
  user: '!user!',
  monitor: '!monitor!',
  check: '!check!',
  state: '!state!',
  stats: '!stats!',
  event: '!event!',
  meta: '!meta!',
  result: '!result!',
};

const key = (id: number): string => String(id).padStart(12, '0');
/**
 * Result keys sort by check, then by start time: `<check>!<at>[!<location>]` (two locations
 * may start a run of one check in the same millisecond).
 */
const resultKey = (checkId: number, at: number, location?: string): string =>
  `${key(checkId)}!${String(Math.max(0, Math.floor(at))).padStart(15, '0')}` +
  (location === undefined ? '' : `!${location}`);

/** One op as [sublevel, key, stored JSON or null to delete]. */
function encode(op: StoreOp): [Sub, string, string | null] {
  switch (op.kind) {
    case 'seq':
      return ['meta', 'seq', JSON.stringify(op.value)];
    case 'result':
      return [
        'result',
        resultKey(op.value.checkId, op.value.at, op.value.location),
        encodeResult(op.value),
      ];
    case 'state':
      return ['state', key(op.id), op.value === null ? null : encodeState(op.value, op.head)];
    default:
      return [op.kind, key(op.id), op.value === null ? null : JSON.stringify(op.value)];
  }
}

interface Pending {
  ops: StoreOp[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** The Store on LevelDB; `LevelStore.open(dir)` to get one. */
export class LevelStore implements Store {
  /** Keys and values as strings: writes are encoded here (JSON, codec.ts), reads decode. */
  private readonly db: Level<string, string>;
  private queue: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private closed = false;

  private constructor(db: Level<string, string>) {
    this.db = db;
  }

  /**
   * Opens (creating if needed) the store under `dir`.
   * @throws VigilError VIGIL_ERR_DATA_DIR_LOCKED when another process has it open;
   *   VIGIL_ERR_CONFIG when the directory cannot be created or read.
   */
  static async open(dir: string): Promise<LevelStore> {
    try {
      await mkdir(dir, { recursive: true });
    } catch (err) {
      throw new VigilError(
        'VIGIL_ERR_CONFIG',
        `Cannot create data directory ${dir}: ${String(err)}`,
      );
    }
    const db = new Level<string, string>(`${dir}/store`, {
      keyEncoding: 'utf8',
      valueEncoding: 'utf8',
    });
    try {
      await db.open();
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      if (cause?.code === 'LEVEL_LOCKED') {
        throw new VigilError(
          'VIGIL_ERR_DATA_DIR_LOCKED',
          `The data directory ${dir} is in use by another Vigil process.`,
        );
      }
      throw new VigilError('VIGIL_ERR_CONFIG', `Cannot open the store in ${dir}: ${String(err)}`, {
        cause: err,
      });
    }
    return new LevelStore(db);
  }

  private readonly subs = new Map<Sub, ReturnType<LevelStore['makeSub']>>();

  private makeSub(kind: Sub) {
    return this.db.sublevel<string, unknown>(kind, { valueEncoding: 'json' });
  }

  /** The sublevel of one kind of record (created once, reused on the hot path). */
  private sub(kind: Sub) {
    let s = this.subs.get(kind);
    if (!s) this.subs.set(kind, (s = this.makeSub(kind)));
    return s;
  }

  async load(): Promise<Snapshot> {
    // Read each kind in chunks straight from the root: `for await` over a sublevel costs a
    // promise and two decodes per record, which made loading 120,000 checks take seconds.
    const each = async (kind: Kind, fn: (id: number, value: unknown) => void): Promise<void> => {
      const prefix = PREFIX[kind];
      const it = this.db.iterator({ gt: prefix, lt: `${prefix.slice(0, -1)}"` });
      try {
        for (let chunk = await it.nextv(LOAD_CHUNK); chunk.length > 0;) {
          for (const [k, v] of chunk) fn(Number(k.slice(prefix.length)), JSON.parse(v));
          chunk = await it.nextv(LOAD_CHUNK);
        }
      } finally {
        await it.close();
      }
    };
    const list = async <T>(kind: Kind): Promise<T[]> => {
      const out: T[] = [];
      await each(kind, (_, v) => out.push(v as T));
      return out;
    };
    const seq = (await this.sub('meta').get('seq')) as Sequences | undefined;
    const states = new Map<number, CheckState>();
    const counters: Snapshot['counters'] = new Map();
    await each('state', (id, v) => {
      const { state, head, stats } = decodeState(v);
      states.set(id, state);
      if (head || stats) counters.set(id, { stats, head });
    });
    await each('stats', (id, v) => {
      // A stats record without its state belongs to a deleted check.
      if (states.has(id)) {
        counters.set(id, { stats: v as PackedRunStats, head: counters.get(id)?.head ?? null });
      }
    });
    return {
      users: await list<User>('user'),
      monitors: await list<Monitor>('monitor'),
      checks: await list<Check>('check'),
      states,
      counters,
      events: await list<OutboxEvent>('event'),
      seq: { ...INITIAL_SEQUENCES, ...(seq ?? {}) },
    };
  }

  write(ops: StoreOp[]): Promise<void> {
    if (this.closed) {
      return Promise.reject(new VigilError('VIGIL_ERR_UNAVAILABLE', 'The store is closed.'));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ ops, resolve, reject });
      if (!this.flushing) this.flushing = this.flushSoon();
    });
  }

  private async flushSoon(): Promise<void> {
    await new Promise<void>((r) => setImmediate(r));
    while (this.queue.length > 0) {
      const group = this.queue;
      this.queue = [];
      // Encode each caller's ops on their own: a value that cannot be stored fails only the
      // write it belongs to, never the others grouped into the same batch.
      const accepted: Pending[] = [];
      const batch = this.db.batch();
      for (const pending of group) {
        let encoded: Array<[Sub, string, string | null]>;
        try {
          encoded = pending.ops.map(encode);
        } catch (err) {
          pending.reject(err);
          continue;
        }
        // Full keys (the sublevel's prefix added here) and no per-op options: abstract-level
        // spends ~6 µs per op resolving a `sublevel` / `valueEncoding` option, five times
        // the cost of the put itself, and the store makes two puts per check run (issue 7).
        for (const [kind, k, v] of encoded) {
          if (v === null) batch.del(PREFIX[kind] + k);
          else batch.put(PREFIX[kind] + k, v);
        }
        accepted.push(pending);
      }
      try {
        await batch.write();
        for (const p of accepted) p.resolve();
      } catch (err) {
        for (const p of accepted) p.reject(err);
      }
    }
    this.flushing = null;
  }

  async results(checkId: number, limit: number): Promise<StoredResult[]> {
    const out: StoredResult[] = [];
    const range = { gte: `${key(checkId)}!`, lt: `${key(checkId)}"`, reverse: true, limit };
    for (const [k, v] of await this.sub('result').iterator(range).all()) {
      // <check 12>!<at 15>!<location>
      out.push(decodeResult(v, checkId, Number(k.slice(13, 28)), k.slice(29)));
    }
    return out;
  }

  async clearResults(checkId: number, before: number): Promise<void> {
    const lt = before === Infinity ? `${key(checkId)}"` : resultKey(checkId, before);
    await this.sub('result').clear({ gte: `${key(checkId)}!`, lt });
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.flushing) await this.flushing;
    await this.db.close();
  }
}

/**
 * The store interface: everything the coordinator keeps durable (CONTRACT §8). Narrow on
 * purpose, so a shared database can replace LevelDB later; one contract test suite
 * (test/coordinator/store.test.ts) runs against every implementation.
 */
import type { Check, Monitor, User } from '../../domain/check.js';
import type { OutboxEvent } from '../../domain/events.js';
import type { StoredResult } from '../../domain/result.js';
import type { CheckState } from '../../domain/transition.js';
import type { PackedRunStats, RunHead, RunStats } from '../../domain/uptime.js';

/** Next ids to hand out; persisted in the same batch as the record that used one. */
export interface Sequences {
  user: number;
  monitor: number;
  check: number;
  event: number;
  attempt: number;
}

/** One record change. `value: null` deletes. All ops of one `write` are atomic. */
export type StoreOp =
  | { kind: 'user'; id: number; value: User | null }
  | { kind: 'monitor'; id: number; value: Monitor | null }
  | { kind: 'check'; id: number; value: Check | null }
  /**
   * A check's state; `head` (the newest uptime buckets, written with every state) is stored in
   * the same record, so a run rewrites a few bytes and not the whole counters.
   */
  | { kind: 'state'; id: number; value: CheckState | null; head?: RunHead | null }
  /** A check's full uptime counters; rewritten only when a new hour starts (domain/uptime.ts). */
  | { kind: 'stats'; id: number; value: PackedRunStats | null }
  | { kind: 'event'; id: number; value: OutboxEvent | null }
  | { kind: 'seq'; value: Sequences }
  /** A run of a check, for its history; results are only added, and cleared by age. */
  | { kind: 'result'; value: StoredResult };

/** Everything in the store, as loaded at start. */
export interface Snapshot {
  users: User[];
  monitors: Monitor[];
  checks: Check[];
  /** check id → state */
  states: Map<number, CheckState>;
  /**
   * check id → uptime counters: the stored full set (packed; as lists in data dirs of earlier
   * versions) and the newer head of the state record, for `RunCounters.restore`. Checks that
   * never ran are absent.
   */
  counters: Map<number, { stats: PackedRunStats | RunStats | null; head: RunHead | null }>;
  /** Outbox events, ascending id. */
  events: OutboxEvent[];
  seq: Sequences;
}

export interface Store {
  /** Reads every record. */
  load(): Promise<Snapshot>;
  /**
   * Applies `ops` atomically; resolves once they are durable against a process crash.
   * Concurrent calls may be grouped into one batch (still all-or-nothing per call).
   */
  write(ops: StoreOp[]): Promise<void>;
  /** The newest `limit` results of a check, newest first. */
  results(checkId: number, limit: number): Promise<StoredResult[]>;
  /** Delete a check's results that started before `before` (ms since epoch; Infinity = all). */
  clearResults(checkId: number, before: number): Promise<void>;
  close(): Promise<void>;
}

export const INITIAL_SEQUENCES: Sequences = { user: 1, monitor: 1, check: 1, event: 1, attempt: 1 };

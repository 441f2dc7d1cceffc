/**
 * Compact stored forms of the two records written on every check run (issue 7): the check's
 * state and one run result. Both are JSON arrays instead of objects, so the field names are not
 * stored with every run; a result keeps in its value only what its key does not already say.
 * The decoders also read the object forms that earlier versions wrote, so an existing data dir
 * keeps working (its records are rewritten in the new form as the checks run).
 */
import type { StoredResult } from '../../domain/result.js';
import type { CheckState, CheckStatus, Outage } from '../../domain/transition.js';
import type { RunHead, RunStats } from '../../domain/uptime.js';

/**
 * Stored state: `[status, lastCheckAt, lastLocation, lastHttpStatusCode, lastError,
 * lastResponseTimeMs, outage, expiryNotices]` and, once the check ran, the six numbers of its
 * uptime head (`RunHead`); absent values are null.
 */
type StateTuple = [
  CheckStatus,
  number | null,
  string | null,
  number | null,
  string | null,
  number | null,
  Outage | null,
  string[] | null,
  ...number[],
];

/** A decoded state record: the state and the uptime counters it carries. */
export interface DecodedState {
  state: CheckState;
  /** The newest uptime buckets (new form). */
  head: RunHead | null;
  /** The full counters embedded by earlier versions (old form), else null. */
  stats: RunStats | null;
}

/** The stored JSON of a state with its uptime head. */
export function encodeState(state: CheckState, head: RunHead | null | undefined): string {
  const tuple: StateTuple = [
    state.status,
    state.lastCheckAt,
    state.lastLocation,
    state.lastHttpStatusCode,
    state.lastError,
    state.lastResponseTimeMs,
    state.outage,
    state.expiryNotices ?? null,
    ...(head ?? []),
  ];
  return JSON.stringify(tuple);
}

/** Read a stored state (a parsed JSON value) in the new or the earlier form. */
export function decodeState(value: unknown): DecodedState {
  if (Array.isArray(value)) {
    const [status, lastCheckAt, lastLocation, lastHttpStatusCode, lastError, rt, outage, notices] =
      value as StateTuple;
    const state: CheckState = {
      status,
      lastCheckAt,
      lastLocation,
      lastHttpStatusCode,
      lastError,
      lastResponseTimeMs: rt,
      outage,
    };
    if (notices) state.expiryNotices = notices;
    const head = value.length >= 14 ? (value.slice(8, 14) as RunHead) : null;
    return { state, head, stats: null };
  }
  const { stats, ...state } = value as CheckState & { stats?: RunStats };
  return { state, head: null, stats: stats ?? null };
}

/** Stored result value: `[ok 1|0, httpStatusCode, responseTimeMs]`, plus the error if any. */
type ResultTuple = [0 | 1, number, number] | [0 | 1, number, number, string];

/** The stored JSON of a result (check, start and location are in its key). */
export function encodeResult(r: StoredResult): string {
  const tuple: ResultTuple =
    r.error === null
      ? [r.ok ? 1 : 0, r.httpStatusCode, r.responseTimeMs]
      : [r.ok ? 1 : 0, r.httpStatusCode, r.responseTimeMs, r.error];
  return JSON.stringify(tuple);
}

/**
 * Read a stored result (parsed JSON value) in the new or the earlier form.
 * @param checkId, at, location as read from its key
 */
export function decodeResult(
  value: unknown,
  checkId: number,
  at: number,
  location: string,
): StoredResult {
  if (!Array.isArray(value)) return value as StoredResult;
  const [ok, httpStatusCode, responseTimeMs, error] = value as ResultTuple;
  return {
    checkId,
    at,
    location,
    ok: ok === 1,
    httpStatusCode,
    responseTimeMs,
    error: error ?? null,
  };
}

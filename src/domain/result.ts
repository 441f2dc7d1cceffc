/**
 * What one run of a check produced. A site being down is a result, not an exception.
 */

/** Why a run was made; decides how the check actor reads its result. */
export type RunPurpose = 'scheduled' | 'verify' | 'recheck';

/**
 * The outcome of one run, as the probe reports it (proto RunResult) plus where and why it
 * ran. Times are ms since the Unix epoch.
 */
export interface RunOutcome {
  ok: boolean;
  /** Final HTTP status, 0 when no HTTP answer came (CONTRACT §5). */
  httpStatusCode: number;
  /** `"<status> - <reason>"` or `"0 - <what happened>"`; empty when ok. */
  error: string;
  responseTimeMs: number;
  /** When the run started. */
  at: number;
  /** Location name of the probe that ran it. */
  location: string;
  purpose: RunPurpose;
  /** Check-specific details (certificate meta), or null. */
  detail: Record<string, unknown> | null;
}

/** One run as kept in the check's history (`GET /webapi/checks/{id}/results`, issue 6). */
export interface StoredResult {
  checkId: number;
  /** Start of the run, ms since epoch. */
  at: number;
  location: string;
  ok: boolean;
  httpStatusCode: number;
  responseTimeMs: number;
  error: string | null;
}

/**
 * What the facade and the CLI may ask of the coordinator. The facade never edits check state
 * itself: every change goes through these calls, which the coordinator turns into messages to
 * check actors. API shapes are those of CONTRACT §3 (snake_case on the wire).
 */
import type { CheckName, Plan, User } from '../domain/check.js';

/** Check object of the API (CONTRACT §3). */
export interface CheckView {
  id: number;
  monitor_id: number;
  name: CheckName;
  enabled: boolean;
  /** seconds */
  interval: number;
  /** seconds */
  notification_threshold: number;
  status: 'ok' | 'nok' | null;
  /** `YYYY-MM-DD HH:MM:SS` UTC or null */
  last_check_at: string | null;
  /** Location name of the latest run, or null. */
  last_location: string | null;
  /**
   * Error of the latest run in words (`"503 - Service Unavailable"`, `"Certificate expired on
   * …"`, `"Cannot connect: …"`), null when it passed or never ran.
   */
  last_error: string | null;
  /** Percent of successful runs (0–100) per window; null with no run in it (issue 6). */
  uptime: { '24h': number | null; '7d': number | null; '30d': number | null };
  /** certificate_health only */
  expiry_threshold_days?: number | null;
}

/** One run in `GET /webapi/checks/{id}/results` (issue 6). */
export interface CheckResultView {
  /** `YYYY-MM-DD HH:MM:SS` UTC, start of the run */
  checked_at: string;
  location: string;
  status: 'ok' | 'nok';
  http_status_code: number;
  response_time_ms: number;
  error: string | null;
}

/** Monitor object of the API (CONTRACT §3). */
export interface MonitorView {
  id: number;
  url: string;
  alias: string;
  checks: CheckView[];
}

/** `GET /webapi/account` (CONTRACT §3). */
export interface AccountView {
  id: number;
  email: string;
  plan: Plan;
  webhook_url: string | null;
  api_enabled: boolean;
}

/** A user as `vigil users …` prints it (CONTRACT §1). */
export interface UserView extends AccountView {
  api_token: string;
}

/** One POST of a webhook (issue 4). */
export interface WebhookAttemptView {
  /** `X-Service-Webhook` of this POST. */
  id: number;
  /** `X-Service-Current-Try` */
  try: number;
  /** `YYYY-MM-DD HH:MM:SS` UTC */
  at: string;
  url: string;
  /** HTTP status answered, or null when none came. */
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/** A webhook event as `GET /webapi/webhooks` lists it (issue 4). */
export interface WebhookView {
  id: number;
  /** Spec §6 type, e.g. `Uptime Website - Down`. */
  type: string;
  monitor_id: number;
  check_id: number;
  status: 'pending' | 'delivered' | 'failed';
  /** `YYYY-MM-DD HH:MM:SS` UTC */
  created_at: string;
  /** When the next try is due (pending only), else null. */
  next_attempt_at: string | null;
  /** `X-Service-Parent-Webhook`: id of the first POST, null before any. */
  parent_webhook: number | null;
  /** The signed body, parsed (the bytes sent are exactly its stored serialization). */
  body: unknown;
  /** `X-Service-Signature` sent with every try. */
  signature: string;
  attempts: WebhookAttemptView[];
}

/** A page of webhooks, newest first. */
export interface WebhookPage {
  data: WebhookView[];
  page: number;
  per_page: number;
  total: number;
}

/**
 * Body of `PUT /webapi/checks/{id}` as received; values are validated by the service
 * (spec §2 allowed lists, the plan's intervals) and rejected with VIGIL_ERR_VALIDATION.
 */
export interface CheckPatch {
  interval?: unknown;
  notification_threshold?: unknown;
  expiry_threshold_days?: unknown;
}

/** `POST /webapi/monitors` body, or one item of a bulk create, as received. */
export interface MonitorInput {
  url?: unknown;
  alias?: unknown;
  /**
   * Bulk create only (`POST /webapi/monitors/bulk`): the uptime check's interval, seconds, on
   * the user's plan. Ignored by the single create, where unknown fields are ignored.
   */
  interval?: unknown;
}

/** Most monitors one `POST /webapi/monitors/bulk` may create. */
export const BULK_MONITORS_MAX = 1000;

/**
 * The account-holder surface behind /webapi. Every id-taking call throws VigilError
 * VIGIL_ERR_CHECK_NOT_FOUND / VIGIL_ERR_MONITOR_NOT_FOUND when the id is unknown or owned by
 * another user, and VIGIL_ERR_VALIDATION (422, with `fields`) for bad values.
 */
export interface VigilService {
  /** The user owning `token` (constant-time compare), or null. Does not check api_enabled. */
  authenticate(token: string): User | null;
  listMonitors(userId: number): MonitorView[];
  getMonitor(userId: number, monitorId: number): MonitorView;
  /** Creates the monitor and its checks (CONTRACT §3 defaults); they run at once. */
  createMonitor(userId: number, input: MonitorInput): Promise<MonitorView>;
  /**
   * Creates 1–{@link BULK_MONITORS_MAX} monitors at once, all or nothing, in one store write
   * (docs/architecture.md "API edge"); each item may set its uptime interval. Errors are keyed by
   * item: `monitors.3.url`. The new checks run at once, as with createMonitor.
   * @throws VigilError VIGIL_ERR_VALIDATION for any bad item (nothing is created)
   */
  createMonitors(userId: number, inputs: MonitorInput[]): Promise<MonitorView[]>;
  /** Deletes the monitor; its checks stop and send nothing more. */
  deleteMonitor(userId: number, monitorId: number): Promise<void>;
  getCheck(userId: number, checkId: number): CheckView;
  /**
   * The check's latest runs, newest first (issue 6). `limit` arrives as given (a string from
   * the query): 1–1000, default 100, else VIGIL_ERR_VALIDATION.
   */
  listResults(userId: number, checkId: number, limit: unknown): Promise<CheckResultView[]>;
  /** Applies a settings change; a new interval reschedules the next run from now. */
  updateCheck(userId: number, checkId: number, patch: CheckPatch): Promise<void>;
  /** Enable (runs at once) or disable (stops runs, queued webhooks still go out). */
  setCheckEnabled(userId: number, checkId: number, enabled: boolean): Promise<void>;
  getAccount(userId: number): AccountView;
  /** `{"webhook_url": string|null}`; 422 for a URL that is not http(s) or has credentials. */
  updateAccount(userId: number, input: { webhook_url?: unknown }): Promise<AccountView>;
  /**
   * The user's webhooks, newest first. Query values arrive as strings: `status`
   * (pending|delivered|failed), `page` (≥ 1, default 1), `per_page` (1–100, default 50);
   * others → VIGIL_ERR_VALIDATION.
   */
  listWebhooks(
    userId: number,
    query: { status?: unknown; page?: unknown; per_page?: unknown },
  ): WebhookPage;
  /**
   * Send a delivered or failed webhook again: a new attempt chain under the same parent id.
   * @throws VigilError VIGIL_ERR_WEBHOOK_NOT_FOUND; VIGIL_ERR_WEBHOOK_PENDING (409) when it is
   *   still being delivered.
   */
  redeliverWebhook(userId: number, webhookId: number): Promise<WebhookView>;
  /** For `GET /readyz` (issue 6): is the store open, how many probes are connected. */
  readiness(): { store: boolean; probes: number };
}

/** Input of `vigil users create` (CONTRACT §1). */
export interface NewUserInput {
  email: string;
  plan?: string;
  webhookUrl?: string | null;
  apiEnabled?: boolean;
}

/**
 * The operator surface behind `vigil users …` (CONTRACT §1). Errors: VIGIL_ERR_USER_NOT_FOUND,
 * VIGIL_ERR_EMAIL_TAKEN, VIGIL_ERR_VALIDATION.
 */
export interface UserAdmin {
  createUser(input: NewUserInput): Promise<UserView>;
  listUsers(): Promise<UserView[]>;
  showUser(email: string): Promise<UserView>;
  setUser(email: string, input: { plan?: string; webhookUrl?: string | null }): Promise<UserView>;
  setApiEnabled(email: string, enabled: boolean): Promise<UserView>;
  /** A new token; the old one stops working at once. */
  rotateToken(email: string): Promise<UserView>;
}

/**
 * The coordinator: loads the store, keeps users and monitors, owns one CheckActor per check,
 * the scheduler and probe registry, and the webhook dispatcher. It implements the API surface
 * (VigilService, CONTRACT §3) and the operator surface (UserAdmin, CONTRACT §1); the facade
 * and the CLI only call these.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { systemClock, type Clock, type TimerHandle } from '../common/clock.js';
import { VigilError, validationError } from '../common/errors.js';
import { logger as makeLogger, type Logger } from '../common/logger.js';
import { bindGaugeSources } from '../common/metrics.js';
import type {
  AccountView,
  CheckPatch,
  CheckResultView,
  CheckView,
  MonitorInput,
  MonitorView,
  NewUserInput,
  WebhookPage,
  WebhookView,
  UserAdmin,
  UserView,
  VigilService,
} from '../common/service.js';
import { BULK_MONITORS_MAX } from '../common/service.js';
import {
  DEFAULT_PLAN_INTERVALS,
  nearestAllowedInterval,
  type Check,
  type Monitor,
  type Plan,
  type User,
} from '../domain/check.js';
import { EVENT_TITLES, type DeliveryStatus, type OutboxEvent } from '../domain/events.js';
import { formatTimestamp } from '../domain/format.js';
import { RunCounters } from '../domain/uptime.js';
import { initialCheckState } from '../domain/transition.js';
import {
  emailProblem,
  intervalProblem,
  monitorUrlProblem,
  planProblem,
  validateCheckPatch,
  webhookUrlProblem,
} from '../domain/validate.js';
import { allowPrivateFromEnv, internalDestinationProblem } from '../delivery/address-policy.js';
import { Dispatcher, type DispatcherOptions } from '../delivery/dispatcher.js';
import { CheckActor, type ActorContext } from './check-actor.js';
import { ProbeRegistry } from './probe-registry.js';
import { RoutineWriter } from './routine-writer.js';
import { Scheduler } from './scheduler.js';
import { LevelStore } from './store/level-store.js';
import type { Sequences, Store, StoreOp } from './store/store.js';

export interface CoordinatorOptions {
  /** Directory of the store; created if missing. */
  dataDir: string;
  clock?: Clock;
  /** Intervals (seconds) per plan. @default DEFAULT_PLAN_INTERVALS (CONTRACT §2) */
  planIntervals?: Readonly<Record<Plan, readonly number[]>>;
  /** Run budget sent to probes, ms. @default 30000 (CONTRACT §5) */
  runTimeoutMs?: number;
  /** Overrides for the dispatcher (timeouts, backoff) — tests use these. */
  delivery?: Partial<
    Pick<DispatcherOptions, 'timeoutMs' | 'backoff' | 'giveUpAfterMs' | 'random' | 'retentionMs'>
  >;
  /** Raw run results are kept this long, ms. @default 30 days (`VIGIL_RESULT_RETENTION_DAYS`) */
  resultRetentionMs?: number;
  /**
   * Allow webhook URLs on loopback/private addresses.
   * @default `VIGIL_WEBHOOK_ALLOW_PRIVATE=1` in the environment (issue 4)
   */
  allowPrivateWebhooks?: boolean;
  logger?: Logger;
}

const tokenKey = (token: string): string => createHash('sha256').update(token).digest('hex');
const newToken = (): string => randomBytes(32).toString('base64url');

/**
 * The coordinator of one data dir. `Coordinator.open()` loads it (store locked),
 * `start()` begins checking and delivering, `close()` stops and releases the store.
 */
export class Coordinator implements VigilService, UserAdmin {
  readonly registry: ProbeRegistry;
  readonly scheduler: Scheduler;
  readonly dispatcher: Dispatcher;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly planIntervals: Readonly<Record<Plan, readonly number[]>>;
  private readonly users = new Map<number, User>();
  private readonly usersByEmail = new Map<string, User>();
  private readonly usersByToken = new Map<string, User>();
  private readonly monitors = new Map<number, Monitor>();
  /** user id → that user's monitor ids, so a listing does not scan every monitor */
  private readonly monitorsByUser = new Map<number, Set<number>>();
  private readonly checksByMonitor = new Map<number, number[]>();
  private readonly actors = new Map<number, CheckActor>();
  private readonly ctx: ActorContext;
  /** Writes routine runs in bulk (issue 7); see routine-writer.ts for what a crash loses. */
  private readonly writer: RoutineWriter;
  private readonly allowPrivateWebhooks: boolean;
  private readonly resultRetentionMs: number;
  private retentionTimer: TimerHandle | null = null;
  private started = false;
  private closed = false;

  private constructor(
    private readonly store: Store,
    private readonly seq: Sequences,
    opts: CoordinatorOptions,
  ) {
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger ?? makeLogger('coordinator');
    this.planIntervals = opts.planIntervals ?? DEFAULT_PLAN_INTERVALS;
    this.allowPrivateWebhooks = opts.allowPrivateWebhooks ?? allowPrivateFromEnv();
    const days = Number(process.env.VIGIL_RESULT_RETENTION_DAYS);
    this.resultRetentionMs =
      opts.resultRetentionMs ?? (Number.isFinite(days) && days > 0 ? days : 30) * 86_400_000;
    this.registry = new ProbeRegistry(opts.runTimeoutMs ?? 30_000);
    this.scheduler = new Scheduler({
      clock: this.clock,
      registry: this.registry,
      logger: this.log.child({ component: 'scheduler' }),
      runTimeoutMs: opts.runTimeoutMs ?? 30_000,
      onOutcome: (checkId, outcome) => {
        this.actors.get(checkId)?.tell({ type: 'result', outcome });
      },
    });
    this.dispatcher = new Dispatcher({
      clock: this.clock,
      store,
      seq,
      logger: this.log.child({ component: 'dispatcher' }),
      webhookUrl: (userId) => this.users.get(userId)?.webhookUrl ?? null,
      allowPrivate: this.allowPrivateWebhooks,
      ...opts.delivery,
    });
    this.writer = new RoutineWriter(store, this.clock, this.log.child({ component: 'writer' }));
    this.ctx = {
      clock: this.clock,
      store,
      scheduler: this.scheduler,
      seq,
      monitor: (id) => this.monitors.get(id),
      user: (id) => this.users.get(id),
      deliver: (event) => this.dispatcher.enqueue(event),
      writeLater: (actor) => this.writer.add(actor),
      logger: this.log.child({ component: 'check-actor' }),
    };
  }

  /**
   * Open the store in `opts.dataDir` and load everything; call `start()` to begin checking.
   * @throws VigilError VIGIL_ERR_DATA_DIR_LOCKED when another process uses the data dir.
   */
  static async open(opts: CoordinatorOptions): Promise<Coordinator> {
    const store = await LevelStore.open(opts.dataDir);
    try {
      const snap = await store.load();
      const c = new Coordinator(store, snap.seq, opts);
      for (const u of snap.users) c.indexUser(u);
      for (const m of snap.monitors) c.indexMonitor(m);
      for (const check of snap.checks) {
        const counters = snap.counters.get(check.id);
        c.addActor(
          check,
          snap.states.get(check.id) ?? initialCheckState(),
          counters && RunCounters.restore(counters.stats, counters.head),
        );
      }
      c.dispatcher.load(snap.events.filter((e) => c.monitors.has(e.monitorId)));
      return c;
    } catch (err) {
      await store.close();
      throw err;
    }
  }

  /** Start scheduling checks and delivering webhooks. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.log.info(
      { users: this.users.size, monitors: this.monitors.size, checks: this.actors.size },
      'coordinator starting',
    );
    this.scheduler.start();
    this.dispatcher.start();
    bindGaugeSources({
      outboxDepth: () => this.dispatcher.depth,
      scheduledChecks: () => this.scheduler.size,
      probesByLocation: () => {
        const byLocation = new Map<string, number>();
        for (const s of this.registry.all()) {
          byLocation.set(s.location, (byLocation.get(s.location) ?? 0) + 1);
        }
        return byLocation;
      },
    });
    for (const actor of this.actors.values()) actor.resume();
    this.armRetention(60_000);
  }

  /** Hourly: drop run results older than the retention, check by check. */
  private armRetention(delayMs: number): void {
    this.retentionTimer = this.clock.setTimer(() => {
      void (async () => {
        const cutoff = this.clock.now() - this.resultRetentionMs;
        for (const id of [...this.actors.keys()]) {
          if (this.closed) return;
          await this.store.clearResults(id, cutoff);
        }
      })()
        .catch((err: unknown) => this.log.error({ err }, 'result retention failed'))
        .finally(() => {
          if (!this.closed) this.armRetention(3_600_000);
        });
    }, delayMs);
  }

  /**
   * Write every applied routine run now instead of within `ROUTINE_FLUSH_MS`
   * (routine-writer.ts); resolves once they, and any bulk write in flight, are durable.
   */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** Stop everything and close the store; in-flight deliveries are recorded first. */
  async close(): Promise<void> {
    if (this.started) bindGaugeSources(null);
    this.closed = true;
    if (this.retentionTimer) this.clock.clearTimer(this.retentionTimer);
    this.scheduler.stop();
    await this.writer.close();
    await this.dispatcher.stop();
    await this.store.close();
  }

  private indexMonitor(m: Monitor): void {
    this.monitors.set(m.id, m);
    let ids = this.monitorsByUser.get(m.userId);
    if (!ids) this.monitorsByUser.set(m.userId, (ids = new Set()));
    ids.add(m.id);
  }

  private indexUser(u: User): void {
    this.users.set(u.id, u);
    this.usersByEmail.set(u.email, u);
    this.usersByToken.set(tokenKey(u.apiToken), u);
  }

  private addActor(check: Check, state = initialCheckState(), counters?: RunCounters): CheckActor {
    const actor = new CheckActor(check, state, this.ctx, counters);
    this.actors.set(check.id, actor);
    const list = this.checksByMonitor.get(check.monitorId) ?? [];
    list.push(check.id);
    this.checksByMonitor.set(check.monitorId, list);
    return actor;
  }

  // ---- VigilService (CONTRACT §3) ----

  authenticate(token: string): User | null {
    if (typeof token !== 'string' || token.length === 0 || token.length > 256) return null;
    const user = this.usersByToken.get(tokenKey(token));
    if (!user) return null;
    const a = Buffer.from(user.apiToken);
    const b = Buffer.from(token);
    return a.length === b.length && timingSafeEqual(a, b) ? user : null;
  }

  listMonitors(userId: number): MonitorView[] {
    const out: MonitorView[] = [];
    for (const id of this.monitorsByUser.get(userId) ?? []) {
      const m = this.monitors.get(id);
      if (m) out.push(this.monitorView(m));
    }
    return out;
  }

  getMonitor(userId: number, monitorId: number): MonitorView {
    return this.monitorView(this.ownMonitor(userId, monitorId));
  }

  async createMonitor(userId: number, input: MonitorInput): Promise<MonitorView> {
    const [view] = await this.createMonitors(userId, [{ url: input.url, alias: input.alias }], '');
    return view as MonitorView;
  }

  /**
   * See VigilService.createMonitors. `prefix` names the items in field errors: `monitors.`
   * gives `monitors.<i>.url`; the single create passes `''` and gets plain `url`.
   */
  async createMonitors(
    userId: number,
    inputs: MonitorInput[],
    prefix = 'monitors.',
  ): Promise<MonitorView[]> {
    const user = this.ownUser(userId);
    const allowed = this.planIntervals[user.plan];
    if (prefix !== '' && (inputs.length < 1 || inputs.length > BULK_MONITORS_MAX)) {
      throw validationError({
        monitors: [`Give between 1 and ${BULK_MONITORS_MAX} monitors.`],
      });
    }
    const fields: Record<string, string[]> = {};
    inputs.forEach((input, i) => {
      const at = prefix === '' ? '' : `${prefix}${i}.`;
      if (typeof input !== 'object' || input === null || Array.isArray(input)) {
        fields[`${prefix}${i}`] = ['Each monitor must be a JSON object.'];
        return;
      }
      const problem = monitorUrlProblem(input.url);
      if (problem) fields[`${at}url`] = [problem];
      if (input.alias !== undefined && input.alias !== null) {
        if (typeof input.alias !== 'string' || input.alias.length > 255) {
          fields[`${at}alias`] = ['The alias must be a string of at most 255 characters.'];
        }
      }
      if (input.interval !== undefined) {
        const bad = intervalProblem(input.interval, user.plan, allowed);
        if (bad) fields[`${at}interval`] = [bad];
      }
    });
    if (Object.keys(fields).length > 0) throw validationError(fields);

    const ops: StoreOp[] = [];
    const created: Array<{ monitor: Monitor; checks: Check[] }> = [];
    const state = initialCheckState();
    for (const input of inputs) {
      const url = new URL(input.url as string).href;
      const alias =
        typeof input.alias === 'string' && input.alias.trim() !== ''
          ? input.alias.trim()
          : new URL(url).host;
      const monitor: Monitor = {
        id: this.seq.monitor++,
        userId,
        url,
        alias,
        createdAt: this.clock.now(),
      };
      const checks: Check[] = [
        {
          id: this.seq.check++,
          monitorId: monitor.id,
          userId,
          name: 'uptime',
          enabled: true,
          intervalSeconds:
            typeof input.interval === 'number'
              ? input.interval
              : nearestAllowedInterval(300, allowed),
          notificationThresholdSeconds: 0,
          expiryThresholdDays: null,
        },
      ];
      if (url.startsWith('https://')) {
        checks.push({
          id: this.seq.check++,
          monitorId: monitor.id,
          userId,
          name: 'certificate_health',
          enabled: true,
          intervalSeconds: nearestAllowedInterval(3600, allowed),
          notificationThresholdSeconds: 0,
          expiryThresholdDays: null,
        });
      }
      ops.push({ kind: 'monitor', id: monitor.id, value: monitor });
      for (const c of checks) {
        ops.push({ kind: 'check', id: c.id, value: c }, { kind: 'state', id: c.id, value: state });
      }
      created.push({ monitor, checks });
    }
    ops.push({ kind: 'seq', value: this.seq });
    await this.store.write(ops);
    const runs: Promise<void>[] = [];
    for (const { monitor, checks } of created) {
      this.indexMonitor(monitor);
      for (const c of checks) {
        const actor = this.addActor(c, state);
        if (this.started) runs.push(actor.post({ type: 'enable' })); // runs at once
      }
    }
    await Promise.all(runs);
    return created.map(({ monitor }) => this.monitorView(monitor));
  }

  async deleteMonitor(userId: number, monitorId: number): Promise<void> {
    const monitor = this.ownMonitor(userId, monitorId);
    const checkIds = this.checksByMonitor.get(monitorId) ?? [];
    for (const id of checkIds) await this.actors.get(id)?.post({ type: 'delete' });
    const ops: StoreOp[] = [{ kind: 'monitor', id: monitor.id, value: null }];
    for (const id of checkIds) {
      ops.push(
        { kind: 'check', id, value: null },
        { kind: 'state', id, value: null },
        { kind: 'stats', id, value: null },
      );
    }
    await this.store.write(ops);
    for (const id of checkIds) {
      this.actors.get(id)?.counters.release(); // no view can reach it once deleted below
      this.actors.delete(id);
      await this.store.clearResults(id, Infinity);
    }
    this.checksByMonitor.delete(monitorId);
    this.monitors.delete(monitorId);
    this.monitorsByUser.get(userId)?.delete(monitorId);
    await this.dispatcher.forgetMonitor(monitorId); // CONTRACT §3: nothing more is sent for it
  }

  getCheck(userId: number, checkId: number): CheckView {
    return this.checkView(this.ownActor(userId, checkId));
  }

  async listResults(userId: number, checkId: number, limit: unknown): Promise<CheckResultView[]> {
    const actor = this.ownActor(userId, checkId);
    let n = 100;
    if (limit !== undefined) {
      n =
        typeof limit === 'number'
          ? limit
          : typeof limit === 'string' && /^\d+$/.test(limit)
            ? Number(limit)
            : NaN;
      if (!Number.isInteger(n) || n < 1 || n > 1000) {
        throw validationError({ limit: ['The limit must be a whole number from 1 to 1000.'] });
      }
    }
    // Runs applied but not yet written (routine-writer.ts) are history too. Taken before the
    // read, so a run written meanwhile is in one or both lists, never in neither.
    const unsaved = actor.unsavedResults();
    const stored = await this.store.results(checkId, n);
    let results = stored;
    if (unsaved.length > 0) {
      const seen = new Set(stored.map((r) => `${r.at} ${r.location}`));
      const more = unsaved.filter((r) => !seen.has(`${r.at} ${r.location}`));
      results = [...stored, ...more].sort((a, b) => b.at - a.at).slice(0, n);
    }
    return results.map((r) => ({
      checked_at: formatTimestamp(r.at),
      location: r.location,
      status: r.ok ? 'ok' : 'nok',
      http_status_code: r.httpStatusCode,
      response_time_ms: r.responseTimeMs,
      error: r.error,
    }));
  }

  async updateCheck(userId: number, checkId: number, patch: CheckPatch): Promise<void> {
    const actor = this.ownActor(userId, checkId);
    const user = this.ownUser(userId);
    const { change, errors } = validateCheckPatch(
      patch as Record<string, unknown>,
      actor.check,
      user.plan,
      this.planIntervals[user.plan],
    );
    if (errors) throw validationError(errors);
    await actor.post({ type: 'update', ...change });
  }

  async setCheckEnabled(userId: number, checkId: number, enabled: boolean): Promise<void> {
    const actor = this.ownActor(userId, checkId);
    await actor.post({ type: enabled ? 'enable' : 'disable' });
  }

  getAccount(userId: number): AccountView {
    const { api_token: _token, ...account } = userView(this.ownUser(userId));
    return account;
  }

  async updateAccount(userId: number, input: { webhook_url?: unknown }): Promise<AccountView> {
    const user = this.ownUser(userId);
    if (!Object.prototype.hasOwnProperty.call(input, 'webhook_url')) {
      throw validationError({ webhook_url: ['The webhook_url field is required.'] });
    }
    const problem = this.webhookProblem(input.webhook_url);
    if (problem) throw validationError({ webhook_url: [problem] });
    await this.saveUser({ ...user, webhookUrl: (input.webhook_url as string | null) ?? null });
    return this.getAccount(userId);
  }

  listWebhooks(
    userId: number,
    query: { status?: unknown; page?: unknown; per_page?: unknown },
  ): WebhookPage {
    this.ownUser(userId);
    const fields: Record<string, string[]> = {};
    const int = (v: unknown, name: string, def: number, max: number): number => {
      if (v === undefined) return def;
      const n =
        typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
      if (!Number.isInteger(n) || n < 1 || n > max) {
        fields[name] = [`The ${name} must be a whole number from 1 to ${max}.`];
        return def;
      }
      return n;
    };
    const page = int(query.page, 'page', 1, 1_000_000);
    const perPage = int(query.per_page, 'per_page', 50, 100);
    let status: DeliveryStatus | null = null;
    if (query.status !== undefined) {
      if (query.status === 'pending' || query.status === 'delivered' || query.status === 'failed') {
        status = query.status;
      } else fields.status = ['The status must be one of pending, delivered, failed.'];
    }
    if (Object.keys(fields).length > 0) throw validationError(fields);
    const { items, total } = this.dispatcher.outbox.list(
      userId,
      status,
      (page - 1) * perPage,
      perPage,
    );
    return { data: items.map(webhookView), page, per_page: perPage, total };
  }

  async redeliverWebhook(userId: number, webhookId: number): Promise<WebhookView> {
    const event = this.dispatcher.outbox.get(webhookId);
    if (!event || event.userId !== userId) throw new VigilError('VIGIL_ERR_WEBHOOK_NOT_FOUND');
    if (event.status === 'pending') throw new VigilError('VIGIL_ERR_WEBHOOK_PENDING');
    return webhookView(await this.dispatcher.redeliver(webhookId));
  }

  readiness(): { store: boolean; probes: number } {
    return { store: !this.closed, probes: this.registry.size };
  }

  // ---- UserAdmin (CONTRACT §1) ----

  async createUser(input: NewUserInput): Promise<UserView> {
    const email = typeof input.email === 'string' ? input.email.trim().toLowerCase() : '';
    const plan = input.plan ?? 'free';
    const fields: Record<string, string[]> = {};
    const ep = emailProblem(email);
    if (ep) fields.email = [ep];
    const pp = planProblem(plan);
    if (pp) fields.plan = [pp];
    const wp = this.webhookProblem(input.webhookUrl ?? null);
    if (wp) fields.webhook_url = [wp];
    if (Object.keys(fields).length > 0) throw validationError(fields);
    if (this.usersByEmail.has(email)) throw new VigilError('VIGIL_ERR_EMAIL_TAKEN');
    const user: User = {
      id: this.seq.user++,
      email,
      plan: plan as Plan,
      apiToken: newToken(),
      apiEnabled: input.apiEnabled ?? false,
      webhookUrl: input.webhookUrl ?? null,
      createdAt: this.clock.now(),
    };
    await this.store.write([
      { kind: 'user', id: user.id, value: user },
      { kind: 'seq', value: this.seq },
    ]);
    this.indexUser(user);
    return userView(user);
  }

  async listUsers(): Promise<UserView[]> {
    return [...this.users.values()].map(userView);
  }

  async showUser(email: string): Promise<UserView> {
    return userView(this.userByEmail(email));
  }

  async setUser(
    email: string,
    input: { plan?: string; webhookUrl?: string | null },
  ): Promise<UserView> {
    const user = this.userByEmail(email);
    const fields: Record<string, string[]> = {};
    if (input.plan !== undefined) {
      const pp = planProblem(input.plan);
      if (pp) fields.plan = [pp];
    }
    if (input.webhookUrl !== undefined) {
      const wp = this.webhookProblem(input.webhookUrl);
      if (wp) fields.webhook_url = [wp];
    }
    if (Object.keys(fields).length > 0) throw validationError(fields);
    const next: User = {
      ...user,
      plan: (input.plan as Plan | undefined) ?? user.plan,
      webhookUrl: input.webhookUrl !== undefined ? input.webhookUrl : user.webhookUrl,
    };
    await this.saveUser(next);
    return userView(next);
  }

  async setApiEnabled(email: string, enabled: boolean): Promise<UserView> {
    const user = this.userByEmail(email);
    const next = { ...user, apiEnabled: enabled };
    await this.saveUser(next);
    return userView(next);
  }

  async rotateToken(email: string): Promise<UserView> {
    const user = this.userByEmail(email);
    const next = { ...user, apiToken: newToken() };
    await this.saveUser(next);
    return userView(next);
  }

  // ---- helpers ----

  /** Why `url` cannot be a webhook URL here: syntax (CONTRACT §3), then the address policy. */
  private webhookProblem(url: unknown): string | null {
    const problem = webhookUrlProblem(url);
    if (problem || url === null || this.allowPrivateWebhooks) return problem;
    return internalDestinationProblem(url as string);
  }

  private async saveUser(next: User): Promise<void> {
    await this.store.write([{ kind: 'user', id: next.id, value: next }]);
    const old = this.users.get(next.id);
    if (old) this.usersByToken.delete(tokenKey(old.apiToken));
    this.indexUser(next);
    this.dispatcher.kick(); // a newly set webhook URL releases waiting events
  }

  private userByEmail(email: string): User {
    const user = this.usersByEmail.get(String(email).trim().toLowerCase());
    if (!user) throw new VigilError('VIGIL_ERR_USER_NOT_FOUND', `No user with email ${email}.`);
    return user;
  }

  private ownUser(userId: number): User {
    const user = this.users.get(userId);
    if (!user) throw new VigilError('VIGIL_ERR_UNAUTHENTICATED');
    return user;
  }

  private ownMonitor(userId: number, monitorId: number): Monitor {
    const m = this.monitors.get(monitorId);
    if (!m || m.userId !== userId) throw new VigilError('VIGIL_ERR_MONITOR_NOT_FOUND');
    return m;
  }

  private ownActor(userId: number, checkId: number): CheckActor {
    const actor = this.actors.get(checkId);
    if (!actor || actor.check.userId !== userId) throw new VigilError('VIGIL_ERR_CHECK_NOT_FOUND');
    return actor;
  }

  private monitorView(m: Monitor): MonitorView {
    const checks: CheckView[] = [];
    for (const id of this.checksByMonitor.get(m.id) ?? []) {
      const actor = this.actors.get(id);
      if (actor) checks.push(this.checkView(actor));
    }
    return { id: m.id, url: m.url, alias: m.alias, checks };
  }

  private checkView(actor: CheckActor): CheckView {
    const { check, state, counters } = actor;
    const now = this.clock.now();
    const view: CheckView = {
      id: check.id,
      monitor_id: check.monitorId,
      name: check.name,
      enabled: check.enabled,
      interval: check.intervalSeconds,
      notification_threshold: check.notificationThresholdSeconds,
      status: state.status,
      last_check_at: state.lastCheckAt === null ? null : formatTimestamp(state.lastCheckAt),
      last_location: state.lastLocation,
      last_error: state.lastError,
      uptime: {
        '24h': counters.percent(now, '24h'),
        '7d': counters.percent(now, '7d'),
        '30d': counters.percent(now, '30d'),
      },
    };
    if (check.name === 'certificate_health') view.expiry_threshold_days = check.expiryThresholdDays;
    return view;
  }
}

function webhookView(e: OutboxEvent): WebhookView {
  let body: unknown;
  try {
    body = JSON.parse(e.body);
  } catch {
    body = e.body;
  }
  return {
    id: e.id,
    type: EVENT_TITLES[e.type],
    monitor_id: e.monitorId,
    check_id: e.checkId,
    status: e.status,
    created_at: formatTimestamp(e.createdAt),
    next_attempt_at: e.status === 'pending' ? formatTimestamp(e.nextAttemptAt) : null,
    parent_webhook: e.parentAttemptId,
    body,
    signature: e.signature,
    attempts: e.attempts.map((a) => ({
      id: a.id,
      try: a.try,
      at: formatTimestamp(a.at),
      url: a.url,
      status: a.status,
      error: a.error,
      duration_ms: a.durationMs,
    })),
  };
}

function userView(u: User): UserView {
  return {
    id: u.id,
    email: u.email,
    plan: u.plan,
    api_token: u.apiToken,
    api_enabled: u.apiEnabled,
    webhook_url: u.webhookUrl,
  };
}

/**
 * Helpers for the delivery crash test (issue 4): a seeded RNG, a timeline shared by the
 * receiver and the test (so "this POST came after that SIGKILL" can be asserted without
 * trusting clocks), a webhook receiver that records when each request arrived and when it
 * was answered, and a target server whose per-path status the test flips.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** mulberry32: a small seeded PRNG, values in [0, 1). Same seed, same sequence. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A strictly increasing counter of things that happened in this process: a request's body
 * arrived, a response was written, the service was killed. Marks compare in real order.
 */
export class Timeline {
  private n = 0;
  next(): number {
    return ++this.n;
  }
}

/** One POST the crash receiver saw. */
export interface Hit {
  /** Timeline mark taken when the whole body had arrived. */
  inAt: number;
  /** Timeline mark taken when the answer was written, or null before that. */
  outAt: number | null;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  status: number;
  /** `X-Service-Webhook` */
  id: string;
  /** `X-Service-Parent-Webhook` */
  parent: string;
  /** `X-Service-Current-Try` */
  try: number;
}

/** How to answer one POST: a status after a real-time delay. */
export interface Reply {
  status: number;
  delayMs: number;
}

/**
 * A webhook receiver on 127.0.0.1:0. `decide` picks each answer and may be replaced at any
 * time. Requests whose body never completes (the sender died mid-request) are not recorded.
 */
export class CrashReceiver {
  readonly hits: Hit[] = [];
  decide: (hit: Hit) => Reply = () => ({ status: 200, delayMs: 0 });
  private server: Server | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();
  port = 0;

  constructor(private readonly timeline: Timeline) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('error', () => undefined);
      res.on('error', () => undefined);
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const h = req.headers;
        const hit: Hit = {
          inAt: this.timeline.next(),
          outAt: null,
          headers: h,
          raw: Buffer.concat(chunks),
          status: 0,
          id: String(h['x-service-webhook']),
          parent: String(h['x-service-parent-webhook']),
          try: Number(h['x-service-current-try']),
        };
        const reply = this.decide(hit);
        hit.status = reply.status;
        this.hits.push(hit);
        const answer = (): void => {
          hit.outAt = this.timeline.next();
          res.statusCode = reply.status;
          res.end();
        };
        if (reply.delayMs <= 0) return answer();
        const t = setTimeout(() => {
          this.timers.delete(t);
          answer();
        }, reply.delayMs);
        this.timers.add(t);
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}

/**
 * Monitored sites: `GET /t/<n>` answers `status(n)` (200 unless set), so a test flips a
 * target between up and down without restarting anything.
 */
export class Targets {
  private readonly statuses = new Map<number, number>();
  private server: Server | null = null;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const m = /^\/t\/(\d+)$/.exec(req.url ?? '');
      res.statusCode = m ? this.status(Number(m[1])) : 404;
      res.end(res.statusCode === 200 ? 'ok\n' : 'down\n');
    });
    // Probes keep connections alive; nothing here needs them to last.
    this.server.keepAliveTimeout = 1_000;
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  url(n: number): string {
    return `http://127.0.0.1:${this.port}/t/${n}`;
  }

  status(n: number): number {
    return this.statuses.get(n) ?? 200;
  }

  set(n: number, status: number): void {
    this.statuses.set(n, status);
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}

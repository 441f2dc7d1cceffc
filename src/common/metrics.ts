/**
 * Prometheus metrics (issue 6), all prefixed `vigil_`, in one registry served at
 * `GET /metrics`. Counters and histograms are updated where things happen; gauges read their
 * value from a source the coordinator binds when it starts.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'vigil_' });

/** Check runs by check name and result (`ok`, `fail`, `unreachable`). */
export const checkRuns = new Counter({
  name: 'vigil_check_runs_total',
  help: 'Check runs whose result reached the coordinator, by check and result.',
  labelNames: ['check', 'result'] as const,
  registers: [registry],
});

/** How late scheduled runs were handed to a probe, seconds (actual − planned). */
export const scheduleLag = new Histogram({
  name: 'vigil_schedule_lag_seconds',
  help: 'Delay between a scheduled run being due and being sent to a probe.',
  buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
  registers: [registry],
});

/** From the detecting run to the verifying run, seconds. */
export const verificationLatency = new Histogram({
  name: 'vigil_verification_latency_seconds',
  help: 'Time from a failed run to the run from another location that verified it.',
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
  registers: [registry],
});

/** Webhook POSTs by outcome (`delivered`, `retry`, `failed`). */
export const webhookAttempts = new Counter({
  name: 'vigil_webhook_attempts_total',
  help: 'Webhook delivery attempts by outcome.',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** API requests by route pattern and status. */
export const apiRequests = new Counter({
  name: 'vigil_api_requests_total',
  help: 'HTTP API requests by route and status code.',
  labelNames: ['route', 'status'] as const,
  registers: [registry],
});

/** Live values the gauges read; bound by the running coordinator. */
export interface GaugeSources {
  outboxDepth(): number;
  /** location → connected probes */
  probesByLocation(): Map<string, number>;
  scheduledChecks(): number;
}

let sources: GaugeSources | null = null;

/** Let the gauges read from `s` (the coordinator calls this on start). */
export function bindGaugeSources(s: GaugeSources | null): void {
  sources = s;
}

new Gauge({
  name: 'vigil_outbox_depth',
  help: 'Webhook events waiting for delivery.',
  registers: [registry],
  collect() {
    this.set(sources?.outboxDepth() ?? 0);
  },
});

new Gauge({
  name: 'vigil_probes_connected',
  help: 'Connected probe nodes by location.',
  labelNames: ['location'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const [location, n] of sources?.probesByLocation() ?? []) this.set({ location }, n);
  },
});

new Gauge({
  name: 'vigil_checks_scheduled',
  help: 'Enabled checks on the schedule.',
  registers: [registry],
  collect() {
    this.set(sources?.scheduledChecks() ?? 0);
  },
});

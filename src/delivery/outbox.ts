/**
 * The outbox in memory: every webhook event the store holds (pending, delivered, failed),
 * indexed by id and by user, so the dispatcher can work and `GET /webapi/webhooks` can list
 * without scanning the store. The store stays the source of truth; this mirrors it.
 */
import type { DeliveryStatus, OutboxEvent } from '../domain/events.js';
import type { Store, StoreOp } from '../coordinator/store/store.js';

/** One page of a user's events, newest first. */
export interface OutboxPage {
  items: OutboxEvent[];
  total: number;
}

/** In-memory mirror of the stored outbox, indexed by event id and by user. */
export class Outbox {
  private readonly byId = new Map<number, OutboxEvent>();
  /** user id → event ids, ascending */
  private readonly byUser = new Map<number, number[]>();

  constructor(private readonly store: Store) {}

  /** Mirror events loaded from the store. */
  load(events: readonly OutboxEvent[]): void {
    for (const e of [...events].sort((a, b) => a.id - b.id)) this.add(e);
  }

  /** Mirror an event already written to the store. */
  add(event: OutboxEvent): void {
    this.byId.set(event.id, event);
    let ids = this.byUser.get(event.userId);
    if (!ids) this.byUser.set(event.userId, (ids = []));
    ids.push(event.id);
  }

  get(id: number): OutboxEvent | undefined {
    return this.byId.get(id);
  }

  /** Every pending event, ascending id. */
  pending(): OutboxEvent[] {
    return [...this.byId.values()]
      .filter((e) => e.status === 'pending')
      .sort((a, b) => a.id - b.id);
  }

  /**
   * A user's events, newest first, optionally of one status.
   * @param offset events to skip; @param limit most events returned
   */
  list(userId: number, status: DeliveryStatus | null, offset: number, limit: number): OutboxPage {
    const ids = this.byUser.get(userId) ?? [];
    const items: OutboxEvent[] = [];
    let total = 0;
    for (let i = ids.length - 1; i >= 0; i--) {
      const e = this.byId.get(ids[i] as number);
      if (!e || (status !== null && e.status !== status)) continue;
      if (total >= offset && items.length < limit) items.push(e);
      total++;
    }
    return { items, total };
  }

  /** Forget (here and in the store) every event of a deleted monitor. */
  async dropMonitor(monitorId: number): Promise<void> {
    const gone = [...this.byId.values()].filter((e) => e.monitorId === monitorId);
    await this.remove(gone);
  }

  /**
   * Retention: forget delivered and failed events created before `cutoff` (ms since epoch).
   * Pending events are never dropped. Returns how many went.
   */
  async prune(cutoff: number): Promise<number> {
    const old = [...this.byId.values()].filter(
      (e) => e.status !== 'pending' && e.createdAt < cutoff,
    );
    await this.remove(old);
    return old.length;
  }

  private async remove(events: OutboxEvent[]): Promise<void> {
    if (events.length === 0) return;
    const ops: StoreOp[] = events.map((e) => ({ kind: 'event', id: e.id, value: null }));
    await this.store.write(ops);
    const gone = new Set(events.map((e) => e.id));
    for (const e of events) this.byId.delete(e.id);
    for (const [userId, ids] of this.byUser) {
      const kept = ids.filter((id) => !gone.has(id));
      if (kept.length === 0) this.byUser.delete(userId);
      else this.byUser.set(userId, kept);
    }
  }
}

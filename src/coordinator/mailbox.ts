/**
 * A serial mailbox: messages are handled one at a time, in arrival order, each to the end
 * (including its awaited store writes) before the next starts. This is what makes a check
 * actor race-free: an API update, a timer and a probe result never interleave.
 *
 * A handler may finish synchronously (return undefined): then no promise is made for that
 * message, which is the common case of a routine probe result (issue 7: the mailbox runs for
 * every result, so its per-message cost counts).
 */

/** Who handles a mailbox's messages (an object, not two closures: one per actor adds up). */
export interface MailboxHandler<M> {
  /**
   * Process one message, synchronously (return undefined) or not (return a promise). A throw
   * or rejection goes to `messageFailed` and to the sender's promise; the next message follows.
   */
  handleMessage(msg: M): Promise<void> | undefined;
  /** A message failed (logged by the owner). */
  messageFailed(err: unknown, msg: M): void;
}

/** A queued message; `done` settles the sender's promise (null for `tell()`). */
interface Item<M> {
  msg: M;
  done: ((err?: unknown) => void) | null;
}

/** One serial mailbox; see the file comment. */
export class Mailbox<M> {
  /** Waiting messages; null while there are none. */
  private queue: Array<Item<M>> | null = null;
  private running = false;

  constructor(private readonly handler: MailboxHandler<M>) {}

  /** Queue `msg`; resolves when it has been handled, rejects with the handler's error. */
  post(msg: M): Promise<void> {
    return new Promise((resolve, reject) => {
      this.enqueue(msg, (err) => (err === undefined ? resolve() : reject(err)));
    });
  }

  /** Queue `msg` without waiting for it; its error goes only to `messageFailed`. */
  tell(msg: M): void {
    this.enqueue(msg, null);
  }

  /** Messages waiting, not counting the one being handled. */
  get depth(): number {
    return this.queue?.length ?? 0;
  }

  private enqueue(msg: M, done: ((err?: unknown) => void) | null): void {
    if (this.running) (this.queue ??= []).push({ msg, done });
    else this.drain({ msg, done });
  }

  /**
   * Handle `first`, then the queued messages; synchronous ones within this call, until one
   * needs to wait (its settling calls drain again).
   */
  private drain(first: Item<M> | undefined): void {
    this.running = true;
    for (let next = first ?? this.queue?.shift(); next; next = this.queue?.shift()) {
      let pending: Promise<void> | undefined;
      try {
        pending = this.handler.handleMessage(next.msg);
      } catch (err) {
        this.fail(err, next);
        continue;
      }
      if (pending === undefined) {
        next.done?.();
        continue;
      }
      const item = next;
      pending.then(
        () => {
          item.done?.();
          this.drain(undefined);
        },
        (err: unknown) => {
          this.fail(err, item);
          this.drain(undefined);
        },
      );
      return;
    }
    this.queue = null; // an idle actor holds no array (there are 100,000s of them)
    this.running = false;
  }

  private fail(err: unknown, item: Item<M>): void {
    this.handler.messageFailed(err, item.msg);
    item.done?.(err);
  }
}

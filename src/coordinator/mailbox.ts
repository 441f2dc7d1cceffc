/**
 * A serial mailbox: messages are handled one at a time, in arrival order, each to the end
 * (including its awaited store writes) before the next starts. This is what makes a check
 * actor race-free: an API update, a timer and a probe result never interleave.
 */
export class Mailbox<M> {
  private readonly queue: Array<{ msg: M; done: (err?: unknown) => void }> = [];
  private running = false;

  /**
   * @param handle processes one message; a rejection is passed to `onError` and to the
   *   sender's promise, and the mailbox goes on with the next message.
   */
  constructor(
    private readonly handle: (msg: M) => Promise<void>,
    private readonly onError: (err: unknown, msg: M) => void,
  ) {}

  /** Queue `msg`; resolves when it has been handled, rejects with the handler's error. */
  post(msg: M): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ msg, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!this.running) void this.drain();
    });
  }

  /** Messages waiting, not counting the one being handled. */
  get depth(): number {
    return this.queue.length;
  }

  private async drain(): Promise<void> {
    this.running = true;
    for (let next = this.queue.shift(); next; next = this.queue.shift()) {
      try {
        await this.handle(next.msg);
        next.done();
      } catch (err) {
        this.onError(err, next.msg);
        next.done(err);
      }
    }
    this.running = false;
  }
}

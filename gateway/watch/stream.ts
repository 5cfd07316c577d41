// One subscriber of a Watch: after its snapshot, at most one `updated` waiting (a newer one
// replaces it while unsent) and the terminal message, never dropped and always last. The writer
// takes a message only when the socket has room, so back-pressure decides what waits; the memory
// of a stream is two references to shared messages, whatever the client does.
import type { ConnectError } from "@connectrpc/connect";
import type { SharedMessage } from "./frames.js";

/** An update as the streams of one entity share it. */
export interface StreamUpdate {
  readonly version: number;
  /** The entity's stream ends with this message. */
  readonly terminal: boolean;
  readonly shared: SharedMessage;
}

export class WatchStream {
  /** Updates at or below this version were shown (the snapshot) or superseded; until the snapshot, none is shown. */
  private shown = -1;
  private started = false;
  private updated: StreamUpdate | undefined;
  private terminal: StreamUpdate | undefined;
  private ended = false;
  private failure: ConnectError | undefined;
  private waiting: ((u: StreamUpdate | undefined) => void) | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private resolveFinished!: () => void;
  private rejectFinished!: (e: ConnectError) => void;
  private resolveUrgent!: () => void;
  /** When a message began to wait for a writer that did not come (Date.now()); undefined while none waits. */
  waitingSince: number | undefined;

  /** Settles when the stream is over: the terminal message was taken, or the stream ended; rejects when it failed. */
  readonly finished = new Promise<void>((resolve, reject) => ((this.resolveFinished = resolve), (this.rejectFinished = reject)));
  /** Resolves when the stream failed: what is left to write (the error) must go out although the client reads nothing. */
  readonly urgent = new Promise<void>((resolve) => (this.resolveUrgent = resolve));

  constructor(private readonly now: () => number = Date.now) {
    this.finished.catch(() => undefined); // the reader of `finished` may be gone (the client left)
  }

  /** An update of the entity, kept if newer than what the stream has shown or holds; true when it replaced an unsent one. */
  offer(u: StreamUpdate): boolean {
    if (this.ended || this.terminal || u.version <= this.shown || (this.updated && u.version <= this.updated.version)) return false;
    const replaced = this.started && this.updated !== undefined;
    if (u.terminal) {
      this.terminal = u;
      this.updated = undefined; // the terminal message carries the newer state
    } else this.updated = u;
    if (!this.started) return false;
    if (this.waiting) this.give();
    else this.waitingSince ??= this.now();
    return replaced;
  }

  /** True once the snapshot went out and the call handed its stream over (start). */
  get handedOver(): boolean {
    return this.started;
  }

  /** Ends the stream with `error` in `ms` unless it is over before (the call's deadline, which outlives Connect's call). */
  deadline(ms: number, error: ConnectError): void {
    if (this.ended) return;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(() => this.end(error), Math.max(0, ms));
    this.deadlineTimer.unref?.();
  }

  /** The snapshot showed `version`: later updates go out from now on. */
  start(version: number): void {
    if (this.ended || this.started) return;
    this.shown = version;
    if (this.updated && this.updated.version <= version) this.updated = undefined;
    if (this.terminal && this.terminal.version <= version) this.terminal = undefined;
    this.started = true;
    if (this.updated || this.terminal) this.waitingSince = this.now();
  }

  /**
   * Hands `then` the next update once the writer has room for it: at once when one waits, else when
   * one comes; undefined once the stream is over. One writer waits at a time.
   */
  nextThen(then: (u: StreamUpdate | undefined) => void): void {
    if (this.ended) return then(undefined);
    if (this.updated || this.terminal) return then(this.take());
    this.waiting = then;
  }

  /** The next update to write, as a promise (nextThen). */
  next(): Promise<StreamUpdate | undefined> {
    return new Promise((resolve) => this.nextThen(resolve));
  }

  /** Ends the stream: with `error`, a failure its handler answers; without, the client left or the handler ended. */
  end(error?: ConnectError): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.deadlineTimer);
    this.updated = this.terminal = undefined;
    this.waitingSince = undefined;
    this.failure = error;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(undefined);
    if (error) {
      this.rejectFinished(error);
      this.resolveUrgent();
    } else this.resolveFinished();
  }

  get failed(): ConnectError | undefined {
    return this.failure;
  }

  private give(): void {
    const waiting = this.waiting!;
    this.waiting = undefined;
    waiting(this.take());
  }

  private take(): StreamUpdate {
    this.waitingSince = undefined;
    const u = this.updated ?? this.terminal!;
    if (u === this.updated) this.updated = undefined;
    else {
      this.terminal = undefined;
      // The last message is handed over: the stream is over once it is written.
      this.ended = true;
      clearTimeout(this.deadlineTimer);
      this.resolveFinished();
    }
    this.shown = u.version;
    return u;
  }
}

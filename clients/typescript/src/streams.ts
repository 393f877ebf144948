// One event stream per queue for all the waits of a client: the service counts each open
// stream against the key's waiters (MATCHMAKER_MAX_WAITERS_PER_KEY), and a
// backend follows as many tickets as it has players searching.
import type { Client } from "openapi-fetch";

import type { components, paths } from "./schema.js";
import { sseEvents } from "./sse.js";

type QueueEvent = components["schemas"]["QueueEvent"];

/** Streams holds a client's open queue streams, by queue. */
export class Streams {
  private readonly byQueue = new Map<string, QueueStream>();

  constructor(private readonly api: Client<paths>) {}

  /**
   * join follows ticket's events on queue's stream, opening the stream when no wait holds it.
   * It answers once the stream is open, so a read of the ticket after it misses no change;
   * or undefined when the stream cannot be opened (the caller long-polls then).
   */
  async join(queue: string, ticket: string, signal: AbortSignal | undefined): Promise<Subscription | undefined> {
    let stream = this.byQueue.get(queue);
    if (!stream) {
      // A closed stream leaves the map, unless a newer one of the queue took its place.
      const closed = (s: QueueStream) => this.byQueue.get(queue) === s && this.byQueue.delete(queue);
      stream = new QueueStream(this.api, queue, closed);
      this.byQueue.set(queue, stream);
    }
    const sub = stream.add(ticket);
    const open = await abortable(stream.opened, signal).catch((err: unknown) => {
      sub.leave();
      throw err;
    });
    if (!open) {
      sub.leave();
      return undefined;
    }
    return sub;
  }
}

/** A wait's place on a queue's stream. */
export interface Subscription {
  /**
   * next answers when the ticket may have changed: "event" for an event of it, "reopened"
   * when the stream was opened again (events between may be lost, so read the ticket), or
   * "closed" when it could not be (long-poll from there).
   */
  next(signal: AbortSignal | undefined): Promise<"event" | "reopened" | "closed">;
  leave(): void;
}

/** QueueStream is one open stream of a queue and the waits that read it. */
class QueueStream {
  /** Whether the stream opened (false: it could not be). */
  readonly opened: Promise<boolean>;
  private readonly subs = new Map<string, Set<Sub>>();
  private readonly stop = new AbortController();
  private setOpened!: (open: boolean) => void;

  constructor(
    private readonly api: Client<paths>,
    private readonly queue: string,
    private readonly onClose: (s: QueueStream) => void,
  ) {
    this.opened = new Promise((resolve) => (this.setOpened = resolve));
    void this.run();
  }

  add(ticket: string): Sub {
    const sub = new Sub(() => {
      const set = this.subs.get(ticket);
      set?.delete(sub);
      if (set?.size === 0) this.subs.delete(ticket);
      if (this.subs.size === 0) this.close();
    });
    let set = this.subs.get(ticket);
    if (!set) this.subs.set(ticket, (set = new Set()));
    set.add(sub);
    return sub;
  }

  private close(): void {
    this.onClose(this);
    this.stop.abort();
  }

  private wakeAll(why: "reopened" | "closed"): void {
    for (const set of this.subs.values()) for (const sub of set) sub.wake(why);
  }

  /** run reads the stream, and opens it again from now on when the service ends it. */
  private async run(): Promise<void> {
    for (let first = true; !this.stop.signal.aborted; first = false) {
      const opened = Date.now();
      const body = await this.open();
      if (!body) {
        this.close();
        this.setOpened(false);
        this.wakeAll("closed");
        return;
      }
      this.setOpened(true);
      if (!first) this.wakeAll("reopened");
      try {
        for await (const message of sseEvents(body, this.stop.signal)) {
          if (!message.data) continue;
          const event = JSON.parse(message.data) as QueueEvent;
          for (const sub of this.subs.get(event.ticket_id) ?? []) sub.wake("event");
        }
      } catch {
        // The connection broke, or the last wait left: open it again, or stop.
      } finally {
        await body.cancel().catch(() => {});
      }
      // A stream that ends as soon as it opens is not opened again in a tight loop.
      if (Date.now() - opened < 1000) await pause(1000, this.stop.signal).catch(() => {});
    }
  }

  /** open answers the stream's body, or undefined where it cannot be opened. */
  private async open(): Promise<ReadableStream<Uint8Array> | undefined> {
    try {
      const { data, response } = await this.api.GET("/v1/queues/{name}/events", {
        params: { path: { name: this.queue } },
        parseAs: "stream",
        signal: this.stop.signal,
      });
      if (data && response.headers.get("content-type")?.startsWith("text/event-stream")) return data;
      await data?.cancel().catch(() => {});
    } catch {
      // The network, or the last wait left while it opened.
    }
    return undefined;
  }
}

class Sub implements Subscription {
  private pending: "event" | "reopened" | "closed" | undefined;
  private waiter: ((why: "event" | "reopened" | "closed") => void) | undefined;

  constructor(readonly leave: () => void) {}

  wake(why: "event" | "reopened" | "closed"): void {
    // A stream closed for good outranks a wake not yet taken.
    if (this.pending !== "closed") this.pending = why;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      this.pending = undefined;
      w(why);
    }
  }

  next(signal: AbortSignal | undefined): Promise<"event" | "reopened" | "closed"> {
    if (this.pending) {
      const why = this.pending;
      this.pending = undefined;
      return Promise.resolve(why);
    }
    return abortable(new Promise((resolve) => (this.waiter = resolve)), signal);
  }
}

/**
 * abortable is call, or the signal's reason as soon as it aborts: node's fetch may not pass
 * an abort on to a request it no longer references (see sseEvents), and a long-poll should
 * not hold its caller for the rest of its wait_s. discard receives what call answers after
 * the abort.
 */
export function abortable<T>(call: Promise<T>, signal: AbortSignal | undefined, discard?: (late: T) => void): Promise<T> {
  if (!signal) return call;
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    call
      .then((value) => (signal.aborted ? discard?.(value) : resolve(value)), reject)
      .finally(() => signal.removeEventListener("abort", abort));
    if (signal.aborted) abort();
  });
}

/** pause waits ms, or rejects with the signal's reason when it aborts first. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener("abort", abort, { once: true });
  });
}

// The Matchmaker client for TypeScript: the typed calls openapi-fetch makes from the
// generated schema (src/schema.d.ts, `npm run generate` from api/openapi.yaml), the API key
// on every request, and waitForMatch, which follows a ticket to its match.
import createFetchClient, { type Client, type ClientOptions } from "openapi-fetch";

import type { components, paths } from "./schema.js";
import { sseEvents } from "./sse.js";

export type { components, paths } from "./schema.js";
export { sseEvents, type SSEMessage } from "./sse.js";

export type Schemas = components["schemas"];
export type Ticket = Schemas["Ticket"];
export type TicketStatus = Ticket["status"];
export type QueueEvent = Schemas["QueueEvent"];
export type Problem = Schemas["Problem"];

/** The typed calls of every route (GET, POST, PUT, DELETE of paths), plus waitForMatch. */
export interface MatchmakerClient extends Client<paths> {
  /**
   * Follows a ticket until it is settled (matched, expired or cancelled) and answers it as it
   * is then: a matched ticket carries its assignment. Over the queue's Server-Sent Events,
   * falling back to long-polls where the stream cannot be opened.
   */
  waitForMatch(ticketId: string, options?: WaitOptions): Promise<Ticket>;
}

export interface MatchmakerOptions extends Omit<ClientOptions, "baseUrl"> {
  /** The service's base URL, e.g. http://localhost:8080. */
  baseUrl: string;
  /** An API key, sent as `Authorization: Bearer <key>`; leave it out where keys are off. */
  apiKey?: string;
}

export interface WaitOptions {
  /** Ends the wait: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** "sse" (the default) follows the queue's event stream; "longpoll" asks GET /v1/tickets/{id}?wait_s=. */
  via?: "sse" | "longpoll";
  /** How long each long-poll waits, in seconds (1..60; 30 by default). */
  pollSeconds?: number;
  /** Called with the ticket each time it is read in a new state, the settled one included. */
  onUpdate?: (ticket: Ticket) => void;
}

/** An answer other than 2xx, with the problem document the service gave. */
export class MatchmakerError extends Error {
  readonly status: number;
  readonly problem: Problem | undefined;
  constructor(status: number, problem: Problem | undefined, what: string) {
    super(`${what}: ${status} ${problem?.title ?? ""}${problem?.detail ? `: ${problem.detail}` : ""}`);
    this.name = "MatchmakerError";
    this.status = status;
    this.problem = problem;
  }
}

/** createClient makes a client of the service at options.baseUrl, with options.apiKey on every call. */
export function createClient(options: MatchmakerOptions): MatchmakerClient {
  const { apiKey, ...rest } = options;
  const api = createFetchClient<paths>(rest);
  if (apiKey) {
    // A middleware rather than a default header: it keeps the caller's headers whatever their
    // form, and an Authorization given for one call wins.
    api.use({
      onRequest({ request }) {
        if (!request.headers.has("Authorization")) request.headers.set("Authorization", `Bearer ${apiKey}`);
        return request;
      },
    });
  }
  return Object.assign(api, {
    waitForMatch: (ticketId: string, wait: WaitOptions = {}) => waitForMatch(api, ticketId, wait),
  });
}

/**
 * settled says whether a ticket has reached the end of its wait. Every other status, today
 * `searching` and later the states between a match's proposal and its game server
 * (`proposed`, `placing`), keeps waitForMatch following the ticket.
 */
export function settled(status: string): boolean {
  return status === "matched" || status === "expired" || status === "cancelled";
}

/** waitForMatch is MatchmakerClient.waitForMatch for a client made by createFetchClient<paths>. */
export async function waitForMatch(api: Client<paths>, ticketId: string, options: WaitOptions = {}): Promise<Ticket> {
  const follower = new Follower(api, ticketId, options);
  let ticket = await follower.read(0);
  if (settled(ticket.status)) return ticket;
  if ((options.via ?? "sse") === "sse") {
    const t = await follower.overEvents(ticket.queue);
    if (t) return t;
  }
  return follower.overLongPolls();
}

/** Follower reads one ticket, and reports each new state of it to onUpdate. */
class Follower {
  private last = "";

  constructor(
    private readonly api: Client<paths>,
    private readonly id: string,
    private readonly options: WaitOptions,
  ) {}

  /** read answers the ticket, after a long-poll of waitS seconds when waitS > 0. */
  async read(waitS: number): Promise<Ticket> {
    const { data, error, response } = await abortable(
      this.api.GET("/v1/tickets/{id}", {
        params: { path: { id: this.id }, query: waitS > 0 ? { wait_s: waitS } : {} },
        signal: this.options.signal,
      }),
      this.options.signal,
    );
    if (!data) throw new MatchmakerError(response.status, error as Problem | undefined, `GET /v1/tickets/${this.id}`);
    const state = `${data.status} ${data.updated_at}`;
    if (state !== this.last) {
      this.last = state;
      this.options.onUpdate?.(data);
    }
    return data;
  }

  /**
   * overEvents follows the ticket over its queue's event stream, and answers it settled, or
   * undefined where the stream cannot be opened (a proxy that refuses streams, too many
   * streams open, the service restarting): the caller long-polls then. The stream starts
   * from now on, so the ticket is read again once it is open: a change before that is in
   * the read, a change after it comes as an event. An event of this ticket is a cue to read
   * it (the read carries the assignment and the states an event does not name); a stream the
   * service ends (its shutdown, a store failure) is opened again the same way.
   */
  async overEvents(queue: string): Promise<Ticket | undefined> {
    for (;;) {
      const opened = Date.now();
      const opening = this.api.GET("/v1/queues/{name}/events", {
        params: { path: { name: queue } },
        parseAs: "stream",
        signal: this.options.signal,
      });
      // A stream that opens after the abort is closed at once.
      const discard = (late: Awaited<typeof opening>) => void late.data?.cancel().catch(() => {});
      const { data: body, error, response } = await abortable(opening, this.options.signal, discard).catch((err: unknown) => {
        if (this.options.signal?.aborted) throw err;
        return { data: undefined, error: undefined, response: undefined };
      });
      if (!response || !body || !response.headers.get("content-type")?.startsWith("text/event-stream")) {
        await body?.cancel().catch(() => {});
        // A key that may not read the stream may not long-poll either.
        if (response?.status === 401 || response?.status === 403) {
          throw new MatchmakerError(response.status, error as Problem | undefined, `GET /v1/queues/${queue}/events`);
        }
        return undefined;
      }
      try {
        let ticket = await this.read(0);
        if (settled(ticket.status)) return ticket;
        for await (const message of sseEvents(body, this.options.signal)) {
          if (!message.data) continue;
          const event = JSON.parse(message.data) as QueueEvent;
          if (event.ticket_id !== this.id) continue;
          ticket = await this.read(0);
          if (settled(ticket.status)) return ticket;
        }
      } catch (err) {
        if (this.options.signal?.aborted || err instanceof MatchmakerError) throw err;
        // The connection broke mid-stream: open it again.
      } finally {
        await body.cancel().catch(() => {});
      }
      // A stream that ends as soon as it opens is not reopened in a tight loop.
      if (Date.now() - opened < 1000) await pause(1000, this.options.signal);
    }
  }

  /** overLongPolls follows the ticket by long-polls until it is settled. */
  async overLongPolls(): Promise<Ticket> {
    const waitS = Math.min(Math.max(this.options.pollSeconds ?? 30, 1), 60);
    for (;;) {
      const before = this.last;
      const ticket = await this.read(waitS);
      if (settled(ticket.status)) return ticket;
      // A long-poll answers at once for a state it does not wait on: do not spin on it.
      if (ticket.status !== "searching" && this.last === before) await pause(1000, this.options.signal);
    }
  }
}

/**
 * abortable is call, or the signal's reason as soon as it aborts: node's fetch may not pass
 * an abort on to a request it no longer references (see sseEvents), and a long-poll should
 * not hold its caller for the rest of its wait_s.
 */
function abortable<T>(call: Promise<T>, signal: AbortSignal | undefined, discard?: (late: T) => void): Promise<T> {
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

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
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

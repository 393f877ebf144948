// The Matchmaker client for TypeScript: the typed calls openapi-fetch makes from the
// generated schema (src/schema.d.ts, `npm run generate` from api/openapi.yaml), the API key
// on every request, and waitForMatch, which follows a ticket to its match; and
// matchFunctionListener, which serves a queue's match function (src/matchfunction.ts).
import createFetchClient, { type Client, type ClientOptions } from "openapi-fetch";

import type { components, paths } from "./schema.js";
import { abortable, pause, Streams } from "./streams.js";

export type { components, paths } from "./schema.js";
export { sseEvents, type SSEMessage } from "./sse.js";
export {
  answerMatchFunction,
  defaultMaxMatchFunctionRequest,
  defaultToleranceMs,
  deliveryHeader,
  matchFunctionFetch,
  matchFunctionListener,
  signatureHeader,
  verifyWebhook,
  WebhookSignatureError,
  type MatchFunction,
  type MatchFunctionAnswer,
  type MatchFunctionOptions,
  type MatchFunctionReply,
  type MatchFunctionRequest,
  type MatchFunctionTicket,
  type ProposedMatch,
  type VerifyOptions,
} from "./matchfunction.js";

export type Schemas = components["schemas"];
export type Ticket = Schemas["Ticket"];
export type TicketStatus = Ticket["status"];
export type QueueEvent = Schemas["QueueEvent"];
export type Problem = Schemas["Problem"];

/** The typed calls of every route (GET, POST, PUT, DELETE of paths), plus waitForMatch. */
export interface MatchmakerClient extends Client<paths> {
  /**
   * Follows a ticket until it is settled (matched, expired or cancelled) and answers it as it
   * is then: a matched ticket carries its assignment. Over the queue's Server-Sent Events
   * (one stream per queue for all of this client's waits), falling back to long-polls where
   * the stream cannot be opened.
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
  const streams = new Streams(api);
  return Object.assign(api, {
    waitForMatch: (ticketId: string, wait: WaitOptions = {}) => waitForMatch(api, streams, ticketId, wait),
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

async function waitForMatch(api: Client<paths>, streams: Streams, ticketId: string, options: WaitOptions): Promise<Ticket> {
  const follower = new Follower(api, ticketId, options);
  const ticket = await follower.read(0);
  if (settled(ticket.status)) return ticket;
  if ((options.via ?? "sse") === "sse") {
    const t = await follower.overEvents(streams, ticket.queue);
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

  /**
   * read answers the ticket, after a long-poll of waitS seconds when waitS > 0. A passing
   * failure (a dropped connection, a 502, 503, 504 or 429, as a restarting or busy service
   * answers) is tried again, a little later each time, until the signal ends the wait; any
   * other answer is a MatchmakerError.
   */
  async read(waitS: number): Promise<Ticket> {
    for (let backoff = 100; ; backoff = Math.min(2 * backoff, 5000)) {
      const answer = await abortable(
        this.api.GET("/v1/tickets/{id}", {
          params: { path: { id: this.id }, query: waitS > 0 ? { wait_s: waitS } : {} },
          signal: this.options.signal,
        }),
        this.options.signal,
      ).catch((err: unknown) => {
        if (this.options.signal?.aborted) throw err;
        return undefined; // the network
      });
      if (answer?.data) {
        const state = `${answer.data.status} ${answer.data.updated_at}`;
        if (state !== this.last) {
          this.last = state;
          this.options.onUpdate?.(answer.data);
        }
        return answer.data;
      }
      if (answer && !retryable(answer.response.status)) {
        throw new MatchmakerError(answer.response.status, answer.error as Problem | undefined, `GET /v1/tickets/${this.id}`);
      }
      await pause(backoff, this.options.signal);
    }
  }

  /**
   * overEvents follows the ticket over its queue's event stream, which the client's waits on
   * the queue share, and answers it settled; or undefined where the stream cannot be opened
   * (a proxy that refuses streams, too many open, the service restarting): the caller
   * long-polls then. A stream starts from now on, so the ticket is read once the wait is on
   * it: a change before that is in the read, a change after it comes as an event. An event
   * of the ticket, or the stream opened again, is a cue to read it: the read carries the
   * assignment, and the states an event does not name.
   */
  async overEvents(streams: Streams, queue: string): Promise<Ticket | undefined> {
    const sub = await streams.join(queue, this.id, this.options.signal);
    if (!sub) return undefined;
    try {
      for (;;) {
        const ticket = await this.read(0);
        if (settled(ticket.status)) return ticket;
        if ((await sub.next(this.options.signal)) === "closed") return undefined;
      }
    } finally {
      sub.leave();
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

function retryable(status: number): boolean {
  return status === 429 || status === 502 || status === 503 || status === 504;
}

// A queue's match function served from a plain function, as the Go client's
// MatchFunctionHandler serves it: the leader POSTs the pool at each tick (a
// MatchFunctionRequest, signed as webhook deliveries are) and reads back the matches the
// function proposes (a MatchFunctionAnswer). docs/match-functions.md has the protocol.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";

import type { components } from "./schema.js";

export type MatchFunctionRequest = components["schemas"]["MatchFunctionRequest"];
export type MatchFunctionTicket = components["schemas"]["MatchFunctionTicket"];
export type MatchFunctionAnswer = components["schemas"]["MatchFunctionAnswer"];
export type ProposedMatch = components["schemas"]["ProposedMatch"];

/** The headers of a signed delivery (webhook events, allocations, match function calls). */
export const signatureHeader = "x-matchmaker-signature"; // t=<unix seconds>,v1=<hex HMAC-SHA256>
export const deliveryHeader = "x-matchmaker-delivery";

/** How far a delivery's signature time may be from the receiver's clock by default. */
export const defaultToleranceMs = 5 * 60_000;

/** The error verifyWebhook throws for every delivery it refuses. */
export class WebhookSignatureError extends Error {
  constructor(why: string) {
    super(`webhook: bad signature: ${why}`);
    this.name = "WebhookSignatureError";
  }
}

export interface VerifyOptions {
  /** The receiver's clock (new Date() by default). */
  now?: Date;
  /** How far the signature's time may be from now, in ms (defaultToleranceMs by default). */
  toleranceMs?: number;
}

/**
 * verifyWebhook checks a delivery's signature: HMAC-SHA256 under the secret of
 * "<t>.<delivery id>.<body>", with t within the tolerance of now, so that a recorded delivery
 * can be neither replayed later nor passed off under another delivery id. Call it with the
 * raw body, before parsing it; it throws a WebhookSignatureError when the delivery is refused.
 */
export function verifyWebhook(secret: string, headers: IncomingHttpHeaders, body: Uint8Array, options: VerifyOptions = {}): void {
  let t = "";
  let v1 = "";
  for (const part of header(headers, signatureHeader).split(",")) {
    const [k, v = ""] = part.trim().split("=", 2);
    if (k === "t") t = v;
    if (k === "v1") v1 = v;
  }
  if (!/^-?\d+$/.test(t) || v1 === "") throw new WebhookSignatureError(`the ${signatureHeader} header has no t= and v1=`);
  const now = (options.now ?? new Date()).getTime();
  const skew = now - Number(t) * 1000;
  if (Math.abs(skew) > (options.toleranceMs ?? defaultToleranceMs)) {
    throw new WebhookSignatureError(`signed at ${new Date(Number(t) * 1000).toISOString()}, ${Math.round(skew / 1000)} s from now`);
  }
  if (!/^[0-9a-fA-F]+$/.test(v1) || v1.length % 2 !== 0) throw new WebhookSignatureError("v1 is not hex");
  const got = Buffer.from(v1, "hex");
  const want = createHmac("sha256", secret).update(`${t}.${header(headers, deliveryHeader)}.`).update(body).digest();
  if (got.length !== want.length || !timingSafeEqual(got, want)) {
    throw new WebhookSignatureError("it does not match the body, the delivery id and the secret");
  }
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const v = headers[name];
  return Array.isArray(v) ? (v[0] ?? "") : (v ?? "");
}

/**
 * A match function: the tick's matches from its pool. The service checks every match on its
 * own (tickets of the pool, each once, the queue's teams and sizes, compositions) and drops
 * those that fail, with their reason; no match leaves the tickets searching. signal aborts when
 * the request's deadline is due (its deadline less its now, from the call's arrival) or when
 * the service hangs up, after which the answer is not read.
 * A thrown error answers a 500 with its message: the call failed, and the queue's on_failure
 * decides the tick.
 */
export type MatchFunction = (request: MatchFunctionRequest, signal: AbortSignal) => ProposedMatch[] | Promise<ProposedMatch[]>;

/** The largest request body read by default: a pool of max_pool 100,000 tickets fits. */
export const defaultMaxMatchFunctionRequest = 128 << 20;

export interface MatchFunctionOptions extends Omit<VerifyOptions, "now"> {
  /** The largest request body read, in bytes; a larger one is a 413. */
  maxBody?: number;
  /** The receiver's clock, for the signature's time. */
  now?: () => Date;
}

/** An answer to write: its status, content type and body. */
export interface MatchFunctionReply {
  status: number;
  contentType: string;
  body: string;
}

/**
 * answerMatchFunction answers one call of the match function, from its headers and raw body:
 * a signature that does not verify is a 401, a body that is not a MatchFunctionRequest a 400,
 * a function's error a 500 with its message (each a problem+json document); otherwise a 200
 * MatchFunctionAnswer of the function's matches. matchFunctionListener serves it over
 * node:http; call it from another framework with the raw body.
 */
export async function answerMatchFunction(
  secret: string,
  fn: MatchFunction,
  headers: IncomingHttpHeaders,
  body: Uint8Array,
  options: MatchFunctionOptions = {},
  hangUp?: AbortSignal,
): Promise<MatchFunctionReply> {
  try {
    verifyWebhook(secret, headers, body, { now: options.now?.(), toleranceMs: options.toleranceMs });
  } catch (err) {
    return problem(401, (err as Error).message);
  }
  let request: MatchFunctionRequest;
  try {
    request = parseRequest(body);
  } catch (err) {
    return problem(400, (err as Error).message);
  }
  // From the request's now to its deadline, both on the leader's clock: a host whose clock is
  // off neither cuts nor stretches the function's time. Without a now, to the deadline.
  const sent = Date.parse(request.now);
  const budget = Date.parse(request.deadline) - (Number.isFinite(sent) ? sent : (options.now?.() ?? new Date()).getTime());
  const signals = [AbortSignal.timeout(Math.max(Number.isFinite(budget) ? budget : 0, 0))];
  if (hangUp) signals.push(hangUp);
  let matches: ProposedMatch[];
  try {
    matches = (await fn(request, AbortSignal.any(signals))) ?? [];
  } catch (err) {
    return problem(500, `the match function failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const answer: MatchFunctionAnswer = { matches };
  return { status: 200, contentType: "application/json", body: JSON.stringify(answer) };
}

/** parseRequest reads a request leniently (the service may add members), but not one without the members a function needs. */
function parseRequest(body: Uint8Array): MatchFunctionRequest {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(body).toString("utf8"));
  } catch (err) {
    throw new Error(`the body is not a MatchFunctionRequest: ${(err as Error).message}`);
  }
  const r = v as Partial<MatchFunctionRequest> | null;
  if (typeof r !== "object" || r === null || Array.isArray(r)) throw new Error("the body is not a MatchFunctionRequest: not an object");
  if (typeof r.queue !== "string" || r.queue === "") throw new Error('the request has no "queue"');
  if (!(typeof r.teams === "number" && r.teams >= 1) && !(Array.isArray(r.team_defs) && r.team_defs.length > 0)) {
    throw new Error('the request has no "teams"');
  }
  if (!Array.isArray(r.pool)) throw new Error('the request has no "pool"');
  return r as MatchFunctionRequest;
}

function problem(status: number, detail: string): MatchFunctionReply {
  const title = { 400: "Bad Request", 401: "Unauthorized", 405: "Method Not Allowed", 413: "Request Entity Too Large", 500: "Internal Server Error" }[status];
  return { status, contentType: "application/problem+json", body: JSON.stringify({ type: "about:blank", title, status, detail }) };
}

/**
 * matchFunctionListener serves a queue's match function from fn over node:http:
 * `http.createServer(matchFunctionListener(secret, fn)).listen(9000)`. Besides
 * answerMatchFunction's answers, a method other than POST is a 405 and a body over
 * options.maxBody (defaultMaxMatchFunctionRequest) a 413.
 */
export function matchFunctionListener(secret: string, fn: MatchFunction, options: MatchFunctionOptions = {}) {
  const limit = options.maxBody ?? defaultMaxMatchFunctionRequest;
  return (req: IncomingMessage, res: ServerResponse): void => {
    const reply = (r: MatchFunctionReply) => {
      if (res.headersSent) return;
      res.writeHead(r.status, { "Content-Type": r.contentType });
      res.end(r.body);
    };
    if (req.method !== "POST") {
      res.setHeader("Allow", "POST");
      reply(problem(405, "a match function is called with POST"));
      req.resume();
      return;
    }
    const hangUp = new AbortController();
    res.once("close", () => hangUp.abort(new Error("the service hung up")));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        return; // the rest is read and dropped: the answer is a 413
      }
      chunks.push(chunk);
    });
    req.on("error", () => hangUp.abort());
    req.on("end", () => {
      if (size > limit) {
        reply(problem(413, `the request is over ${limit} bytes`));
        return;
      }
      answerMatchFunction(secret, fn, req.headers, Buffer.concat(chunks), options, hangUp.signal).then(reply, (err: unknown) =>
        reply(problem(500, `the match function failed: ${String(err)}`)),
      );
    });
  };
}

/**
 * matchFunctionFetch serves a queue's match function from fn as a fetch handler, `(Request)
 * => Promise<Response>`, for the runtimes and frameworks built on it (Deno, Bun, workers,
 * Hono): the same answers as matchFunctionListener, the body read up to options.maxBody.
 */
export function matchFunctionFetch(secret: string, fn: MatchFunction, options: MatchFunctionOptions = {}) {
  const limit = options.maxBody ?? defaultMaxMatchFunctionRequest;
  const respond = (r: MatchFunctionReply, headers: Record<string, string> = {}) =>
    new Response(r.body, { status: r.status, headers: { "Content-Type": r.contentType, ...headers } });
  return async (request: Request): Promise<Response> => {
    if (request.method !== "POST") return respond(problem(405, "a match function is called with POST"), { Allow: "POST" });
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = request.body?.getReader();
    for (;;) {
      const chunk = reader ? await reader.read() : { done: true as const, value: undefined };
      if (chunk.done) break;
      size += chunk.value.byteLength;
      if (size > limit) {
        await reader?.cancel();
        return respond(problem(413, `the request is over ${limit} bytes`));
      }
      chunks.push(chunk.value);
    }
    const headers: IncomingHttpHeaders = {};
    request.headers.forEach((v, k) => (headers[k] = v));
    return respond(await answerMatchFunction(secret, fn, headers, Buffer.concat(chunks), options, request.signal));
  };
}

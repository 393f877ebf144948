// The client against the real service: a queue, tickets, the match followed over the event
// stream (and over long-polls), and the match's result.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

import { createClient, MatchmakerError, type MatchmakerClient, type Ticket } from "../src/index.js";
import { startService, type Service } from "./server.js";

let service: Service;

before(async () => {
  service = await startService();
});

after(async () => {
  await service?.stop();
});

/** calls is what a client asked: method and path with query, in order. */
type Calls = string[];

/**
 * client is a client of the service that records its calls; answer, when given, stands in
 * for the service on the calls it answers (it returns undefined for the others).
 */
function client(calls: Calls = [], answer?: (req: Request) => Response | undefined): MatchmakerClient {
  return createClient({
    baseUrl: service.url,
    apiKey: service.key,
    fetch: async (req: Request) => {
      const url = new URL(req.url);
      calls.push(`${req.method} ${url.pathname}${url.search}`);
      return answer?.(req) ?? fetch(req);
    },
  });
}

/** unique names a queue or a player apart from those of other runs on the same service. */
function unique(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** queueFor1v1 defines a 1v1 queue matched every 100 ms and answers its name. */
async function queueFor1v1(mm: MatchmakerClient): Promise<string> {
  const name = unique("ts-duel");
  const { data, error } = await mm.PUT("/v1/queues/{name}", {
    params: { path: { name } },
    body: { context: { game_type: "ctf" }, team_size: 1, tick_ms: 100 },
  });
  assert.equal(error, undefined, `PUT /v1/queues/${name}: ${JSON.stringify(error)}`);
  assert.equal(data?.name, name);
  assert.equal(data?.team_size, 1);
  return name;
}

/** ticket puts one player in a queue and answers the searching ticket. */
async function ticket(mm: MatchmakerClient, queue: string, id: string, rating: number): Promise<Ticket> {
  const { data, error, response } = await mm.POST("/v1/queues/{name}/tickets", {
    params: { path: { name: queue } },
    body: { players: [{ id, rating }] },
  });
  assert.equal(response.status, 201, `POST /v1/queues/${queue}/tickets: ${JSON.stringify(error)}`);
  assert.ok(data);
  assert.equal(data.status, "searching");
  assert.deepEqual(
    data.players.map((p) => [p.id, p.rating]),
    [[id, rating]],
  );
  return data;
}

// A collection before an abort: node's fetch loses an abort once it has collected the
// Request it followed the signal for; waitForMatch must not.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

// A wait that hangs fails its test instead of the run.
describe("a queue through the client", { timeout: 120_000 }, () => {
  test("two tickets are matched, the match is followed over the event stream, and its result is posted", async () => {
    const calls: Calls = [];
    const mm = client(calls);
    const queue = await queueFor1v1(mm);
    const alice = unique("alice");
    const bob = unique("bob");
    const first = await ticket(mm, queue, alice, 1010);

    // Follow alice's ticket before bob queues, so the match happens while the stream is open.
    const seen: string[] = [];
    const waiting = mm.waitForMatch(first.id, { signal: AbortSignal.timeout(30_000), onUpdate: (t) => seen.push(t.status) });
    await ticket(mm, queue, bob, 990);
    const matched = await waiting;

    assert.equal(matched.id, first.id);
    assert.equal(matched.status, "matched");
    assert.deepEqual(seen, ["searching", "matched"]);
    const a = matched.assignment;
    assert.ok(a, "a matched ticket carries its assignment");
    assert.match(a.match_id, /^mt-/);
    assert.equal(a.team, 0);
    assert.deepEqual(
      a.teams.map((t) => t.players),
      [[alice], [bob]],
    );
    assert.ok(calls.includes(`GET /v1/queues/${queue}/events`), `the stream was opened: ${calls.join(", ")}`);
    assert.ok(!calls.some((c) => c.includes("wait_s=")), `no long-poll: ${calls.join(", ")}`);

    // The match the queue made.
    const match = await mm.GET("/v1/matches/{id}", { params: { path: { id: a.match_id } } });
    assert.equal(match.error, undefined);
    assert.equal(match.data?.queue, queue);
    assert.equal(match.data?.tickets.length, 2);
    assert.ok(match.data?.tickets.includes(first.id));

    // The game is played: team 0 (alice) won.
    const result = await mm.POST("/v1/results", {
      body: {
        match_id: a.match_id,
        context: { game_type: "ctf" },
        map: "ctf-face",
        duration_s: 600,
        winner: 0,
        teams: a.teams.map((t, i) => ({ side: i === 0 ? "red" : "blue", players: t.players.map((id) => ({ id })) })),
      },
    });
    assert.equal(result.response.status, 201, JSON.stringify(result.error));
    assert.ok(result.data);
    assert.equal(result.data.match_id, a.match_id);
    assert.equal(result.data.win_probability.length, 2);
    const after = new Map(result.data.updates.map((u) => [u.id, u]));
    assert.ok(after.get(alice)!.after > after.get(alice)!.before, "the winner gains");
    assert.ok(after.get(bob)!.after < after.get(bob)!.before, "the loser loses");
    assert.equal(after.get(alice)!.games, 1);

    // A result the service refuses: its problem comes back typed, naming the field.
    const bad = await mm.POST("/v1/results", {
      body: { match_id: unique("mt"), context: { game_type: "ctf" }, map: "ctf-face", duration_s: 600, winner: 5, teams: [] },
    });
    assert.equal(bad.response.status, 400);
    assert.equal(bad.error?.status, 400);
    assert.ok(bad.error?.errors?.some((e) => e.field.startsWith("teams") || e.field === "winner"), JSON.stringify(bad.error));
  });

  test("the waits of a client on one queue share its event stream", async () => {
    const calls: Calls = [];
    const mm = client(calls);
    const name = unique("ts-2v2");
    const queue = await mm.PUT("/v1/queues/{name}", {
      params: { path: { name } },
      body: { context: { game_type: "ctf" }, team_size: 2, tick_ms: 100 },
    });
    assert.equal(queue.error, undefined, JSON.stringify(queue.error));
    // Three players wait: one short of a 2v2.
    const waiting: Promise<Ticket>[] = [];
    for (const rating of [1000, 1010, 990]) {
      const t = await ticket(mm, name, unique("p"), rating);
      waiting.push(mm.waitForMatch(t.id, { signal: AbortSignal.timeout(30_000) }));
    }
    // Each wait has read its ticket on the open stream.
    await until(() => calls.filter((c) => c.startsWith("GET /v1/tickets/")).length === 6);
    await ticket(mm, name, unique("p"), 1005);
    const matched = await Promise.all(waiting);
    assert.deepEqual(
      matched.map((t) => t.status),
      ["matched", "matched", "matched"],
    );
    assert.equal(new Set(matched.map((t) => t.assignment?.match_id)).size, 1, "one match");
    assert.equal(calls.filter((c) => c === `GET /v1/queues/${name}/events`).length, 1, calls.join(", "));
    // The last wait closed the stream: the next one opens it again.
    const late = await ticket(mm, name, unique("p"), 1000);
    const stop = new AbortController();
    const next = mm.waitForMatch(late.id, { signal: stop.signal });
    await until(() => calls.filter((c) => c === `GET /v1/queues/${name}/events`).length === 2);
    stop.abort(new Error("done"));
    await assert.rejects(next, /done/);
  });

  test("waitForMatch over long-polls", async () => {
    const calls: Calls = [];
    const mm = client(calls);
    const queue = await queueFor1v1(mm);
    const first = await ticket(mm, queue, unique("carol"), 1500);
    const waiting = mm.waitForMatch(first.id, { via: "longpoll", pollSeconds: 20, signal: AbortSignal.timeout(30_000) });
    await ticket(mm, queue, unique("dave"), 1490);
    const matched = await waiting;
    assert.equal(matched.status, "matched");
    assert.ok(matched.assignment);
    assert.ok(calls.includes(`GET /v1/tickets/${first.id}?wait_s=20`), calls.join(", "));
    assert.ok(!calls.some((c) => c.includes("/events")), calls.join(", "));
  });

  test("waitForMatch falls back to long-polls where the stream cannot be opened", async () => {
    const calls: Calls = [];
    // A proxy in the way that refuses event streams.
    const mm = client(calls, (req) =>
      req.url.includes("/events") ? new Response("no streams here", { status: 502, headers: { "content-type": "text/plain" } }) : undefined,
    );
    const queue = await queueFor1v1(mm);
    const first = await ticket(mm, queue, unique("erin"), 1200);
    const waiting = mm.waitForMatch(first.id, { signal: AbortSignal.timeout(30_000) });
    await ticket(mm, queue, unique("frank"), 1210);
    const matched = await waiting;
    assert.equal(matched.status, "matched");
    assert.ok(calls.includes(`GET /v1/queues/${queue}/events`), calls.join(", "));
    assert.ok(calls.some((c) => c.startsWith(`GET /v1/tickets/${first.id}?wait_s=`)), calls.join(", "));
  });

  test("a stream the service ends is opened again, and the ticket read again", async () => {
    const calls: Calls = [];
    let ended = false;
    // The first stream ends at once, as at the service's shutdown.
    const mm = client(calls, (req) => {
      if (!req.url.includes("/events") || ended) return undefined;
      ended = true;
      return new Response(": bye\n\n", { status: 200, headers: { "content-type": "text/event-stream" } });
    });
    const queue = await queueFor1v1(mm);
    const first = await ticket(mm, queue, unique("ivan"), 1300);
    const waiting = mm.waitForMatch(first.id, { signal: AbortSignal.timeout(30_000) });
    // Read at the start, once the first stream opened, and once the second did.
    await until(() => calls.filter((c) => c === `GET /v1/tickets/${first.id}`).length === 3);
    assert.equal(calls.filter((c) => c === `GET /v1/queues/${queue}/events`).length, 2, calls.join(", "));
    await ticket(mm, queue, unique("judy"), 1310);
    assert.equal((await waiting).status, "matched");
    // And once more, at the match's event.
    assert.equal(calls.filter((c) => c === `GET /v1/tickets/${first.id}`).length, 4, calls.join(", "));
    assert.ok(!calls.some((c) => c.includes("wait_s=")), calls.join(", "));
  });

  test("a dropped connection, a 503 and a 429 are tried again", async () => {
    const calls: Calls = [];
    const failures = [
      () => {
        throw new TypeError("fetch failed");
      },
      () => new Response("{}", { status: 503, headers: { "content-type": "application/problem+json", "retry-after": "1" } }),
      () => new Response("{}", { status: 429, headers: { "content-type": "application/problem+json", "retry-after": "1" } }),
    ];
    // The first reads of the ticket fail, one way each.
    const mm = client(calls, (req) => (req.url.includes("/v1/tickets/") ? failures.shift()?.() : undefined));
    const queue = await queueFor1v1(mm);
    const first = await ticket(mm, queue, unique("leo"), 1100);
    const waiting = mm.waitForMatch(first.id, { signal: AbortSignal.timeout(30_000) });
    await until(() => failures.length === 0);
    await ticket(mm, queue, unique("mia"), 1100);
    assert.equal((await waiting).status, "matched");
    // Three failed reads, each tried again, then one answered (the match may be made before
    // it, or the stream's event brings one more read).
    assert.ok(calls.filter((c) => c === `GET /v1/tickets/${first.id}`).length >= 4, calls.join(", "));
  });

  test("a cancelled ticket ends the wait, cancelled", async () => {
    const mm = client();
    const queue = await queueFor1v1(mm);
    const lone = await ticket(mm, queue, unique("grace"), 1000);
    const seen: string[] = [];
    const waiting = mm.waitForMatch(lone.id, { signal: AbortSignal.timeout(30_000), onUpdate: (t) => seen.push(t.status) });
    // Cancel once the wait has read the ticket searching (its stream is open or opening).
    await until(() => seen.length > 0);
    const del = await mm.DELETE("/v1/tickets/{id}", { params: { path: { id: lone.id } } });
    assert.equal(del.response.status, 204);
    const ended = await waiting;
    assert.equal(ended.status, "cancelled");
    assert.equal(ended.reason, "cancelled");
    assert.equal(ended.assignment, undefined);
  });

  test("an expired ticket ends the wait, expired", async () => {
    const mm = client();
    const queue = await queueFor1v1(mm);
    const { data, error } = await mm.POST("/v1/queues/{name}/tickets", {
      params: { path: { name: queue } },
      body: { players: [{ id: unique("kim"), rating: 1000 }], ttl_s: 1 },
    });
    assert.ok(data, JSON.stringify(error));
    const ended = await mm.waitForMatch(data.id, { signal: AbortSignal.timeout(30_000) });
    assert.equal(ended.status, "expired");
    assert.equal(ended.reason, "ttl");
  });

  test("the signal ends the wait", { timeout: 15_000 }, async () => {
    const mm = client();
    const queue = await queueFor1v1(mm);
    const lone = await ticket(mm, queue, unique("heidi"), 1000);
    const stop = new AbortController();
    const calls: Calls = [];
    const waiting = client(calls).waitForMatch(lone.id, { signal: stop.signal });
    // Once the stream is open and the ticket read again, the wait reads the stream.
    await until(() => calls.filter((c) => c.startsWith("GET /v1/tickets/")).length === 2);
    assert.ok(calls.includes(`GET /v1/queues/${queue}/events`), calls.join(", "));
    collectGarbage();
    stop.abort(new Error("the player left the lobby"));
    await assert.rejects(waiting, /the player left the lobby/);
    // The ticket is still searching: stopping the wait does not cancel it.
    const now = await mm.GET("/v1/tickets/{id}", { params: { path: { id: lone.id } } });
    assert.equal(now.data?.status, "searching");
  });

  test("an unknown ticket is a MatchmakerError with the service's problem", async () => {
    const mm = client();
    const err = await mm.waitForMatch("tk-doesnotexist").then(
      () => assert.fail("waitForMatch answered"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof MatchmakerError, String(err));
    assert.equal(err.status, 404);
    assert.equal(err.problem?.status, 404);
    assert.match(err.problem?.type ?? "", /not-found/);
  });

  test("a call without the API key is refused", async () => {
    const mm = createClient({ baseUrl: service.url });
    const { data, error, response } = await mm.GET("/v1/queues");
    assert.equal(data, undefined);
    assert.equal(response.status, 401);
    assert.equal(error?.status, 401);
  });

  test("the caller's headers go with the key, and a call's own Authorization wins", async () => {
    const mm = createClient({ baseUrl: service.url, apiKey: service.key, headers: new Headers({ "X-Request-Id": "ts-client-test" }) });
    const ok = await mm.GET("/v1/queues");
    assert.equal(ok.response.status, 200, JSON.stringify(ok.error));
    assert.equal(ok.response.headers.get("X-Request-Id"), "ts-client-test");
    const refused = await mm.GET("/v1/queues", { headers: { Authorization: "Bearer not-a-key" } });
    assert.equal(refused.response.status, 401);
  });

  test("requests are typed from the spec", () => {
    const mm = client();
    // Compile-time checks: tsc fails the build if one of these is no longer an error.
    const never = false;
    if (never) {
      // @ts-expect-error team_size is a number
      void mm.PUT("/v1/queues/{name}", { params: { path: { name: "q" } }, body: { context: { game_type: "ctf" }, team_size: "1" } });
      // @ts-expect-error a ticket needs its players
      void mm.POST("/v1/queues/{name}/tickets", { params: { path: { name: "q" } }, body: {} });
      // @ts-expect-error no such route
      void mm.GET("/v1/no-such-route");
    }
    assert.ok(mm);
  });
});

/** until polls cond every 10 ms until it holds, failing after 10 s. */
async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail("the condition did not hold within 10 s");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

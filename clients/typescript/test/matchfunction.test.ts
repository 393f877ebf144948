// The match function handler against the service's own call: test/testdata/matchfunction.json
// is what the service's encoder and signature make of a pool (client/matchfunction_test.go
// writes it and checks that the service reads and makes its answer); and a queue whose
// function the service calls, served here.
import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";

import {
  answerMatchFunction,
  createClient,
  matchFunctionFetch,
  matchFunctionListener,
  verifyWebhook,
  WebhookSignatureError,
  type MatchFunction,
  type MatchFunctionOptions,
  type ProposedMatch,
} from "../src/index.js";
import { startService } from "./server.js";

interface Fixture {
  secret: string;
  signed_at: string;
  headers: Record<string, string>;
  body: string;
  answer: unknown;
}

const fixture = JSON.parse(readFileSync(new URL("../../test/testdata/matchfunction.json", import.meta.url), "utf8")) as Fixture;
const signedAt = new Date(fixture.signed_at);
const options: MatchFunctionOptions = { now: () => signedAt, maxBody: 8192 };

/** The fixture's function: the oldest ticket against the next two, each player on his first role. */
const firstRoles: MatchFunction = (req) => {
  assert.equal(req.queue, "ranked");
  assert.deepEqual(
    req.pool.map((t) => t.id),
    ["a", "b", "c", "d"],
  );
  assert.equal(req.pool[0]?.attributes?.clan, "wolves");
  assert.equal(req.pool[0]?.tolerances.interval, 150);
  const [a, b, c] = req.pool;
  const roles: Record<string, string> = {};
  for (const t of [a, b, c]) for (const p of t?.players ?? []) roles[p.id] = p.roles?.[0] ?? "";
  return [{ teams: [{ tickets: [a!.id] }, { tickets: [b!.id, c!.id] }], roles }];
};

let server: Server;
let url = "";
let fn: MatchFunction = firstRoles;

before(async () => {
  server = createServer(matchFunctionListener(fixture.secret, (req, signal) => fn(req, signal), options));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function sign(body: string, delivery = "ranked:tick:7", at = signedAt, secret = fixture.secret): Record<string, string> {
  const t = Math.floor(at.getTime() / 1000);
  const v1 = createHmac("sha256", secret).update(`${t}.${delivery}.${body}`).digest("hex");
  return { "x-matchmaker-signature": `t=${t},v1=${v1}`, "x-matchmaker-delivery": delivery };
}

async function post(body: string, headers: Record<string, string>, method = "POST"): Promise<{ status: number; type: string; json: unknown }> {
  const res = await fetch(url, { method, headers: { "content-type": "application/json", ...headers }, body: method === "POST" ? body : undefined });
  return { status: res.status, type: res.headers.get("content-type") ?? "", json: await res.json() };
}

test("the service's call is answered with what the service reads", async () => {
  fn = firstRoles;
  const got = await post(fixture.body, fixture.headers);
  assert.equal(got.status, 200, JSON.stringify(got.json));
  assert.equal(got.type, "application/json");
  assert.deepEqual(got.json, fixture.answer);
});

test("verifyWebhook accepts the service's signature and refuses any change", () => {
  const body = Buffer.from(fixture.body);
  verifyWebhook(fixture.secret, fixture.headers, body, { now: signedAt });
  const refused: [string, () => void][] = [
    ["another body", () => verifyWebhook(fixture.secret, fixture.headers, Buffer.from(fixture.body + " "), { now: signedAt })],
    ["another delivery", () => verifyWebhook(fixture.secret, { ...fixture.headers, "x-matchmaker-delivery": "ranked:tick:8" }, body, { now: signedAt })],
    ["another secret", () => verifyWebhook("another-secret-of-16-bytes", fixture.headers, body, { now: signedAt })],
    ["an hour later", () => verifyWebhook(fixture.secret, fixture.headers, body, { now: new Date(signedAt.getTime() + 3_600_000) })],
    ["no signature", () => verifyWebhook(fixture.secret, {}, body, { now: signedAt })],
    ["not hex", () => verifyWebhook(fixture.secret, { ...fixture.headers, "x-matchmaker-signature": "t=1,v1=zz" }, body, { now: new Date(1000) })],
  ];
  for (const [name, f] of refused) assert.throws(f, WebhookSignatureError, name);
});

test("what the handler refuses, each a problem naming why, the function not called", async () => {
  let called = false;
  fn = () => {
    called = true;
    return [];
  };
  const big = JSON.stringify({ queue: "ranked", teams: 2, pool: Array.from({ length: 1000 }, (_, i) => ({ id: `t${i}` })) });
  const cases: [string, string, Record<string, string>, number, string, string?][] = [
    ["a GET", "", {}, 405, "POST", "GET"],
    ["no signature", fixture.body, {}, 401, "bad signature"],
    ["another delivery id", fixture.body, { ...fixture.headers, "x-matchmaker-delivery": "ranked:tick:8" }, 401, "does not match"],
    ["signed an hour ago", fixture.body, sign(fixture.body, "ranked:tick:7", new Date(signedAt.getTime() - 3_600_000)), 401, "from now"],
    ["not JSON", '{"queue": "ranked", "pool": [', sign('{"queue": "ranked", "pool": ['), 400, "not a MatchFunctionRequest"],
    ["no queue", '{"teams": 2, "pool": []}', sign('{"teams": 2, "pool": []}'), 400, 'no "queue"'],
    ["no teams", '{"queue": "ranked", "pool": []}', sign('{"queue": "ranked", "pool": []}'), 400, 'no "teams"'],
    ["no pool", '{"queue": "ranked", "teams": 2}', sign('{"queue": "ranked", "teams": 2}'), 400, 'no "pool"'],
    ["over the bound", big, sign(big), 413, "over 8192 bytes"],
  ];
  for (const [name, body, headers, status, detail, method] of cases) {
    const got = await post(body, headers, method);
    const p = got.json as { status?: number; detail?: string };
    assert.equal(got.status, status, `${name}: ${JSON.stringify(p)}`);
    assert.equal(got.type, "application/problem+json", name);
    assert.equal(p.status, status, name);
    assert.match(p.detail ?? "", new RegExp(detail.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")), name);
  }
  assert.equal(called, false);
});

test("a function's error is a 500 with its message", async () => {
  fn = () => {
    throw new Error("no model loaded");
  };
  const got = await post(fixture.body, fixture.headers);
  assert.equal(got.status, 500);
  assert.match((got.json as { detail: string }).detail, /the match function failed: no model loaded/);
});

test("the function's signal aborts at the request's deadline, on the leader's clock", async () => {
  const now = new Date(Date.now() - 3_600_000); // the leader's clock an hour behind this host's
  const body = JSON.stringify({ queue: "ranked", teams: 2, team_size: 1, now: now.toISOString(), deadline: new Date(now.getTime() + 50).toISOString(), pool: [] });
  let aborted = false;
  const slow: MatchFunction = (_req, signal) =>
    new Promise<ProposedMatch[]>((resolve) => {
      signal.addEventListener("abort", () => {
        aborted = true;
        resolve([]);
      });
    });
  const started = Date.now();
  // Signed now on this host's clock (the leader's signature time is what it checks), the
  // body's times an hour behind: the function has the body's 50 ms, not none.
  const reply = await answerMatchFunction(fixture.secret, slow, sign(body, "ranked:tick:1", new Date()), Buffer.from(body));
  assert.equal(aborted, true);
  assert.ok(Date.now() - started >= 40, "the function had the request's 50 ms");
  assert.deepEqual(JSON.parse(reply.body), { matches: [] });
});

// The fetch handler answers as the node:http listener does.
test("matchFunctionFetch answers the service's call, and refuses as the listener does", async () => {
  const handle = matchFunctionFetch(fixture.secret, firstRoles, options);
  const call = (body: string, headers: Record<string, string>, method = "POST") =>
    handle(new Request("http://mmf.test/match", { method, headers, body: method === "POST" ? body : undefined }));
  const ok = await call(fixture.body, fixture.headers);
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), fixture.answer);
  const big = JSON.stringify({ queue: "ranked", teams: 2, pool: Array.from({ length: 1000 }, (_, i) => ({ id: `t${i}` })) });
  for (const [name, res, status] of [
    ["a GET", await call("", {}, "GET"), 405],
    ["no signature", await call(fixture.body, {}), 401],
    ["not JSON", await call("{", sign("{")), 400],
    ["over the bound", await call(big, sign(big)), 413],
  ] as const) {
    assert.equal(res.status, status, name);
    assert.equal(res.headers.get("content-type"), "application/problem+json", name);
  }
});

// The decoder against mangled calls (the fixture's body cut, bytes changed, members dropped),
// each signed: a 200 whose answer is a list of matches, or a 400; never a throw or a 500.
test("mangled requests are a 200 or a 400", async () => {
  let seed = 33;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const everyTicketAlone: MatchFunction = (req) => req.pool.map((t) => ({ teams: [{ tickets: [t.id] }] }));
  const statuses = new Map<number, number>();
  for (let i = 0; i < 2000; i++) {
    let body = fixture.body;
    switch (next(3)) {
      case 0:
        body = body.slice(0, next(body.length));
        break;
      case 1:
        for (let k = 0; k < 1 + next(4); k++) {
          const at = next(body.length);
          body = body.slice(0, at) + String.fromCharCode(32 + next(95)) + body.slice(at + 1);
        }
        break;
      default:
        body = body.replace(/"(queue|teams|pool|players|deadline)":/, `"x${next(10)}":`);
    }
    const reply = await answerMatchFunction(fixture.secret, everyTicketAlone, sign(body), Buffer.from(body), options);
    statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
    assert.ok(reply.status === 200 || reply.status === 400, `${reply.status} ${reply.body} for ${body}`);
    if (reply.status === 200) assert.ok(Array.isArray((JSON.parse(reply.body) as { matches: unknown }).matches));
  }
  assert.ok((statuses.get(200) ?? 0) > 0 && (statuses.get(400) ?? 0) > 0, `both answers seen: ${JSON.stringify([...statuses])}`);
});

// The service calls a listener of this client's: a 1v1 queue whose function puts the
// younger ticket on team 0 (the built-in pass puts the older there), so each ticket's
// assignment says who made the match.
test("a queue's matches come from a function the service calls", { timeout: 90_000 }, async () => {
  const service = await startService();
  const secret = "a-secret-of-16-bytes-or-more";
  const pools: string[][] = [];
  const younger: MatchFunction = (req) => {
    pools.push(req.pool.map((t) => t.id));
    const out: ProposedMatch[] = [];
    for (let i = 0; i + 1 < req.pool.length; i += 2) out.push({ teams: [{ tickets: [req.pool[i + 1]!.id] }, { tickets: [req.pool[i]!.id] }] });
    return out;
  };
  const fnServer = createServer(matchFunctionListener(secret, younger));
  await new Promise<void>((resolve) => fnServer.listen(0, "127.0.0.1", resolve));
  try {
    const mm = createClient({ baseUrl: service.url, apiKey: service.key });
    const name = `ts-mmf-${randomUUID().slice(0, 8)}`;
    const url = `http://127.0.0.1:${(fnServer.address() as AddressInfo).port}/match`;
    const put = await mm.PUT("/v1/queues/{name}", {
      params: { path: { name } },
      body: { context: { game_type: "ctf" }, team_size: 1, tick_ms: 100, match_function: { url, secret, timeout_ms: 2000 } },
    });
    assert.equal(put.error, undefined, `PUT /v1/queues/${name} (the service must allow 127.0.0.0/8): ${JSON.stringify(put.error)}`);
    assert.equal(put.data?.match_function?.mode, "replace");
    const ids: string[] = [];
    for (const [player, rating] of [[`old-${name}`, 1000], [`young-${name}`, 1010]] as const) {
      const t = await mm.POST("/v1/queues/{name}/tickets", { params: { path: { name } }, body: { players: [{ id: player, rating }] } });
      assert.equal(t.response.status, 201, JSON.stringify(t.error));
      ids.push(t.data!.id);
    }
    const [older, young] = await Promise.all(ids.map((id) => mm.waitForMatch(id, { signal: AbortSignal.timeout(60_000) })));
    assert.equal(older?.status, "matched");
    assert.equal(older?.assignment?.team, 1, "the function put the older ticket on team 1");
    assert.equal(young?.assignment?.team, 0);
    assert.equal(older?.assignment?.match_id, young?.assignment?.match_id);
    assert.ok(
      pools.some((p) => p.length === 2 && p[0] === ids[0] && p[1] === ids[1]),
      `the function was sent both tickets, oldest first: ${JSON.stringify(pools)}`,
    );
  } finally {
    await new Promise<void>((resolve) => fnServer.close(() => resolve()));
    await service.stop();
  }
});

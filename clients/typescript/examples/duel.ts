// A match from the queue and its result, through the TypeScript client.
import { createClient } from "../src/index.js";

const mm = createClient({ baseUrl: process.env.MATCHMAKER_URL ?? "http://localhost:8080", apiKey: process.env.KEY });

// 1. A 1v1 queue, matched every 200 ms (admin scope).
const queue = await mm.PUT("/v1/queues/{name}", {
  params: { path: { name: "duel" } },
  body: { context: { game_type: "ctf" }, team_size: 1, tick_ms: 200 },
});
if (queue.error) throw new Error(`PUT /v1/queues/duel: ${queue.error.detail}`);

// 2. Two players queue (match scope).
const tickets: string[] = [];
for (const player of [{ id: "alice", rating: 1010 }, { id: "bob", rating: 990 }]) {
  const { data, error } = await mm.POST("/v1/queues/{name}/tickets", {
    params: { path: { name: "duel" } },
    body: { players: [player] },
  });
  if (error) throw new Error(`${player.id} could not queue: ${error.detail}`);
  tickets.push(data.id);
}

// 3. Wait for alice's match over the queue's events (long-polls where a stream cannot open).
const ticket = await mm.waitForMatch(tickets[0]!, { signal: AbortSignal.timeout(60_000) });
if (!ticket.assignment) throw new Error(`ticket ${ticket.id} is ${ticket.status} (${ticket.reason})`);
const { match_id, teams } = ticket.assignment;

// 4. The match: who plays whom.
console.log(`match ${match_id}: ${teams[0]!.players} against ${teams[1]!.players}`);

// 5. Its result, under the match's id (results scope): team 0 won.
const result = await mm.POST("/v1/results", {
  body: {
    match_id,
    context: { game_type: "ctf" },
    map: "ctf-face",
    duration_s: 600,
    winner: 0,
    teams: teams.map((team, i) => ({ side: i === 0 ? "red" : "blue", players: team.players.map((id) => ({ id })) })),
  },
});
if (result.error) throw new Error(`POST /v1/results: ${result.error.detail}`);
for (const u of result.data.updates) console.log(`${u.id}: weight ${u.weight.toFixed(1)} after ${u.games} game(s)`);

// The Matchmaker console: one queue's stats from GET /v1/queues/{name}/stats every 2 s, and
// a ticket from GET /v1/tickets/{id}, asked with the key typed into the page. Plain JavaScript
// for today's browsers, no build step; the charts are uPlot's (vendored beside this file).
// Every value from the API reaches the page as text (textContent), never as markup.
"use strict";

const KEY = "matchmaker.console.key"; // sessionStorage: this tab only, never a cookie
const REFRESH_MS = 2000;

const $ = (id) => document.getElementById(id);
let queueName = "";
let ticketId = ""; // the ticket looked up, followed while it searches
let timer = 0;
let charts = {};

function apiKey() {
  return sessionStorage.getItem(KEY) || "";
}

// api GETs a path of the API; a problem+json answer is thrown as an Error with its detail.
async function api(path) {
  const headers = { Accept: "application/json" };
  const key = apiKey();
  if (key) headers.Authorization = "Bearer " + key;
  const resp = await fetch(path, { headers, cache: "no-store" });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const err = new Error(body.detail || body.title || resp.status + " " + resp.statusText);
    err.status = resp.status;
    throw err;
  }
  return body;
}

function say(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", !!isError);
}

function seconds(s) {
  if (s === undefined || s === null) return "-";
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + String(Math.round(s - m * 60)).padStart(2, "0") + " s";
  return Math.floor(m / 60) + " h " + String(m % 60).padStart(2, "0") + " min";
}

function percent(p) {
  return (100 * p).toFixed(1) + "%";
}

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function fillRows(tbody, rows, columns, emptyText) {
  tbody.replaceChildren();
  if (rows.length === 0) {
    const tr = tbody.insertRow();
    cell(tr, emptyText, "empty").colSpan = columns;
  }
  return rows.map(() => tbody.insertRow());
}

// ---- charts ----

function chartWidth(id) {
  return Math.max(280, $(id).clientWidth);
}

function categoryAxis(names) {
  return {
    splits: () => names.map((_, i) => i),
    values: (_, splits) => splits.map((i) => names[i] ?? ""),
    grid: { show: false },
  };
}

// barSeries is a bar per x: align -1 draws it left of x, 1 right of it, 0 centred on it.
function barSeries(label, color, size, align) {
  return {
    label, stroke: color, fill: color + "cc", width: 1,
    paths: uPlot.paths.bars({ size: [size, 60], align }),
    points: { show: false },
  };
}

// bandChart draws per-band bars: data[0] the band indexes, then one array per series.
function bandChart(id, names, series, data) {
  const opts = {
    width: chartWidth(id), height: 220,
    scales: { x: { time: false, range: [-0.5, names.length - 0.5] }, y: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.1)] } },
    axes: [categoryAxis(names), {}],
    series: [{ label: "band" }, ...series],
    legend: { live: false },
  };
  return new uPlot(opts, data, $(id));
}

function draw(id, make, data) {
  if (charts[id]) {
    charts[id].setData(data);
    return;
  }
  $(id).replaceChildren();
  charts[id] = make(data);
}

function drawCharts(st) {
  const names = st.bands.map((b) => b.band);
  const idx = names.map((_, i) => i);
  draw("chart-bands", (data) => bandChart("chart-bands", names,
    [barSeries("tickets", "#2f6fde", 0.35, -1), barSeries("players", "#e0803a", 0.35, 1)], data),
  [idx, st.bands.map((b) => b.searching_tickets), st.bands.map((b) => b.searching_players)]);

  const per = st.matches_per_minute;
  const ago = per.map((_, i) => i - (per.length - 1));
  draw("chart-matches", (data) => new uPlot({
    width: chartWidth("chart-matches"), height: 220,
    scales: { x: { time: false }, y: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.1)] } },
    axes: [{ values: (_, splits) => splits.map((m) => (m === 0 ? "now" : m + " min")) }, {}],
    series: [{ label: "minute" }, barSeries("matches", "#2f6fde", 0.8, 0)],
    legend: { live: false },
  }, data, $("chart-matches")), [ago, per]);

  const nullable = (v) => (v === undefined ? null : v);
  draw("chart-waits", (data) => bandChart("chart-waits", names,
    [barSeries("median", "#2f6fde", 0.35, -1), barSeries("p90", "#e0803a", 0.35, 1)], data),
  [idx, st.bands.map((b) => nullable(b.wait_s.median)), st.bands.map((b) => nullable(b.wait_s.p90))]);
}

window.addEventListener("resize", () => {
  for (const id in charts) charts[id].setSize({ width: chartWidth(id), height: 220 });
});

// ---- the queue ----

function render(st) {
  $("searching-tickets").textContent = st.searching_tickets;
  $("searching-players").textContent = st.searching_players;
  $("backfills-open").textContent = st.searching_backfills;
  $("oldest-wait").textContent = seconds(st.oldest_wait_s);
  $("matches-minute").textContent = st.matches.last_minute;
  $("matches-hour").textContent = st.matches.last_hour;
  $("wait-median").textContent = seconds(st.wait_s_last_hour.median);
  $("wait-p90").textContent = seconds(st.wait_s_last_hour.p90);
  $("mean-quality").textContent = st.mean_quality === undefined ? "-" : st.mean_quality.toFixed(1);
  $("stats-at").textContent = new Date(st.at).toLocaleTimeString();
  $("stats-source").textContent = st.source;

  const waiting = Object.entries(st.waiting_on || {}).sort((a, b) => b[1] - a[1]);
  const most = Math.max(1, ...waiting.map((w) => w[1]));
  fillRows($("waiting-on").tBodies[0], waiting, 3, "no ticket held").forEach((tr, i) => {
    const [rule, n] = waiting[i];
    cell(tr, rule);
    cell(tr, n, "num");
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.style.width = (100 * n / most).toFixed(1) + "%";
    cell(tr, "").appendChild(bar);
  });

  const expired = Object.entries(st.expired_by_reason).sort((a, b) => b[1] - a[1]);
  fillRows($("expiries").tBodies[0], expired, 2, "none in the last hour").forEach((tr, i) => {
    cell(tr, expired[i][0]);
    cell(tr, expired[i][1], "num");
  });

  renderShadow(st.shadow);

  const ms = st.recent_matches;
  fillRows($("matches").tBodies[0], ms, 7, "no match yet").forEach((tr, i) => {
    const m = ms[i];
    tr.dataset.match = m.id;
    cell(tr, new Date(m.created_at).toLocaleTimeString());
    cell(tr, m.id);
    cell(tr, m.teams[0] ? m.teams[0].average_rating.toFixed(1) : "-", "num");
    cell(tr, m.teams[1] ? m.teams[1].average_rating.toFixed(1) : "-", "num");
    cell(tr, m.average_difference.toFixed(1), "num");
    cell(tr, m.win_probability ? m.win_probability.map(percent).join(" / ") : "-", "num");
    cell(tr, m.teams.map((t) => t.players.join(", ")).join("  vs  "), "players");
  });
  drawCharts(st);
  document.body.dataset.statsAt = st.at;
}

// renderShadow shows a shadow-mode queue's comparison of its rules and its match function.
function renderShadow(sh) {
  $("shadow-card").hidden = !sh;
  if (!sh) return;
  $("shadow-calls").textContent = sh.function_calls + " calls of the function, " + sh.function_failures + " failed.";
  const sides = [["rules", sh.rules], ["function", sh.function]];
  fillRows($("shadow").tBodies[0], sides, 6, "").forEach((tr, i) => {
    const [name, s] = sides[i];
    tr.dataset.side = name;
    cell(tr, name);
    cell(tr, s.matches, "num");
    cell(tr, s.tickets_matched, "num");
    cell(tr, s.mean_average_difference === undefined ? "-" : s.mean_average_difference.toFixed(1), "num");
    cell(tr, seconds(s.median_wait_s), "num");
    const rejected = Object.entries(s.rejected).sort((a, b) => b[1] - a[1]).map(([reason, n]) => reason + " " + n);
    cell(tr, rejected.join(", ") || "-");
  });
}

async function refresh() {
  clearTimeout(timer);
  if (!queueName) return;
  try {
    const st = await api("/v1/queues/" + encodeURIComponent(queueName) + "/stats");
    $("main").hidden = false;
    render(st);
    say("Watching " + st.queue + ".");
    if (ticketId && $("ticket-status").textContent === "searching") await lookup(ticketId, true);
    if (season) await showTiers(true);
  } catch (err) {
    say("Queue " + queueName + ": " + err.message, true);
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

function watch(name) {
  queueName = name.trim();
  history.replaceState(null, "", "#queue=" + encodeURIComponent(queueName));
  for (const id in charts) charts[id].destroy();
  charts = {};
  refresh();
}

// listQueues fills the queue list when the key may list queues (the admin scope); with a
// read key the name is typed.
async function listQueues() {
  const list = $("queues");
  try {
    const { queues } = await api("/v1/queues");
    list.replaceChildren(...queues.map((q) => {
      const o = document.createElement("option");
      o.value = q.name;
      return o;
    }));
    if (!queueName && queues.length > 0) $("queue").placeholder = queues.map((q) => q.name).join(", ");
  } catch (err) {
    list.replaceChildren();
    $("queue").placeholder = "name (listing queues needs the admin scope)";
  }
}

// ---- a ticket ----

// lookup shows a ticket; quiet, it leaves the status line to the queue (a refresh).
async function lookup(id, quiet) {
  ticketId = id;
  try {
    const t = await api("/v1/tickets/" + encodeURIComponent(id));
    $("ticket").hidden = false;
    $("ticket-status").textContent = t.status;
    $("ticket-queue").textContent = t.queue;
    $("ticket-players").textContent = t.players.map((p) => p.id + " (" + p.rating.toFixed(0) + ", " + p.rating_source + ")").join(", ");
    const end = t.status === "searching" ? Date.now() : Date.parse(t.updated_at);
    $("ticket-wait").textContent = seconds(Math.max(0, (end - Date.parse(t.created_at)) / 1000)) +
      (t.status === "searching" ? " so far" : "");
    $("ticket-estimate").textContent = t.estimated_wait_s === undefined ? "-" : seconds(t.estimated_wait_s) + " more";
    const tol = t.tolerances;
    $("ticket-tolerances").textContent = tol
      ? ["interval ±" + tol.interval.toFixed(0)]
        .concat(tol.max_latency_ms === undefined ? [] : ["latency ≤ " + tol.max_latency_ms.toFixed(0) + " ms"])
        .concat(Object.entries(tol.rules || {}).map(([r, v]) => r + " ≤ " + v))
        .join(", ")
      : "-";
    $("ticket-waiting-on").textContent = t.waiting_on ? t.waiting_on.rule + ": " + t.waiting_on.detail : "-";
    const a = t.assignment;
    $("ticket-outcome").textContent = a ? "match " + a.match_id + ", team " + (a.team + 1) : (t.reason || "-");
    $("ticket-standing").textContent = await standings(t.players.map((p) => p.id));
    if (!quiet) say("Ticket " + t.id + " is " + t.status + ".");
  } catch (err) {
    $("ticket").hidden = true;
    say("Ticket " + id + ": " + err.message, true);
  }
}

// standings says, player by player, what his standing holds (GET /v1/players/{id}/standing):
// his dodges, the cooldown he is in, his leaves and the low-priority games he owes, by
// context; "clean" for a player with none.
async function standings(ids) {
  const parts = await Promise.all(ids.map(async (id) => {
    const st = await api("/v1/players/" + encodeURIComponent(id) + "/standing");
    const ctx = st.contexts.map((c) => c.context + ": " + [
      c.dodges.length + (c.dodges.length === 1 ? " dodge" : " dodges"),
      c.cooldown_until ? "cooldown until " + new Date(c.cooldown_until).toISOString().slice(11, 19) + " UTC" : "",
      c.leaves.length + (c.leaves.length === 1 ? " leave" : " leaves"),
      c.low_priority_games ? c.low_priority_games + " low-priority games left" : "",
    ].filter(Boolean).join(", "));
    return id + " " + (ctx.length ? "(" + ctx.join("; ") + ")" : "(clean)");
  }));
  return parts.join(", ");
}

// ---- a season's tiers ----

let season = null; // {game, mutators, name} shown, refreshed with the queue's stats

// showTiers draws a season's tier distribution: players per tier from the lowest, their
// share of the ranked, and how many are still in placement.
async function showTiers(quiet) {
  if (!season) return;
  const q = season.mutators ? "?mutators=" + encodeURIComponent(season.mutators) : "";
  try {
    const d = await api("/v1/seasons/" + encodeURIComponent(season.game) + "/" + encodeURIComponent(season.name) + "/tiers" + q);
    $("ranked").hidden = false;
    $("tiers-season").textContent = d.season;
    $("tiers-context").textContent = d.context.key;
    $("tiers-status").textContent = d.status;
    $("tiers-ranked").textContent = d.ranked;
    $("tiers-placing").textContent = d.placing;
    const most = Math.max(1, ...d.tiers.map((t) => t.players));
    const rows = d.tiers.slice().reverse(); // the highest tier on top
    fillRows($("tiers").tBodies[0], rows, 4, "no tier").forEach((tr, i) => {
      const t = rows[i];
      tr.dataset.tier = t.name;
      cell(tr, t.name);
      cell(tr, t.players, "num");
      cell(tr, d.ranked > 0 ? percent(t.players / d.ranked) : "-", "num");
      const bar = document.createElement("div");
      bar.className = "bar";
      bar.style.width = (100 * t.players / most).toFixed(1) + "%";
      cell(tr, "").appendChild(bar);
    });
    document.body.dataset.tiersAt = String(Date.now());
    if (!quiet) say("Season " + d.season + " of " + d.context.key + ": " + d.ranked + " ranked.");
  } catch (err) {
    $("ranked").hidden = true;
    say("Season " + season.name + ": " + err.message, true);
  }
}

// ---- wiring ----

document.addEventListener("DOMContentLoaded", () => {
  $("key").value = apiKey();
  $("key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $("key").value.trim());
    say("Key set for this tab.");
    listQueues();
    refresh();
  });
  $("queue-form").addEventListener("submit", (e) => {
    e.preventDefault();
    watch($("queue").value);
  });
  $("season-form").addEventListener("submit", (e) => {
    e.preventDefault();
    season = { game: $("season-game").value.trim(), mutators: $("season-mutators").value.trim(), name: $("season-name").value.trim() };
    showTiers(false);
  });
  $("ticket-form").addEventListener("submit", (e) => {
    e.preventDefault();
    lookup($("ticket-id").value.trim());
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) refresh();
  });
  const m = /^#queue=(.+)$/.exec(location.hash);
  if (m) {
    $("queue").value = decodeURIComponent(m[1]);
    watch($("queue").value);
  }
  listQueues();
});

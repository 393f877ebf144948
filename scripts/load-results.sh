#!/usr/bin/env bash
# Loopback load test of POST /v1/results into Postgres with durable commits: a fresh 5v5
# result per request, 10 players drawn from a pool of POOL, 16 connections. Each connection
# draws from its own part of the pool, so no player is in two results at once, as in real
# play; the stress run lets concurrent results share players.
#  1. Maximum throughput: 16 connections as fast as answers come back, DURATION seconds. This
#     also brings the database to a steady state (every pool player rated, the first
#     checkpoint's full-page writes behind it), as a running service's database is.
#  2. Sustained fixed load: RATE results/s for DURATION seconds (open loop, tools/loadgen),
#     with what the database's sessions wait for and how many results share a transaction
#     and a WAL flush.
#  3. Stress: as 1, with players shared between concurrent results (row-lock waits).
#  4. The ceiling: pgbench TPC-B on the same server, 16 clients, 30 s.
# Needs a local Postgres the current user can create databases on (PGURL, default the trust
# setup of the development machine). Every database it creates is dropped at the end.
# Usage: scripts/load-results.sh     (RATE=1000 DURATION=60 POOL=10000 to change)
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-1000}
DURATION=${DURATION:-60}
POOL=${POOL:-10000}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
API_ADDR=127.0.0.1:18081
db="matchmaker_load_$$"
bench="matchmaker_pgbench_$$"

tmp=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "DROP DATABASE IF EXISTS $bench WITH (FORCE)" || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/api" ./cmd/api
go build -o "$tmp/loadgen" ./tools/loadgen
psql -q "$PGURL/postgres" -c "CREATE DATABASE $db"
echo "synchronous_commit: $(psql -tA "$PGURL/$db" -c 'SHOW synchronous_commit'), fsync: $(psql -tA "$PGURL/$db" -c 'SHOW fsync')"

key=load-key
hash=$(printf %s "$key" | sha256sum | cut -d' ' -f1)
DATABASE_URL="$PGURL/$db?sslmode=disable" MATCHMAKER_ADDR=$API_ADDR MATCHMAKER_LOG_LEVEL=warn \
  MATCHMAKER_API_KEYS="load:results:$hash" MATCHMAKER_RATE_LIMITS="results=off" "$tmp/api" >"$tmp/api.log" 2>&1 &
pid=$!
for _ in $(seq 1 50); do curl -fsS "http://$API_ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS "http://$API_ADDR/readyz"; echo

lg() { "$tmp/loadgen" -url "http://$API_ADDR/v1/results" -results-pool "$POOL" -auth "Bearer $key" -conns 16 "$@"; }
echo "== maximum throughput: 16 connections for ${DURATION}s"
max=$(lg -duration "${DURATION}s")
echo "$max"
echo "== fixed load: $RATE results/s for ${DURATION}s, 16 connections"
# Where the time goes: what the database's sessions wait for (sampled every 0.2 s), and how
# many results share a transaction (group commit) and a WAL flush.
counters() {
  psql -tA "$PGURL/$db" -c "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
    (SELECT count(*) FROM matches), (SELECT wal_sync FROM pg_stat_wal)" | tr '|' ' '
}
read -r c0 m0 s0 < <(counters)
( end=$((SECONDS + DURATION + 2))
  while [ $SECONDS -lt $end ]; do
    psql -tA "$PGURL/postgres" -c "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
      WHERE datname = '$db' AND state = 'active' AND pid <> pg_backend_pid()"
    sleep 0.2
  done ) >"$tmp/waits" &
sampler=$!
fixed=$(lg -rate "$RATE" -duration "${DURATION}s")
wait "$sampler"
read -r c1 m1 s1 < <(counters)
echo "$fixed"
waits=$(sort "$tmp/waits" | uniq -c | sort -rn | head -6 | awk '{printf "%s %s, ", $2, $1}')
commits="$((m1 - m0)) results in $((c1 - c0)) transactions and $((s1 - s0)) WAL flushes (the server's, all databases)"
echo "$commits"
echo "waits of the active sessions (samples): $waits"
echo "== stress: players shared between concurrent results, 16 connections for ${DURATION}s"
stress=$(lg -overlap -duration "${DURATION}s")
echo "$stress"
stored=$(psql -tA "$PGURL/$db" -c "SELECT count(*) FROM matches")
echo "results stored: $stored"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

echo "== pgbench TPC-B, scale 10, 16 clients, 30 s (the machine's ceiling)"
psql -q "$PGURL/postgres" -c "CREATE DATABASE $bench"
pgbench -q -i -s 10 "$PGURL/$bench" >/dev/null 2>&1
tpcb=$(pgbench -c 16 -j 2 -T 30 "$PGURL/$bench" 2>/dev/null | awk '/^tps/ {print $3; exit}')
echo "pgbench tps: $tpcb"

echo
echo "max:         $max"
echo "fixed load:  $fixed"
echo "             $commits"
echo "             waits: $waits"
echo "stress:      $stress"
echo "pgbench TPC-B: $tpcb tps"

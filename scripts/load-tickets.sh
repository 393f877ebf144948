#!/usr/bin/env bash
# Loopback load test of durable ticket creation: POST /v1/queues/{name}/tickets into Postgres
# (synchronous_commit and fsync as the server has them: both on here), each ticket committed
# before its 201, concurrent creations group-committed. A fresh ticket per request (new
# players, 80% solo and 20% parties of 2-5, ratings normal around 1000), into a 5v5 queue
# with DESIGN's expansions that the service ticks every second meanwhile, as in production.
#  1. Maximum throughput: CONNS connections as fast as answers come back, DURATION seconds.
#  2. Sustained fixed load: RATE tickets/s for DURATION seconds (open loop, tools/loadgen:
#     latency from each request's due time), with how many tickets share a transaction and
#     a WAL flush, and what the database's active sessions wait for.
#  The maximum run also measures the CPU time spent per ticket by the service, this database's
#  backends and the load generator; with PROFILE=1, a 10 s CPU profile of the service during
#  it (its top printed).
# Needs a local Postgres the current user can create databases on (PGURL, default the trust
# setup of the development machine). The database it creates is dropped at the end.
#  With SLOWEST=N, the fixed load's N slowest requests are printed too, each with the time
#  (UTC) it was due: stalls show as clusters of them, to line up with the queue's ticks.
# Usage: scripts/load-tickets.sh     (RATE=5000 DURATION=30 CONNS=32 TICK_MS=1000 PROFILE=1 SLOWEST=40 to change)
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-5000}
DURATION=${DURATION:-30}
CONNS=${CONNS:-32}
TICK_MS=${TICK_MS:-1000}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
API_ADDR=127.0.0.1:18082
DEBUG_ADDR=127.0.0.1:18083
db="matchmaker_tickets_$$"

tmp=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/api" ./cmd/api
go build -o "$tmp/loadgen" ./tools/loadgen
psql -q "$PGURL/postgres" -c "CREATE DATABASE $db"
echo "synchronous_commit: $(psql -tA "$PGURL/$db" -c 'SHOW synchronous_commit'), fsync: $(psql -tA "$PGURL/$db" -c 'SHOW fsync')"

key=load-key
hash=$(printf %s "$key" | sha256sum | cut -d' ' -f1)
DATABASE_URL="$PGURL/$db?sslmode=disable" MATCHMAKER_ADDR=$API_ADDR MATCHMAKER_DEBUG_ADDR=$DEBUG_ADDR \
  MATCHMAKER_LOG_LEVEL=warn MATCHMAKER_API_KEYS="load:match+admin:$hash" MATCHMAKER_RATE_LIMITS="match=off,admin=off" \
  "$tmp/api" >"$tmp/api.log" 2>&1 &
pid=$!
for _ in $(seq 1 50); do curl -fsS "http://$API_ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS "http://$API_ADDR/readyz"; echo
curl -fsS -X PUT "http://$API_ADDR/v1/queues/load" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d '{
  "context": {"game_type": "ctf"}, "team_size": 5,
  "expansions": {"interval": [{"after_s": 0, "value": 25}, {"after_s": 10, "value": 50}, {"after_s": 30, "value": 150}]},
  "ticket_ttl_s": 300, "tick_ms": '"$TICK_MS"'}' >/dev/null

lg() { "$tmp/loadgen" -url "http://$API_ADDR/v1/queues/load/tickets" -tickets -auth "Bearer $key" -conns "$CONNS" "$@"; }
counters() {
  psql -tA "$PGURL/$db" -c "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
    (SELECT count(*) FROM queue_tickets), (SELECT wal_sync FROM pg_stat_wal)" | tr '|' ' '
}
# CPU time (user + system, in clock ticks) of a process, and of this database's backends.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
backends() { psql -tA "$PGURL/postgres" -c "SELECT pid FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid()"; }
echo "== maximum throughput: $CONNS connections for ${DURATION}s"
declare -A pg0
for b in $(backends); do pg0[$b]=$(ticks "$b"); done
api0=$(ticks "$pid"); read -r _ n0 _ < <(counters)
if [ -n "${PROFILE:-}" ]; then
  ( sleep 5; curl -fsS -o "$tmp/cpu.pprof" "http://$DEBUG_ADDR/debug/pprof/profile?seconds=10" ) &
  profiler=$!
fi
max=$( { /usr/bin/time -f 'loadgen-cpu %U %S' "$tmp/loadgen" -url "http://$API_ADDR/v1/queues/load/tickets" -tickets \
  -auth "Bearer $key" -conns "$CONNS" -duration "${DURATION}s" -warmup 0s; } 2>"$tmp/lgtime")
api1=$(ticks "$pid"); read -r _ n1 _ < <(counters)
pgt=0
for b in $(backends); do pgt=$((pgt + $(ticks "$b") - ${pg0[$b]:-0})); done # the pool grows during the run
hz=$(getconf CLK_TCK); n=$((n1 - n0))
lgcpu=$(awk '/loadgen-cpu/ {print $2 + $3}' "$tmp/lgtime")
cpu=$(awk -v a=$((api1 - api0)) -v p=$pgt -v l="$lgcpu" -v hz="$hz" -v n=$n 'BEGIN {
  printf "CPU per ticket: service %.0f us, database backends %.0f us, load generator %.0f us (%d tickets)", 1e6*a/hz/n, 1e6*p/hz/n, 1e6*l/n, n }')
echo "$max"
echo "$cpu"
if [ -n "${PROFILE:-}" ]; then
  wait "$profiler"
  go tool pprof -top -nodecount 25 "$tmp/api" "$tmp/cpu.pprof" 2>/dev/null | head -32
  go tool pprof -top -cum -nodecount 40 "$tmp/api" "$tmp/cpu.pprof" 2>/dev/null | sed -n 6,46p | grep -E 'matchmaker|pgx|net/http|encoding' | head -25
fi

echo "== fixed load: $RATE tickets/s for ${DURATION}s, $CONNS connections"
read -r c0 t0 s0 < <(counters)
( end=$((SECONDS + DURATION + 2))
  while [ $SECONDS -lt $end ]; do
    psql -tA "$PGURL/postgres" -c "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
      WHERE datname = '$db' AND state = 'active' AND pid <> pg_backend_pid()"
    sleep 0.2
  done ) >"$tmp/waits" &
sampler=$!
fixed=$(lg -rate "$RATE" -duration "${DURATION}s" -slowest "${SLOWEST:-0}")
wait "$sampler"
slow=$(grep '^slow ' <<<"$fixed" || true)
fixed=$(grep -v '^slow ' <<<"$fixed")
read -r c1 t1 s1 < <(counters)
echo "$fixed"
[ -n "$slow" ] && echo "$slow"
waits=$(sort "$tmp/waits" | uniq -c | sort -rn | head -6 | awk '{printf "%s %s, ", $2, $1}')
commits="$((t1 - t0)) tickets in $((c1 - c0)) transactions (every kind, ticks' included) and $((s1 - s0)) WAL flushes (the server's, all databases)"
echo "$commits"
echo "waits of the active sessions (samples): $waits"
status=$(psql -tA "$PGURL/$db" -c "SELECT string_agg(status || ' ' || n, ', ') FROM (SELECT status, count(*) n FROM queue_tickets GROUP BY 1) s")
echo "tickets by status: $status"

echo
echo "max:         $max"
echo "             $cpu"
echo "fixed load:  $fixed"
echo "             $commits"
echo "             waits: $waits"

#!/usr/bin/env bash
# The throughput table (docs/performance.md, "The throughput table"): the real binary on
# Postgres driven by tools/soak as game backends do, for each replica count in REPLICAS and
# each arrival rate in RATES (tickets a second, one player each), DURATION seconds of
# arrivals into a 1v1 queue ticking every 100 ms; every ticket followed on one of 8 shared
# event streams (one per game backend), a result posted per match. All tickets come from ONE
# API key (KEYS=1) with the service's default limits, rate limits included: a run with no
# 429 shows one backend key reaching that rate. One row per run: assignments (matched
# tickets) a second, the arrivals the soak did not send (10,000 tickets waiting or in
# creation at once: a service that falls behind), match-to-client p50/p99, creation p99,
# errors, CPU per ticket and the host's load average before and after (the load driver shares the host's cores).
# Each run's summary (the soak's -json) and table are kept in OUT (default a new directory
# under /tmp, named at the start); the problem details of any errors are printed under the table.
# Needs TEST_DATABASE_URL (a server the soak creates a fresh database on, dropped after).
# Usage: scripts/throughput.sh   (RATES="500 1000" REPLICAS="1 2" DURATION=60 KEYS=1 OUT=dir to change)
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=${RATES:-500 1000 2000 4000}
REPLICAS=${REPLICAS:-1 2}
DURATION=${DURATION:-60}
KEYS=${KEYS:-1}
: "${TEST_DATABASE_URL:?set TEST_DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
OUT=${OUT:-$(mktemp -d /tmp/throughput.XXXXXX)}
mkdir -p "$OUT"
echo "runs kept in $OUT" >&2
go build -o "$tmp/api" ./cmd/api
go build -o "$tmp/soak" ./tools/soak
echo "| replicas | arrivals/s | assignments/s | not sent (10,000 waiting) | match -> client p50 / p99 | creation p99 | errors (429s) | CPU per ticket: replicas / database / soak | load average |"
echo "|---|---|---|---|---|---|---|---|---|"
for n in $REPLICAS; do
  for rate in $RATES; do
    # MATCHMAKER_RATE_LIMITS empty: the service's defaults (the soak turns them off otherwise).
    "$tmp/soak" -bin "$tmp/api" -replicas "$n" -rate "$rate" -duration "${DURATION}s" -drain 10s \
      -wait sse -backends 8 -team-size 1 -parties 0 -tick-ms 100 -keys "$KEYS" \
      -env MATCHMAKER_RATE_LIMITS= -json 2>"$OUT/r$n-$rate.txt" >"$OUT/r$n-$rate.json" || {
      echo "| $n | $rate | the soak failed: $(tail -1 "$OUT/r$n-$rate.txt") |"; continue; }
    jq -r --arg n "$n" --arg rate "$rate" --argjson d "$DURATION" '
      def ms: if . >= 1000 then "\(. / 1000 * 100 | round / 100) s" else "\(. | round) ms" end;
      def us(x): if x < 0 then "-" else "\(x / .created * 1e6 | round)" end;
      ([.errors // {} | to_entries[] | .value | to_entries[] | .value] | add // 0) as $errs |
      ([.errors // {} | to_entries[] | .value["429"] // 0] | add // 0) as $e429 |
      "| \($n) | \($rate) | \((.outcomes.matched // 0) / $d | round) | \(.arrivals_not_sent) | \(.match_to_client_ms.p50 | ms) / \(.match_to_client_ms.p99 | ms) | \(.create_latency_ms.p99 | ms) | \($errs) (\($e429)) | \(us([.replica_cpu_s[]] | add)) / \(us(.db_cpu_s)) / \(us(.soak_cpu_s)) µs | \(.loadavg_start) -> \(.loadavg_end) |"' "$OUT/r$n-$rate.json"
  done
done
for f in "$OUT"/r*.json; do
  jq -r --arg f "$(basename "$f" .json)" '.error_details // {} | to_entries[] | "\($f): \(.key): \(.value | join(" | "))"' "$f"
done

#!/usr/bin/env bash
# Loopback load test of POST /v1/matchmake with a 100-player queue.
#  1. Throughput: wrk (2 threads, 32 connections) against the service and against
#     tools/bareecho (a bare net/http handler that only decodes and re-encodes the same body),
#     one after the other in the same run; prints both and their ratio.
#  2. Latency at a fixed offered load: tools/loadgen, open-loop at RATE requests/s.
# Usage: scripts/load.sh            (DURATION=15 RATE=2000 FIXED_DURATION=30 to change)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-15}
RATE=${RATE:-2000}
FIXED_DURATION=${FIXED_DURATION:-30}
API_ADDR=127.0.0.1:18080
BARE_ADDR=127.0.0.1:18090

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

go build -o "$tmp/api" ./cmd/api
go build -o "$tmp/bareecho" ./tools/bareecho
go build -o "$tmp/loadgen" ./tools/loadgen

python3 - "$tmp/body.json" <<'PY'
import json, random, sys
random.seed(1)
players = [{"id": "player-%05d" % i, "rating": round(random.uniform(0, 2000), 3)} for i in range(100)]
json.dump({"players": players, "team_size": 5}, open(sys.argv[1], "w"))
PY
cat > "$tmp/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$tmp/body.json", "r")
wrk.body = f:read("*a")
f:close()
LUA

MATCHMAKER_ADDR=$API_ADDR MATCHMAKER_LOG_LEVEL=warn "$tmp/api" >"$tmp/api.log" 2>&1 & pids+=($!)
"$tmp/bareecho" -addr $BARE_ADDR >"$tmp/bare.log" 2>&1 & pids+=($!)
for _ in $(seq 1 50); do
  curl -fsS "http://$API_ADDR/healthz" >/dev/null 2>&1 && curl -s -o /dev/null "http://$BARE_ADDR/" && break
  sleep 0.2
done
# Both answer the body with 200 before any load.
curl -fsS -H 'Content-Type: application/json' --data @"$tmp/body.json" "http://$API_ADDR/v1/matchmake" >/dev/null
curl -fsS -H 'Content-Type: application/json' --data @"$tmp/body.json" "http://$BARE_ADDR/v1/matchmake" >/dev/null

throughput() { # url -> requests/s
  if command -v wrk >/dev/null 2>&1; then
    wrk -t2 -c32 -d"${DURATION}s" -s "$tmp/post.lua" "$1" | tee "$tmp/wrk.out" >&2
    if grep -q "Non-2xx" "$tmp/wrk.out"; then echo "non-2xx answers under load" >&2; exit 1; fi
    awk '/Requests\/sec/ {print $2}' "$tmp/wrk.out"
  else
    "$tmp/loadgen" -url "$1" -body "$tmp/body.json" -conns 32 -duration "${DURATION}s" | tee "$tmp/lg.out" >&2
    awk '{print $6}' "$tmp/lg.out"
  fi
}

echo "== bare decode/encode handler (tools/bareecho)"
bare=$(throughput "http://$BARE_ADDR/v1/matchmake")
echo "== POST /v1/matchmake (100 players)"
api=$(throughput "http://$API_ADDR/v1/matchmake")
echo "== fixed offered load: $RATE requests/s for ${FIXED_DURATION}s (tools/loadgen, open loop)"
fixed=$("$tmp/loadgen" -url "http://$API_ADDR/v1/matchmake" -body "$tmp/body.json" -conns 64 -rate "$RATE" -duration "${FIXED_DURATION}s")
echo "$fixed"

echo
awk -v b="$bare" -v a="$api" 'BEGIN { printf "bare handler: %.0f req/s\nmatchmake:    %.0f req/s\nratio:        %.1f%%\n", b, a, 100 * a / b }'
echo "fixed load:   $fixed"

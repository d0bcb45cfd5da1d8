#!/usr/bin/env bash
# Calls a second through `policy gateway --listen` at N clients, for each
# `--threads` count given, in interleaved rounds (1, 2, 1, 2, ...) so that
# the machine's drift falls on every count alike. The setup is
# tests/e2e/load.py's gateway side: the fixture's `echo` behind the gateway
# on standard input, `NoDefer(*)`, 2026-07-28 requests from
# examples/http_load.rs in a closed loop, one keep-alive connection a
# client, loopback only. Each round starts a fresh gateway.
#
#   cargo build --release --bin policy --example http_load --example mcp_fixture
#   tests/e2e/threads.sh [--bin target/release/policy] [--clients 100]
#       [--calls 200] [--rounds 5] [--threads "1 2"]
set -euo pipefail

bin=target/release/policy
examples=""
clients=100
calls=200
rounds=5
threads="1 2"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --examples) examples=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "threads.sh: unknown argument \`$1\`" >&2; exit 2 ;;
  esac
done
bin=$(realpath "$bin")
examples=${examples:-$(dirname "$bin")/examples}
fixture=$(realpath "$examples/mcp_fixture")
driver=$(realpath "$examples/http_load")

work=$(mktemp -d)
gateway=""
finish() {
  if [ -n "$gateway" ]; then
    kill -TERM "$gateway" 2>/dev/null || true
    wait "$gateway" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap finish EXIT

printf 'NoDefer(*)\n' >"$work/p.policy"
printf '{"mcpServers": {"fx": {"command": "%s", "env": {"FIXTURE_TOOLS": "echo"}}}}\n' \
  "$fixture" >"$work/s.json"
bound=$((clients * 2 + 50))

echo "$clients clients x $calls calls, closed loop, loopback; load average $(cut -d' ' -f1 /proc/loadavg)"
declare -A results
for round in $(seq 1 "$rounds"); do
  for n in $threads; do
    : >"$work/err"
    "$bin" gateway --policy "$work/p.policy" --servers "$work/s.json" \
      --listen 127.0.0.1:0 --threads "$n" \
      --max-concurrent "$bound" --max-concurrent-per-caller "$bound" \
      </dev/null 2>"$work/err" &
    gateway=$!
    url=""
    for _ in $(seq 1 600); do
      url=$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/err" | head -1 || true)
      [ -n "$url" ] && break
      sleep 0.05
    done
    if [ -z "$url" ]; then
      echo "the gateway did not start:" >&2
      cat "$work/err" >&2
      exit 1
    fi
    line=$("$driver" --url "$url" --tool fx__echo --clients "$clients" --calls "$calls" \
      --warmup 5 --request-timeout 30 --timeout 300 --json)
    rate=$(printf '%s' "$line" | grep -o '"throughput":[0-9.]*' | cut -d: -f2)
    p50=$(printf '%s' "$line" | grep -o '"p50_ms":[0-9.]*' | cut -d: -f2)
    printf '  round %d  --threads %-2s %8.0f calls/s  p50 %6.2f ms  load %s\n' \
      "$round" "$n" "$rate" "$p50" "$(cut -d' ' -f1 /proc/loadavg)"
    results[$n]="${results[$n]:-} $rate"
    kill -TERM "$gateway"
    wait "$gateway" || true
    gateway=""
  done
done
for n in $threads; do
  median=$(printf '%s\n' ${results[$n]} | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
  printf 'median --threads %-2s %8.0f calls/s\n' "$n" "$median"
done
echo "load average $(cut -d' ' -f1 /proc/loadavg) at the end"

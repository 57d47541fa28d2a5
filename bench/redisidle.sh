#!/usr/bin/env bash
# bench/redisidle.sh — the Redis-keyspace drill: two `sluice serve`
# gateways in mode single on one redis-server whose database also holds
# many keys that are not Sluice's (DEBUG POPULATE), in front of one
# `sluice fake`. For each keyspace size and each binary: what Redis runs
# for idle gateways (commands per second, CPU), then what each call costs
# Redis with 50 clients calling (a budget's hold and settlement, a rate
# limit's admission). See bench/redisidle/main.go.
#
# Usage (from anywhere):  bash bench/redisidle.sh
#   REDISIDLE_KEYS    the keyspace sizes (default "100 1000000")
#   REDISIDLE_BEFORE  a sluice binary to measure as "before" (optional):
#                     build it from a `git worktree add` of the older commit
#   REDISIDLE_IDLE, REDISIDLE_LOAD  the phases' lengths (default 10s each)
#
# Results: bench/results/redis-idle-<short commit>/<label>-<keys>.jsonl,
# their gateways' warnings in <label>-<keys>.log, and table.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/bench
BIN=$B/bin
KEYS=${REDISIDLE_KEYS:-100 1000000}
SHORT=$(cd "$ROOT" && git rev-parse --short HEAD)
OUT=$B/results/redis-idle-$SHORT
TMP=$(mktemp -d /tmp/sluice-redisidle.XXXXXX)
STARTED=()

. "$B/lib.sh" # stop, cleanup
trap cleanup EXIT

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitfor() {
	local what=$1; shift
	for _ in $(seq 300); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	log "gave up waiting for $what"; return 1
}

log "building sluice and redisidle from the work tree ($SHORT)"
mkdir -p "$BIN" "$OUT"
(cd "$ROOT" && go build -o "$BIN/sluice" ./cmd/sluice && go build -o "$BIN/redisidle" ./bench/redisidle)
declare -A BINS=([after]=$BIN/sluice)
LABELS=after
if [ -n "${REDISIDLE_BEFORE:-}" ]; then BINS[before]=$REDISIDLE_BEFORE; LABELS="before after"; fi
debug=(--enable-debug-command yes)
redis-server --version | grep -q 'v=[0-6]\.' && debug=() # DEBUG is on by default before Redis 7

fp=$(freeport)
"$BIN/sluice" fake --listen "127.0.0.1:$fp" >"$TMP/fake.log" 2>&1 & STARTED+=($!)
waitfor "the fake" curl -sf "http://127.0.0.1:$fp/fake/calls"
FAKE=http://127.0.0.1:$fp

for keys in $KEYS; do
	for label in $LABELS; do
		log "$label, $keys keys: starting Redis"
		rp=$(freeport); rdir=$(mktemp -d "$TMP/redis.XXXXXX")
		redis-server --port "$rp" --save "" --appendonly no --bind 127.0.0.1 --loglevel warning --dir "$rdir" "${debug[@]}" >>"$TMP/redis.log" 2>&1 &
		STARTED+=($!)
		waitfor "redis on $rp" redis-cli -p "$rp" ping
		redis-cli -p "$rp" debug populate "$keys" kept-answer >/dev/null
		gws=()
		for i in 1 2; do
			dir=$TMP/$label-$keys/gw$i; mkdir -p "$dir"
			port=$(freeport)
			cat >"$dir/sluice.yaml" <<YAML
listen: 127.0.0.1:$port
state: {backend: redis, url: "redis://127.0.0.1:$rp/0"}
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: $FAKE}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive:
    retry: {max_attempts: 1}
    breaker: {failures: 5, cool: 1s}
budgets:
  - {name: daily, limit_usd: 1000000, period: day}
prices:
  gpt-4o-mini: {input: 0, output: 1}
limits:
  rates:
    - {name: fleet, provider: openai, requests_per_minute: 10000000}
YAML
			"${BINS[$label]}" serve --config "$dir/sluice.yaml" >"$dir/stderr.log" 2>&1 & STARTED+=($!)
			gws+=("127.0.0.1:$port")
		done
		for g in "${gws[@]}"; do waitfor "gateway $g" curl -sf "http://$g/sluice/status.json"; done
		log "$label, $keys keys: 2 gateways up; idle, then 50 clients"
		"$BIN/redisidle" -redis "127.0.0.1:$rp" -label "$label" -idle "${REDISIDLE_IDLE:-10s}" -load "${REDISIDLE_LOAD:-10s}" \
			-gateways "$(IFS=,; echo "${gws[*]}")" >"$OUT/$label-$keys.jsonl"
		{
			echo "$label (${BINS[$label]}), $keys keys, $(date -u +%FT%TZ), nproc $(nproc)"
			echo "the gateways' warnings and errors (at most 50 lines):"
			grep -h 'level=WARN\|level=ERROR' "$TMP/$label-$keys"/gw*/stderr.log | head -50 || true
		} >"$OUT/$label-$keys.log"
		cat "$OUT/$label-$keys.jsonl" >&2
		for pid in "${STARTED[@]:1}"; do stop "$pid"; done
		STARTED=("${STARTED[0]}")
	done
done

{
	echo "| binary | keys | idle: Redis commands/s per gateway | idle: Redis CPU (% of a core) | load: calls/s (not 200) | load: Redis CPU µs per call | load: Redis commands per call | p50 | p99 | load avg (before → after) |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for keys in $KEYS; do
		for label in $LABELS; do
			python3 - "$OUT/$label-$keys.jsonl" <<'PY'
import json, sys
idle, load = [json.loads(l) for l in open(sys.argv[1])]
lat = load.get("latency", {})
print(f'| {idle["label"]} | {idle["keys"]:,} | {idle["redis_commands_per_sec_per_gateway"]:.1f} | {idle["redis_cpu_pct_of_core"]:.2f} | '
      f'{load["calls_per_sec"]:.0f} ({load.get("failed", 0)}) | {load.get("redis_cpu_us_per_call", 0):.1f} | {load.get("redis_commands_per_call", 0):.2f} | '
      f'{lat.get("p50","-")} | {lat.get("p99","-")} | {idle["loadavg_before"]} → {load["loadavg_after"]} |')
PY
		done
	done
} >"$OUT/table.md"
cat "$OUT/table.md"

#!/usr/bin/env bash
# bench/ratelimit.sh — shared rate limits under load: 50 agents, two
# gateways, one provider limit.
#
# Usage (from anywhere):  bash bench/ratelimit.sh
#   RL_D      each scenario's closed loop (default 60s; shorter only to try
#             the script: the figures are then not the claims')
#   RL_TPM_D  the tokens-per-minute scenario's (default 30s)
#   RL_LONG_D the scenarios past the first window's (default 70s)
#   RL_ONLY   run only these scenarios (space-separated names), keeping the
#             others' results; f-limit118-file-long runs only when named here
#
# The fake provider admits 120 requests per minute over a sliding 60 s
# window (sluice fake --rpm 120), answering 429 with Retry-After and
# x-ratelimit-* headers beyond it. Two `sluice serve` processes share one
# state (a directory, or one Redis); 50 clients, 25 on each, call in closed
# loops for RL_D, then the calls still in flight are abandoned (counted as
# cut). Scenarios, each with a fresh fake, fresh gateways and fresh state:
#
#   a-limit-file    limits.rates 120/min on the provider, state directory
#   b-nolimit       no limit configured: only the pauses learnt from the
#                   fake's 429s and x-ratelimit-remaining-* headers
#   c-base-7e71adb  the gateway built from 7e71adb (before the limits)
#   d-limit-redis   as a, the state in a Redis of our own
#   e-limit-file-long  as a, for RL_LONG_D: past the end of the fake's first
#                   60 s window, where its x-ratelimit-remaining-requests
#                   reaches 0 (5 s buckets)
#   f-limit118-file-long  as e, the limit set at 118/min (two under the provider's) (RL_ONLY only)
#   t-tpm           a limit of 10,000 tokens/min on the gateways and the fake,
#                   4 clients, calls of 500 tokens (400-byte body, max_tokens 400)
#
# Policy "agents": timeout {first_byte: 5s, total: 60s}, max_queue 55s (7e71adb
# does not know max_queue: left out there), everything else interactive's.
# Pinning: gateways on CPU 0, the fake, Redis and the clients on CPU 1.
# Results: bench/results/ratelimit-<short commit>/<scenario>/{clients.json,
# attempts.json, summary.txt, limits-end.txt: GET /sluice/limits as the
# clients stop}, env.json and table.md; gateway stderr in
# *-stderr.log there (not committed).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/bench
BIN=$B/bin
BASE_COMMIT=7e71adb
D=${RL_D:-60s}
TPM_D=${RL_TPM_D:-30s}
LONG_D=${RL_LONG_D:-70s}
ONLY=${RL_ONLY:-}
SHORT=$(cd "$ROOT" && git rev-parse --short HEAD)
OUT=$B/results/ratelimit-$SHORT
TMP=$(mktemp -d /tmp/sluice-rlbench.XXXXXX)
STARTED=()

. "$B/lib.sh" # stop, cleanup
trap cleanup EXIT

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port — a port on 127.0.0.1 nothing listens on, not handed out before.
NEXT_PORT=$((20000 + RANDOM % 20000))
free_port() {
	while listening "$NEXT_PORT"; do NEXT_PORT=$((NEXT_PORT + 1)); done
	PORT=$NEXT_PORT
	NEXT_PORT=$((NEXT_PORT + 1))
}

# wait_port PORT — until something listens there (at most 10 s).
wait_port() {
	for _ in $(seq 100); do
		listening "$1" && return 0
		sleep 0.1
	done
	log "nothing listens on 127.0.0.1:$1 after 10 s"
	return 1
}


build() {
	log "building sluice and the load tool at $SHORT, and sluice at $BASE_COMMIT"
	mkdir -p "$BIN"
	(cd "$ROOT" && go build -o "$BIN/sluice" ./cmd/sluice && go build -o "$BIN/load" ./bench/load &&
		go build -o "$BIN/rlprobe" ./bench/rlprobe)
	mkdir -p "$TMP/base"
	(cd "$ROOT" && git archive "$BASE_COMMIT") | tar -x -C "$TMP/base"
	(cd "$TMP/base" && go build -o "$BIN/sluice-$BASE_COMMIT" ./cmd/sluice)
	command -v taskset >/dev/null || { apt-get update -qq && apt-get install -y -qq util-linux >/dev/null; }
	command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
}

# write_config FILE LISTEN_PORT KIND STATE LOG — KIND: limit (120 requests
# per minute), nolimit, base (nolimit for 7e71adb: no max_queue) or tpm
# (10,000 tokens per minute); STATE: the state section.
write_config() {
	cat >"$1" <<EOF
listen: 127.0.0.1:$2
drain: 1s
state: $4
log: {attempts: $5}
providers:
  fake: {kind: openai, base_url: http://127.0.0.1:$FAKE_PORT, max_concurrent: 4096}
routes:
  - {prefix: /openai, provider: fake, policy: agents}
policies:
  agents:
    timeout: {first_byte: 5s, total: 60s}
EOF
	[ "$3" != base ] && echo "    max_queue: 55s" >>"$1"
	case $3 in
	limit) printf 'limits:\n  rates:\n    - {name: fake-rpm, provider: fake, requests_per_minute: 120}\n' >>"$1" ;;
	limit118) printf 'limits:\n  rates:\n    - {name: fake-rpm, provider: fake, requests_per_minute: 118}\n' >>"$1" ;;
	tpm) printf 'limits:\n  rates:\n    - {name: fake-tpm, provider: fake, tokens_per_minute: 10000}\n' >>"$1" ;;
	esac
	return 0
}

# scenario NAME GATEWAY_BINARY KIND BACKEND DURATION CLIENTS FAKE_FLAGS [LOAD_FLAGS...]
# starts a fresh fake and two gateways on fresh shared state, runs the
# clients, stops everything, then reads the attempt logs.
scenario() {
	local name=$1 gwbin=$2 kind=$3 backend=$4 dur=$5 clients=$6 fakeflags=$7
	shift 7
	if [ -n "$ONLY" ]; then
		[[ " $ONLY " == *" $name "* ]] || return 0
		rm -rf "${OUT:?}/$name"
	elif [ "$name" = f-limit118-file-long ]; then
		return 0
	fi
	local dir=$OUT/$name state i pids=() gwports=() urls=() logs=()
	mkdir -p "$dir"
	free_port
	FAKE_PORT=$PORT
	# shellcheck disable=SC2086
	taskset -c 1 "$BIN/sluice" fake --listen "127.0.0.1:$FAKE_PORT" $fakeflags >/dev/null 2>"$OUT/$name-fake-stderr.log" &
	local fake_pid=$!
	STARTED+=("$fake_pid")
	if [ "$backend" = redis ]; then
		redis-cli -p "$REDIS_PORT" flushall >/dev/null
		state="{backend: redis, url: \"redis://127.0.0.1:$REDIS_PORT/0\"}"
	else
		state="{backend: file, dir: $TMP/state-$name}"
	fi
	for i in 1 2; do
		free_port
		write_config "$TMP/$name-gw$i.yaml" "$PORT" "$kind" "$state" "$TMP/$name-gw$i.jsonl"
		taskset -c 0 "$gwbin" serve --config "$TMP/$name-gw$i.yaml" >/dev/null 2>"$OUT/$name-gw$i-stderr.log" &
		pids+=($!)
		STARTED+=($!)
		gwports+=("$PORT")
		urls+=(--url "gw$i=http://127.0.0.1:$PORT/openai")
		logs+=(--log "gw$i=$TMP/$name-gw$i.jsonl")
		wait_port "$PORT"
	done
	wait_port "$FAKE_PORT"
	log "$name: $clients clients over 2 gateways ($gwbin, $kind, $backend) for $dur; fake $fakeflags"
	taskset -c 1 "$BIN/load" ratelimit --name "$name" "${urls[@]}" --fake "http://127.0.0.1:$FAKE_PORT" \
		--c "$clients" --d "$dur" --timeout 90s "$@" >"$dir/clients.json"
	if [ "$kind" != base ]; then # the buckets as the run ends, and when that is
		{ date -u +%FT%T.%NZ; curl -s -m 5 "http://127.0.0.1:${gwports[0]}/sluice/limits"; echo; } >"$dir/limits-end.txt" || true
	fi
	for i in "${pids[@]}" "$fake_pid"; do stop "$i"; done
	"$BIN/load" attemptlog "${logs[@]}" --total 60s >"$dir/attempts.json"
	"$BIN/load" rlreport --dir "$OUT" --scenario "$name" | tee "$dir/summary.txt"
}

env_json() {
	cat >"$OUT/env${ONLY:+-only}.json" <<EOF
{
  "date": "$(date -u +%FT%TZ)",
  "command": "${ONLY:+RL_ONLY='$ONLY' }bash bench/ratelimit.sh",
  "commit": "$(cd "$ROOT" && git rev-parse HEAD)",
  "tree_changed_files": $(cd "$ROOT" && git status --porcelain 2>/dev/null | grep -cv '^?? bench/results/' || true),
  "baseline_commit": "$(cd "$ROOT" && git rev-parse "$BASE_COMMIT")",
  "scenario_seconds": "$D",
  "tpm_seconds": "$TPM_D",
  "long_seconds": "$LONG_D",
  "nproc": $(nproc),
  "cpu_model": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')",
  "kernel": "$(uname -r)",
  "go": "$(go version | cut -d' ' -f3-)",
  "redis": "$(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2)",
  "loadavg_start": "$LOADAVG_START",
  "loadavg_end": "$(cat /proc/loadavg)"
}
EOF
}

main() {
	ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
	build
	[ -z "$ONLY" ] && rm -rf "$OUT"
	mkdir -p "$OUT"
	LOADAVG_START=$(cat /proc/loadavg)
	log "load average at start: $LOADAVG_START"

	free_port
	REDIS_PORT=$PORT
	taskset -c 1 redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$TMP" >/dev/null 2>"$OUT/redis-stderr.log" &
	STARTED+=($!)
	wait_port "$REDIS_PORT"

	local rpm="--rpm 120"
	scenario a-limit-file "$BIN/sluice" limit file "$D" 50 "$rpm"
	scenario b-nolimit "$BIN/sluice" nolimit file "$D" 50 "$rpm"
	scenario c-base-$BASE_COMMIT "$BIN/sluice-$BASE_COMMIT" base file "$D" 50 "$rpm"
	scenario d-limit-redis "$BIN/sluice" limit redis "$D" 50 "$rpm"
	if [ -z "$ONLY" ]; then # slots handed out from 1, 5 and 50 goroutines at once, File against Redis
		log "rlprobe: concurrent Limiter.Wait on a File and a Redis store"
		"$BIN/rlprobe" --redis "127.0.0.1:$REDIS_PORT" --n 1,5,50 | tee "$OUT/rlprobe.txt"
	fi
	scenario e-limit-file-long "$BIN/sluice" limit file "$LONG_D" 50 "$rpm" --bucket 5s
	scenario f-limit118-file-long "$BIN/sluice" limit118 file "$LONG_D" 50 "$rpm" --bucket 5s
	scenario t-tpm "$BIN/sluice" tpm file "$TPM_D" 4 "--tpm 10000" --body-bytes 400 --max-tokens 400 --bucket 5s

	env_json
	"$BIN/load" rlreport --dir "$OUT" | tee "$OUT/table.md"
	log "load average at end: $(cat /proc/loadavg)"
}

main "$@"

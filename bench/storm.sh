#!/usr/bin/env bash
# bench/storm.sh — the 429 storm: 50 agents in closed loops over two
# `sluice serve` gateways sharing one state (a directory, or a
# redis-server the harness starts), in front of a fake OpenAI provider
# whose request limit is a token bucket of 120 a minute refilled
# continuously, answering each admitted call in 300 ms and its 429s at
# once, with Retry-After. No limits: section: the gateways pace calls by
# what they learn. See bench/storm/main.go.
#
# Usage (from anywhere):  bash bench/storm.sh
#   STORM_D     each leg's length (default 60s)
#   STORM_BASE  the commit of the "before" legs (default da037a6)
#   STORM_ONLY  run only these legs (space-separated), keeping the others'
#
# Legs, each with a fresh fake, fresh gateways and a fresh state:
# {before,after}-<kind>-<state>, kind one of
#   exact      a bucket of a minute's worth, exact x-ratelimit- headers
#   quantized  a burst bucket of 10; the headers give the minute's limit and what is left of the burst
#   none       a minute's worth, no rate-limit headers: only Retry-After on the 429s
#   overstate  a minute's worth, the remaining- headers overstated by half the limit
# and state file or redis; before = the gateway built from STORM_BASE,
# after = from the work tree.
#
# Results: bench/results/storm-<short commit>/<leg>.{json,txt}, env.json
# and table.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/bench
BIN=$B/bin
D=${STORM_D:-60s}
BASE=${STORM_BASE:-da037a6}
ONLY=${STORM_ONLY:-}
SHORT=$(cd "$ROOT" && git rev-parse --short HEAD)
OUT=$B/results/storm-$SHORT
TMP=$(mktemp -d /tmp/sluice-storm.XXXXXX)
STARTED=()

. "$B/lib.sh" # stop, cleanup
trap cleanup EXIT

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

build() {
	log "building sluice and storm from the work tree ($SHORT), and sluice at $BASE"
	mkdir -p "$BIN"
	(cd "$ROOT" && go build -o "$BIN/sluice" ./cmd/sluice && go build -o "$BIN/storm" ./bench/storm)
	mkdir -p "$TMP/base"
	(cd "$ROOT" && git archive "$BASE") | tar -x -C "$TMP/base"
	(cd "$TMP/base" && go build -o "$BIN/sluice-$BASE" ./cmd/sluice)
}

leg() {
	local name=$1 bin=$2 kind=$3 state=$4 label=$5
	if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then
		return 0
	fi
	log "$name: $bin, kind $kind, state $state, $D"
	"$BIN/storm" --sluice "$bin" --name "$name" --kind "$kind" --state "$state" --label "$label" --d "$D" --out "$OUT/$name.json" | tee "$OUT/$name.txt"
}

table() {
	echo "| leg | kind | state | gateway | upstream 429s | served/allowed % | past total+1s | wait p50 / p95 (ms) |"
	echo "|---|---|---|---|---|---|---|---|"
	for f in "$OUT"/*.json; do
		[ "$(basename "$f")" = env.json ] && continue
		python3 - "$f" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
w = r['wait_ms']
print(f"| {r['name']} | {r['kind']} | {r['state']} | {r['label']} | {r['upstream_429']} | {r['upstream_admitted']}/{r['allowed']} = {r['served_of_allowed']} | {r['past_total_1s']} | {w['p50']} / {w['p95']} |")
EOF
	done
}

main() {
	# What the binaries are built from, read before the build: the tree
	# may change while the legs run.
	local commit changed tree=$SHORT
	commit=$(cd "$ROOT" && git rev-parse HEAD)
	changed=$(cd "$ROOT" && git status --porcelain 2>/dev/null | grep -cv '^?? bench/results/' || true)
	[ "$changed" != 0 ] && tree="$SHORT+changes"
	build
	[ -z "$ONLY" ] && rm -rf "$OUT"
	mkdir -p "$OUT"
	local load_start
	load_start=$(cat /proc/loadavg)
	local kind state
	for kind in exact quantized none overstate; do
		for state in file redis; do
			leg "before-$kind-$state" "$BIN/sluice-$BASE" "$kind" "$state" "$BASE"
			leg "after-$kind-$state" "$BIN/sluice" "$kind" "$state" "$tree"
		done
	done
	cat >"$OUT/env.json" <<EOF
{
  "date": "$(date -u +%FT%TZ)",
  "command": "${ONLY:+STORM_ONLY='$ONLY' }bash bench/storm.sh",
  "commit": "$commit",
  "tree_changed_files": $changed,
  "base_commit": "$(cd "$ROOT" && git rev-parse "$BASE")",
  "leg_seconds": "$D",
  "nproc": $(nproc),
  "cpu_model": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')",
  "kernel": "$(uname -r)",
  "go": "$(go version | cut -d' ' -f3-)",
  "redis": "$(redis-server --version | head -1)",
  "loadavg_start": "$load_start",
  "loadavg_end": "$(cat /proc/loadavg)"
}
EOF
	table | tee "$OUT/table.md"
}

main "$@"

#!/usr/bin/env bash
# bench/storm.sh — the 429 storm: 50 agents in closed
# loops over two `sluice serve` gateways on one state directory, in front
# of a fake OpenAI provider whose request limit is a token bucket of 120 a
# minute refilled continuously (one request every 500 ms), sending
# x-ratelimit-limit/-remaining/-reset-requests on every answer and
# Retry-After: 1 on its 429s. See bench/storm/main.go.
#
# Usage (from anywhere):  bash bench/storm.sh
#   STORM_D     each leg's length (default 60s)
#   STORM_BASE  the commit of the "before" legs (default 106285e)
#   STORM_ONLY  run only these legs (space-separated), keeping the others'
#
# Legs, each with a fresh fake, fresh gateways and a fresh state directory:
#   before-nolimit   the gateway built from STORM_BASE, no limits: section
#   before-limit120  the same with limits.rates 120/min on the provider
#   after-nolimit    the gateway built from the work tree, no limits: section
#   after-limit120   the same with limits.rates 120/min
#
# Results: bench/results/storm-<short commit>/<leg>.{json,txt}, env.json
# and table.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/bench
BIN=$B/bin
D=${STORM_D:-60s}
BASE=${STORM_BASE:-106285e}
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
	local name=$1 bin=$2 limit=$3 label=$4
	if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then
		return 0
	fi
	log "$name: $bin, limit $limit, $D"
	"$BIN/storm" --sluice "$bin" --name "$name" --limit "$limit" --label "$label" --d "$D" --out "$OUT/$name.json" | tee "$OUT/$name.txt"
}

table() {
	echo "| leg | gateway | limits: | upstream 429s | calls served | gateway 429 | relayed 429 | wait p50 / p95 (ms) | 200s' latency p50 / p95 (ms) |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for f in "$OUT"/*.json; do
		[ "$(basename "$f")" = env.json ] && continue
		python3 - "$f" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
lim = f"{r['configured_limit_rpm']}/min" if r['configured_limit_rpm'] else "none"
w, l = r['wait_ms'], r['latency_ok_ms']
print(f"| {r['name']} | {r['label']} | {lim} | {r['upstream_429']} | {r['served']} | {r['gateway_429']} | {r['relayed_429']} | {w['p50']} / {w['p95']} | {l['p50']} / {l['p95']} |")
EOF
	done
}

main() {
	build
	[ -z "$ONLY" ] && rm -rf "$OUT"
	mkdir -p "$OUT"
	local load_start
	load_start=$(cat /proc/loadavg)
	local tree=$SHORT
	[ "$(cd "$ROOT" && git status --porcelain | grep -cv '^?? bench/results/')" != 0 ] && tree="$SHORT+changes"
	leg before-nolimit "$BIN/sluice-$BASE" 0 "$BASE"
	leg before-limit120 "$BIN/sluice-$BASE" 120 "$BASE"
	leg after-nolimit "$BIN/sluice" 0 "$tree"
	leg after-limit120 "$BIN/sluice" 120 "$tree"
	cat >"$OUT/env.json" <<EOF
{
  "date": "$(date -u +%FT%TZ)",
  "command": "${ONLY:+STORM_ONLY='$ONLY' }bash bench/storm.sh",
  "commit": "$(cd "$ROOT" && git rev-parse HEAD)",
  "tree_changed_files": $(cd "$ROOT" && git status --porcelain 2>/dev/null | grep -cv '^?? bench/results/' || true),
  "base_commit": "$(cd "$ROOT" && git rev-parse "$BASE")",
  "leg_seconds": "$D",
  "nproc": $(nproc),
  "cpu_model": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')",
  "kernel": "$(uname -r)",
  "go": "$(go version | cut -d' ' -f3-)",
  "loadavg_start": "$load_start",
  "loadavg_end": "$(cat /proc/loadavg)"
}
EOF
	table | tee "$OUT/table.md"
}

main "$@"

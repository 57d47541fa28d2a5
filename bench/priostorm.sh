#!/usr/bin/env bash
# bench/priostorm.sh — the 429 storm with priorities: 40 batch agents in
# closed loops and 3 interactive agents each calling every 5 s, over two
# `sluice serve` gateways sharing one state, in front of a fake OpenAI
# provider whose request limit is a token bucket of 120 a minute. See
# bench/priostorm/main.go.
#
# Usage (from anywhere):  bash bench/priostorm.sh
#   PRIO_D     each leg's length (default 60s)
#   PRIO_ONLY  run only these legs (space-separated), keeping the others'
#
# Legs, each with a fresh fake, fresh gateways and a fresh state:
#   file-priorities   one state directory; batch agents send Sluice-Priority: batch
#   file-baseline     the same agents, no header: every call interactive (first come, first served)
#   redis-priorities  a redis-server the harness starts; batch agents send the header
#   redis-baseline    the same, no header
#   file-learned-none       file state, priorities, the fake sending no rate-limit headers (only Retry-After on 429s)
#   redis-learned-none      the same on redis
#   file-learned-quantized  file state, priorities, the fake's bucket a burst of 10 (headers: the minute's limit, the burst's remaining)
# The gateways have no limits: section in any leg: they pace by what they
# learn; the first four legs' fake sends exact headers.
#
# Results: bench/results/priostorm-<short commit>/<leg>.{json,txt} and env.json.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/bench
BIN=$B/bin
D=${PRIO_D:-60s}
ONLY=${PRIO_ONLY:-}
SHORT=$(cd "$ROOT" && git rev-parse --short HEAD)
OUT=$B/results/priostorm-$SHORT

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

leg() {
	local name=$1 state=$2 prio=$3 kind=${4:-exact}
	if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then
		return 0
	fi
	log "$name: state $state, priorities $prio, kind $kind, $D"
	local flags=()
	[ "$prio" = yes ] && flags+=(--priorities)
	"$BIN/priostorm" --sluice "$BIN/sluice" --name "$name" --state "$state" --kind "$kind" "${flags[@]}" --label "$SHORT" --d "$D" --out "$OUT/$name.json" | tee "$OUT/$name.txt"
}

main() {
	# What the binaries are built from, read before the build: the tree
	# may change while the legs run.
	local commit changed
	commit=$(cd "$ROOT" && git rev-parse HEAD)
	changed=$(cd "$ROOT" && git status --porcelain 2>/dev/null | grep -cv '^?? bench/results/' || true)
	log "building sluice and priostorm from the work tree ($SHORT)"
	mkdir -p "$BIN"
	(cd "$ROOT" && go build -o "$BIN/sluice" ./cmd/sluice && go build -o "$BIN/priostorm" ./bench/priostorm)
	[ -z "$ONLY" ] && rm -rf "$OUT"
	mkdir -p "$OUT"
	local load_start
	load_start=$(cat /proc/loadavg)
	leg file-priorities file yes
	leg file-baseline file no
	leg redis-priorities redis yes
	leg redis-baseline redis no
	leg file-learned-none file yes none
	leg redis-learned-none redis yes none
	leg file-learned-quantized file yes quantized
	cat >"$OUT/env.json" <<EOF2
{
  "date": "$(date -u +%FT%TZ)",
  "command": "${ONLY:+PRIO_ONLY='$ONLY' }bash bench/priostorm.sh",
  "commit": "$commit",
  "tree_changed_files": $changed,
  "leg_seconds": "$D",
  "nproc": $(nproc),
  "cpu_model": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')",
  "kernel": "$(uname -r)",
  "go": "$(go version | cut -d' ' -f3-)",
  "redis": "$(redis-server --version | head -1)",
  "loadavg_start": "$load_start",
  "loadavg_end": "$(cat /proc/loadavg)"
}
EOF2
}

main "$@"

#!/usr/bin/env bash
# bench/fleet.sh — the fleet drill: 6 `sluice serve` gateways, each with its
# own state directory as if on its own host, sharing only Redis, in front
# of one `sluice fake`; once per Redis mode: single (one server), sentinel
# (a master, 2 replicas, 3 sentinels) and cluster (3 masters). See
# bench/fleet/main.go for the three phases (one half-open probe
# fleet-wide, the spend cap exact, the rate limit held fleet-wide).
#
# Usage (from anywhere):  bash bench/fleet.sh
#   FLEET_MODES  the modes to run (default "single sentinel cluster")
#   FLEET_N      the gateways (default 6)
#   FLEET_PHASES the phases, in order (default probe,spend,rate)
#
# Results: bench/results/fleet-<short commit>/<mode>.jsonl, <mode>.log
# (the gateways' CROSSSLOT/MOVED/fallback lines counted) and table.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/bench
BIN=$B/bin
MODES=${FLEET_MODES:-single sentinel cluster}
N=${FLEET_N:-6}
SHORT=$(cd "$ROOT" && git rev-parse --short HEAD)
OUT=$B/results/fleet-$SHORT
TMP=$(mktemp -d /tmp/sluice-fleet.XXXXXX)
STARTED=()

. "$B/lib.sh" # stop, cleanup
trap cleanup EXIT

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# waitfor DESC CMD… — runs CMD every 0.1 s until it succeeds, at most 30 s.
waitfor() {
	local what=$1; shift
	for _ in $(seq 300); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	log "gave up waiting for $what"; return 1
}

# redis ARGS… — starts a redis-server in the background, on loopback, in a
# directory of its own under $TMP: redis-server loads the dump.rdb of its
# directory at start (even with --save ""), and a replica writes its copy
# of the master there, so in the caller's directory a dump.rdb left by an
# earlier run would be the new run's starting state.
redis() {
	local dir; dir=$(mktemp -d "$TMP/redis.XXXXXX")
	redis-server "$@" --save "" --appendonly no --bind 127.0.0.1 --loglevel warning --dir "$dir" >>"$TMP/redis.log" 2>&1 &
	STARTED+=($!)
}

# topology MODE — starts Redis and sets STATE to the config's state line.
# It runs in this shell, not in $(…), so STARTED keeps the servers' pids.
topology() {
	local d=$TMP/$1; mkdir -p "$d"
	case $1 in
	single)
		local p; p=$(freeport); redis --port "$p"
		waitfor "redis on $p" redis-cli -p "$p" ping
		STATE="{backend: redis, url: \"redis://127.0.0.1:$p/0\"}" ;;
	sentinel)
		local m r s addrs=""; m=$(freeport); redis --port "$m"
		waitfor "master" redis-cli -p "$m" ping
		for _ in 1 2; do r=$(freeport); redis --port "$r" --replicaof 127.0.0.1 "$m"; done
		for i in 1 2 3; do
			s=$(freeport)
			printf 'port %s\nbind 127.0.0.1\nsentinel monitor fleet 127.0.0.1 %s 2\nsentinel down-after-milliseconds fleet 1000\nsentinel failover-timeout fleet 10000\n' "$s" "$m" >"$d/s$i.conf"
			redis-server "$d/s$i.conf" --sentinel >>"$TMP/redis.log" 2>&1 & STARTED+=($!)
			addrs="$addrs${addrs:+, }\"127.0.0.1:$s\""
		done
		waitfor "the sentinels to see 2 replicas and each other" bash -c \
			"redis-cli -p $s sentinel master fleet | tr '\n' ' ' | grep -q 'num-slaves 2 .*num-other-sentinels 2'"
		STATE="{backend: redis, redis: {mode: sentinel, master: fleet, addrs: [$addrs]}}" ;;
	cluster)
		local p nodes=() addrs=""
		for i in 1 2 3; do
			p=$(freeport)
			redis --port "$p" --cluster-enabled yes --cluster-config-file "nodes-$i.conf" \
				--cluster-port "$(freeport)" --cluster-node-timeout 2000
			waitfor "node $p" redis-cli -p "$p" ping
			nodes+=("127.0.0.1:$p"); addrs="$addrs${addrs:+, }\"127.0.0.1:$p\""
		done
		redis-cli --cluster create "${nodes[@]}" --cluster-yes >"$d/create.log" 2>&1
		waitfor "cluster_state:ok" bash -c "redis-cli -p $p cluster info | grep -q cluster_state:ok"
		STATE="{backend: redis, redis: {mode: cluster, addrs: [$addrs]}}" ;;
	esac
}

log "building sluice and fleet from the work tree ($SHORT)"
mkdir -p "$BIN" "$OUT"
(cd "$ROOT" && go build -o "$BIN/sluice" ./cmd/sluice && go build -o "$BIN/fleet" ./bench/fleet)

fp=$(freeport)
"$BIN/sluice" fake --listen "127.0.0.1:$fp" >"$TMP/fake.log" 2>&1 & STARTED+=($!)
waitfor "the fake" curl -sf "http://127.0.0.1:$fp/fake/calls"
FAKE=http://127.0.0.1:$fp

status=0
for mode in $MODES; do
	log "mode $mode: starting Redis"
	topology "$mode"
	state=$STATE
	gws=()
	for i in $(seq "$N"); do
		dir=$TMP/$mode/gw$i; mkdir -p "$dir"
		port=$(freeport)
		cat >"$dir/sluice.yaml" <<YAML
listen: 127.0.0.1:$port
state: $state
log: {attempts: $dir/attempts.jsonl}
providers:
  openai: {kind: openai, base_url: $FAKE}
  limited: {kind: openai, base_url: $FAKE}
routes:
  - {prefix: /openai, provider: openai}
  - {prefix: /limited, provider: limited}
policies:
  interactive:
    retry: {max_attempts: 1}
    breaker: {failures: 2, cool: 1s}
    max_queue: 100ms
budgets:
  - {name: daily, limit_usd: 1.00, period: day}
prices:
  gpt-4o-mini: {input: 0, output: 20000}
  free: {input: 0, output: 0}
limits:
  rates:
    - {name: fleet, provider: limited, requests_per_minute: 30}
YAML
		"$BIN/sluice" serve --config "$dir/sluice.yaml" >"$dir/stderr.log" 2>&1 & STARTED+=($!)
		gws+=("127.0.0.1:$port")
	done
	for g in "${gws[@]}"; do waitfor "gateway $g" curl -sf "http://$g/sluice/status.json"; done
	log "mode $mode: $N gateways up; driving"
	if ! "$BIN/fleet" -phases "${FLEET_PHASES:-probe,spend,rate}" -mode "$mode" -fake "$FAKE" -gateways "$(IFS=,; echo "${gws[*]}")" >"$OUT/$mode.jsonl"; then status=1; fi
	cat "$TMP/$mode"/gw*/stderr.log >"$TMP/$mode.all"
	{
		echo "mode $mode, $N gateways, commit $SHORT, $(date -u +%FT%TZ)"
		for w in CROSSSLOT MOVED "redis unreachable" "kept, to be sent again"; do
			printf '%-24s %s\n' "$w:" "$(grep -c "$w" "$TMP/$mode.all" || true)"
		done
		echo "the gateways' warnings and errors (at most 100 lines):"
		grep -h 'level=WARN\|level=ERROR' "$TMP/$mode.all" | head -100 || true
	} >"$OUT/$mode.log"
	cat "$OUT/$mode.jsonl" >&2
	# stop this mode's gateways and Redis before the next
	for pid in "${STARTED[@]:1}"; do stop "$pid"; done
	STARTED=("${STARTED[0]}")
done

{
	echo "| mode | phase | calls | upstream | 200 | 503 | 429 | slowest | as wanted |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for mode in $MODES; do
		python3 - "$OUT/$mode.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); s = r["statuses"]
    print(f'| {r["mode"]} | {r["phase"]} | {r["calls"]} | {r["upstream"]} | {s.get("200",0)} | {s.get("503",0)} | {s.get("429",0)} | {r["slowest"]} | {"yes" if r["ok"] else "NO"} |')
PY
	done
} >"$OUT/table.md"
cat "$OUT/table.md"
exit $status

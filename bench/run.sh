#!/usr/bin/env bash
# bench/run.sh — the load harness: the fake upstream, the floor (a bare Go
# httputil.ReverseProxy), nginx and the gateway, side by side in one run.
#
# Usage (from anywhere):  bash bench/run.sh
#   QUICK=1   shorter runs, for trying the script (figures not for publishing)
#   LOAD_MAX  wait (at most 120 s) for the 1-minute load average to fall below
#             this before starting (default 1.5); the value seen is recorded
#
# Pinning (PERFORMANCE.md rig rules): the proxy under test on CPU 0, the fake
# upstreams and the load client on CPU 1. Everything on 127.0.0.1. Results:
# bench/results/*.json and bench/results/summary.txt.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/bench
BIN=$B/bin
OUT=$B/results
QUICK=${QUICK:-0}
LOAD_MAX=${LOAD_MAX:-1.5}

FAKE=127.0.0.1:9090       # answers, streams, 503s
HANGFAKE=127.0.0.1:9091   # script hang: never answers
FLOOR=127.0.0.1:9101
NGINX=127.0.0.1:9102
SLUICE=127.0.0.1:9103

TMP=$(mktemp -d /tmp/sluice-bench.XXXXXX)
STARTED=()

. "$B/lib.sh" # stop, cleanup
trap cleanup EXIT

log() {
	printf '[%s] %s\n' "$(date +%T)" "$*" >&2
	[ -d "$OUT" ] && printf '%s load %s | %s\n' "$(date +%T)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$*" >>"$OUT/loadavg.log"
	return 0
}

# wait_port HOST:PORT — until something listens there (at most 10 s).
wait_port() {
	local host=${1%:*} port=${1##*:}
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	log "nothing listens on $1 after 10 s"
	return 1
}


install_tools() {
	if ! command -v nginx >/dev/null; then
		log "installing nginx"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null ||
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
	fi
	command -v taskset >/dev/null || { apt-get update -qq && apt-get install -y -qq util-linux >/dev/null; }
}

build() {
	log "building sluice, the floor and the load tool"
	mkdir -p "$BIN"
	(cd "$ROOT" && go build -o "$BIN/sluice" ./cmd/sluice && go build -o "$BIN/floor" ./bench/floor &&
		go build -o "$BIN/load" ./bench/load && go build -o "$BIN/nolog" ./bench/nolog)
}

wait_for_quiet() {
	local l
	for _ in $(seq 24); do
		l=$(cut -d' ' -f1 /proc/loadavg)
		awk -v l="$l" -v m="$LOAD_MAX" 'BEGIN{exit !(l < m)}' && return 0
		log "load average $l ≥ $LOAD_MAX; waiting (at most 120 s in all)"
		sleep 5
	done
}

write_sluice_config() { # $1 = attempt log path
	cat >"$TMP/sluice.yaml" <<EOF
listen: $SLUICE
drain: 1s
state: {backend: file, dir: $TMP/state}
log: {attempts: $1}
providers:
  fake:      {kind: openai,    base_url: http://$FAKE, max_concurrent: 4096}
  fake-anth: {kind: anthropic, base_url: http://$FAKE, max_concurrent: 4096}
  hang:      {kind: openai,    base_url: http://$HANGFAKE, max_concurrent: 4096}
  brk:       {kind: openai,    base_url: http://$FAKE}
  tfb:       {kind: openai,    base_url: http://$HANGFAKE}
  tfb2:      {kind: openai,    base_url: http://$HANGFAKE}
  ttotal:    {kind: openai,    base_url: http://$HANGFAKE}
  tidle:     {kind: openai,    base_url: http://$FAKE}
routes:
  - {prefix: /openai,    provider: fake,      policy: interactive}
  - {prefix: /anthropic, provider: fake-anth, policy: interactive}
  - {prefix: /hang,      provider: hang,      policy: held}
  - {prefix: /brk,       provider: brk,       policy: brk}
  - {prefix: /tfb,       provider: tfb,       policy: tfb}
  - {prefix: /tfb2,      provider: tfb2,      policy: tfb2}
  - {prefix: /ttotal,    provider: ttotal,    policy: ttotal}
  - {prefix: /tidle,     provider: tidle,     policy: tidle}
policies:
  interactive: {}          # built-in: 3 attempts, full-jitter backoff, retry budget, breaker 5 / 30 s
  held:                    # for holding 1,000 hung calls: no timeout fires during the test
    timeout: {first_byte: 120s, total: 180s}
    breaker: {failures: 100000}
  brk:
    retry:   {max_attempts: 1}
    breaker: {failures: 1, cool: 1h}
  tfb:
    timeout: {connect: 500ms, first_byte: 1s, total: 2s}
    retry:   {max_attempts: 1}
    breaker: {failures: 1000000}
  tfb2:                    # the same first_byte with another connect: does connect move it?
    timeout: {connect: 200ms, first_byte: 1s, total: 2s}
    retry:   {max_attempts: 1}
    breaker: {failures: 1000000}
  ttotal:
    timeout: {connect: 200ms, first_byte: 1s, total: 1500ms}
    retry:   {max_attempts: 3, base: 10ms, cap: 20ms}
    breaker: {failures: 1000000}
  tidle:
    timeout: {idle: 500ms}
    retry:   {max_attempts: 1}
    breaker: {failures: 1000000}
EOF
}

start_sluice() { # $1 = attempt log path ("off": bench/bin/nolog), $2 = stderr file, $3 = "budget" for a spend cap
	write_sluice_config "$1"
	if [ "${3:-}" = budget ]; then # one daily cap on all traffic, never reached, every model priced
		cat >>"$TMP/sluice.yaml" <<EOF
budgets:
  - {name: bench, limit_usd: 1000000000, period: day}
prices:
  "*": {input: 0.15, output: 0.60}
EOF
	fi
	if [ "$1" = off ]; then
		taskset -c 0 "$BIN/nolog" --config "$TMP/sluice.yaml" >/dev/null 2>"$2" &
	else
		taskset -c 0 "$BIN/sluice" serve --config "$TMP/sluice.yaml" >/dev/null 2>"$2" &
	fi
	SLUICE_PID=$!
	STARTED+=("$SLUICE_PID")
	wait_port "$SLUICE"
}

write_nginx_config() {
	mkdir -p "$TMP/nginx"
	cat >"$TMP/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
worker_rlimit_nofile 20000;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx/body;
  proxy_temp_path $TMP/nginx/proxy;
  fastcgi_temp_path $TMP/nginx/fastcgi;
  uwsgi_temp_path $TMP/nginx/uwsgi;
  scgi_temp_path $TMP/nginx/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 120s;
  upstream fake     { server $FAKE;     keepalive 512; keepalive_requests 1000000; }
  upstream hangfake { server $HANGFAKE; keepalive 64; }
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_buffering off;
  server {
    listen $NGINX backlog=4096;
    location /openai/    { proxy_pass http://fake/; }
    location /anthropic/ { proxy_pass http://fake/; }
    location /hang/      { proxy_pass http://hangfake/; }
  }
}
EOF
}

env_json() { # $1 = file
	local backend
	backend=$(grep -o 'sluice serving.*state=[a-z]*' "$OUT/sluice-stderr.log" | grep -o 'state=[a-z]*' | head -1)
	if grep -qi "not built yet\|falls\? back" "$OUT/sluice-stderr.log" 2>/dev/null; then
		backend="$backend, but: $(grep -i 'not built yet\|falls\? back' "$OUT/sluice-stderr.log" | head -1 | tr -d '"')"
	fi
	cat >"$1" <<EOF
{
  "date": "$(date -u +%FT%TZ)",
  "command": "bash bench/run.sh",
  "quick": $QUICK,
  "nproc": $(nproc),
  "cpu_model": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')",
  "kernel": "$(uname -r)",
  "go": "$(go version | cut -d' ' -f3-)",
  "nginx": "$(nginx -v 2>&1 | cut -d/ -f2)",
  "loadavg_start": "$LOADAVG_START",
  "loadavg_end": "$(cat /proc/loadavg)",
  "sluice_state_backend": "$backend",
  "sluice_attempt_log": "file on disk ($TMP/attempts.jsonl), one write(2) per attempt",
  "git_head": "$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)",
  "tree_changed_files": $(cd "$ROOT" && git status --porcelain 2>/dev/null | wc -l)
}
EOF
}

L() { taskset -c 1 "$BIN/load" "$@"; }

# budget_rounds measures what one spend cap costs: the same gateway (every
# feature on, the attempt log on disk) without and with a daily budget on
# all traffic, three rounds, interleaved, a restart between variants. $1 is
# the closed-loop duration.
budget_rounds() {
	local r name
	for r in 1 2 3; do
		for name in off on; do
			log "budget cost, round $r: $name, closed loop $1"
			rm -rf "$TMP/state"
			if [ "$name" = on ]; then
				start_sluice "$TMP/attempts-budget.jsonl" "$OUT/sluice-budget-$name-stderr.log" budget
			else
				start_sluice "$TMP/attempts-budget.jsonl" "$OUT/sluice-budget-$name-stderr.log"
			fi
			L closed --name "sluice-budget-$name" --url "http://$SLUICE/openai" --c 50 --d "$1" --fake "http://$FAKE" \
				--pids "$SLUICE_PID" --fake-pids "$FAKE_PID" >"$OUT/closed-openai-sluice-budget-$name-r$r.json"
			stop "$SLUICE_PID"
		done
	done
}

# budget_only runs the fake and the budget rounds alone (BUDGET_ONLY=1).
budget_only() {
	install_tools
	build
	mkdir -p "$OUT"
	rm -f "$OUT"/closed-openai-sluice-budget-*.json
	taskset -c 1 "$BIN/sluice" fake --listen "$FAKE" --script 200 >/dev/null 2>"$OUT/fake-stderr.log" &
	FAKE_PID=$!
	STARTED+=("$FAKE_PID")
	wait_port "$FAKE"
	budget_rounds "${BUDGET_D:-4s}"
	"$BIN/load" summary --dir "$OUT" | sed -n '/== budget cost/,/^$/p'
}

main() {
	ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
	install_tools
	build
	mkdir -p "$OUT"
	rm -f "$OUT"/{latency,closed,open,sse,hung,timeout,breaker}-*.json "$OUT"/env.json "$OUT"/summary.txt "$OUT"/*.log # not the soak's
	wait_for_quiet
	LOADAVG_START=$(cat /proc/loadavg)
	log "load average at start: $LOADAVG_START"

	local d_closed=3s closed_rounds=3 closed_rounds_a=2 d_open=3s n_lat=2000 rounds=7 waves=3 k=1000 d_brk=5s d_log=4s n_ttfb=2000
	if [ "$QUICK" = 1 ]; then
		d_closed=1s closed_rounds=1 closed_rounds_a=1 d_open=1s n_lat=200 waves=1 d_brk=1s d_log=1s n_ttfb=200
	fi

	taskset -c 1 "$BIN/sluice" fake --listen "$FAKE" --script 200 >/dev/null 2>"$OUT/fake-stderr.log" &
	FAKE_PID=$!
	STARTED+=("$FAKE_PID")
	taskset -c 1 "$BIN/sluice" fake --listen "$HANGFAKE" --script hang >/dev/null 2>"$OUT/hangfake-stderr.log" &
	HANG_PID=$!
	STARTED+=("$HANG_PID")
	taskset -c 0 "$BIN/floor" --listen "$FLOOR" --upstream "http://$FAKE" --route "/hang=http://$HANGFAKE" 2>"$OUT/floor-stderr.log" &
	FLOOR_PID=$!
	STARTED+=("$FLOOR_PID")
	write_nginx_config
	taskset -c 0 nginx -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx" -e "$TMP/nginx/error.log" 2>"$OUT/nginx-stderr.log" &
	NGX_PID=$!
	STARTED+=("$NGX_PID")
	start_sluice "$TMP/attempts.jsonl" "$OUT/sluice-stderr.log"
	for a in "$FAKE" "$HANGFAKE" "$FLOOR" "$NGINX"; do wait_port "$a"; done
	local ngx_worker
	ngx_worker=$(pgrep -P "$NGX_PID" | head -1)
	local -A PIDS=([floor]=$FLOOR_PID [nginx]="$NGX_PID,$ngx_worker" [sluice]=$SLUICE_PID)
	local -A URLS=([floor]=http://$FLOOR [nginx]=http://$NGINX [sluice]=http://$SLUICE)
	local p dl

	# Memory per held call first, while the proxies are fresh (a Go heap
	# grown by earlier shapes would hide it), after a short warm-up.
	for p in floor nginx sluice; do
		L closed --name "$p-warmup" --url "${URLS[$p]}/openai" --c 10 --d 1s --warmup 0 >/dev/null
		log "hung upstream, $p: $k held calls"
		L hung --name "$p" --url "${URLS[$p]}/hang" --fake "http://$HANGFAKE" --fake-port "${HANGFAKE##*:}" \
			--pids "${PIDS[$p]}" --k "$k" >"$OUT/hung-$p.json"
	done

	for dl in openai anthropic; do
		log "latency, $dl: 1 client, $rounds interleaved rounds"
		L latency --direct "http://$FAKE" --dialect "$dl" --rounds "$rounds" --n "$n_lat" \
			--proxy "floor=${URLS[floor]}/$dl" --proxy "nginx=${URLS[nginx]}/$dl" --proxy "sluice=${URLS[sluice]}/$dl" \
			>"$OUT/latency-$dl.json"
	done

	# Closed loop: interleaved rounds, the order rotated each round, so that
	# a burst of other work on the machine does not land on one target.
	local r i order targets=(direct floor nginx sluice)
	for dl in openai anthropic; do
		local nr=$closed_rounds
		[ "$dl" = anthropic ] && nr=$closed_rounds_a
		for r in $(seq "$nr"); do
			log "closed loop, $dl, round $r/$nr: 50 clients, $d_closed per target"
			for i in 0 1 2 3; do
				p=${targets[$(((i + r) % 4))]}
				if [ "$p" = direct ]; then
					L closed --name direct --url "http://$FAKE" --dialect "$dl" --c 50 --d "$d_closed" --warmup 1s \
						--fake "http://$FAKE" --fake-pids "$FAKE_PID" >"$OUT/closed-$dl-direct-r$r.json"
				else
					L closed --name "$p" --url "${URLS[$p]}/$dl" --dialect "$dl" --c 50 --d "$d_closed" --warmup 1s \
						--fake "http://$FAKE" --pids "${PIDS[$p]}" --fake-pids "$FAKE_PID" >"$OUT/closed-$dl-$p-r$r.json"
				fi
			done
		done
	done

	# Open loop: each rate runs every target in turn.
	local rate
	for rate in 500 1000 2000 4000; do
		log "open loop, $rate req/s for $d_open: direct (what the client side sustains), floor, nginx, sluice"
		L open --name direct --url "http://$FAKE" --rates "$rate" --d "$d_open" --fake "http://$FAKE" \
			--fake-pids "$FAKE_PID" >"$OUT/open-direct-$(printf %04d "$rate").json"
		for p in floor nginx sluice; do
			L open --name "$p" --url "${URLS[$p]}/openai" --rates "$rate" --d "$d_open" --fake "http://$FAKE" \
				--pids "${PIDS[$p]}" --fake-pids "$FAKE_PID" >"$OUT/open-$p-$(printf %04d "$rate").json"
		done
	done

	local sse_common=(--direct "http://$FAKE" --fake "http://$FAKE")
	for p in floor nginx sluice; do
		sse_common+=(--proxy "$p=${URLS[$p]}/openai" --pids "$p=${PIDS[$p]}")
	done
	log "sse: time to first byte at 1 client, $rounds rounds"
	L sse "${sse_common[@]}" --script "stream:events=5" --c 1 --n 100 --waves "$rounds" >"$OUT/sse-ttfb-1.json"
	log "sse: time to first byte at 1 client, $n_ttfb rounds of one stream per target, interleaved"
	L ttfb --direct "http://$FAKE" --proxy "floor=${URLS[floor]}/openai" --proxy "nginx=${URLS[nginx]}/openai" \
		--proxy "sluice=${URLS[sluice]}/openai" --script "stream:events=5" --rounds "$n_ttfb" >"$OUT/sse-ttfb-pairs.json"
	log "sse: 100 concurrent streams, 64 events at 20 ms"
	L sse "${sse_common[@]}" --script "stream:events=64;interval=20ms" --c 100 --waves "$waves" >"$OUT/sse-paced-100.json"
	log "sse: 500 concurrent streams, 64 events at 20 ms"
	L sse "${sse_common[@]}" --script "stream:events=64;interval=20ms" --c 500 --waves 1 >"$OUT/sse-paced-500.json"
	log "sse: 100 concurrent streams, 200 events back to back"
	L sse "${sse_common[@]}" --script "stream:events=200" --c 100 --waves "$waves" >"$OUT/sse-b2b-100.json"

	log "timeouts: first_byte 1 s (connect 500 ms, then 200 ms), total 1.5 s, idle 500 ms"
	L timeout --name first_byte --url "http://$SLUICE/tfb" --kind status --want 1s --c 50 --n 2 >"$OUT/timeout-first_byte.json"
	L timeout --name first_byte-connect200ms --url "http://$SLUICE/tfb2" --kind status --want 1s --c 50 --n 2 \
		>"$OUT/timeout-first_byte-connect200ms.json"
	L timeout --name total --url "http://$SLUICE/ttotal" --kind status --want 1500ms --c 3 --n 4 >"$OUT/timeout-total.json"
	L timeout --name idle --url "http://$SLUICE/tidle" --kind idle --want 500ms --c 20 --n 2 \
		--script "stream:events=10;stall-after=3" >"$OUT/timeout-idle.json"

	log "breaker open: 50 clients for $d_brk"
	L breaker --name sluice --url "http://$SLUICE/brk" --c 50 --d "$d_brk" --fake "http://$FAKE" \
		--pids "$SLUICE_PID" --fake-pids "$FAKE_PID" >"$OUT/breaker-sluice.json"
	log "fast-fail floor: a bare Go handler answering 503, 50 clients for $d_brk"
	L closed --name floor-fail503 --url "http://$FLOOR/fail" --c 50 --d "$d_brk" --expect 503 \
		--pids "$FLOOR_PID" --fake-pids "$FAKE_PID" >"$OUT/closed-openai-floor-fail503.json"
	log "breaker open: open loop 1k / 2k / 4k req/s (fast-fail time without closed-loop queueing)"
	L open --name sluice-breaker-open --url "http://$SLUICE/brk" --rates 1000,2000,4000 --d "$d_open" --expect 503 \
		--pids "$SLUICE_PID" --fake-pids "$FAKE_PID" >"$OUT/open-sluice-breaker-open.json"

	env_json "$OUT/env.json"
	du -b "$TMP/attempts.jsonl" | awk '{print "attempt log bytes:", $1}' >"$OUT/attempt-log-size.log"
	stop "$SLUICE_PID"

	# The attempt log's cost: off (bench/bin/nolog: the same gateway with no
	# log writer), /dev/null, a file on tmpfs, a file on disk; three rounds,
	# interleaved, since a restart is needed between variants.
	local name path r
	for r in 1 2 3; do
		for name in off devnull tmpfs disk; do
			case $name in
			off) path=off ;;
			devnull) path=/dev/null ;;
			tmpfs) path=/dev/shm/sluice-bench-$$.jsonl ;;
			disk) path=$TMP/attempts-logcost.jsonl ;;
			esac
			log "attempt log cost, round $r: $name ($path), closed loop $d_log"
			start_sluice "$path" "$OUT/sluice-logcost-$name-stderr.log"
			L closed --name "sluice-log-$name" --url "http://$SLUICE/openai" --c 50 --d "$d_log" --fake "http://$FAKE" \
				--pids "$SLUICE_PID" --fake-pids "$FAKE_PID" >"$OUT/closed-openai-sluice-log-$name-r$r.json"
			stop "$SLUICE_PID"
		done
	done
	rm -f "/dev/shm/sluice-bench-$$.jsonl"

	budget_rounds "$d_log"

	log "load average at end: $(cat /proc/loadavg)"
	"$BIN/load" summary --dir "$OUT" | tee "$OUT/summary.txt"
}

if [ "${BUDGET_ONLY:-0}" = 1 ]; then
	budget_only
else
	main "$@"
fi

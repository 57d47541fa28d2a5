# bench/lib.sh — what the harness scripts share; source it after setting
# TMP (a scratch directory) and STARTED=() (the pids of what they start).

# stop PID — TERM, then wait (at most 5 s), then KILL.
stop() {
	kill "$1" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$1" 2>/dev/null || true
}

# cleanup — stops everything in STARTED (TERM to all first, so that they
# stop together) and removes $TMP; the scripts' EXIT trap.
cleanup() {
	local pid
	for pid in "${STARTED[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${STARTED[@]}"; do
		stop "$pid"
	done
	rm -rf "$TMP"
}

// Package check is `sluice check`: it validates the config, prints how
// long one call can take at worst under each policy and route, and checks
// systemd units that run agents (or the gateway) against those numbers.
//
// # Worst cases
//
// A policy's worst case (worstcase.go) is every attempt's connect and
// first_byte, plus before each retry the longer of the backoff ceiling and
// max_retry_after with its jitter, bounded by total. The unbounded sum is
// shown next to it; when it passes total, the last attempts of a failing
// call never start. A route's worst case is the primary's schedule and
// then each fallback's, still bounded by total.
//
// # Units
//
// A directory given is searched below it: every .service and .timer file
// in it and its subdirectories, but not in drop-in directories (foo.d,
// read with their unit), hidden directories, or the *.wants, *.requires
// and *.upholds directories of enabled units, whose links name units
// installed elsewhere. A unit reached twice (an alias link) is judged
// once.
//
// Units are read as systemd reads them (systemd.syntax(7), systemd.time(7),
// systemd.unit(5)): comments, continuation lines, later assignments
// replacing earlier ones, drop-ins applied after the main file in the
// order of their file names. Where systemd differs from what one might
// guess, this package follows systemd:
//
//   - an empty TimeoutStopSec= (or any time setting) does not reset it to
//     its default: systemd cannot parse an empty time span, so it ignores
//     the line and keeps the earlier value; this is reported as a finding;
//   - TimeoutStartSec=0 and TimeoutStopSec=0 mean no limit, as infinity
//     does; RuntimeMaxSec=0 is zero;
//   - TimeoutSec= sets both timeouts, and a later TimeoutStartSec= or
//     TimeoutStopSec= replaces the one it names;
//   - Type=oneshot has no start timeout unless one is set, and
//     RuntimeMaxSec= does not apply to it;
//   - TimeoutStartSec= bounds the program's own work only for the types
//     whose start-up lasts until the program says so: oneshot (its whole
//     run), forking, dbus, notify and notify-reload. A simple, exec or idle
//     service has started once it is forked, so its start timeout is not
//     judged.
//
// The defaults assumed are systemd's: DefaultTimeoutStartSec= and
// DefaultTimeoutStopSec= of 90s, no RuntimeMaxSec, no RandomizedDelaySec.
// A host whose system.conf changes them is not seen.
//
// A finding names the file and line where the effective value was set
// (the first line of a continued one), or the unit's own path when the
// value is the default.
//
// A unit that runs `sluice serve` is judged on TimeoutStopSec only,
// against the drain of the config being checked plus the margin: on
// SIGTERM the gateway lets calls in flight finish for up to drain.
//
// # Findings and warnings
//
// A finding (exit 1) is what cuts calls in normal operation: a start or
// runtime limit below the worst case, a calendar timer with no random
// delay, a key systemd does not know in [Unit], [Service], [Timer] or
// [Install] (X- keys are allowed, as systemd allows them), an OnCalendar=
// systemd's calendar grammar refuses, a value systemd ignores. A warning
// is what bites only when someone stops a unit (TimeoutStopSec) or
// restarts the gateway (drain), or a config warning: printed, exit 0
// unless --strict.
//
// Before any of this, the config must pass every check `sluice serve`
// runs at start, the environment included: check builds the gateway on a
// memory store, so an unset api_key_env or admin.token_env fails here with
// serve's message. The state's Redis is asked what serve asks it at start
// (redisconn.Probe): what serve refuses (a state.url that is a sentinel,
// a cluster node or a replica; sentinels none of which knows the master)
// is refused here, exit 2; what serve starts with on local state or with
// less than it was given (a sentinel, a cluster seed or the master that
// does not answer) is a warning of kind state.
//
// # Limits
//
// A limit shorter than one call's worst case is surely too short; a limit
// longer than it may still be too short for an agent that makes several
// calls in a row, which this package cannot see.
package check

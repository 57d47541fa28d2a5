// Package report implements `sluice report`: it reads attempt logs (the
// JSONL lines the transport and the gateway write, one per upstream
// attempt) and tells what they say.
//
// # Input
//
// Run takes attempt-log files: several at once (rotated or written by
// concurrent processes; they are merged by ts), gzip files read as they
// are (detected by their magic bytes, so a piped .gz works too), and "-"
// for standard input. With no file it reads the log the gateway writes:
// the config's log.attempts, else attempts.jsonl in its state directory,
// the config found as sluice serve finds it (--config, else
// $SLUICE_CONFIG, else the built-in defaults, whose log is
// $XDG_STATE_HOME/sluice/attempts.jsonl or
// ~/.local/state/sluice/attempts.jsonl), and says on stderr which log it
// read and which config named it. --config with files is an error. Lines are decoded by the field
// names of sluice.Attempt; unknown fields are ignored. A line that is not a
// JSON object with a valid RFC 3339 ts, or is longer than MaxLineBytes (16 MiB), is
// counted as malformed and skipped. A gzip file cut short is used up to the
// cut and flagged.
//
// # Figures
//
//   - Failed calls first, the incident view: calls that ended on neither
//     ok nor the client's cancellation, per provider, with the
//     first and last failure, whether the provider is still failing (its
//     last call in the log failed: since when) or ok again, and the
//     reasons its calls ended on.
//   - Failures by reason and provider: the reason is the attempt's error
//     class (timeout_idle, stream_cut, quota_exhausted, status_503,
//     error_event_529, …), or its outcome when it has none (circuit_open,
//     budget_exhausted, rate_limited); calls counts the calls that ended
//     on it (the rows add up to the failed calls), attempts every attempt
//     that failed so, retried or not; up to three sample request ids of
//     the latest such calls, to look up next. A client's cancellation is
//     no failure: the call results count it.
//   - Calls, counted alike by every figure, text, --json and page: a
//     call is a request_id (a line without one is a call of its own); a
//     refusal line the log folded ("refused": N) stands for N refused
//     calls, those its refused_ids list (a line written before the log
//     listed them names its own request_id and counts the rest as calls of
//     their own). Attempts are the lines, a folded line counting as the N
//     attempts it refused, and a call answered from a kept answer
//     (replayed) as none; attempts per call is how many of them each call
//     sent upstream, as its Sluice-Attempts header said (0 for a call
//     refused or replayed). A call's result is the answer it returned:
//     the outcome of the attempt it ended on, its line with the highest
//     attempt number (numbers run on across retries, refusals and
//     fallbacks, so a fallback written before the folded refusal line that
//     counts its call still ends it); but when that attempt was refused
//     unsent (circuit_open, budget_exhausted, rate_limited) after one went
//     upstream, the caller got the last upstream attempt's answer (a
//     breaker that opens after the 2nd of 3 attempts: the provider's 503,
//     Sluice-Attempts 2), and the result is fail (timeout when that attempt
//     timed out with no response), its reason that attempt's. Calls
//     answered are those ok and those replayed.
//   - Outcome and status mix: attempts by outcome and by status (0: no
//     response arrived).
//   - Latency and time to first byte: p50, p95, p99 and max per provider
//     and model and overall, by the nearest-rank method (the value at rank
//     ⌈p/100·n⌉ of the sorted values; always an observed value, never an
//     interpolation). Latency counts the attempts that went upstream (every
//     outcome but circuit_open, budget_exhausted, rate_limited and
//     replayed: a replay sends nothing); time to first byte counts those
//     with ttfb_ms > 0.
//   - Retries: attempts with outcome "retry", the sum, p50 and max of the
//     retry_in_ms chosen after them, and what they were retried after.
//   - Queued: attempts that waited for a rate-limit slot (queued_ms > 0),
//     the sum, p50, p99 and max of the waits, and the calls refused with
//     outcome rate_limited (a folded line counts the calls it stands for).
//   - Keys, only when a line names a pool key (its key field, the first 8
//     hex digits of the key's SHA-256; the report prints nothing else of
//     a key): per provider and key, the attempts, and of them ok, rate
//     limited (status 429, error class not quota_exhausted), quota (error
//     class quota_exhausted, as Sluice judged the 429 or stream error event
//     when it wrote the line) and other (every other attempt, retried or
//     not), so that attempts = ok + rate limited + quota + other; and the
//     time of the latest 429 of either kind. A line without a key is not
//     counted. Rows are sorted by provider, then most 429s first, then key;
//     at most 50 are kept, those with the most 429s (then attempts), and
//     the rest are counted as "(N more keys)".
//   - Breaker openings, per provider, from the breaker state each attempt
//     saw when it started: the first attempt that saw "open" starts an
//     opening, the first later one that saw "closed" ends it (an attempt
//     that saw "half_open" is a probe and does not end it). Each opening has
//     its start, end and length, the calls failed fast (outcome
//     circuit_open) during it, its probes, and how the last attempts before
//     it ended (the why, e.g. 5× 503). With breakers scoped per model, the
//     states of a provider's models are read as one.
//   - Spend: the sum of cost_usd per provider and model.
//   - 429s by minute of the hour (UTC): a 60-bucket histogram, drawn as a
//     text bar chart with the busiest minutes named, so that jobs started
//     by cron at :00 stand out.
//
// --request-id ID shows one call instead of the figures: the lines that
// name it (its own, and the folded refusal lines whose refused_ids list
// it), by attempt number, its upstream attempts and its result as the
// figures count them, and which attempt's answer it returned; --json
// prints them as one object (Call). ID is the call's Sluice-Request-Id, or
// the provider's x-request-id of one of its attempts (the log's
// upstream_request_id), which the SDKs show as the request id.
//
// --since and --until keep the attempts with since ≤ ts < until; each
// takes RFC 3339, a date (UTC midnight) or a duration back from now (2h,
// 7d). --json prints the Summary as one JSON object. --html FILE also
// writes a self-contained page (inline CSS and SVG drawn here, no scripts
// or external references) with latency and outcomes over time, 429s by
// minute of the hour and the breaker state timeline.
//
// # Exit codes
//
// 0: the report was produced (an empty log gives an empty report). 1:
// --request-id names no call of the log (said in one line on stderr). 2:
// unusable input: a bad flag, a file that is missing or unreadable, or
// malformed lines and not one readable line. The report has no
// thresholds.
package report

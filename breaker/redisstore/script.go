package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/breaker"
)

// transition is breaker.Settings.Next in Lua, applied atomically to one
// breaker's hash. Times are microseconds, which Lua's numbers (doubles)
// hold exactly; the probe token stays a string.
//
// KEYS[1] the breaker's key. ARGV: event kind, token, slow (0|1), failures,
// cool µs, lease µs, slow count, slow window µs, idle TTL ms, and the time
// in µs ("" for Redis TIME: only tests pass a time), and the outcome's
// generation (Event.Gen, "0" when unchecked). It returns s, f, u, p,
// r, c, n, w, v, e, the time it used and the state before the event (the
// event changed the state when it differs from s). The epoch e is the Redis time the
// key was created: with the version v it orders the records a store sees,
// even across a key that expired or a Redis that restarted empty.
var transition = redis.NewScript(`
local key = KEYS[1]
local kind, token, slow = tonumber(ARGV[1]), ARGV[2], ARGV[3] == '1'
local failures, cool, lease = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local scount, swindow, ttl = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local gen = tonumber(ARGV[11] or '0') or 0
local t
if ARGV[10] ~= '' then
  t = tonumber(ARGV[10])
else
  local tm = redis.call('TIME')
  t = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
end

local h = redis.call('HMGET', key, 's', 'f', 'u', 'p', 'r', 'c', 'n', 'w', 'v', 'e')
local r = {s = tonumber(h[1]) or 0, f = tonumber(h[2]) or 0, u = tonumber(h[3]) or 0,
  p = h[4] or '0', r = h[5] or '', c = tonumber(h[6]) or 0, w = {}}
for x in string.gmatch(h[8] or '', '%d+') do r.w[#r.w + 1] = tonumber(x) end
local n, v, e = tonumber(h[7]) or 0, tonumber(h[9]) or 0, tonumber(h[10]) or t

local CLOSED, OPEN, HALF = 0, 1, 2
local ACQUIRE, SUCCESS, FAILURE, RESET, TRIP = 0, 1, 2, 4, 5

local function open(reason)
  return {s = OPEN, f = 0, u = t + cool, p = '0', r = reason, c = t, w = {}}
end

local function closed()
  return {s = CLOSED, f = 0, u = 0, p = '0', r = '', c = t, w = {}}
end

local function add_slow(w)
  local keep, from = {}, t - swindow
  for _, x in ipairs(w) do
    if x > from then keep[#keep + 1] = x end
  end
  keep[#keep + 1] = t
  while #keep > scount do table.remove(keep, 1) end
  return keep
end

local function next_record()
  if kind == RESET then return closed() end
  if kind == TRIP then return open('manual') end
  if kind == ACQUIRE then
    if (r.s == OPEN or r.s == HALF) and t >= r.u then
      if r.s == OPEN then r.c = t end
      r.s, r.p, r.u = HALF, token, t + lease
    end
    return r
  end
  if gen ~= 0 and gen ~= n + 1 then return r end
  if r.s == CLOSED then
    if kind == FAILURE then
      r.f = r.f + 1
      if r.f >= failures then return open('failures') end
    elseif kind == SUCCESS then
      r.f = 0
      if slow then
        r.w = add_slow(r.w)
        if #r.w >= scount then return open('slow') end
      end
    end
    return r
  end
  if r.s == HALF then
    if token == '0' or token ~= r.p then return r end
    if kind == SUCCESS then return closed() end
    if kind == FAILURE then return open('probe_failed') end
    r.p, r.u = '0', t
    return r
  end
  return r
end

local prev = r.s
local x = next_record()
if x.s ~= prev then n = n + 1 end
v = v + 1

local function d(num) return string.format('%d', num) end
local slows = {}
for i, s in ipairs(x.w) do slows[i] = d(s) end
local w = table.concat(slows, ',')
redis.call('HSET', key, 's', d(x.s), 'f', d(x.f), 'u', d(x.u), 'p', x.p, 'r', x.r,
  'c', d(x.c), 'n', d(n), 'w', w, 'v', d(v), 'e', d(e))
local left = 0
if x.u > t then left = math.ceil((x.u - t) / 1000) end
redis.call('PEXPIRE', key, d(ttl + left))
return {d(x.s), d(x.f), d(x.u), x.p, x.r, d(x.c), d(n), w, d(v), d(e), d(t), d(prev)}
`)

// fields are the hash fields of a record, in the order the script returns
// them.
var fields = []string{"s", "f", "u", "p", "r", "c", "n", "w", "v", "e"}

// redisRecord is a record as Redis holds it: times in Redis-clock
// microseconds.
type redisRecord struct {
	rec        breaker.Record // times still in Redis µs
	epoch, ver uint64
}

// parseRecord reads the fields (in the order of fields) of a record; all
// empty is the zero record.
func parseRecord(f []string) (redisRecord, error) {
	if len(f) < len(fields) {
		return redisRecord{}, fmt.Errorf("redisstore: a record has %d fields, want %d", len(f), len(fields))
	}
	var n numbers
	state := n.uint(f[0])
	r := redisRecord{ver: n.uint(f[8]), epoch: n.uint(f[9]), rec: breaker.Record{
		Failures: int(n.int(f[1])), Until: n.int(f[2]), Probe: n.uint(f[3]), Reason: f[4],
		Changed: n.int(f[5]), Transitions: n.uint(f[6]),
	}}
	if f[7] != "" {
		for s := range strings.SplitSeq(f[7], ",") {
			if s == "" {
				n.err = errors.New("empty slow time")
			}
			r.rec.Slow = append(r.rec.Slow, n.int(s))
		}
	}
	if n.err != nil || state > uint64(breaker.HalfOpen) || r.rec.Failures < 0 {
		return redisRecord{}, fmt.Errorf("redisstore: damaged record %q", f)
	}
	r.rec.State = breaker.State(state)
	return r, nil
}

// parseResult reads what the transition script returns: the record, the
// time it used (Redis µs) and the state the record was in before.
func parseResult(res []string) (redisRecord, int64, breaker.State, error) {
	rr, err := parseRecord(res)
	if err != nil || len(res) != len(fields)+2 {
		return redisRecord{}, 0, 0, fmt.Errorf("redisstore: the transition script answered %q", res)
	}
	var n numbers
	t, from := n.int(res[len(fields)]), n.uint(res[len(fields)+1])
	if n.err != nil || from > uint64(breaker.HalfOpen) {
		return redisRecord{}, 0, 0, fmt.Errorf("redisstore: the transition script answered %q", res)
	}
	return rr, t, breaker.State(from), nil
}

// numbers parses decimal fields, "" as 0, keeping the first error.
type numbers struct{ err error }

func (n *numbers) int(s string) int64 {
	if s == "" || n.err != nil {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	n.err = err
	return v
}

func (n *numbers) uint(s string) uint64 {
	if s == "" || n.err != nil {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	n.err = err
	return v
}

// scriptArgs are the script's ARGV for event e under settings s; now is
// "" outside tests.
func scriptArgs(s breaker.Settings, e breaker.Event, ttl time.Duration, now string) []any {
	slow := "0"
	if e.Slow {
		slow = "1"
	}
	return []any{
		int(e.Kind), strconv.FormatUint(e.Token, 10), slow,
		positive(s.Failures, 5), micros(s.Cool, 30*time.Second), micros(s.Lease, 30*time.Second),
		min(positive(s.Slow.Count, 3), breaker.MaxStoredSlow), micros(s.Slow.Window, time.Minute),
		ttl.Milliseconds(), now, strconv.FormatUint(e.Gen, 10),
	}
}

// positive returns n, or def when n is not positive: the defaults of
// breaker.Settings.
func positive(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// micros returns d (or def when d is not positive) in microseconds,
// rounded up.
func micros(d, def time.Duration) int64 {
	if d <= 0 {
		d = def
	}
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

package redislimit

import "github.com/redis/go-redis/v9"

// Times travel between Go and Lua as two integers, seconds and
// nanoseconds: Lua's numbers are doubles, which hold a Unix time in
// nanoseconds (about 1.8e18) only to 2^53, but hold each part exactly. Sums
// carry and saturate at math.MaxInt64 (9223372036 s 854775807 ns), as
// limit.Step's do. Intervals (cost·Per/Limit, a 128-bit product in Go) are
// worked out in Go and passed in.
const lib = `
local MAXS, MAXN, G = 9223372036, 854775807, 1000000000
local function add(as, an, bs, bn)
  local s, n = as + bs, an + bn
  if n >= G then s, n = s + 1, n - G end
  if s > MAXS or (s == MAXS and n > MAXN) then return MAXS, MAXN end
  return s, n
end
local function sub(as, an, bs, bn)
  local s, n = as - bs, an - bn
  if n < 0 then s, n = s - 1, n + G end
  return s, n
end
local function less(as, an, bs, bn) return as < bs or (as == bs and an < bn) end
local function later(as, an, bs, bn)
  if less(as, an, bs, bn) then return bs, bn end
  return as, an
end
local function clock(s, n)
  if s ~= '' then return tonumber(s), tonumber(n) end
  local t = redis.call('TIME')
  return tonumber(t[1]), tonumber(t[2]) * 1000
end
local function expire(key, s, n, margin)
  redis.call('PEXPIREAT', key, s * 1000 + math.floor(n / 1000000) + margin)
end
local function load(key, f1, f2)
  local h = redis.call('HMGET', key, f1, f2)
  return tonumber(h[1]) or 0, tonumber(h[2]) or 0
end
`

// reserve is limit.Step on the bucket's TAT (fields ts, tn), written back
// when the reservation is made, with the key set to expire idleMargin
// after the later of its TAT and its pause.
//
// ARGV: limits (0|1), interval s n, notBefore s n, maxWait s n, now s n
// ("" "" for Redis TIME), idle margin ms, tolerance s n (0 0 without a
// Burst). It returns ok (0|1), at s n, TAT s n.
var reserveScript = redis.NewScript(lib + `
local key = KEYS[1]
local limits = ARGV[1] == '1'
local is, inn = tonumber(ARGV[2]), tonumber(ARGV[3])
local bs, bn = tonumber(ARGV[4]), tonumber(ARGV[5])
local ws, wn = tonumber(ARGV[6]), tonumber(ARGV[7])
local ns, nn = clock(ARGV[8], ARGV[9])
local margin = tonumber(ARGV[10])
local tls, tln = tonumber(ARGV[11]), tonumber(ARGV[12])
local ts, tn = load(key, 'ts', 'tn')
if not limits then
  local as, an = later(ns, nn, bs, bn)
  return {1, as, an, ts, tn}
end
local as, an = sub(ts, tn, tls, tln)
as, an = later(as, an, ns, nn)
as, an = later(as, an, bs, bn)
local es, en = add(ns, nn, ws, wn)
if less(es, en, as, an) then return {0, as, an, ts, tn} end
local ms, mn = later(ts, tn, as, an)
ts, tn = add(ms, mn, is, inn)
redis.call('HSET', key, 'ts', ts, 'tn', tn)
local ps, pn = load(key, 'ps', 'pn')
local xs, xn = later(ts, tn, ps, pn)
expire(key, xs, xn, margin)
return {1, as, an, ts, tn}
`)

// cancel sets the TAT back to at when it is at + interval, or to
// at + tolerance when it is at + tolerance + interval and the tolerance is
// not zero (limit's cancelled).
//
// ARGV: at s n, interval s n, tolerance s n.
var cancelScript = redis.NewScript(lib + `
local key = KEYS[1]
local ts, tn = load(key, 'ts', 'tn')
local as, an = tonumber(ARGV[1]), tonumber(ARGV[2])
local is, inn = tonumber(ARGV[3]), tonumber(ARGV[4])
local tls, tln = tonumber(ARGV[5]), tonumber(ARGV[6])
if redis.call('EXISTS', key) == 0 then return 0 end
local ws, wn = add(as, an, is, inn)
if ts == ws and tn == wn then
  redis.call('HSET', key, 'ts', as, 'tn', an)
  return 1
end
if tls > 0 or tln > 0 then
  local bs, bn = add(as, an, tls, tln)
  ws, wn = add(bs, bn, is, inn)
  if ts == ws and tn == wn then
    redis.call('HSET', key, 'ts', bs, 'tn', bn)
    return 1
  end
end
return 0
`)

// learn is limit's relearned on a pause key's TAT and learned rate
// (fields rl, the limit, and rp, the period in nanoseconds): a TAT in the
// future held out at another rate is scaled to the new one (in doubles, as
// relearned does in Go), then raised to now + the used units' intervals;
// the rate is kept with when it was learned (la, Unix ms), and the key
// set to expire idleMargin after the later
// of its TAT and its pause.
//
// ARGV: limit, period ns, used interval s n, now s n ("" "" for Redis
// TIME), idle margin ms. It returns the TAT s n.
var learnScript = redis.NewScript(lib + `
local key = KEYS[1]
local L, P = tonumber(ARGV[1]), tonumber(ARGV[2])
local us, un = tonumber(ARGV[3]), tonumber(ARGV[4])
local ns, nn = clock(ARGV[5], ARGV[6])
local ts, tn = load(key, 'ts', 'tn')
local ol, op = load(key, 'rl', 'rp')
if ol > 0 and op > 0 and (ol ~= L or op ~= P) and less(ns, nn, ts, tn) then
  local ds, dn = sub(ts, tn, ns, nn)
  local d = math.floor((ds * G + dn) * ((P / L) / (op / ol)))
  if d >= 9223372036854775807 then
    ts, tn = MAXS, MAXN
  else
    local s = math.floor(d / G)
    ts, tn = add(ns, nn, s, d - s * G)
  end
end
ts, tn = later(ts, tn, add(ns, nn, us, un))
redis.call('HSET', key, 'ts', ts, 'tn', tn, 'rl', ARGV[1], 'rp', ARGV[2], 'la', ns * 1000 + math.floor(nn / 1000000))
local ps, pn = load(key, 'ps', 'pn')
local xs, xn = later(ts, tn, ps, pn)
expire(key, xs, xn, tonumber(ARGV[7]))
return {ts, tn}
`)

// settle moves the TAT later by an interval (ARGV[1] '+') or earlier
// (ARGV[1] '-', a TAT in the future only, never below now).
//
// ARGV: sign, interval s n, now s n ("" "" for Redis TIME), idle margin ms.
var settleScript = redis.NewScript(lib + `
local key = KEYS[1]
local ds, dn = tonumber(ARGV[2]), tonumber(ARGV[3])
local ns, nn = clock(ARGV[4], ARGV[5])
local ts, tn = load(key, 'ts', 'tn')
if ARGV[1] == '+' then
  ts, tn = add(ts, tn, ds, dn)
else
  if not less(ns, nn, ts, tn) then return 0 end
  local bs, bn = sub(ts, tn, ds, dn)
  ts, tn = later(bs, bn, ns, nn)
end
redis.call('HSET', key, 'ts', ts, 'tn', tn)
local ps, pn = load(key, 'ps', 'pn')
local xs, xn = later(ts, tn, ps, pn)
expire(key, xs, xn, tonumber(ARGV[6]))
return 1
`)

// pause keeps the later of the key's pause and until.
//
// ARGV: until s n, idle margin ms.
var pauseScript = redis.NewScript(lib + `
local key = KEYS[1]
local us, un = tonumber(ARGV[1]), tonumber(ARGV[2])
local ps, pn = load(key, 'ps', 'pn')
if not less(ps, pn, us, un) then return 0 end
redis.call('HSET', key, 'ps', us, 'pn', un)
local ts, tn = load(key, 'ts', 'tn')
local xs, xn = later(ts, tn, us, un)
expire(key, xs, xn, tonumber(ARGV[3]))
return 1
`)

// acquire drops the key's expired leases, counts the others and, if they
// are fewer than the limit, adds the lease member until now + lease; the
// key expires with its last lease. Times are Unix milliseconds, which Lua's
// doubles hold exactly.
//
// ARGV: limit, lease ms, member, now s n ("" "" for Redis TIME). It
// returns ok (0|1) and the leases held after it.
var acquireScript = redis.NewScript(lib + `
local key = KEYS[1]
local limit, lease, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local ns, nn = clock(ARGV[4], ARGV[5])
local now = ns * 1000 + math.floor(nn / 1000000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local n = redis.call('ZCARD', key)
if n >= limit then return {0, n} end
redis.call('ZADD', key, now + lease, member)
local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', key, tonumber(last[2]))
return {1, n + 1}
`)

// inFlight drops the key's expired leases and counts the others.
//
// ARGV: now s n ("" "" for Redis TIME).
var inFlightScript = redis.NewScript(lib + `
local key = KEYS[1]
local ns, nn = clock(ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', ns * 1000 + math.floor(nn / 1000000))
return redis.call('ZCARD', key)
`)

// pace is limit.PaceStep on a pause key's pace (fields vi, the interval
// in ns; va, when it was cut, Unix ms; vk, the answers since; vs, steady
// 0|1; vl, when it last learned, Unix ms), in the same float64 operations
// in the same order (Lua's numbers are doubles), so that Go and Lua agree
// to the bit (TestPaceScriptEqualsPaceStep). The key is set to expire
// idleMargin after the latest of its TAT, its pause and vl.
//
// ARGV: sent ms, limited 0|1, Retry-After ns, ceiling (calls per second),
// now s n ("" "" for Redis TIME), idle margin ms. It returns the pace's
// fields vi, va, vk, vs, vl.
var paceScript = redis.NewScript(lib + `
local key = KEYS[1]
local sent, limited, ra, ceil = tonumber(ARGV[1]), ARGV[2] == '1', tonumber(ARGV[3]), tonumber(ARGV[4])
local ns, nn = clock(ARGV[5], ARGV[6])
local now = ns * 1000 + math.floor(nn / 1000000)
local h = redis.call('HMGET', key, 'vi', 'va', 'vk', 'vs', 'vl')
local iv, at, ok, steady, last = tonumber(h[1]) or 0, tonumber(h[2]) or 0, tonumber(h[3]) or 0, tonumber(h[4]) or 0, tonumber(h[5]) or 0
local changed = false
if not limited then
  if iv > 0 and sent > at then
    ok = ok + 1
    if now > last then last = now end
    changed = true
  end
elseif not (iv > 0 and (sent <= at or (sent <= at + 250 and ok < 4))) then
  local cur = 0
  if iv > 0 then
    local gain = 0.5
    if steady == 1 then gain = 0.01 end
    cur = 1e9 / iv + gain * ok
  end
  if ceil > 0 and (cur <= 0 or ceil < cur) then cur = ceil end
  local nxt
  local st = 0
  if cur <= 0 then
    if ra < 1e9 then ra = 1e9 end
    nxt = 1e9 / ra
  elseif iv > 0 and ok >= 4 and now > at then
    nxt = ok * 1000 / (now - at)
    nxt = math.max(math.min(nxt, cur * 0.9), cur * 0.03125)
    st = 1
  elseif iv > 0 and now > at then
    nxt = math.min(cur * 0.5, (ok + 1) * 1000 / (now - at))
  else
    nxt = cur * 0.5
  end
  iv = math.min(math.max(math.ceil(1e9 / nxt), 1), 3600000000000)
  at, ok, steady, last = now, 0, st, now
  changed = true
end
if changed then
  redis.call('HSET', key, 'vi', iv, 'va', at, 'vk', ok, 'vs', steady, 'vl', last)
  local ts, tn = load(key, 'ts', 'tn')
  local ps, pn = load(key, 'ps', 'pn')
  local xs, xn = later(ts, tn, ps, pn)
  local x = xs * 1000 + math.floor(xn / 1000000)
  if last > x then x = last end
  redis.call('PEXPIREAT', key, x + tonumber(ARGV[7]))
end
return {tostring(iv), tostring(at), tostring(ok), tostring(steady), tostring(last)}
`)

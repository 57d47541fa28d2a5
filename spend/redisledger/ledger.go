// Package redisledger is a spend.Ledger kept in Redis, for budgets shared
// by processes on many hosts.
//
// Each budget key is one Redis hash, "<prefix>ledger:{<key>}" (prefix
// "sluice:" by default; the budget key is the hash tag, so its scripts run
// on one node of a Redis Cluster and budgets spread over the nodes), with the field "spent" and one field "h:<until>"
// per group of holds reclaimed at <until> (Redis clock, microseconds).
// Amounts are nano-USD, whole numbers. Every operation is one Lua script
// that takes its time from Redis TIME, so the hosts' clocks do not matter.
// A key expires 35 days after its last change.
//
// Every call is bounded by Options.Timeout. The ledger has no local
// fallback: while Redis cannot be reached, Reserve fails, and a budget then
// fails closed, or open if it says so (spend.Budget.AllowOnLedgerError).
package redisledger

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/spend"
)

// ledgerTTL is how long a budget key lives after its last change: longer
// than any period a budget counts (a month).
const ledgerTTL = 35 * 24 * time.Hour

// reclaimLua reads the hash, drops the groups whose time has come, and
// leaves spent and held in the locals of the same name.
const reclaimLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local all = redis.call('HGETALL', KEYS[1])
local spent, held = 0, 0
for i = 1, #all, 2 do
  local f, v = all[i], tonumber(all[i + 1])
  if f == 'spent' then
    spent = v
  elseif tonumber(string.sub(f, 3)) <= now or v <= 0 then
    redis.call('HDEL', KEYS[1], f)
  else
    held = held + v
  end
end
`

// reserveScript: ARGV amount, limit (nano-USD), ttl (µs), key ttl (ms).
// It answers {ok, remaining, until}.
var reserveScript = redis.NewScript(reclaimLua + `
local amount, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local expiry = now + tonumber(ARGV[3])
local used = spent + held
local ok = 0
if used + amount <= limit then
  ok = 1
  used = used + amount
  redis.call('HINCRBY', KEYS[1], 'h:' .. string.format('%d', expiry), amount)
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {ok, string.format('%d', limit - used), string.format('%d', expiry)}
`)

// settleScript: ARGV amount held, until (µs), cost (nano-USD), key ttl (ms).
var settleScript = redis.NewScript(reclaimLua + `
local f = 'h:' .. ARGV[2]
local v = tonumber(redis.call('HGET', KEYS[1], f) or '0')
local amount = tonumber(ARGV[1])
if v > amount then
  redis.call('HINCRBY', KEYS[1], f, -amount)
elseif v > 0 then
  redis.call('HDEL', KEYS[1], f)
end
redis.call('HINCRBY', KEYS[1], 'spent', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// readScript answers {spent, held}.
var readScript = redis.NewScript(reclaimLua + `
return {string.format('%d', spent), string.format('%d', held)}
`)

func nano(usd float64) int64 { return int64(usd*1e9 + 0.5) }

// Options configures a Ledger. The zero value is usable.
type Options struct {
	// Prefix starts every key the ledger writes. If empty, "sluice:".
	Prefix string

	// Timeout bounds every call to Redis. If zero, 100ms.
	Timeout time.Duration

	// Replicas is how many replicas must confirm a write (WAIT) before the
	// ledger trusts it, so that a failover to a replica keeps it: a hold
	// not confirmed fails Reserve (the budget fails closed, or open if it
	// says so); a settlement not confirmed is kept and sent again. Give 1
	// for a master watched by Sentinel; leave 0 for one server or a
	// cluster. If zero, writes are not waited for.
	Replicas int

	// Logger receives the settlements kept to be sent again. If nil,
	// slog.Default().
	Logger *slog.Logger
}

// Ledger is a spend.Ledger kept in Redis. It is safe for concurrent use.
type Ledger struct {
	client redis.Cmdable
	opts   Options
	retry  resend
}

// New returns a ledger kept in the Redis server that client talks to. Share
// the client with the breaker store (redisstore.Store.Client) to use one
// pool of connections; closing the client is the caller's.
func New(client redis.Cmdable, opts Options) *Ledger {
	if opts.Prefix == "" {
		opts.Prefix = "sluice:"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Ledger{client: client, opts: opts}
}

func (l *Ledger) key(key string) string { return l.opts.Prefix + "ledger:{" + key + "}" }

func (l *Ledger) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), l.opts.Timeout)
}

// Reserve holds amount under key unless it would cross limit; see
// spend.Ledger. It fails when Redis cannot be reached: the budget then
// fails closed, or open if it says so.
func (l *Ledger) Reserve(key string, amount, limit float64, ttl time.Duration) (spend.Hold, float64, bool, error) {
	ctx, cancel := l.ctx()
	defer cancel()
	amt := nano(amount)
	l.resendSettles()
	res, err := l.run(ctx, reserveScript, []string{l.key(key)},
		amt, nano(limit), ttl.Microseconds(), ledgerTTL.Milliseconds()).Slice()
	if err != nil {
		return spend.Hold{}, 0, false, err
	}
	ok, _ := res[0].(int64)
	left, _ := strconv.ParseInt(res[1].(string), 10, 64)
	until, _ := strconv.ParseInt(res[2].(string), 10, 64)
	return spend.Hold{NanoUSD: amt, Until: until * 1000}, float64(left) / 1e9, ok == 1, nil
}

// Settle replaces a hold by what the call cost; see spend.Ledger. A
// settlement Redis did not confirm (unreachable, a failover under way, no
// replica confirmed it) is kept and sent again before the ledger's next
// call: never forgotten, at worst counted twice.
func (l *Ledger) Settle(key string, h spend.Hold, cost float64) error {
	l.resendSettles()
	err := l.settle(settlement{key, h, cost})
	if err != nil {
		l.retry.keep(settlement{key, h, cost}, err, l.opts.Logger)
	}
	return err
}

// settle sends one settlement.
func (l *Ledger) settle(s settlement) error {
	ctx, cancel := l.ctx()
	defer cancel()
	return l.run(ctx, settleScript, []string{l.key(s.key)},
		s.h.NanoUSD, strconv.FormatInt(s.h.Until/1000, 10), nano(s.cost), ledgerTTL.Milliseconds()).Err()
}

// Read returns what was spent and what is held under key.
func (l *Ledger) Read(key string) (spent, held float64, err error) {
	ctx, cancel := l.ctx()
	defer cancel()
	res, err := readScript.Run(ctx, l.client, []string{l.key(key)}).StringSlice()
	if err != nil {
		return 0, 0, err
	}
	sp, _ := strconv.ParseInt(res[0], 10, 64)
	hd, _ := strconv.ParseInt(res[1], 10, 64)
	return float64(sp) / 1e9, float64(hd) / 1e9, nil
}

var _ spend.Ledger = (*Ledger)(nil)

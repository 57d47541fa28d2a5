package report

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// maxKeys is how many rows Summary.Keys keeps: a pool is a few keys, but
// a log of months may name many that were rotated out.
const maxKeys = 50

// classQuota is the error class the attempt log gives a 429 (or a stream's
// error event) whose body says the key's quota or credit is used up:
// Sluice judged it so when it wrote the line, and the report reads the
// class as written rather than judging the body again.
const classQuota = "quota_exhausted"

// KeyUse is how the attempts made with one pool key of one provider ended.
// Attempts = OK + RateLimited + Quota + Other.
type KeyUse struct {
	Provider string `json:"provider"`
	// Key is the attempt log's key field: the first 8 hex digits of the
	// key's SHA-256, as `sluice keys` names it, never the key itself (a
	// field that is not such a hash is shown as "(not a key hash)").
	Key      string `json:"key"`
	Attempts int    `json:"attempts"`
	// OK counts the attempts with outcome ok.
	OK int `json:"ok"`
	// RateLimited counts the 429s whose error class is not quota_exhausted:
	// the provider asked for a pause. Quota counts the attempts with error
	// class quota_exhausted: the key's quota or credit is used up.
	RateLimited int `json:"rate_limited"`
	Quota       int `json:"quota"`
	// Other counts every other attempt (5xx, timeouts, cut streams, client
	// cancellations, …), retried or not.
	Other int `json:"other"`
	// Last429 is the time of the latest attempt counted in RateLimited or
	// Quota; zero when none.
	Last429 time.Time `json:"last_429"`
}

// limited returns how many of the key's attempts were 429s, rate limit or
// quota.
func (k KeyUse) limited() int { return k.RateLimited + k.Quota }

type pk struct{ provider, key string }

// keys counts the attempts of every pool key, by provider and key. A line
// without a key (its provider has no pool) is not counted. It keeps the
// maxKeys keys with the most 429s, then the most attempts, and returns how
// many it left out. The rows are sorted by provider, then most 429s first,
// then key.
func keys(lines []Line) ([]KeyUse, int) {
	by := map[pk]*KeyUse{}
	for _, l := range lines {
		if l.Key == "" {
			continue
		}
		k := pk{l.Provider, keyName(l.Key)}
		u := by[k]
		if u == nil {
			u = &KeyUse{Provider: k.provider, Key: k.key}
			by[k] = u
		}
		u.count(l)
	}
	rows := make([]KeyUse, 0, len(by))
	for _, u := range by {
		rows = append(rows, *u)
	}
	slices.SortFunc(rows, func(a, b KeyUse) int {
		return cmp.Or(cmp.Compare(b.limited(), a.limited()), cmp.Compare(b.Attempts, a.Attempts), byProviderKey(a, b))
	})
	left := max(len(rows)-maxKeys, 0)
	rows = rows[:len(rows)-left]
	slices.SortFunc(rows, func(a, b KeyUse) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(b.limited(), a.limited()), cmp.Compare(a.Key, b.Key))
	})
	return rows, left
}

// notAHash stands for a key field that is not a key hash.
const notAHash = "(not a key hash)"

// keyName returns the attempt log's key field when it is a key hash (8
// lowercase hex digits), else notAHash: a line written by hand or by
// another tool may hold a key itself, which the report never prints.
func keyName(k string) string {
	if len(k) == 8 && strings.Trim(k, "0123456789abcdef") == "" {
		return k
	}
	return notAHash
}

// byProviderKey orders by provider, then key.
func byProviderKey(a, b KeyUse) int {
	return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Key, b.Key))
}

// count adds one attempt to u.
func (u *KeyUse) count(l Line) {
	u.Attempts++
	switch {
	case l.Outcome == "ok":
		u.OK++
		return
	case l.Error == classQuota:
		u.Quota++
	case l.Status == 429:
		u.RateLimited++
	default:
		u.Other++
		return
	}
	if l.TS.After(u.Last429) {
		u.Last429 = l.TS
	}
}

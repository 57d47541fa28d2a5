package redisledger

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Migrate renames the budget keys an older release wrote without a hash
// tag, "<prefix>ledger:<key>", to "<prefix>ledger:{<key>}", so a period's
// spend carries over an upgrade. A key whose new name already exists (a
// gateway of this release wrote it first) is left as it is. It returns the
// keys renamed. For one server or a Sentinel master: a cluster cannot
// rename across slots, and no release before this one ran on a cluster.
func Migrate(ctx context.Context, client redis.Cmdable, prefix string) (int, error) {
	if prefix == "" {
		prefix = "sluice:"
	}
	head := prefix + "ledger:"
	var cursor uint64
	n := 0
	for {
		keys, next, err := client.Scan(ctx, cursor, globEscape(head)+"*", 1000).Result()
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			name := strings.TrimPrefix(k, head)
			if strings.HasPrefix(name, "{") && strings.HasSuffix(name, "}") {
				continue // this release's key
			}
			ok, err := client.RenameNX(ctx, k, head+"{"+name+"}").Result()
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// globEscape escapes the characters SCAN's MATCH gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

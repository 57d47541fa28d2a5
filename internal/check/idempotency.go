package check

import (
	"fmt"
	"io"

	"github.com/sluice-llm/sluice/internal/config"
)

// idempotencyRow is the config's idempotency section, as check reports it.
type idempotencyRow struct {
	Enabled            bool  `json:"enabled"`
	TTLMS              int64 `json:"ttl_ms"`
	MaxAnswer          int64 `json:"max_answer"`
	MaxBytes           int64 `json:"max_bytes"`
	FinishOnDisconnect bool  `json:"finish_on_disconnect"`
}

func idempotencyOf(c *config.Config) idempotencyRow {
	id := c.Idempotency
	return idempotencyRow{Enabled: id.Enabled, TTLMS: id.TTL.Milliseconds(), MaxAnswer: id.MaxAnswer,
		MaxBytes: id.MaxBytes, FinishOnDisconnect: id.FinishOnDisconnect}
}

// idempotencyText says what a request with an Idempotency-Key gets, and
// what a failing store means.
func (r *report) idempotencyText(w io.Writer) {
	id := r.Idempotency
	fmt.Fprintln(w, "\nIdempotency-Key: a duplicate of a call with a key is answered from its kept answer, not sent again")
	if !id.Enabled {
		fmt.Fprintln(w, "  off (idempotency.enabled: false): the key only lets a call be retried; a duplicate is sent and billed again")
		return
	}
	leave := "a client that leaves a keyed call cancels it"
	if id.FinishOnDisconnect {
		leave = "a client that leaves a keyed call: the call is finished and its answer kept"
	}
	fmt.Fprintf(w, "  answers kept %s (at most %s each, %s in all, the oldest dropped first); %s\n",
		ms(id.TTLMS), sizeText(id.MaxAnswer), sizeText(id.MaxBytes), leave)
	fmt.Fprintln(w, "  if the state store fails (Redis down, a full disk), keyed calls run un-deduplicated: a duplicate is then billed again")
}

// sizeText writes n bytes in the largest binary unit that divides it.
func sizeText(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

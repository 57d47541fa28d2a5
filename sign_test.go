package sluice

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sluice-llm/sluice/breaker"
)

// signerFunc is a dialect.Signer from a function.
type signerFunc func(r *http.Request, body []byte) error

func (f signerFunc) Sign(r *http.Request, body []byte) error { return f(r, body) }

// A request that cannot be signed is never sent and never retried, and
// every way out gives back what the call took (its concurrency slot, its
// money, its retry, its span): the first attempt unsigned, a retry
// unsigned after a 503, a Signer that panics.
func TestUnsignedCallGivesEverythingBack(t *testing.T) {
	errNoToken := errors.New("the token endpoint answered 500")
	for _, tc := range []struct {
		name   string
		script string
		failOn int64 // the Sign call that fails (1 for the first)
		calls  int   // upstream calls made
	}{
		{"first attempt", "200", 1, 0},
		{"retry", "503,200", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldRig(t, tc.script, fastPolicy())
			var signs atomic.Int64
			h.tr.Signer = signerFunc(func(r *http.Request, _ []byte) error {
				if signs.Add(1) == tc.failOn {
					return errNoToken
				}
				r.Header.Set("Authorization", "Bearer signed")
				return nil
			})
			resp, err := h.chat(false)
			var ce *CredentialsError
			if !errors.As(err, &ce) || !errors.Is(err, errNoToken) || ce.Provider != "openai" {
				t.Fatalf("resp %v, err %v; want a *CredentialsError wrapping the Signer's", resp, err)
			}
			if n := h.srv.Calls(); n != tc.calls {
				t.Errorf("%d upstream calls, want %d", n, tc.calls)
			}
			if n := signs.Load(); n != tc.failOn {
				t.Errorf("%d signatures asked, want %d: an unsigned call is not retried", n, tc.failOn)
			}
			// Only the 503 is a failure: the unsigned attempt sent nothing.
			if rec, err := h.tr.Breaker("openai").Record(); err != nil || rec.State != breaker.Closed || rec.Failures != tc.calls {
				t.Errorf("breaker %+v, %v; want closed with %d failures", rec, err, tc.calls)
			}
			h.check(t)
		})
	}
	t.Run("panic", func(t *testing.T) {
		h := newHeldRig(t, "200", fastPolicy())
		h.tr.Signer = signerFunc(func(*http.Request, []byte) error { panic("sign") })
		if got := mustPanic(t, func() { h.chat(false) }); got != "sign" {
			t.Fatalf("panicked with %v", got)
		}
		if n := h.srv.Calls(); n != 0 {
			t.Errorf("%d upstream calls, want 0", n)
		}
		h.check(t)
	})
}

package dialecttest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/awssign"
	"github.com/sluice-llm/sluice/dialect/dialecttest"
	"github.com/sluice-llm/sluice/dialect/googleauth"
	"github.com/sluice-llm/sluice/fake"
)

const key = "sk-test-5e4d3c2b1a"

// post sends c straight to the fake, playing script, and returns the
// status, the header and the body read until its end or its cut.
func post(t *testing.T, up *fake.Server, sp dialecttest.Speaker, c dialecttest.Call, script string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", up.URL+c.Path, strings.NewReader(c.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(fake.ScriptHeader, script)
	sp.SetKey(req.Header, key)
	sign(t, up, sp, req, c.Body)
	resp, err := up.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // a cut stream ends in an unexpected EOF: keep what came
	return resp.StatusCode, resp.Header, b
}

// signers build the Signer of each dialect that signs, by its kind.
var signers = map[string]func(dialect.SignerOptions) (dialect.Signer, error){
	"bedrock": awssign.New,
	"vertex":  googleauth.New,
}

// sign signs req, whose body is body, as the gateway would for a dialect
// that signs (Speaker.Prepare set): with the dialect's Signer on the
// credentials Prepare gives for up.
func sign(t *testing.T, up *fake.Server, sp dialecttest.Speaker, req *http.Request, body string) {
	t.Helper()
	if sp.Prepare == nil {
		return
	}
	u := sp.Prepare(t, up)
	d, _ := dialect.Lookup(sp.Kind)
	newSigner, ok := signers[sp.Kind]
	if !ok || !d.Traits().Signs {
		t.Fatalf("%s: Prepare is set, but the dialect does not sign", sp.Kind)
	}
	s, err := newSigner(dialect.SignerOptions{Region: u.Region, CredentialsFile: u.CredentialsFile, Client: up.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sign(req, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

// The table's words and readers, checked against the fake itself: each
// script word makes the answer the Speaker says, and each reader reads it.
func TestSpeakersReadTheFake(t *testing.T) {
	for _, sp := range dialecttest.All() {
		t.Run(sp.Kind, func(t *testing.T) {
			up := fake.NewServer("200")
			defer up.Close()
			if sp.Prepare != nil {
				sp.Prepare(t, up)
			}
			plain, streamed := sp.Call(sp.Model, false), sp.Call(sp.Model, true)

			status, _, b := post(t, up, sp, plain, "200")
			a, err := sp.Answer(b)
			if err != nil || status != 200 {
				t.Fatalf("answer: %d, %v", status, err)
			}
			if want := int64(len(plain.Body) / 4); a.Text != dialecttest.Text || a.Input != want || a.Output != 5 {
				t.Errorf("answer %+v, want %q with usage %d in, 5 out", a, dialecttest.Text, want)
			}
			r := up.Requests()[0]
			if sp.ModelOf(r) != sp.Model || r.Path != plain.URLPath() {
				t.Errorf("the fake saw model %q at %s, want %q at %s", sp.ModelOf(r), r.Path, sp.Model, plain.URLPath())
			}
			if sp.KeyHeader != "" && sp.Key(r.Header) != key {
				t.Errorf("the fake read key %q from %s, want the client's", sp.Key(r.Header), sp.KeyHeader)
			}

			for _, tt := range []struct {
				script string
				want   dialecttest.Stream
			}{
				{"200", dialecttest.Stream{Pieces: dialecttest.Words, End: true}},
				{sp.Scripts.Cut, dialecttest.Stream{Pieces: dialecttest.Words[:2]}},
				{sp.Scripts.FirstEventError, dialecttest.Stream{Errors: 1}},
			} {
				status, _, b := post(t, up, sp, streamed, tt.script)
				s, err := sp.Stream(b)
				if err != nil || status != 200 {
					t.Fatalf("%s: %d, %v", tt.script, status, err)
				}
				if !slices.Equal(s.Pieces, tt.want.Pieces) || s.End != tt.want.End || s.Errors != tt.want.Errors ||
					(s.Err != nil) != (tt.want.Errors > 0) {
					t.Errorf("%s: read %+v from %q, want %+v", tt.script, s, b, tt.want)
				}
			}

			// A stall sends what a cut sends, then falls silent.
			stall := readStall(t, up, sp)
			if s, err := sp.Stream(stall); err != nil || !slices.Equal(s.Pieces, dialecttest.Words[:2]) || s.End || s.Errors != 0 {
				t.Errorf("%s: read %v (%v) from %q, want %q and silence", sp.Scripts.Stall, s, err, stall, dialecttest.Words[:2])
			}

			for _, tt := range []struct {
				script string
				status int
				quota  bool
			}{
				{sp.Scripts.Retryable, 0, false},
				{sp.Scripts.Invalid, 400, false},
				{sp.Scripts.Quota, 429, true},
				{"429", 429, false}, // a rate limit is no used-up quota
			} {
				status, _, b := post(t, up, sp, plain, tt.script)
				e, err := sp.Error(b)
				if err != nil || tt.status != 0 && status != tt.status || tt.status == 0 && status < 500 {
					t.Errorf("%s: %d %v", tt.script, status, err)
				}
				if sp.Quota(b) != tt.quota {
					t.Errorf("%s: Quota %v, want %v: %s", tt.script, !tt.quota, tt.quota, b)
				}
				if tt.script == sp.Scripts.Invalid && e.Type != sp.InvalidType {
					t.Errorf("%s: type %q, want %q", tt.script, e.Type, sp.InvalidType)
				}
			}
		})
	}
}

// readStall sends a streamed call playing sp.Scripts.Stall and returns
// what arrived before the silence: the body read until a client deadline
// of 300 ms after its headers.
func readStall(t *testing.T, up *fake.Server, sp dialecttest.Speaker) []byte {
	t.Helper()
	c := sp.Call(sp.Model, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", up.URL+c.Path, strings.NewReader(c.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(fake.ScriptHeader, sp.Scripts.Stall)
	sp.SetKey(req.Header, key)
	sign(t, up, sp, req, c.Body)
	resp, err := up.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.AfterFunc(300*time.Millisecond, cancel)
	b, _ := io.ReadAll(resp.Body) // ends when the deadline cancels the call
	return b
}

// The table's knowledge of each dialect agrees with the dialect package's:
// where the model is, whether a call streams, where a fallback's model
// goes, the key's header and how a stream ends or fails first.
func TestSpeakersAgreeWithDialects(t *testing.T) {
	for _, sp := range dialecttest.All() {
		t.Run(sp.Kind, func(t *testing.T) {
			d, ok := dialect.Lookup(sp.Kind)
			if !ok {
				t.Fatalf("no dialect %q", sp.Kind)
			}
			if !strings.EqualFold(d.Traits().KeyHeader, sp.KeyHeader) {
				t.Errorf("key header %q, the dialect's %q", sp.KeyHeader, d.Traits().KeyHeader)
			}
			for _, stream := range []bool{false, true} {
				c := sp.Call(sp.Model, stream)
				r := d.Request(c.URLPath(), []byte(c.Body))
				if r.Model != sp.Model || r.Stream != stream || r.MaxTokens != dialecttest.MaxTokens || !r.ModelCall {
					t.Errorf("%s %s: the dialect reads %+v", c.Path, c.Body, r)
				}
				want := sp.Call(sp.Fallback, stream)
				path, body, ok := d.Retarget(c.URLPath(), []byte(c.Body), sp.Fallback)
				if !ok || path != want.URLPath() || string(body) != want.Body {
					t.Errorf("retargeted to %s %s, want %s %s", path, body, want.URLPath(), want.Body)
				}
			}

			up := fake.NewServer("200")
			defer up.Close()
			if sp.Prepare != nil {
				sp.Prepare(t, up)
			}
			for _, tt := range []struct {
				script      string
				end, failed bool
			}{{"200", true, false}, {sp.Scripts.FirstEventError, false, true}, {sp.Scripts.Cut, false, false}} {
				_, h, b := post(t, up, sp, sp.Call(sp.Model, true), tt.script)
				s := d.Stream(h)
				if s == nil {
					t.Fatalf("%s: the dialect reads no stream in %v", tt.script, h)
				}
				var end, failed bool
				first := true
				s.Feed(bytes.Clone(b), func(ev dialect.Event) bool {
					end = end || ev.End
					failed = failed || first && ev.Status != 0
					first = false
					return true
				})
				if end != tt.end || failed != tt.failed {
					t.Errorf("%s: the dialect read end %v, first event failed %v; want %v, %v", tt.script, end, failed, tt.end, tt.failed)
				}
			}
		})
	}
}

// Every dialect Sluice speaks has a Speaker, so that every table ranging
// over All tests it: a dialect added without one fails here.
func TestEveryDialectHasASpeaker(t *testing.T) {
	var have []string
	for _, sp := range dialecttest.All() {
		have = append(have, sp.Kind)
	}
	for _, k := range dialect.Kinds() {
		if !slices.Contains(have, k) {
			t.Errorf("dialect %q has no Speaker in dialecttest.All (%q): add its file", k, have)
		}
	}
}

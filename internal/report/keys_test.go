package report

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
)

var keysT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// keyAt returns the line of an attempt s seconds after keysT0 with key k.
func keyAt(s int, provider, k, outcome string, status int, class string) Line {
	return Line{TS: keysT0.Add(time.Duration(s) * time.Second), RequestID: fmt.Sprint("r", s),
		Provider: provider, Key: k, Outcome: sluice.Outcome(outcome), Status: status, Error: class}
}

// pooled is a log of two providers and three keys, and one line without a
// key: openai's bbbbbbbb has more 429s than its aaaaaaaa, so it comes
// first.
func pooled() []Line {
	return []Line{
		keyAt(0, "openai", "aaaaaaaa", "ok", 200, ""),
		keyAt(1, "openai", "aaaaaaaa", "retry", 429, "status_429"),
		keyAt(2, "openai", "aaaaaaaa", "fail", 503, "status_503"),
		keyAt(3, "openai", "bbbbbbbb", "retry", 429, "status_429"),
		keyAt(4, "openai", "bbbbbbbb", "fail", 429, "quota_exhausted"),
		keyAt(5, "openai", "bbbbbbbb", "fail", 429, "quota_exhausted"),
		keyAt(6, "openai", "bbbbbbbb", "retry", 0, "timeout_first_byte"),
		keyAt(7, "openai", "bbbbbbbb", "ok", 200, ""),
		keyAt(8, "anthropic", "cccccccc", "ok", 200, ""),
		keyAt(9, "anthropic", "cccccccc", "client_cancel", 0, "client_cancel"),
		keyAt(10, "anthropic", "cccccccc", "fail", 200, "quota_exhausted"), // a stream's error event
		keyAt(11, "openai", "", "fail", 429, "status_429"),                 // no pool: not counted
	}
}

func TestKeys(t *testing.T) {
	at := func(s int) time.Time { return keysT0.Add(time.Duration(s) * time.Second) }
	tie := []Line{
		keyAt(0, "p", "dddddddd", "retry", 429, "status_429"),
		keyAt(1, "p", "cccccccc", "retry", 429, "status_429"),
		keyAt(2, "p", "eeeeeeee", "ok", 200, ""),
	}
	tests := []struct {
		name  string
		lines []Line
		want  []KeyUse
	}{
		{"two providers, three keys", pooled(), []KeyUse{
			{Provider: "anthropic", Key: "cccccccc", Attempts: 3, OK: 1, Quota: 1, Other: 1, Last429: at(10)},
			{Provider: "openai", Key: "bbbbbbbb", Attempts: 5, OK: 1, RateLimited: 1, Quota: 2, Other: 1, Last429: at(5)},
			{Provider: "openai", Key: "aaaaaaaa", Attempts: 3, OK: 1, RateLimited: 1, Other: 1, Last429: at(1)},
		}},
		{"as many 429s: by key", tie, []KeyUse{
			{Provider: "p", Key: "cccccccc", Attempts: 1, RateLimited: 1, Last429: at(1)},
			{Provider: "p", Key: "dddddddd", Attempts: 1, RateLimited: 1, Last429: at(0)},
			{Provider: "p", Key: "eeeeeeee", Attempts: 1, OK: 1},
		}},
		{"no line with a key", []Line{keyAt(0, "openai", "", "fail", 429, "quota_exhausted"),
			keyAt(1, "openai", "", "ok", 200, "")}, []KeyUse{}},
		{"a key itself is never shown", []Line{keyAt(0, "openai", "sk-not-a-hash", "ok", 200, "")}, []KeyUse{
			{Provider: "openai", Key: notAHash, Attempts: 1, OK: 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, left := keys(tc.lines)
			if !reflect.DeepEqual(got, tc.want) || left != 0 {
				t.Errorf("keys =\n%+v (%d left out)\nwant\n%+v", got, left, tc.want)
			}
		})
	}
}

// Past maxKeys keys, those with the most 429s are kept.
func TestKeysCapped(t *testing.T) {
	var lines []Line
	for i := range maxKeys + 3 {
		lines = append(lines, keyAt(i, "p", fmt.Sprintf("%08x", i), "ok", 200, ""))
	}
	lines = append(lines, keyAt(100, "p", fmt.Sprintf("%08x", maxKeys+2), "retry", 429, "status_429"))
	got, left := keys(lines)
	if len(got) != maxKeys || left != 3 {
		t.Fatalf("%d rows, %d left out; want %d, 3", len(got), left, maxKeys)
	}
	if got[0].Key != fmt.Sprintf("%08x", maxKeys+2) || got[1].Key != "00000000" {
		t.Errorf("rows start %+v, %+v; want the key with a 429, then 00000000", got[0], got[1])
	}
	s := Summary{Attempts: len(lines), Calls: len(lines), Keys: got, KeysLeftOut: left}
	var b bytes.Buffer
	if err := WriteText(&b, &s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n  (3 more keys)\n") {
		t.Errorf("text lacks the keys left out:\n%s", b.String())
	}
}

// keysSection returns the lines of the text report's KEYS section, or nil
// when it has none.
func keysSection(t *testing.T, lines []Line) []string {
	t.Helper()
	s := Summarize(lines)
	var b bytes.Buffer
	if err := WriteText(&b, &s); err != nil {
		t.Fatal(err)
	}
	_, after, found := strings.Cut(b.String(), "\nKEYS")
	if !found {
		return nil
	}
	section, _, _ := strings.Cut(after, "\n\n")
	return strings.Split(section, "\n")[1:]
}

func TestTextKeys(t *testing.T) {
	got := keysSection(t, pooled())
	want := []string{
		"  provider   key       attempts  ok  rate_limited  quota  other  last 429",
		"  anthropic  cccccccc  3         1   0             1      1      2025-01-01T00:00:10Z",
		"  openai     bbbbbbbb  5         1   1             2      1      2025-01-01T00:00:05Z",
		"  openai     aaaaaaaa  3         1   1             0      1      2025-01-01T00:00:01Z",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("KEYS section =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	none := keysSection(t, []Line{keyAt(0, "openai", "", "fail", 429, "status_429")})
	if none != nil {
		t.Errorf("a log without keys has a KEYS section: %q", none)
	}
	noLast := keysSection(t, []Line{keyAt(0, "openai", "aaaaaaaa", "ok", 200, "")})
	if len(noLast) != 2 || !strings.HasSuffix(noLast[1], "  -") {
		t.Errorf("a key without 429s: %q; want its last 429 as -", noLast)
	}
}

// The KEYS section comes after QUEUED, before the breaker openings.
func TestTextKeysPlace(t *testing.T) {
	lines := append(pooled(), Line{TS: keysT0, RequestID: "q", Outcome: "ok", Status: 200, QueuedMS: 10})
	s := Summarize(lines)
	var b bytes.Buffer
	if err := WriteText(&b, &s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	q, k, o := strings.Index(out, "\nQUEUED"), strings.Index(out, "\nKEYS"), strings.Index(out, "\nBREAKER OPENINGS")
	if q < 0 || !(q < k && k < o) {
		t.Errorf("QUEUED at %d, KEYS at %d, BREAKER OPENINGS at %d; want them in that order:\n%s", q, k, o, out)
	}
}

func TestHTMLKeys(t *testing.T) {
	page := func(lines []Line) string { return htmlPage(t, lines) }
	p := page(pooled())
	rows := []string{
		`<tr><td class="l">anthropic</td><td class="l"><code>cccccccc</code></td><td>3</td><td>1</td><td>0</td><td>1</td><td>1</td><td class="l">2025-01-01T00:00:10Z</td></tr>`,
		`<tr><td class="l">openai</td><td class="l"><code>bbbbbbbb</code></td><td>5</td><td>1</td><td>1</td><td>2</td><td>1</td><td class="l">2025-01-01T00:00:05Z</td></tr>`,
		`<tr><td class="l">openai</td><td class="l"><code>aaaaaaaa</code></td><td>3</td><td>1</td><td>1</td><td>0</td><td>1</td><td class="l">2025-01-01T00:00:01Z</td></tr>`,
	}
	_, section, found := strings.Cut(p, `<h2 id="keys">`)
	section, _, _ = strings.Cut(section, "<h2")
	if !found || !strings.Contains(section, strings.Join(rows, "\n")) {
		t.Errorf("page's keys section lacks the rows, in order:\n%s", section)
	}
	if r, k, o := strings.Index(p, "<h2>Retries"), strings.Index(p, `<h2 id="keys">`), strings.Index(p, "<h2>Breaker openings"); !(r < k && k < o) {
		t.Errorf("keys section at %d, want between retries (%d) and breaker openings (%d)", k, r, o)
	}
	if p := page([]Line{keyAt(0, "openai", "", "fail", 429, "status_429")}); strings.Contains(p, `id="keys"`) {
		t.Error("a log without keys has a keys section on the page")
	}
}

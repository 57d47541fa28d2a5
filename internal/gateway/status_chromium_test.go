package gateway

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/browsertest"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/keypool"
)

// The status page in a real browser, after the scripted incident, opened
// from off loopback with the admin token as ?token= (so its polls work
// only if it sends the token as the header): the document it builds from
// status.json shows the open breaker, the paused key's hash, the failure
// classes, the budget's dollars left and a request id that the attempt
// log holds; the token is gone from it. A screenshot is kept in the
// test's artifact directory (go test -artifacts keeps it).
func TestStatusPageInChromium(t *testing.T) {
	browsertest.Need(t)
	e := incident(t)
	var polls, withHeader int
	var mu sync.Mutex
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = "192.0.2.7:5000" // as if off loopback: the token is needed
		if r.URL.Path == "/sluice/status.json" {
			mu.Lock()
			polls++
			if r.Header.Get("Authorization") == "Bearer admintok" {
				withHeader++
			}
			mu.Unlock()
		}
		e.gw.ServeHTTP(w, r)
	}))
	defer func() {
		remote.CloseClientConnections()
		remote.Close()
	}()
	url := remote.URL + "/sluice/?token=admintok"

	dom := string(browsertest.Run(t, url, "--dump-dom", "--virtual-time-budget=5000"))
	mu.Lock()
	p, h := polls, withHeader
	mu.Unlock()
	if p == 0 || h != p {
		t.Fatalf("the page polled status.json %d times, %d with the token as the header; want ≥1, all", p, h)
	}
	row := func(attr, value string) string {
		m := regexp.MustCompile(`<tr[^>]*` + attr + `="` + regexp.QuoteMeta(value) + `"[^>]*>.*?</tr>`).FindString(dom)
		if m == "" {
			t.Errorf("the rendered page has no row %s=%q", attr, value)
		}
		return m
	}
	if b := row("data-breaker", "anthropic"); !strings.Contains(b, `class="bad"`) || !strings.Contains(b, ">open<") ||
		!regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`).MatchString(b) {
		t.Errorf("the anthropic breaker's row is not shown open, highlighted, with its until: %s", b)
	}
	if b := row("data-breaker", "anthropic"); strings.Contains(b, ">0<") || !strings.Contains(b, ">—<") {
		t.Errorf("the open breaker's row shows a failure count (its record keeps none once open), want —: %s", b)
	}
	if k := row("data-key", keypool.Hash(poolKeyA)); !strings.Contains(k, ">paused<") {
		t.Errorf("key A's row is not shown paused: %s", k)
	}
	fails := regexp.MustCompile(`<tr class="failure">.*?</tr>`).FindAllString(dom, -1)
	var down, limited bool
	for _, f := range fails {
		down = down || strings.Contains(f, ">5xx<") && strings.Contains(f, ">"+ridDown+"<")
		limited = limited || strings.Contains(f, ">rate_limited<") && strings.Contains(f, ">"+ridPool+"<")
	}
	if len(fails) != 5 || !down || !limited {
		t.Errorf("%d failure rows (want 5); a 5xx of %s: %v; the 429 of %s: %v", len(fails), ridDown, down, ridPool, limited)
	}
	if !strings.Contains(e.logs.String(), `"request_id":"`+ridDown+`"`) {
		t.Errorf("the attempt log lacks the request id %s the page shows", ridDown)
	}
	for _, want := range []string{"breaker_open 1", "claude-haiku-4-5", ">$0.10<", ">$0.90<", "Calls queued for a slot now"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	if strings.Contains(dom, "admintok") {
		t.Error("the rendered page carries the admin token")
	}
	if !strings.Contains(dom, "<svg") || !strings.Contains(dom, "<rect") {
		t.Error("the rendered page has no bars")
	}

	dir := t.ArtifactDir()
	shot := filepath.Join(dir, "status.png")
	browsertest.Run(t, url, "--screenshot="+shot, "--window-size=1400,1800", "--virtual-time-budget=5000")
	fi, err := os.Stat(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if fi.Size() < 30_000 {
		t.Errorf("screenshot is %d bytes; a page with six filled tables is larger", fi.Size())
	}
	os.WriteFile(filepath.Join(dir, "status.html"), []byte(dom), 0o644)
	t.Logf("screenshot: %s (%d bytes)", shot, fi.Size())
}

// The page says the last hour's hedge rate: after one call whose hedge
// answered first, one hedge for one call, 100 %, one answered first.
func TestStatusPageShowsTheHedgeRate(t *testing.T) {
	browsertest.Need(t)
	e := newEnv(t, "slow:4s,200", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Timeout.FirstByte, p.Timeout.Total = 8*time.Second, 10*time.Second
		p.Hedge = sluice.Hedge{After: sluice.HedgeAfter{Wait: 100 * time.Millisecond}, MaxShare: 1}
		c.Policies["interactive"] = p
	})
	c := e.openaiClient()
	if _, err := c.Chat.Completions.New(sdkContext(t), chatParams()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); e.status().Hedges.Won == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	dom := string(browsertest.Run(t, e.srv.URL+"/sluice/", "--dump-dom", "--virtual-time-budget=5000"))
	want := "calls begun 1, hedges sent 1 (a rate of 100.0 %), answered first 1, refused 0."
	if !strings.Contains(dom, want) {
		t.Errorf("the rendered page lacks %q:\n%s", want, regexp.MustCompile(`<p id="hedges"[^>]*>[^<]*</p>`).FindString(dom))
	}
}

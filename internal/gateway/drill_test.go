package gateway

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

// outage is a provider that can be taken down: while down, every call
// gets the fake's 503 in the dialect's shape; else the fake's answer.
type outage struct {
	up, down *fake.Server
	isDown   atomic.Bool
	srv      *httptest.Server
}

func newOutage(t *testing.T) *outage {
	o := &outage{up: fake.NewServer("200"), down: fake.NewServer("503")}
	o.up.Provider.MaxRequests, o.down.Provider.MaxRequests = 100, 100
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.isDown.Load() {
			o.down.Provider.ServeHTTP(w, r)
			return
		}
		o.up.Provider.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { o.srv.Close(); o.up.Close(); o.down.Close() })
	return o
}

// TestOutageDrill: an agent on the OpenAI SDK and one on the Anthropic
// SDK call through one gateway while first OpenAI, then Anthropic, is
// down. Every call is answered whole, by the other provider during its
// primary's outage, translated into the client's shape, priced as the
// model that answered; after each outage the primary's breaker closes and
// it answers again. The outage lasts $SLUICE_DRILL (a duration; 60s for
// the drill the issue asks for), else 3s.
func TestOutageDrill(t *testing.T) {
	outageFor := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("SLUICE_DRILL")); err == nil && d > 0 {
		outageFor = d
	}
	oa, an := newOutage(t), newOutage(t)
	e := newEnv(t, "200", func(c *config.Config) {
		c.Providers = map[string]config.Provider{
			"openai":    {Kind: "openai", BaseURL: oa.srv.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64},
			"anthropic": {Kind: "anthropic", BaseURL: an.srv.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64},
		}
		c.Routes = []config.Route{
			{Prefix: "/openai", Provider: "openai", Policy: "interactive", Fallbacks: []config.Target{{Provider: "anthropic", Model: "claude-haiku-4-5"}}},
			{Prefix: "/anthropic", Provider: "anthropic", Policy: "interactive", Fallbacks: []config.Target{{Provider: "openai", Model: "gpt-4o-mini"}}},
		}
		p := c.Policies["interactive"]
		p.Breaker.Failures, p.Breaker.Cool = 3, 500*time.Millisecond
		p.Retry.MaxAttempts = 2
		c.Policies["interactive"] = p
		c.Prices = map[string]spend.Price{
			"gpt-4o-mini":      {Output: 10000}, // the fake's 5 output tokens: $0.05
			"claude-haiku-4-5": {Output: 40000}, // $0.20
		}
	})
	oc, ac := e.openaiClient(), e.anthropicClient()

	// The two agents call in a loop until stop, each call's answer checked.
	var answered, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	agent := func(call func() (string, error)) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			text, err := call()
			if err != nil || text != fakeAnswer {
				failed.Add(1)
				t.Errorf("an agent's call: %q, %v", text, err)
			} else {
				answered.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wg.Add(2)
	go agent(func() (string, error) {
		r, err := oc.Chat.Completions.New(sdkContext(t), chatParams())
		if err != nil {
			return "", err
		}
		return r.Choices[0].Message.Content, nil
	})
	go agent(func() (string, error) {
		m, err := ac.Messages.New(sdkContext(t), messageParams())
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, blk := range m.Content {
			b.WriteString(blk.Text)
		}
		return b.String(), nil
	})

	// answeredBy counts the calls answered since the log's line from, by
	// the provider that answered and whether it answered its own client
	// (own) or the other's, translated.
	answeredBy := func(from int) map[string]int {
		by := map[string]int{}
		for _, l := range e.logLines()[from:] {
			if l["outcome"] == "ok" {
				how := "own"
				if l["translated"] != nil {
					how = "translated"
				}
				by[l["provider"].(string)+":"+how]++
			}
		}
		return by
	}
	phase := func(name string, o *outage) {
		from := len(e.logLines())
		o.isDown.Store(true)
		time.Sleep(outageFor)
		o.isDown.Store(false)
		by := answeredBy(from)
		t.Logf("%s down %v: answers by provider: %v", name, outageFor, by)
		if other := map[string]string{"openai": "anthropic", "anthropic": "openai"}[name]; by[other+":translated"] == 0 {
			t.Errorf("while %s was down, %s answered none of its clients: %v", name, other, by)
		}
		// Back up: the primary's breaker lets a probe through after cool,
		// and the primary answers its own calls again.
		back := len(e.logLines())
		deadline := time.Now().Add(10 * time.Second)
		for {
			by := answeredBy(back)
			if by[name+":own"] > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s answered none of its calls within 10s of the outage's end: %v", name, by)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	phase("openai", oa)
	phase("anthropic", an)
	close(stop)
	wg.Wait()

	lines := e.logLines()
	var translated, priced int
	for _, l := range lines {
		if l["outcome"] != "ok" || l["translated"] == nil {
			continue
		}
		translated++
		cost, _ := l["cost_usd"].(float64)
		want := map[string]float64{"anthropic": 0.20, "openai": 0.05}[l["provider"].(string)]
		if cost > want-1e-9 && cost < want+1e-9 {
			priced++
		} else {
			t.Errorf("a translated answer by %s cost $%v, want $%v, its model's price: %v", l["provider"], cost, want, l)
		}
	}
	t.Logf("%d calls answered, %d failed, %d by the other provider (translated), every one priced as its model", answered.Load(), failed.Load(), translated)
	if failed.Load() != 0 || translated == 0 || priced != translated {
		t.Errorf("%d calls failed, %d translated answers, %d priced right", failed.Load(), translated, priced)
	}
	for _, name := range []string{"openai", "anthropic"} {
		rec, err := e.gw.Store().Load(name)
		if err != nil || rec.State.String() != "closed" || rec.Transitions < 2 {
			t.Errorf("%s's breaker after the drill: %+v (%v); want closed again after opening", name, rec, err)
		}
	}
}

package fake

import (
	"context"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const soakMix = "mix:503=10%;reset=5%;hang=1%;stall=2%;seed=7"

func TestParseMix(t *testing.T) {
	tests := []struct {
		script string
		want   Step
	}{
		{soakMix, Step{Kind: Mix, Seed: 7, Shares: []Share{
			{Step{Kind: Respond, Status: 503}, 10}, {Step{Kind: Reset}, 5},
			{Step{Kind: Hang}, 1}, {Step{Kind: Partial, End: Stall}, 2}}}},
		{"mix:cut=0.5%;429:insufficient_quota=2.5%", Step{Kind: Mix, Shares: []Share{
			{Step{Kind: Partial, End: Cut}, 0.5}, {Step{Kind: Respond, Status: 429, Error: "insufficient_quota"}, 2.5}}}},
		{"mix:slow:1s=100%", Step{Kind: Mix, Shares: []Share{{Step{Kind: Slow, Delay: 1e9}, 100}}}},
		{"mix:503=33.3%;500=33.3%;529=33.4%", Step{Kind: Mix, Shares: []Share{
			{Step{Kind: Respond, Status: 503}, 33.3}, {Step{Kind: Respond, Status: 500}, 33.3},
			{Step{Kind: Respond, Status: 529}, 33.4}}}},
		{"stall", Step{Kind: Partial, End: Stall}},
		{"cut", Step{Kind: Partial, End: Cut}},
	}
	for _, tt := range tests {
		got, err := ParseScript(tt.script)
		if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
			t.Errorf("ParseScript(%q) = %+v, %v; want %+v", tt.script, got, err, tt.want)
			continue
		}
		again, err := ParseScript(got[0].String())
		if err != nil || !reflect.DeepEqual(again[0], tt.want) {
			t.Errorf("%q: String %q parses to %+v, %v", tt.script, got[0].String(), again, err)
		}
	}
}

func TestParseMixErrors(t *testing.T) {
	tests := []struct{ script, want string }{
		{"mix", "want mix:STEP=P%"},
		{"mix:seed=3", "want mix:STEP=P%"},
		{"mix:503", `mix share "503" needs a percentage`},
		{"mix:503=10", "503=10: want a percentage from 0% to 100%"},
		{"mix:503=ten%", "503=ten%: want a percentage"},
		{"mix:503=-1%", "want a percentage"},
		{"mix:503=NaN%", "want a percentage"},
		{"mix:503=101%", "want a percentage"},
		{"mix:503=60%;reset=50%", "the shares add up to 110%; keep them at 100% or less"},
		{"mix:5o3=1%", `mix share "5o3": want a status`},
		{"mix:mix=1%", `mix share "mix": want mix:STEP=P%`},
		{"mix:503=1%;seed=x", "seed=x: want a whole number"},
		{"mix:503=1%;503=2%", "modifier 503 given twice"},
		{"stall:3", "stall takes no modifiers"},
	}
	for _, tt := range tests {
		steps, err := ParseScript(tt.script)
		if err == nil {
			t.Errorf("ParseScript(%q) = %+v, want an error", tt.script, steps)
			continue
		}
		if got := err.Error(); !strings.Contains(got, tt.want) {
			t.Errorf("ParseScript(%q) error = %q, want it to contain %q", tt.script, got, tt.want)
		}
	}
}

// TestMixDistribution checks the picks of a fixed seed against the shares,
// and that every share is reachable.
func TestMixDistribution(t *testing.T) {
	steps, err := ParseScript(soakMix)
	if err != nil {
		t.Fatal(err)
	}
	mix := steps[0]
	const n = 100_000
	r := newPicker(mix.Seed)
	got := map[string]int{}
	for range n {
		got[mix.pick(r).String()]++
	}
	want := map[string]float64{"503": 10, "reset": 5, "hang": 1, "stall": 2, "200": 82}
	if len(got) != len(want) {
		t.Errorf("picked %v, want only %v", got, want)
	}
	for step, pct := range want {
		share := 100 * float64(got[step]) / n
		if math.Abs(share-pct) > 0.4 {
			t.Errorf("%s picked for %.2f%% of %d calls, want %.0f%% ± 0.4", step, share, n, pct)
		}
	}
	r2 := newPicker(mix.Seed)
	r3 := newPicker(mix.Seed + 1)
	var same, other []string
	for range 200 {
		same = append(same, mix.pick(r2).String())
		other = append(other, mix.pick(r3).String())
	}
	if again := replay(mix, mix.Seed, 200); !slices.Equal(same, again) {
		t.Errorf("seed %d gave two sequences", mix.Seed)
	}
	if slices.Equal(same, other) {
		t.Errorf("seeds %d and %d gave the same 200 picks", mix.Seed, mix.Seed+1)
	}
}

func replay(mix Step, seed uint64, n int) []string {
	r := newPicker(seed)
	out := make([]string, n)
	for i := range out {
		out[i] = mix.pick(r).String()
	}
	return out
}

// TestMixServed plays a mix of quick faults through a server: Played and
// GET /fake/calls count what was picked, each call plays what it counted,
// and a Provider with the same seed plays the same sequence.
func TestMixServed(t *testing.T) {
	const script = "mix:503=25%;429=25%;reset=25%;seed=11"
	sequence := func() ([]string, map[string]int, *Server) {
		s := NewServer(script)
		var seq []string
		for range 200 {
			resp, err := send(t.Context(), s.Client(), s.URL+chatPath, "", chatBody)
			if err != nil {
				seq = append(seq, "reset")
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			seq = append(seq, strconv.Itoa(resp.StatusCode))
		}
		return seq, s.Played(), s
	}
	seq, played, s := sequence()
	defer s.Close()
	want := map[string]int{}
	for _, st := range seq {
		want[st]++
	}
	if !reflect.DeepEqual(played, want) || len(played) != 4 {
		t.Errorf("Played() = %v, the client saw %v; want the same four steps", played, want)
	}
	for i, r := range s.Requests() {
		if r.Step != seq[i] {
			t.Fatalf("call %d: recorded step %q, the client saw %q", i+1, r.Step, seq[i])
		}
	}
	resp, err := s.Client().Get(s.URL + "/fake/calls")
	if err != nil {
		t.Fatal(err)
	}
	var calls struct {
		Calls  int
		Played map[string]int
	}
	decode(t, readAll(t, resp), &calls)
	if calls.Calls != 200 || !reflect.DeepEqual(calls.Played, played) {
		t.Errorf("GET /fake/calls = %+v, want 200 calls and %v", calls, played)
	}
	again, _, s2 := sequence()
	s2.Close()
	if !slices.Equal(seq, again) {
		t.Errorf("the same seed played two sequences")
	}
	s.Reset()
	if p := s.Played(); len(p) != 0 {
		t.Errorf("Played() after Reset = %v", p)
	}
}

// TestPartialJSON checks stall and cut on a JSON answer: headers with the
// full length, half the body, then silence until the client leaves, or an
// unexpected EOF.
func TestPartialJSON(t *testing.T) {
	plain := NewServer("")
	defer plain.Close()
	for _, path := range []string{chatPath, messagesPath} {
		full := readAll(t, post(t, plain, path, "", messagesBody))

		p := &Provider{Script: "mix:stall=100%"}
		srv, _, returned := watched(p)
		ctx, cancel := context.WithCancel(t.Context())
		resp, err := send(ctx, srv.Client(), srv.URL+path, "", messagesBody)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(full)) {
			t.Errorf("%s stall: status %d, length %d; want 200 and %d", path, resp.StatusCode, resp.ContentLength, len(full))
		}
		half := make([]byte, len(full)/2)
		if _, err := io.ReadFull(resp.Body, half); err != nil || string(half[:8]) != string(full[:8]) {
			t.Errorf("%s stall: read %q, %v; want the first half of an answer like %q", path, half, err, full)
		}
		select {
		case <-returned:
			t.Fatalf("%s stall: the handler returned before the client left", path)
		default:
		}
		cancel()
		await(t, returned, "the stalled handler's return")
		resp.Body.Close()
		srv.Close()

		s := NewServer("cut")
		resp = post(t, s, path, "", messagesBody)
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || len(b) != len(full)/2 || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s cut: status %d, %d of %d bytes, then %v; want half, then an unexpected EOF",
				path, resp.StatusCode, len(b), len(full), err)
		}
		s.Close()
	}
}

// TestPartialStream checks stall and cut on a stream: two events, the
// first text included, then silence or an unexpected EOF.
func TestPartialStream(t *testing.T) {
	body := strings.Replace(chatBody, "{", `{"stream":true,`, 1)
	s := NewServer("")
	defer s.Close()
	resp := post(t, s, chatPath, "cut", body)
	evs, err := newSSE(resp.Body).all()
	if len(evs) != partialEvents || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(string(evs[1].data), "This") {
		t.Errorf("cut: %d events then %v, want %d (the first text last) then an unexpected EOF", len(evs), err, partialEvents)
	}

	p := &Provider{Script: "stall"}
	srv, _, returned := watched(p)
	defer srv.Close()
	resp, err = send(t.Context(), srv.Client(), srv.URL+chatPath, "", body)
	if err != nil {
		t.Fatal(err)
	}
	sse := newSSE(resp.Body)
	for i := range partialEvents {
		if _, err := sse.next(); err != nil {
			t.Fatalf("stall: event %d: %v", i+1, err)
		}
	}
	p.Close()
	if evs, err := sse.all(); len(evs) != 0 || err == nil {
		t.Errorf("stall: after Close got %d more events and %v, want none and an error", len(evs), err)
	}
	await(t, returned, "the stalled handler's return")
	resp.Body.Close()
}

func TestMixHangEndsWhenTheClientLeaves(t *testing.T) {
	p := &Provider{Script: "mix:hang=100%"}
	srv, arrived, returned := watched(p)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		resp, err := send(ctx, srv.Client(), srv.URL+messagesPath, "", messagesBody)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	await(t, arrived, "the call")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v, want context.Canceled", err)
	}
	await(t, returned, "the hanging handler's return")
	if got := p.Played(); got["hang"] != 1 {
		t.Errorf("Played() = %v, want one hang", got)
	}
}

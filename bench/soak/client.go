package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// api is one dialect the clients speak: its route, a JSON body and a
// stream body, and how its stream ends.
type api struct {
	name, path         string
	body, streamBody   []byte
	terminal, errFrame func(ev sseEvent) bool
}

var apis = [2]api{
	{
		name: "openai", path: "/openai/v1/chat/completions",
		body:       []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}],"max_tokens":32}`),
		streamBody: []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}],"max_tokens":32,"stream":true}`),
		terminal:   func(ev sseEvent) bool { return bytes.Equal(ev.data, []byte("[DONE]")) },
		errFrame:   func(ev sseEvent) bool { return bytes.HasPrefix(ev.data, []byte(`{"error"`)) },
	},
	{
		name: "anthropic", path: "/anthropic/v1/messages",
		body:       []byte(`{"model":"claude-haiku-4-5","max_tokens":32,"messages":[{"role":"user","content":"Say hello."}]}`),
		streamBody: []byte(`{"model":"claude-haiku-4-5","max_tokens":32,"messages":[{"role":"user","content":"Say hello."}],"stream":true}`),
		terminal:   func(ev sseEvent) bool { return ev.name == "message_stop" },
		errFrame:   func(ev sseEvent) bool { return ev.name == "error" },
	},
}

// outcome is what one client saw.
type outcome struct {
	api       string
	stream    bool
	status    int // 0: no HTTP status arrived
	latency   time.Duration
	terminal  bool // a stream's [DONE] or message_stop arrived
	errFrame  bool // a stream's error event arrived
	bodyError bool // reading the body failed (cut, reset, timeout)
}

// truncated reports a stream that answered 200 and ended with neither its
// terminal event nor an error event: a cut answer that looks whole.
func (o outcome) truncated() bool {
	return o.stream && o.status == http.StatusOK && !o.terminal && !o.errFrame
}

// client sends the calls.
type client struct {
	hc      *http.Client
	base    string
	limit   time.Duration // each call's own deadline
	streams float64
}

func newClient(base string, limit time.Duration, streams float64) *client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &client{hc: &http.Client{Transport: tr}, base: base, limit: limit, streams: streams}
}

// load sends calls at rate per second for d, each dialect and stream or
// not drawn from r, at most maxInFlight at once; it returns every call's
// outcome and how many calls were skipped for the in-flight bound. It
// returns when the last call ended, at most the call limit after d.
func (c *client) load(ctx context.Context, rate float64, d time.Duration, r *rand.Rand, maxInFlight int) ([]outcome, int) {
	var (
		mu       sync.Mutex
		out      []outcome
		wg       sync.WaitGroup
		inFlight atomic.Int64
		skipped  int
	)
	gap := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * gap)
		if due.Sub(start) >= d {
			break
		}
		t.Reset(time.Until(due))
		select {
		case <-ctx.Done():
			wg.Wait()
			return out, skipped
		case <-t.C:
		}
		a, stream := apis[r.IntN(len(apis))], r.Float64() < c.streams
		if inFlight.Load() >= int64(maxInFlight) {
			skipped++
			continue
		}
		inFlight.Add(1)
		wg.Go(func() {
			defer inFlight.Add(-1)
			o := c.call(ctx, a, stream)
			mu.Lock()
			out = append(out, o)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out, skipped
}

// call makes one call and reads its whole answer.
func (c *client) call(ctx context.Context, a api, stream bool) outcome {
	o := outcome{api: a.name, stream: stream}
	ctx, cancel := context.WithTimeout(ctx, c.limit)
	defer cancel()
	body := a.body
	if stream {
		body = a.streamBody
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+a.path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-soak")
	req.Header.Set("X-Api-Key", "sk-soak")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		o.latency = time.Since(start)
		return o
	}
	defer resp.Body.Close()
	o.status = resp.StatusCode
	if stream && resp.StatusCode == http.StatusOK {
		err = readStream(resp.Body, a, &o)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	o.bodyError = err != nil
	o.latency = time.Since(start)
	return o
}

// readStream reads a stream to its end, noting its terminal and error
// events.
func readStream(r io.Reader, a api, o *outcome) error {
	sr := sseReader{br: bufio.NewReaderSize(r, 16<<10)}
	for {
		ev, err := sr.next()
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		o.terminal = o.terminal || a.terminal(ev)
		o.errFrame = o.errFrame || a.errFrame(ev)
	}
}

// sseEvent is one server-sent event: its event field and data.
type sseEvent struct {
	name string
	data []byte
}

// sseReader splits server-sent events; it knows only the event and data
// fields, which is all the soak needs.
type sseReader struct{ br *bufio.Reader }

// next returns the next event; io.EOF at a clean end between events.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := s.br.ReadBytes('\n')
		if err != nil {
			if err == io.EOF && len(line) == 0 && !seen {
				return ev, io.EOF
			}
			if err == io.EOF {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if seen {
				return ev, nil
			}
			continue
		}
		seen = true
		switch {
		case bytes.HasPrefix(line, []byte("event:")):
			ev.name = string(bytes.TrimSpace(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if ev.data != nil {
				ev.data = append(append(ev.data, '\n'), d...)
			} else {
				ev.data = append([]byte{}, d...)
			}
		}
	}
}

package sluice

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"sync"
	"testing"

	"github.com/sluice-llm/sluice/fake"
)

// inProcess is a Base that serves each request with h in a goroutine of
// its own, with no socket: the response body is a pipe the handler writes
// into, so a stream arrives event by event, and the handler's context ends
// when the caller's does or when the caller closes the body, as a
// server's does when its client leaves. In a synctest bubble the whole
// exchange, the handler's waits too, runs on the bubble's fake clock.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	sr := r.Clone(ctx)
	sr.RequestURI, sr.RemoteAddr = r.URL.RequestURI(), "127.0.0.1:1"
	if sr.Host == "" {
		sr.Host = r.URL.Host
	}
	if sr.Body == nil {
		sr.Body = http.NoBody
	}
	if tr := httptrace.ContextClientTrace(r.Context()); tr != nil && tr.WroteRequest != nil {
		tr.WroteRequest(httptrace.WroteRequestInfo{}) // as a socket's transport tells, the request handed over whole
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			// A handler that aborts (http.ErrAbortHandler, as the fake
			// does to cut a connection) ends the body early, as a
			// dropped connection would; any other panic is the test's.
			if e := recover(); e != nil {
				if e != http.ErrAbortHandler {
					panic(e)
				}
				w.abort()
				pw.CloseWithError(io.ErrUnexpectedEOF)
				return
			}
			w.WriteHeader(http.StatusOK)
			// A handler that returned because the caller left must not
			// end the body cleanly: the caller reads why it left.
			pw.CloseWithError(context.Cause(ctx))
		}()
		p.h.ServeHTTP(w, sr)
	}()
	select {
	case <-w.ready:
		if w.aborted {
			cancel()
			return nil, io.ErrUnexpectedEOF // dropped before any answer
		}
	case <-ctx.Done():
		cancel()
		pr.CloseWithError(ctx.Err())
		return nil, context.Cause(ctx)
	}
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
	body := &pipeBody{PipeReader: pr, close: func() { stop(); cancel() }}
	return &http.Response{Status: strconv.Itoa(w.code) + " " + http.StatusText(w.code), StatusCode: w.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: body, ContentLength: -1, Request: r}, nil
}

// pipeWriter is the handler's side of an inProcess exchange.
type pipeWriter struct {
	header http.Header
	body   *io.PipeWriter

	once    sync.Once
	ready   chan struct{} // closed once the status and header are sent
	code    int
	sent    http.Header // the header as it was sent
	aborted bool        // set, before ready is closed, when the handler dropped the exchange unanswered
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// abort marks an exchange the handler dropped: if no header was sent,
// there is no answer.
func (w *pipeWriter) abort() {
	w.once.Do(func() {
		w.aborted = true
		close(w.ready)
	})
}

// Flush sends the header; the body is unbuffered.
func (w *pipeWriter) Flush() { w.WriteHeader(http.StatusOK) }

// pipeBody is the caller's side: closing it ends the handler's context.
type pipeBody struct {
	*io.PipeReader
	close func()
}

func (b *pipeBody) Close() error {
	b.close()
	return b.PipeReader.Close()
}

// hosts is a handler that serves each request with the handler of its
// host, for an inProcess Base that stands for several upstreams.
type hosts map[string]http.Handler

func (h hosts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s, ok := h[r.Host]; ok {
		s.ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
}

// newFakeRig is newRig with the fake provider served in process (see
// inProcess), for a test in a synctest bubble. Its requests go to
// http://provider.test.
func newFakeRig(t *testing.T, script string, p Policy) *rig {
	t.Helper()
	prov := &fake.Provider{Script: script}
	srv := &fake.Server{Server: &httptest.Server{URL: inProcessURL}, Provider: prov}
	r := &rig{t: t, srv: srv, logs: &lockedBuffer{}}
	r.tr = &Transport{Base: inProcess{prov}, Policy: p, Provider: "openai", Log: NewAttemptLog(r.logs)}
	t.Cleanup(prov.Close)
	return r
}

// inProcessURL is the address the requests of an inProcess Base name.
const inProcessURL = "http://provider.test"

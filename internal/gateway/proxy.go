package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/credential"
	"github.com/sluice-llm/sluice/internal/keypool"
	"github.com/sluice-llm/sluice/internal/usagechunk"
	"github.com/sluice-llm/sluice/spend"
)

// hopHeaders are hop-by-hop headers, never forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopHeaders deletes hop-by-hop headers, those named in Connection
// included.
func removeHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// dropForwarded deletes the client's Forwarded and X-Forwarded-* headers:
// the gateway does not vouch for them, and must not pass them on as if it
// had set them.
func dropForwarded(h http.Header) {
	delete(h, "Forwarded")
	for k := range h {
		if len(k) >= len("X-Forwarded-") && strings.EqualFold(k[:len("X-Forwarded-")], "X-Forwarded-") {
			delete(h, k)
		}
	}
}

// forward sends a request to the route's provider and relays the answer.
// id is the call's id, already set on the answer's headers. What the
// provider's API says of a request (its model, its stream, its key), the
// shape of the gateway's own errors, are asked of its dialect. In order:
// the call's span, the request's checks (admit), the call's context
// (callCtx), the engine's Send (which replays a kept answer, see
// sluice.Transport.Answers), the relay.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, rt *route, rest, id string) {
	d := rt.provider.d
	var tc *tracedCall
	if g.tracing != nil { // the call's span: the attempts' spans go under it
		tc = g.traceCall(w, r, rt, id)
		w, r = tc.w, tc.r
		defer tc.end()
	}
	in, ok := g.admit(w, r, rt, rest)
	if !ok {
		return
	}
	if tc != nil {
		tc.setModel(in.req.Model)
	}
	hideUsage := g.spend != nil && in.req.Stream && !in.req.StreamOptions && d.Client().AsksUsage(r)
	if hideUsage {
		in.body = usagechunk.Ask(in.body)
	}
	g.inflight.Add(1)
	defer g.inflight.Add(-1)

	// A call with an Idempotency-Key may outlive its client, to keep its
	// answer for the client's retry (idempotency.finish_on_disconnect).
	keyed := g.cfg.Idempotency.Enabled && len(r.Header["Idempotency-Key"]) > 0
	finish := keyed && g.cfg.Idempotency.FinishOnDisconnect
	ctx, cancel, stop := g.callCtx(r, finish)
	defer cancel(nil)
	defer stop()
	out := g.outgoing(ctx, r, rt, in.upPath, id, len(g.authKeys) > 0 && in.fromAuthHeader)
	sb := sluice.Body{Bytes: in.body, Model: in.req.Model, MaxTokens: in.req.MaxTokens, Caller: g.caller(r, &in, keyed)}
	resp, err := rt.transports[in.policy].Send(out, sb)
	switch {
	case err == nil:
		g.relay(w, resp, d, hideUsage, finish)
	case !g.answers.conflict(w, d, err):
		g.answerError(w, r, d, id, err)
	}
}

// caller is who makes the call in: its priority (the policy's when the
// request names none), and its id when something needs it (a budget or a
// limit scoped per key, or an Idempotency-Key: keyed).
func (g *Gateway) caller(r *http.Request, in *incoming, keyed bool) sluice.Caller {
	c := sluice.Caller{Priority: in.prio}
	if g.spendByKey || g.limitByKey || keyed {
		named := ""
		if len(g.authKeys) == 0 {
			named = callerNames.Caller(r.Header, r.URL)
		}
		c.ID = g.clientID(in.token, named)
	}
	return c
}

// incoming is a client's request as admit let it in.
type incoming struct {
	upPath         string // the path sent upstream
	token          string // the client's token, and whether it came in Authorization
	fromAuthHeader bool
	policy         string
	prio           sluice.Priority // "" when the request names none
	body           []byte
	req            dialect.Request // what the dialect reads of it
}

// admit checks a request before it goes, in order: its method and path,
// the client's token against auth.keys, the policy and priority it asks
// for, its body, and what the dialect reads of it (an ambiguous body or a
// bad model is refused). A refusal is answered in the dialect's shape, and
// ok is false.
func (g *Gateway) admit(w http.ResponseWriter, r *http.Request, rt *route, rest string) (in incoming, ok bool) {
	d := rt.provider.d
	refuse := func(status int, code, msg string) (incoming, bool) {
		writeError(w, d, status, code, msg)
		return incoming{}, false
	}
	if r.Method == http.MethodConnect || r.Method == http.MethodTrace {
		return refuse(http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: "+r.Method+" is not forwarded")
	}
	if !safePath(r, rt.prefix, d.Client()) {
		return refuse(http.StatusBadRequest, codeBadRequest, "sluice: the path holds dot segments, encoded slashes or dots; send a plain API path")
	}
	in.upPath = rest // made once
	if base := rt.provider.base.Path; base != "" {
		in.upPath = base + rest
	}
	if err := checkPathChars(in.upPath); err != nil {
		return refuse(http.StatusBadRequest, codeBadRequest, err.Error())
	}
	in.token, in.fromAuthHeader = clientToken(r, d)
	if len(g.authKeys) > 0 && !g.authorized(in.token) {
		return refuse(http.StatusUnauthorized, codeUnauthorized, "sluice: missing or unknown client token (send it in Sluice-Key or as the API key)")
	}
	in.policy = rt.policy
	if name := r.Header.Get("Sluice-Policy"); name != "" {
		if !g.policies[name] {
			return refuse(http.StatusBadRequest, codeBadRequest, fmt.Sprintf("sluice: Sluice-Policy names %q, which is not configured", name))
		}
		in.policy = name
	}
	var err error
	if in.prio, err = requestPriority(r); err != nil {
		return refuse(http.StatusBadRequest, codeBadRequest, err.Error())
	}
	if in.body, ok = g.readBody(w, r, d); !ok {
		return incoming{}, false
	}
	in.req = d.Request(in.upPath, in.body) // the model where the dialect names it: the path or the body
	if err := cmp.Or(in.req.Ambiguous, in.req.BadModel); err != nil {
		return refuse(http.StatusBadRequest, codeBadRequest, err.Error())
	}
	return in, true
}

// callCtx is the context of a call: the client's, or with finish one the
// client's leaving does not cancel (the call is finished and its answer
// kept; its policy's total still bounds it), with a cancel of its own
// that the gateway's aborted drain calls too. When the call ends the
// caller calls stop (the drain no longer cancels it), then cancel(nil).
func (g *Gateway) callCtx(r *http.Request, finish bool) (ctx context.Context, cancel context.CancelCauseFunc, stop func() bool) {
	ctx = r.Context()
	if finish {
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel = context.WithCancelCause(ctx)
	stop = context.AfterFunc(g.abort, func() { cancel(errAborted) })
	return ctx, cancel, stop
}

// callerNames are where a client's credentials travel: every dialect's
// key header, Authorization whatever its scheme, the gateway's own
// Sluice-Key. All of them name the caller.
var callerNames = credential.NewNames(append(dialect.KeyHeaders(), "Sluice-Key")...)

// clientToken returns the client's token: Sluice-Key, else the API key
// the client sends where the dialect d reads it (its SDK's key header,
// another SDK's, Gemini's ?key=).
// fromAuthHeader is true when it came from the latter.
func clientToken(r *http.Request, d dialect.Dialect) (tok string, fromAuthHeader bool) {
	if t := r.Header.Get("Sluice-Key"); t != "" {
		return t, false
	}
	if t := d.Client().Key(r); t != "" {
		return t, true
	}
	return "", false
}

// authorized compares a token with every accepted key in constant time.
func (g *Gateway) authorized(token string) bool {
	if token == "" {
		return false
	}
	d := sha256.Sum256([]byte(token))
	ok := 0
	for _, k := range g.authKeys {
		ok |= subtle.ConstantTimeCompare(d[:], k[:])
	}
	return ok == 1
}

// readBody reads the request body, answering 413 past the limit.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, d dialect.Dialect) ([]byte, bool) {
	limit := g.cfg.Limits.MaxBodyBytes
	tooLarge := func() ([]byte, bool) {
		if r.ProtoMajor == 1 { // HTTP/2 resets the stream alone, not the connection
			w.Header().Set("Connection", "close")
		}
		writeError(w, d, http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("sluice: request body over %d bytes (limits.max_body)", limit))
		return nil, false
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	if n := r.ContentLength; n > 0 { // within the limit: read in one allocation
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			writeError(w, d, http.StatusBadRequest, codeBadRequest, "sluice: reading the request body failed")
			return nil, false
		}
		return b, true
	}
	var buf bytes.Buffer // a length not known: read up to the limit
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return tooLarge()
	case err != nil:
		writeError(w, d, http.StatusBadRequest, codeBadRequest, "sluice: reading the request body failed")
		return nil, false
	}
	return buf.Bytes(), true
}

// outgoing builds the upstream request, without its body (Send is given
// that): the provider's base URL and path (its base path and the path
// stripped of the route's prefix), the client's
// headers less hop-by-hop and Sluice ones, the call's id, the injected key
// when configured. Every credential the client sent (every dialect's key
// header, a key in the query) is dropped when it is not for the provider:
// when it was the client's gateway token, and when the provider's key is
// injected, drawn from a pool or replaced by a signature.
func (g *Gateway) outgoing(ctx context.Context, r *http.Request, rt *route, path, id string, dropAuth bool) *http.Request {
	pv := rt.provider
	u := *pv.base
	u.Path = path
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	u.Fragment = ""
	h := r.Header.Clone()
	removeHopHeaders(h)
	delete(h, "Sluice-Policy")
	delete(h, "Sluice-Priority")
	delete(h, "Sluice-Key")
	delete(h, "Accept-Encoding") // the Transport asks for gzip and decodes it
	delete(h, "Host")
	dropForwarded(h)
	ids := []string{id} // sent upstream under both names, as the SDKs do
	h["X-Request-Id"], h["X-Client-Request-Id"] = ids, ids
	out := &http.Request{
		Method:     r.Method,
		URL:        &u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       u.Host,
	}
	sent := out.WithContext(ctx) // a copy: out itself stays on the stack
	if dropAuth || pv.key != "" || pv.pool || pv.signer != nil {
		pv.d.Client().SetKey(sent, pv.key) // the key in the header the dialect reads, or none
	}
	return sent
}

// callID returns the call's id: the client's X-Request-Id, else its
// X-Client-Request-Id, when valid; else a new one.
func callID(h http.Header) string {
	for _, k := range [...]string{"X-Request-Id", "X-Client-Request-Id"} {
		if id := h.Get(k); validRequestID(id) {
			return id
		}
	}
	return sluice.NewRequestID()
}

// validRequestID accepts a client's request id of up to 128 safe
// characters.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// answerError answers a call that ended without a response.
func (g *Gateway) answerError(w http.ResponseWriter, r *http.Request, d dialect.Dialect, id string, err error) {
	h := w.Header()
	if id != "" { // the gateway's own answer: its id is the request id
		h.Set("Sluice-Request-Id", id)
		h.Set("X-Request-Id", id)
	}
	attempts := 0
	var ee *sluice.ExhaustedError
	if errors.As(err, &ee) {
		attempts = ee.Attempts
	}
	h.Set("Sluice-Attempts", strconv.Itoa(attempts))
	var open *sluice.OpenError
	var te *sluice.TimeoutError
	var be *spend.BudgetError
	var out *keypool.OutError
	var ce *sluice.CredentialsError
	switch le := rateLimitErr(err); {
	case le != nil:
		answerRateLimited(w, d, le)
	case errors.As(err, &out):
		answerKeysOut(w, d, out)
	case errors.As(err, &be) && be.Err != nil && !errors.Is(err, spend.ErrUnpriced):
		g.events.Budget(be)
		writeError(w, d, http.StatusServiceUnavailable, codeBudgetExhausted,
			fmt.Sprintf("sluice: budget %s cannot be checked (the state store failed), so calls are refused", be.Budget))
	case errors.As(err, &be) && be.Err != nil:
		writeError(w, d, http.StatusBadRequest, codeUnpricedModel, "sluice: "+be.Err.Error())
	case errors.As(err, &be):
		g.events.Budget(be)
		h.Set("Retry-After", retryAfterSeconds(be.Resets, time.Now()))
		h.Set("Sluice-Budget-Remaining", strconv.FormatFloat(be.Remaining, 'f', 6, 64))
		msg := fmt.Sprintf("sluice: budget %s is spent ($%.6g left, less than this call's worst case $%.6g); it resets at %s",
			be.Budget, be.Remaining, be.WorstCase, be.Resets.UTC().Format(time.RFC3339))
		if a := be.Assumption(); a != "" {
			msg += "; " + a
		}
		writeError(w, d, http.StatusTooManyRequests, codeBudgetExhausted, msg)
	case errors.As(err, &open):
		h.Set("Retry-After", retryAfterSeconds(open.Until, time.Now()))
		writeError(w, d, http.StatusServiceUnavailable, codeProviderDown,
			fmt.Sprintf("sluice: %s is failing; calls fail fast until %s", open.Name, open.Until.UTC().Format(time.RFC3339)))
	case errors.As(err, &ce): // nothing was sent
		writeError(w, d, http.StatusBadGateway, codeCredentials,
			fmt.Sprintf("sluice: provider %s: the gateway has no credentials to sign its request with: %v", ce.Provider, ce.Err))
	case errors.Is(err, errAborted):
		writeError(w, d, http.StatusServiceUnavailable, codeShuttingDown, "sluice: the gateway is shutting down")
	case r.Context().Err() != nil:
		// The client left: nobody to answer.
	case errors.As(err, &te):
		writeError(w, d, http.StatusGatewayTimeout, codeTimeout,
			fmt.Sprintf("sluice: the provider did not answer in time (%s limit %s)", te.Phase, te.Limit))
	default:
		writeError(w, d, http.StatusBadGateway, codeUnreachable,
			fmt.Sprintf("sluice: the provider could not be reached after %s", plural(max(attempts, 1), "attempt")))
	}
}

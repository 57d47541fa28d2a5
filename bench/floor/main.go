// Command floor is the baseline the gateway is measured against: a bare
// httputil.ReverseProxy that forwards /openai/* and /anthropic/* to one
// upstream with the prefix stripped, keep-alive on both legs, and nothing
// else. ReverseProxy flushes text/event-stream answers at once. --route
// adds a prefix with an upstream of its own; /fail/* answers 503 at once,
// the floor of a fast-fail path.
//
// Usage:
//
//	floor --listen 127.0.0.1:9101 --upstream http://127.0.0.1:9090 --route /hang=http://127.0.0.1:9091
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9101", "address to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:9090", "upstream of /openai and /anthropic")
	var routes []string
	flag.Func("route", "another prefix and its upstream, as /hang=http://127.0.0.1:9091 (repeat)", func(s string) error {
		routes = append(routes, s)
		return nil
	})
	flag.Parse()
	mux := http.NewServeMux()
	for _, r := range append([]string{"/openai=" + *upstream, "/anthropic=" + *upstream}, routes...) {
		prefix, target, _ := strings.Cut(r, "=")
		u, err := url.Parse(target)
		if err != nil || u.Host == "" || !strings.HasPrefix(prefix, "/") {
			fmt.Fprintf(os.Stderr, "floor: route %q: write /prefix=http://host:port\n", r)
			os.Exit(2)
		}
		mux.Handle(prefix+"/", newProxy(prefix, u, tr))
	}
	mux.HandleFunc("/fail/", fail)
	srv := &http.Server{
		Addr:              *listen,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(os.Stderr, "floor: ", 0),
	}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(1)
	}
}

// fail answers a small 503 in OpenAI's error shape without calling any
// upstream: the least a Go server can do for a call, the floor of a
// gateway's fast-fail path.
func fail(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", "3600")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"error":{"message":"upstream is failing; calls fail fast","type":"provider_down","code":"provider_down"}}`)
}

// tr is the upstream transport: keep-alive, many idle connections.
var tr = &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	MaxIdleConns:        4096,
	MaxIdleConnsPerHost: 4096,
	IdleConnTimeout:     90 * time.Second,
}

// newProxy returns the reverse proxy that forwards prefix/* to upstream
// with the prefix stripped: /openai/v1/x → {upstream}/v1/x.
func newProxy(prefix string, upstream *url.URL, tr http.RoundTripper) http.Handler {
	return &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.URL.Path = upstream.Path + strings.TrimPrefix(pr.In.URL.Path, prefix)
			pr.Out.URL.RawPath = ""
		},
	}
}

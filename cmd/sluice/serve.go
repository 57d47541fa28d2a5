package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-llm/sluice/internal/cmdline"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/gateway"
	"github.com/sluice-llm/sluice/internal/logfile"
)

func runServe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := cmdline.ConfigFlag(fs, "config file")
	listen := fs.String("listen", "", "address to listen on, overriding the config's listen")
	useFake := fs.Bool("fake", false, "point every provider at the fake provider, served in this process on a free loopback port: no key, no network (state in memory, attempt log on stdout)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sluice serve [--config FILE] [--listen ADDR] [--fake]\n\n"+
			"Runs the gateway: point an SDK's base URL at it, e.g.\n"+
			"  OPENAI_BASE_URL=http://127.0.0.1:8080/openai/v1\n"+
			"  ANTHROPIC_BASE_URL=http://127.0.0.1:8080/anthropic\n"+
			"With --fake every provider is the fake provider (see sluice fake), for a first call with no key:\n"+
			"  curl http://127.0.0.1:8080/openai/v1/chat/completions -H 'Content-Type: application/json' \\\n"+
			"    -d '{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}'\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlagsOnly(fs, args, stderr, "flags only: --config FILE, --listen ADDR, --fake"); !ok {
		return code
	}
	src := cmdline.LocateConfig(*cfgPath)
	var fk *fakeUpstream
	if *useFake {
		var err error
		if fk, err = startFakeUpstream(); err != nil {
			fmt.Fprintf(stderr, "sluice serve: %v\n", err)
			return 1
		}
		defer fk.close()
	}
	load := func() (*config.Config, error) {
		cfg, err := loadConfig(src.Path, *listen)
		if err == nil && fk != nil {
			err = fk.apply(cfg)
		}
		return cfg, err
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if fk != nil {
		logger.Warn("FAKE UPSTREAM: every provider is the fake provider at "+fk.url+"; no key needed, no call leaves this machine (state in memory, attempt log on stdout)", "fake", fk.url)
	}
	for _, w := range cfg.Warnings() {
		logger.Warn(w)
	}
	getenv := os.Getenv
	if fk != nil {
		getenv = fk.getenv
	}
	s, err := openServer(cfg, stdout, logger, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitUsage
	}
	s.load, s.source = load, src
	if fk != nil {
		s.fake = fk.url
	}
	return s.run(stdout)
}

// loadConfig loads the config file at path (the defaults when "") with
// the --listen flag's address, when given, over its listen.
func loadConfig(path, listen string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil || listen == "" {
		return cfg, err
	}
	cfg.Listen = listen
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	return cfg, nil
}

// server is a running gateway and what it holds open.
type server struct {
	cfg    *config.Config
	gw     *gateway.Gateway
	ln     net.Listener
	log    *logfile.File
	store  io.Closer
	logger *slog.Logger
	load   func() (*config.Config, error) // the config again, on SIGHUP
	source cmdline.Source                 // where the config comes from
	fake   string                         // the fake provider's URL under --fake, else ""
}

// openServer opens what the gateway holds and listens; getenv is the
// environment it reads keys and tokens from.
func openServer(cfg *config.Config, stdout io.Writer, logger *slog.Logger, getenv func(string) string) (*server, error) {
	stores, err := openStore(cfg, logger)
	if err != nil {
		return nil, err
	}
	logw, err := openAttemptLog(cfg, stdout, logger)
	if err != nil {
		stores.Close()
		return nil, err
	}
	gw, err := gateway.New(cfg, gateway.Options{Store: stores.breakers, Ledger: stores.ledger, Limits: stores.limits,
		Answers: stores.answers, AttemptLog: logw, Logger: logger, Getenv: getenv})
	if err != nil {
		logw.Close()
		stores.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		logw.Close()
		stores.Close()
		return nil, fmt.Errorf("listen %s: %v (choose another address with --listen)", cfg.Listen, err)
	}
	return &server{cfg: cfg, gw: gw, ln: ln, log: logw, store: stores, logger: logger}, nil
}

// openAttemptLog opens the attempt log for appending: "-" is stdout.
func openAttemptLog(cfg *config.Config, stdout io.Writer, logger *slog.Logger) (*logfile.File, error) {
	path, err := cfg.AttemptsPath()
	if err != nil {
		return nil, err
	}
	if path == "-" {
		return logfile.New(stdout, logger), nil
	}
	return logfile.Open(path, logger)
}

// run serves until SIGTERM or SIGINT, then drains. SIGHUP reopens the
// attempt log and reloads the config.
func (s *server) run(stdout io.Writer) int {
	srv := &http.Server{
		Handler:           s.gw,
		Protocols:         gateway.Protocols(),
		ReadHeaderTimeout: s.cfg.Limits.ReadHeaderTimeout,
		MaxHeaderBytes:    int(s.cfg.Limits.MaxHeaderBytes),
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	// Signals are caught before the address is announced: a HUP sent as
	// soon as the gateway listens must not kill it.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var routes []string
	for _, r := range s.cfg.Routes {
		routes = append(routes, r.Prefix+" → "+s.cfg.Providers[r.Provider].BaseURL)
	}
	start := []any{"addr", "http://" + s.ln.Addr().String(), "routes", strings.Join(routes, ", "), "state", stateWhere(s.cfg), "attempts", attemptsWhere(s.cfg), "config", s.source.String()}
	if s.fake != "" {
		start = append(start, "upstream", "FAKE "+s.fake)
	}
	s.logger.Info("sluice serving", start...)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	for done := false; !done; {
		select {
		case err := <-errc:
			s.logger.Error("serve failed", "err", err)
			s.close()
			return 1
		case <-hup:
			s.hangUp()
		case <-ctx.Done():
			done = true
		}
	}
	stop()
	drain := s.gw.Config().Drain
	s.logger.Info("draining", "in_flight", s.gw.InFlight(), "drain", drain.String())
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := srv.Shutdown(dctx); err != nil {
		s.logger.Warn("drain period over; ending the calls still in flight", "in_flight", s.gw.InFlight())
		s.gw.Abort()
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(cctx) != nil {
			srv.Close()
		}
	}
	<-errc
	s.close()
	s.logger.Info("stopped")
	return exitOK
}

// hangUp answers SIGHUP: it reopens the attempt log (logrotate renamed
// it), then reloads the config; an invalid one is refused and the old one
// stays (the gateway says why).
func (s *server) hangUp() {
	if err := s.log.Reopen(); err != nil && !errors.Is(err, logfile.ErrNotReopenable) {
		s.logger.Error("attempt log: reopen failed; still writing to the old file", "err", err)
	}
	s.gw.Reload(s.load)
}

func (s *server) close() {
	s.gw.Close()
	s.log.Close()
	s.store.Close()
}

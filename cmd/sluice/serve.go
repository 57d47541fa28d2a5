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
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/gateway"
)

func runServe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file (default $"+config.EnvConfig+", else the built-in defaults)")
	listen := fs.String("listen", "", "address to listen on, overriding the config's listen")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sluice serve [--config FILE] [--listen ADDR]\n\n"+
			"Runs the gateway: point an SDK's base URL at it, e.g.\n"+
			"  OPENAI_BASE_URL=http://127.0.0.1:8080/openai/v1\n"+
			"  ANTHROPIC_BASE_URL=http://127.0.0.1:8080/anthropic\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice serve: unexpected argument %q (flags only; see --help)\n", fs.Arg(0))
		return exitUsage
	}
	cfg, err := config.Load(config.Locate(*cfgPath))
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitUsage
	}
	if *listen != "" {
		cfg.Listen = *listen
		if err := cfg.Validate(); err != nil {
			fmt.Fprintf(stderr, "sluice serve: --listen: %v\n", err)
			return exitUsage
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	for _, w := range cfg.Warnings() {
		logger.Warn(w)
	}
	s, err := openServer(cfg, stdout, logger)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitUsage
	}
	return s.run(stdout)
}

// server is a running gateway and what it holds open.
type server struct {
	cfg    *config.Config
	gw     *gateway.Gateway
	ln     net.Listener
	log    io.WriteCloser
	store  io.Closer
	logger *slog.Logger
}

func openServer(cfg *config.Config, stdout io.Writer, logger *slog.Logger) (*server, error) {
	store, storeCloser, err := openStore(cfg, logger)
	if err != nil {
		return nil, err
	}
	logw, err := openAttemptLog(cfg, stdout)
	if err != nil {
		storeCloser.Close()
		return nil, err
	}
	gw, err := gateway.New(cfg, gateway.Options{Store: store, AttemptLog: logw, Logger: logger})
	if err != nil {
		logw.Close()
		storeCloser.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		logw.Close()
		storeCloser.Close()
		return nil, fmt.Errorf("listen %s: %v (choose another address with --listen)", cfg.Listen, err)
	}
	return &server{cfg: cfg, gw: gw, ln: ln, log: logw, store: storeCloser, logger: logger}, nil
}

// openAttemptLog opens the attempt log for appending: "-" is stdout.
func openAttemptLog(cfg *config.Config, stdout io.Writer) (io.WriteCloser, error) {
	path, err := cfg.AttemptsPath()
	if err != nil {
		return nil, err
	}
	if path == "-" {
		return nopCloser{stdout}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("log.attempts: %v (choose a writable path)", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log.attempts: %v (choose a writable path)", err)
	}
	return f, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// run serves until SIGTERM or SIGINT, then drains.
func (s *server) run(stdout io.Writer) int {
	srv := &http.Server{
		Handler:           s.gw,
		ReadHeaderTimeout: s.cfg.Limits.ReadHeaderTimeout,
		MaxHeaderBytes:    int(s.cfg.Limits.MaxHeaderBytes),
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	var routes []string
	for _, r := range s.cfg.Routes {
		routes = append(routes, r.Prefix+" → "+s.cfg.Providers[r.Provider].BaseURL)
	}
	s.logger.Info("sluice serving", "addr", "http://"+s.ln.Addr().String(), "routes", strings.Join(routes, ", "), "state", s.cfg.State.Backend)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		s.logger.Error("serve failed", "err", err)
		s.close()
		return 1
	case <-ctx.Done():
	}
	stop()
	s.logger.Info("draining", "in_flight", s.gw.InFlight(), "drain", s.cfg.Drain.String())
	dctx, cancel := context.WithTimeout(context.Background(), s.cfg.Drain)
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

func (s *server) close() {
	s.gw.Close()
	if f, ok := s.log.(*os.File); ok {
		f.Sync()
	}
	s.log.Close()
	s.store.Close()
}

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
	"net/http/pprof"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/handlers"
	"github.com/matchmakerhq/matchmaker/internal/lineproto"
	"github.com/matchmakerhq/matchmaker/internal/metrics"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/outbound"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/storeguard"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/tracing"
)

// run is the whole program: main only gives it the process's context, arguments,
// environment and output, so a test can start the real server with its own.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	command, rest := "serve", args[1:]
	if len(rest) > 0 && isHelp(rest[0]) {
		usage(stdout)
		return nil
	}
	if len(rest) > 0 && rest[0] != "" && rest[0][0] != '-' {
		command, rest = rest[0], rest[1:]
	}
	switch command { // their own flags, no server configuration
	case "evaluate":
		return helpIsNoError(evaluateCommand(rest, stdout, stderr))
	case "simulate":
		return helpIsNoError(simulate(ctx, rest, stdout, stderr))
	}
	cfg, err := parseConfig(rest, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) { // api serve -h, api migrate --help, ...
		usage(stdout)
		return nil
	}
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))

	switch command {
	case "serve":
		return serve(ctx, cfg, logger)
	case "migrate":
		return migrate(ctx, cfg, stdout, logger)
	case "rebuild":
		return rebuild(ctx, cfg, stdout, stderr)
	case "tune":
		return tune(ctx, cfg, stdout, stderr)
	case "healthcheck":
		return healthcheck(ctx, cfg.Addr)
	default:
		return fmt.Errorf("unknown command %q (want serve, migrate, rebuild, tune, healthcheck, evaluate or simulate; api --help lists them)", command)
	}
}

// helpIsNoError turns the flag.ErrHelp of `api evaluate -h` (its usage already printed) into
// success: asking for help is not a failure.
func helpIsNoError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// openStores opens the rating and queue stores the configuration asks for: Postgres (migrated
// first when MATCHMAKER_MIGRATE is on), both on one pool, or, without DATABASE_URL, the
// in-memory stores. It waits for a database that is not there yet at most
// MATCHMAKER_STORE_STARTUP_TIMEOUT, logging each attempt, and then fails: the process exits
// rather than hangs without a listener. The returned function closes the queue store, then the
// rating store and the pool, within its context's deadline (see closeStore).
func openStores(ctx context.Context, cfg config, logger *slog.Logger) (ratings.Store, queue.Store, func(context.Context) error, error) {
	if cfg.DatabaseURL == "" {
		logger.Warn("DATABASE_URL is not set: ratings and tickets are kept IN MEMORY and LOST when the process exits; " +
			"set DATABASE_URL to a Postgres database to keep them")
		return ratings.NewMemoryStore(nil), memstore.New(), func(context.Context) error { return nil }, nil
	}
	pool, n, err := db.Connect(ctx, cfg.DatabaseURL, cfg.storeOptions(), cfg.startup(cfg.Migrate, logger))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open database: %w", poolerAdvice(err))
	}
	if cfg.Migrate {
		logger.Info("migrations applied", "count", n)
	}
	logger.Info("rating store: postgres", "database_url", maskURL(cfg.DatabaseURL))
	if pool.Hosts() > 1 {
		logReplication(ctx, pool, logger)
	}
	rs := ratingsdb.New(pool, cfg.ratingsOptions())
	if pool.TransactionPooled() {
		logger.Info("DATABASE_URL goes through a pooler in transaction mode: leadership, LISTEN and the purge use DATABASE_SESSION_URL",
			"database_session_url", maskURL(cfg.DatabaseSessionURL))
	}
	qs, err := queuedb.NewWith(ctx, pool.Pool(), queuedb.Options{LeaderLease: cfg.LeaderLease, Logger: logger, SessionURL: cfg.DatabaseSessionURL})
	if err != nil {
		_ = rs.Shutdown(ctx)
		return nil, nil, nil, fmt.Errorf("open the queue store: %w", err)
	}
	return rs, qs, func(ctx context.Context) error {
		// The queue store's own connections go first; a database that does not answer cannot
		// hold the shutdown past its deadline (its sockets' goodbyes are bounded, and the
		// wait here ends with ctx).
		closed := make(chan struct{})
		go func() { qs.Close(); close(closed) }()
		select {
		case <-closed:
		case <-ctx.Done():
			logger.Error("queue store: closing abandoned at the shutdown deadline")
		}
		return rs.Shutdown(ctx)
	}, nil
}

// poolerAdvice names the variable to change when the start-up found a pooler in transaction
// mode where a session is needed.
func poolerAdvice(err error) error {
	var pe *db.PoolerError
	switch {
	case !errors.As(err, &pe):
		return err
	case pe.SessionURL:
		return fmt.Errorf("DATABASE_SESSION_URL goes through a pooler in transaction mode (pgbouncer pool_mode=transaction): "+
			"point it at the database directly or at a pooler in session mode (docs/operations.md#poolers): %w", err)
	default:
		return fmt.Errorf("DATABASE_URL goes through a pooler in transaction mode (pgbouncer pool_mode=transaction): "+
			"leadership's advisory locks, LISTEN and the migrations need session mode; set DATABASE_SESSION_URL to the same database "+
			"directly or through a pooler in session mode (docs/operations.md#poolers): %w", err)
	}
}

// logReplication says, for a DATABASE_URL that lists a primary and its standbys, whether a
// write the service acknowledges is sure to be on the standby promoted when the primary dies:
// only when every COMMIT waits for a synchronous standby (docs/operations.md#failover).
func logReplication(ctx context.Context, pool *db.DB, logger *slog.Logger) {
	r, err := pool.Replication(ctx)
	switch {
	case err != nil:
		logger.Warn("failover: cannot read the primary's synchronous replication settings", "err", err.Error())
	case r.Risk() != "":
		logger.Warn("failover: DATABASE_URL lists several hosts, but "+r.Risk()+
			": a write acknowledged just before the primary fails may be missing on the standby promoted (docs/operations.md#failover)",
			"hosts", pool.Hosts())
	default:
		logger.Info("failover: every commit waits for a synchronous standby", "hosts", pool.Hosts(),
			"synchronous_standby_names", r.StandbyNames, "synchronous_commit", r.SynchronousCommit)
	}
}

// closeOnce is shutdown, which closes the stores, run the first time only (see closeStore).
func closeOnce(shutdown func(context.Context) error, logger *slog.Logger) func(context.Context) error {
	closed := false
	return func(ctx context.Context) error {
		if closed {
			return nil
		}
		closed = true
		return closeStore(ctx, shutdown, logger)
	}
}

// closeStore closes the store last, after the servers have drained, within what is left of
// the shutdown deadline: past it, the store abandons the calls still stuck on the database
// (a frozen one) instead of waiting for them, and that is logged.
func closeStore(ctx context.Context, shutdown func(context.Context) error, logger *slog.Logger) error {
	if err := shutdown(ctx); err != nil {
		logger.Error("rating store closed by force", "err", err.Error())
		return fmt.Errorf("store shutdown: %w", err)
	}
	return nil
}

// migrate applies the embedded migrations (the Kubernetes migration Job runs this).
func migrate(ctx context.Context, cfg config, stdout io.Writer, logger *slog.Logger) error {
	if cfg.DatabaseURL == "" {
		return errors.New("migrate needs DATABASE_URL (or -database-url)")
	}
	// Like the service's start-up, it waits a bounded time for a database that is not there yet.
	pool, n, err := db.Connect(ctx, cfg.DatabaseURL, cfg.storeOptions(), cfg.startup(true, logger))
	if err != nil {
		return fmt.Errorf("migrate: %w", poolerAdvice(err))
	}
	pool.Close()
	fmt.Fprintf(stdout, "applied %d migration(s); the schema is up to date\n", n)
	return nil
}

// debugMux serves the runtime profiles (go tool pprof http://ADDR/debug/pprof/profile).
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// healthcheck asks a server on this machine's cfg.Addr port for /healthz: the container's
// HEALTHCHECK, since the distroless image has no curl.
func healthcheck(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("MATCHMAKER_ADDR %q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /healthz answered %d", resp.StatusCode)
	}
	return nil
}

// serve runs the HTTP service until ctx is cancelled, then drains in-flight requests.
func serve(ctx context.Context, cfg config, logger *slog.Logger) error {
	logger.Info("starting", "config", cfg.logValue())
	auth, err := newAuth(cfg, logger)
	if err != nil {
		return err
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	tp, stopTracing, err := startTracing(cfg, logger)
	if err != nil {
		return err
	}
	defer withTimeout(cfg.ShutdownTimeout, stopTracing) // last: the spans of the shutdown too
	rawStore, queueStore, storeClose, err := openStores(ctx, cfg, logger)
	if err != nil {
		return err
	}
	// The stores close last, after both servers have drained and the queue loop stopped
	// (below); the deferred close is for the returns before that.
	closeStores := closeOnce(storeClose, logger)
	defer withTimeout(cfg.ShutdownTimeout, func(ctx context.Context) { _ = closeStores(ctx) })
	svc, queues := newServices(cfg, registry, rawStore, queueStore, tp, logger)
	// Event streams and long-polls end when the shutdown starts, so that the drain is not held
	// up by clients that would wait a minute; their clients reconnect to another replica.
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	handler := handlers.NewServer(handlers.Deps{Logger: logger, Limits: cfg.Limits, Registry: registry, Ratings: svc,
		Queue: queues, Streams: streams, Auth: auth, RateLimits: cfg.RateLimits, Tracer: tp})
	stopQueues := startQueueLoop(queues)
	defer withTimeout(cfg.ShutdownTimeout, func(ctx context.Context) { stopQueues(ctx) })
	defer startRankedLoops(cfg, svc, logger)()

	if cfg.DebugAddr != "" {
		stopDebug, err := startDebug(cfg.DebugAddr, logger)
		if err != nil {
			return err
		}
		defer stopDebug()
	}
	serveErr := make(chan error, 2)
	srv, err := startHTTP(cfg, handler, logger, serveErr)
	if err != nil {
		return err
	}
	legacy, err := startLegacy(cfg, svc, registry, logger, serveErr)
	if err != nil {
		_ = srv.Close()
		return err
	}

	select {
	case err := <-serveErr:
		_ = srv.Close()
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	// ctx is already cancelled: the drain needs a fresh deadline of its own, shared by both
	// servers so the whole shutdown fits in MATCHMAKER_SHUTDOWN_TIMEOUT.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	errs := drain(shutdownCtx, legacy, endStreams, srv)
	if !stopQueues(shutdownCtx) {
		logger.Error("queue loop: abandoned at the shutdown deadline (a tick or a resignation did not end)")
	}
	if err := closeStores(shutdownCtx); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		_ = srv.Close() // the requests still running when the deadline passed
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// newAuth is the API keys' configuration, with a warning when it leaves endpoints open.
func newAuth(cfg config, logger *slog.Logger) (*handlers.Auth, error) {
	keys, err := handlers.ParseAPIKeys(cfg.APIKeys)
	if err != nil {
		return nil, fmt.Errorf("MATCHMAKER_API_KEYS: %w", err)
	}
	auth := &handlers.Auth{Off: !cfg.Auth, Keys: keys}
	switch {
	case auth.Off:
		logger.Warn("MATCHMAKER_AUTH=off: every endpoint is open to anyone who can reach it; use this for development only")
	case len(keys) == 0:
		logger.Warn("no API keys configured: matchmaking, team splits and reads are open; results and admin calls will answer 401 until MATCHMAKER_API_KEYS is set")
	}
	return auth, nil
}

// withTimeout runs f with a context of its own that ends after d.
func withTimeout(d time.Duration, f func(context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	f(ctx)
}

// newServices is one ratings service over one metered store for every transport, so HTTP and
// line-protocol calls are timed alike and follow the same rules (the mutator policy is read
// from the store at most every ratings.PolicyRefresh, and the metrics count those reads only),
// and the queue service over the guarded queue store.
func newServices(cfg config, registry *prometheus.Registry, rawStore ratings.Store, queueStore queue.Store, tp trace.TracerProvider, logger *slog.Logger) (*ratings.Service, *queuesvc.Service) {
	storeCalls := metrics.NewStoreCalls(registry)
	var ratingSpans ratings.StoreSpan
	var queueSpans storeguard.StoreSpan
	out := outbound.New(queue.WebhookPolicy{Allow: cfg.WebhookAllow}, queuesvc.DefaultWebhookTimeout)
	if tp != nil {
		ratingSpans, queueSpans = tracing.StoreSpans(tp, rawStore.Name()), tracing.StoreSpans(tp, "queue-"+queueStore.Name())
		out = out.Traced(tp)
	}
	metered := ratings.MeteredWithSpans(rawStore, storeCalls.Observer(rawStore.Name()), ratingSpans)
	svc := ratings.NewServiceWithModels(ratings.CachePolicy(metered, ratings.PolicyRefresh), cfg.RatingModels)
	queueStore = storeguard.NewWithSpans(queueStore, cfg.StoreTimeout, storeCalls.Observer("queue-"+queueStore.Name()), queueSpans)
	queues := queuesvc.New(queuesvc.Deps{Store: queueStore, Ratings: svc, Matcher: queue.TickPass{},
		Config: queuesvc.Config{Retention: cfg.QueueRetention, CreateTimeout: cfg.StoreTimeout,
			WebhookMaxAttempts: cfg.WebhookMaxAttempts, WebhookMaxAge: cfg.WebhookMaxAge, WebhookAllow: cfg.WebhookAllow,
			Instance: instanceName(cfg)},
		Outbound: out, Logger: logger, Metrics: queuesvc.NewMetrics(registry), Tracer: tp})
	return svc, queues
}

// startTracing starts the OpenTelemetry tracer provider the configuration asks for: nil (no
// spans, no cost) unless an OTLP endpoint is set. The returned function flushes the spans
// still buffered, within its context's deadline.
func startTracing(cfg config, logger *slog.Logger) (trace.TracerProvider, func(context.Context), error) {
	if !cfg.Tracing.On() {
		return nil, func(context.Context) {}, nil
	}
	tc := cfg.Tracing
	tc.Instance, _ = os.Hostname()
	tp, shutdown, err := tracing.New(tc)
	if err != nil {
		return nil, nil, err
	}
	logger.Info("traces: exported over OTLP/HTTP", "url", maskURL(tc.URL()), "service_name", tc.ServiceName, "sample_ratio", tc.SampleRatio)
	return tp, func(ctx context.Context) {
		if err := shutdown(ctx); err != nil {
			logger.Warn("traces: the last spans were not exported", "err", err.Error())
		}
	}, nil
}

// startQueueLoop runs the tick loop of the queues this replica leads; it resigns them when it
// stops. The returned function stops it, waiting for a tick in flight and the resignations at
// most until ctx ends, and reports whether they ended.
func startQueueLoop(queues *queuesvc.Service) func(ctx context.Context) bool {
	loopCtx, stopLoop := context.WithCancel(context.Background())
	loopDone := make(chan struct{})
	go func() { _ = queues.Run(loopCtx); close(loopDone) }()
	return func(ctx context.Context) bool {
		stopLoop()
		select {
		case <-loopDone:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// startRankedLoops runs the seasons' check (resets and final standings) every SeasonTick and,
// unless turned off, self-tuning every AutoTuneInterval; the returned function stops them
// and waits for them (a tuning under way ends with its context).
func startRankedLoops(cfg config, svc *ratings.Service, logger *slog.Logger) func() {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		svc.RunSeasons(ctx, cfg.SeasonTick, func(err error) { logger.Warn("seasons: will retry at the next check", "err", err) })
	})
	if cfg.AutoTune {
		wg.Go(func() {
			svc.RunAutoTune(ctx, cfg.AutoTuneInterval, ratings.AutoTune{Rebuild: true, Share: cfg.AutoTuneShare}, func(at ratings.AutoTuned, err error) {
				if err != nil {
					logger.Warn("self-tuning: will retry at the next check", "err", err)
					return
				}
				rep := at.Tuning.Report
				logger.Info("ratings tuned themselves", "context", at.Tuning.Context.Key(), "results", rep.Results, "accepted", rep.Accepted,
					"held_out_log_loss_before", rep.HeldOutBefore, "held_out_log_loss_after", rep.HeldOutAfter, "rebuilt", at.Rebuilt, "paced", at.Paced.String())
			})
		})
	}
	return func() { stop(); wg.Wait() }
}

// startHTTP listens on MATCHMAKER_ADDR and serves handler; Serve's error goes to serveErr.
func startHTTP(cfg config, handler http.Handler, logger *slog.Logger, serveErr chan<- error) (*http.Server, error) {
	listener, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	listener = handlers.ProblemListener(listener) // net/http's own 400s and 431s as problem+json
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	go func() { serveErr <- srv.Serve(listener) }()
	logger.Info("listening", "addr", listener.Addr().String())
	return srv, nil
}

// startDebug serves pprof on its own listener, never on the public port; the returned
// function closes it.
func startDebug(addr string, logger *slog.Logger) (func(), error) {
	debugLn, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on MATCHMAKER_DEBUG_ADDR %s: %w", addr, err)
	}
	debugSrv := &http.Server{Handler: debugMux(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = debugSrv.Serve(debugLn) }()
	logger.Info("pprof listening", "addr", debugLn.Addr().String())
	return func() { _ = debugSrv.Close() }, nil
}

// startLegacy serves the line protocol on MATCHMAKER_LEGACY_ADDR, if set (nil otherwise); its
// error goes to serveErr.
func startLegacy(cfg config, svc *ratings.Service, registry *prometheus.Registry, logger *slog.Logger, serveErr chan<- error) (*lineproto.Server, error) {
	if cfg.LegacyAddr == "" {
		return nil, nil
	}
	legacy := lineproto.NewServer(svc, logger, cfg.lineConfig(), lineproto.NewMetrics(registry))
	legacyLn, err := net.Listen("tcp", cfg.LegacyAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on MATCHMAKER_LEGACY_ADDR %s: %w", cfg.LegacyAddr, err)
	}
	go func() {
		if err := legacy.Serve(context.Background(), legacyLn); err != nil {
			serveErr <- fmt.Errorf("line protocol: %w", err)
		}
	}()
	logger.Info("line protocol listening", "addr", legacyLn.Addr().String())
	return legacy, nil
}

// drain shuts both servers down within ctx, the event streams ended first, and returns what
// failed.
func drain(ctx context.Context, legacy *lineproto.Server, endStreams func(), srv *http.Server) []error {
	var errs []error
	if legacy != nil {
		if err := legacy.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("line protocol shutdown: %w", err))
		}
	}
	endStreams()
	if err := srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
	}
	return errs
}

// instanceName is MATCHMAKER_INSTANCE, else the host name and the HTTP port: what a
// partitioned queue's stats name a partition's leader by.
func instanceName(cfg config) string {
	if cfg.Instance != "" {
		return cfg.Instance
	}
	host, _ := os.Hostname()
	_, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return host
	}
	return net.JoinHostPort(host, port)
}

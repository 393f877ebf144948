package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/handlers"
	"github.com/matchmakerhq/matchmaker/internal/lineproto"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/tracing"
)

// DefaultAutoTuneShare is MATCHMAKER_AUTO_TUNE_CPU_SHARE's default: self-tuning keeps a
// quarter of one core busy at most, beside the service's own work.
const DefaultAutoTuneShare = 0.25

// config is everything an operator can set. Environment variables give the values; flags,
// where they exist, override them.
type config struct {
	Addr        string
	DatabaseURL string
	// DatabaseSessionURL is the same database for what needs a session of its own
	// (leadership, LISTEN, the purge's and the migrations' locks) when DATABASE_URL goes
	// through a pooler in transaction mode (db/pooler.go).
	DatabaseSessionURL string
	Migrate            bool
	APIKeys            string
	RateLimits         handlers.RateLimits
	// RatingModels gives each rating context its model (MATCHMAKER_RATING_MODELS).
	RatingModels *ratings.ModelSet
	Auth         bool
	LegacyAddr   string
	// LegacySecret is the SHA-256 hex of the line protocol's shared secret
	// (MATCHMAKER_LEGACY_SECRET_SHA256); LegacyMaxConnsPerAddr its per-address cap.
	LegacySecret          string
	LegacyMaxConnsPerAddr int
	DebugAddr             string
	LogLevel              slog.Level
	ShutdownTimeout       time.Duration
	QueueRetention        time.Duration
	// LeaderLease is how long a queue's leader may go without renewing its lease before
	// another replica takes the queue from it (queuedb.Options.LeaderLease).
	LeaderLease time.Duration
	// WebhookMaxAttempts and WebhookMaxAge: when a webhook event is given up on.
	WebhookMaxAttempts int
	WebhookMaxAge      time.Duration
	// WebhookAllow are the internal addresses webhooks may reach (MATCHMAKER_WEBHOOK_ALLOW_CIDRS).
	WebhookAllow []netip.Prefix
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	Limits       handlers.Limits
	// RebuildGameType is the game type `api rebuild` recomputes.
	RebuildGameType string
	// TuneRebuild says whether `api tune` rebuilds the game type after storing its tuning.
	TuneRebuild bool
	// RebuildSolve makes `api rebuild` fit the skills to the whole history at once.
	RebuildSolve bool

	// The rating store's deadlines (Postgres only): every call, a rebuild, and how long
	// start-up waits for the database.
	StoreTimeout        time.Duration
	StoreRebuildTimeout time.Duration
	StoreStartupTimeout time.Duration
	// StoreCommitters is how many batches of results the Postgres store writes at once.
	StoreCommitters int
	// StoreMaxConns is the Postgres pool's size when DATABASE_URL sets no pool_max_conns.
	StoreMaxConns int

	// SeasonTick is how often a replica checks for seasons to reset or end; AutoTune whether
	// contexts tune themselves, checked every AutoTuneInterval (docs/ranked.md), keeping busy
	// at most AutoTuneShare of one core (ratings.AutoTune.Share).
	SeasonTick       time.Duration
	AutoTune         bool
	AutoTuneInterval time.Duration
	AutoTuneShare    float64

	// Tracing is the OpenTelemetry SDK's variables (OTEL_EXPORTER_OTLP_ENDPOINT, ...): traces
	// are off unless an endpoint is set.
	Tracing tracing.Config
	// Instance names this replica where a partitioned queue's stats say who leads each
	// partition (MATCHMAKER_INSTANCE); "" is the host name and the HTTP port.
	Instance string
}

// parseConfig reads the environment through getenv, then the flags in args.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	env := envReader{getenv: getenv}
	limits := handlers.DefaultLimits()
	cfg := config{
		Addr:                  env.str("MATCHMAKER_ADDR", ":8080"),
		DatabaseURL:           env.str("DATABASE_URL", ""),
		DatabaseSessionURL:    env.str("DATABASE_SESSION_URL", ""),
		Migrate:               env.boolean("MATCHMAKER_MIGRATE", true),
		APIKeys:               env.str("MATCHMAKER_API_KEYS", ""),
		Auth:                  env.onOff("MATCHMAKER_AUTH", true),
		LegacyAddr:            env.str("MATCHMAKER_LEGACY_ADDR", ""),
		LegacySecret:          env.str("MATCHMAKER_LEGACY_SECRET_SHA256", ""),
		LegacyMaxConnsPerAddr: env.integer("MATCHMAKER_LEGACY_MAX_CONNS_PER_ADDR", lineproto.DefaultConfig().MaxConnsPerAddr),
		DebugAddr:             env.str("MATCHMAKER_DEBUG_ADDR", ""), Instance: env.str("MATCHMAKER_INSTANCE", ""),
		LogLevel:           env.level("MATCHMAKER_LOG_LEVEL", slog.LevelInfo),
		ShutdownTimeout:    env.duration("MATCHMAKER_SHUTDOWN_TIMEOUT", 15*time.Second),
		QueueRetention:     env.duration("MATCHMAKER_QUEUE_RETENTION", time.Hour),
		LeaderLease:        env.duration("MATCHMAKER_LEADER_LEASE", queuedb.DefaultLeaderLease),
		WebhookMaxAttempts: env.integer("MATCHMAKER_WEBHOOK_MAX_ATTEMPTS", 20),
		WebhookMaxAge:      env.duration("MATCHMAKER_WEBHOOK_MAX_AGE", time.Hour),
		ReadTimeout:        env.duration("MATCHMAKER_READ_TIMEOUT", 30*time.Second),
		WriteTimeout:       env.duration("MATCHMAKER_WRITE_TIMEOUT", 60*time.Second),
		IdleTimeout:        env.duration("MATCHMAKER_IDLE_TIMEOUT", 120*time.Second),
		Limits: handlers.Limits{
			MaxBodyBytes:        int64(env.integer("MATCHMAKER_MAX_BODY_BYTES", int(limits.MaxBodyBytes))),
			MaxMatchmakePlayers: env.integer("MATCHMAKER_MAX_MATCHMAKE_PLAYERS", limits.MaxMatchmakePlayers),
			MaxTeamPlayers:      env.integer("MATCHMAKER_MAX_TEAM_PLAYERS", limits.MaxTeamPlayers),
			HeavySearches:       env.integer("MATCHMAKER_HEAVY_SEARCHES", limits.HeavySearches),
			Admission: handlers.Admission{
				Budget:      env.bytes("MATCHMAKER_MEMORY_BUDGET", limits.Admission.Budget),
				Wait:        env.duration("MATCHMAKER_ADMISSION_WAIT", limits.Admission.Wait),
				PerCaller:   env.integer("MATCHMAKER_ADMISSION_PER_KEY", handlers.DefaultAdmissionPerCaller),
				BodyTimeout: env.duration("MATCHMAKER_BODY_TIMEOUT", handlers.DefaultBodyTimeout),
			},
			Waiters: handlers.WaitLimits{
				PerReplica: env.integer("MATCHMAKER_MAX_WAITERS", limits.Waiters.PerReplica),
				PerCaller:  env.integer("MATCHMAKER_MAX_WAITERS_PER_KEY", limits.Waiters.PerCaller),
			},
		},

		StoreTimeout:        env.duration("MATCHMAKER_STORE_TIMEOUT", db.DefaultTimeout),
		StoreRebuildTimeout: env.duration("MATCHMAKER_STORE_REBUILD_TIMEOUT", db.DefaultRebuildTimeout),
		StoreStartupTimeout: env.duration("MATCHMAKER_STORE_STARTUP_TIMEOUT", 30*time.Second),
		StoreCommitters:     env.integer("MATCHMAKER_STORE_COMMITTERS", ratingsdb.DefaultCommitters),
		StoreMaxConns:       env.integer("MATCHMAKER_DB_MAX_CONNS", db.DefaultMaxConns),

		SeasonTick:       env.duration("MATCHMAKER_SEASON_TICK", 2*time.Second),
		AutoTune:         env.onOff("MATCHMAKER_AUTO_TUNE", true),
		AutoTuneInterval: env.duration("MATCHMAKER_AUTO_TUNE_INTERVAL", 10*time.Minute), AutoTuneShare: env.fraction("MATCHMAKER_AUTO_TUNE_CPU_SHARE", DefaultAutoTuneShare),
	}
	rateLimits, err := handlers.ParseRateLimits(getenv("MATCHMAKER_RATE_LIMITS"))
	if err != nil {
		env.errs = append(env.errs, fmt.Errorf("MATCHMAKER_RATE_LIMITS: %w", err))
	}
	cfg.RateLimits = rateLimits
	if cfg.WebhookAllow, err = queue.ParseWebhookAllow(getenv("MATCHMAKER_WEBHOOK_ALLOW_CIDRS")); err != nil {
		env.errs = append(env.errs, fmt.Errorf("MATCHMAKER_WEBHOOK_ALLOW_CIDRS: %w (e.g. 10.20.0.0/16,fd00:1::/64)", err))
	}
	models, err := ratings.ParseModelSet(getenv("MATCHMAKER_RATING_MODELS"))
	if err != nil {
		env.errs = append(env.errs, fmt.Errorf("MATCHMAKER_RATING_MODELS: %w (e.g. default=ns2-kalman,ctf=ns2,ctf+instagib=openskill-pl)", err))
	}
	cfg.RatingModels = models
	cfg.Tracing, err = tracing.ReadConfig(getenv)
	env.errs = append(env.errs, err) // errors.Join drops a nil
	if err := errors.Join(env.errs...); err != nil {
		return config{}, err
	}

	fs := cfg.flagSet(stderr)
	// -h and -help answer flag.ErrHelp without a word: run prints the whole usage (usage).
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return cfg, cfg.validate()
}

// flagSet is the flags of serve, migrate, rebuild and healthcheck, each overriding the
// value already in c (its environment variable's, or the default).
func (c *config) flagSet(output io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&c.Addr, "addr", c.Addr, "HTTP listen address (MATCHMAKER_ADDR)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "Postgres URL; empty uses the in-memory store (DATABASE_URL)")
	fs.StringVar(&c.DatabaseSessionURL, "database-session-url", c.DatabaseSessionURL,
		"Postgres URL of the same database, direct or through a pooler in session mode, when DATABASE_URL goes through one in transaction mode (DATABASE_SESSION_URL)")
	fs.BoolVar(&c.Migrate, "migrate", c.Migrate, "apply migrations at start-up (MATCHMAKER_MIGRATE)")
	fs.StringVar(&c.LegacyAddr, "legacy-addr", c.LegacyAddr, "TCP address of the line protocol; empty is off (MATCHMAKER_LEGACY_ADDR)")
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (MATCHMAKER_LOG_LEVEL)")
	fs.StringVar(&c.RebuildGameType, "game-type", "", "the game type to rebuild or tune (api rebuild and api tune only)")
	fs.BoolVar(&c.TuneRebuild, "rebuild", false, "rebuild the game type with its new tuning (api tune only)")
	fs.BoolVar(&c.RebuildSolve, "solve", false, "fit every skill to the whole history at once, the NS2 seed's MAP solve with a Gamma prior (api rebuild only)")
	return fs
}

func (c config) validate() error {
	var errs []error
	if c.Limits.MaxBodyBytes < 1024 {
		errs = append(errs, errors.New("MATCHMAKER_MAX_BODY_BYTES must be at least 1024"))
	}
	if c.Limits.MaxMatchmakePlayers < 2 {
		errs = append(errs, errors.New("MATCHMAKER_MAX_MATCHMAKE_PLAYERS must be at least 2"))
	}
	if c.Limits.MaxTeamPlayers < 2 || c.Limits.MaxTeamPlayers > teams.MaxHumans {
		errs = append(errs, fmt.Errorf("MATCHMAKER_MAX_TEAM_PLAYERS must be from 2 to %d", teams.MaxHumans))
	}
	if c.Limits.Admission.Budget > 0 && c.Limits.Admission.Wait <= 0 {
		errs = append(errs, errors.New("MATCHMAKER_ADMISSION_WAIT must be positive"))
	}
	if c.LegacySecret != "" {
		if raw, err := hex.DecodeString(c.LegacySecret); err != nil || len(raw) != sha256.Size {
			errs = append(errs, errors.New("MATCHMAKER_LEGACY_SECRET_SHA256 must be 64 hex digits (sha256 of the secret)"))
		}
	} else if c.LegacyAddr != "" && c.Auth && countKeys(c.APIKeys) > 0 {
		// With keys, HTTP tells no one's weights without one; the line protocol must not
		// either.
		errs = append(errs, errors.New("MATCHMAKER_LEGACY_SECRET_SHA256 must be set when MATCHMAKER_API_KEYS is and the line protocol is on (MATCHMAKER_LEGACY_ADDR): mods then send AUTH <secret> first"))
	}
	if c.LegacyMaxConnsPerAddr < 1 {
		errs = append(errs, errors.New("MATCHMAKER_LEGACY_MAX_CONNS_PER_ADDR must be at least 1"))
	}
	if c.Limits.Admission.PerCaller < 1 {
		errs = append(errs, errors.New("MATCHMAKER_ADMISSION_PER_KEY must be at least 1"))
	}
	if c.Limits.Admission.BodyTimeout <= 0 {
		errs = append(errs, errors.New("MATCHMAKER_BODY_TIMEOUT must be positive"))
	}
	if w := c.Limits.Waiters; w.PerReplica < 1 || w.PerCaller < 1 || w.PerCaller > w.PerReplica {
		errs = append(errs, errors.New("MATCHMAKER_MAX_WAITERS and MATCHMAKER_MAX_WAITERS_PER_KEY must be at least 1, the second at most the first"))
	}
	if c.WebhookMaxAttempts < 1 || c.WebhookMaxAttempts > 1000 {
		errs = append(errs, errors.New("MATCHMAKER_WEBHOOK_MAX_ATTEMPTS must be from 1 to 1000"))
	}
	if c.WebhookMaxAge < time.Minute || c.WebhookMaxAge > 7*24*time.Hour {
		errs = append(errs, errors.New("MATCHMAKER_WEBHOOK_MAX_AGE must be from 1m to 168h"))
	}
	if c.LeaderLease < time.Second || c.LeaderLease > 10*time.Minute {
		errs = append(errs, errors.New("MATCHMAKER_LEADER_LEASE must be from 1s to 10m"))
	}
	if c.QueueRetention < 10*time.Minute {
		errs = append(errs, errors.New("MATCHMAKER_QUEUE_RETENTION must be at least 10m: event streams resume for that long"))
	}
	if c.Limits.HeavySearches < 1 {
		errs = append(errs, errors.New("MATCHMAKER_HEAVY_SEARCHES must be at least 1"))
	}
	for name, d := range map[string]time.Duration{"MATCHMAKER_SHUTDOWN_TIMEOUT": c.ShutdownTimeout,
		"MATCHMAKER_READ_TIMEOUT": c.ReadTimeout, "MATCHMAKER_WRITE_TIMEOUT": c.WriteTimeout,
		"MATCHMAKER_IDLE_TIMEOUT": c.IdleTimeout, "MATCHMAKER_STORE_TIMEOUT": c.StoreTimeout,
		"MATCHMAKER_STORE_REBUILD_TIMEOUT": c.StoreRebuildTimeout, "MATCHMAKER_SEASON_TICK": c.SeasonTick,
		"MATCHMAKER_AUTO_TUNE_INTERVAL": c.AutoTuneInterval} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	if c.StoreCommitters < 0 || c.StoreCommitters > 64 {
		errs = append(errs, errors.New("MATCHMAKER_STORE_COMMITTERS must be from 0 (no group commit) to 64"))
	}
	if c.StoreMaxConns < 1 || c.StoreMaxConns > 1000 {
		errs = append(errs, errors.New("MATCHMAKER_DB_MAX_CONNS must be from 1 to 1000"))
	} else if c.StoreMaxConns <= c.StoreCommitters {
		// Each committer holds a connection while it writes a batch; reads need one more.
		errs = append(errs, fmt.Errorf("MATCHMAKER_DB_MAX_CONNS (%d) must exceed MATCHMAKER_STORE_COMMITTERS (%d): each committer holds a connection",
			c.StoreMaxConns, c.StoreCommitters))
	}
	if c.StoreStartupTimeout < 0 {
		errs = append(errs, errors.New("MATCHMAKER_STORE_STARTUP_TIMEOUT must not be negative (0 tries once)"))
	}
	if c.DatabaseURL != "" {
		if _, err := url.Parse(c.DatabaseURL); err != nil && !strings.Contains(c.DatabaseURL, "=") {
			errs = append(errs, errors.New("DATABASE_URL is neither a URL nor a key=value connection string"))
		}
	}
	errs = append(errs, c.validateSessionURL(), c.validateAutoTuneShare())
	return errors.Join(errs...)
}

func (c config) validateAutoTuneShare() error {
	if !(c.AutoTuneShare > 0 && c.AutoTuneShare <= 1) {
		return fmt.Errorf("MATCHMAKER_AUTO_TUNE_CPU_SHARE must be more than 0 and at most 1 (1: unpaced), not %g", c.AutoTuneShare)
	}
	return nil
}

func (c config) validateSessionURL() error {
	switch {
	case c.DatabaseSessionURL == "":
		return nil
	case c.DatabaseURL == "":
		return errors.New("DATABASE_SESSION_URL is set without DATABASE_URL")
	}
	if _, err := url.Parse(c.DatabaseSessionURL); err != nil && !strings.Contains(c.DatabaseSessionURL, "=") {
		return errors.New("DATABASE_SESSION_URL is neither a URL nor a key=value connection string")
	}
	return nil
}

// tracesValue is where traces go, for the start-up log: the collector's URL masked, or off.
func (c config) tracesValue() string {
	if !c.Tracing.On() {
		return "off"
	}
	return maskURL(c.Tracing.URL())
}

// storeOptions are the Postgres pool's size and deadlines; the pool looks for a pooler in
// transaction mode in front of DATABASE_URL.
func (c config) storeOptions() db.Options {
	return db.Options{Timeout: c.StoreTimeout, RebuildTimeout: c.StoreRebuildTimeout, MaxConns: c.StoreMaxConns, DetectPooler: true}
}

// startup is how the service's start-up (and `api migrate`) waits for the database, and
// where it migrates.
func (c config) startup(migrate bool, logger *slog.Logger) db.Startup {
	return db.Startup{Within: c.StoreStartupTimeout, Migrate: migrate, Logger: logger, SessionURL: c.DatabaseSessionURL}
}

// ratingsOptions are the Postgres ratings store's own (its group commit).
func (c config) ratingsOptions() ratingsdb.Options {
	committers := c.StoreCommitters
	if committers == 0 {
		committers = -1 // no group commit
	}
	return ratingsdb.Options{Committers: committers}
}

// logValue lists the configuration for the start-up log with the secrets masked.
func (c config) logValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr),
		slog.String("database_url", maskURL(c.DatabaseURL)),
		slog.String("database_session_url", maskURL(c.DatabaseSessionURL)),
		slog.String("traces", c.tracesValue()),
		slog.Bool("migrate", c.Migrate),
		slog.Int("api_keys", countKeys(c.APIKeys)),
		slog.Bool("auth", c.Auth),
		slog.String("rating_models", c.RatingModels.String()),
		slog.String("legacy_addr", c.LegacyAddr),
		slog.Bool("legacy_auth", c.LegacySecret != ""),
		slog.Int("legacy_max_conns_per_addr", c.LegacyMaxConnsPerAddr),
		slog.String("debug_addr", c.DebugAddr),
		slog.String("log_level", c.LogLevel.String()),
		slog.Int64("max_body_bytes", c.Limits.MaxBodyBytes),
		slog.Int("max_matchmake_players", c.Limits.MaxMatchmakePlayers),
		slog.Int("max_team_players", c.Limits.MaxTeamPlayers),
		slog.Int("heavy_searches", c.Limits.HeavySearches),
		slog.Int64("memory_budget", c.Limits.Admission.Budget),
		slog.Int("admission_per_key", c.Limits.Admission.PerCaller),
		slog.String("body_timeout", c.Limits.Admission.BodyTimeout.String()),
		slog.Any("webhook_allow_cidrs", c.WebhookAllow),
		slog.String("shutdown_timeout", c.ShutdownTimeout.String()),
		slog.String("store_timeout", c.StoreTimeout.String()),
		slog.String("store_rebuild_timeout", c.StoreRebuildTimeout.String()),
		slog.String("store_startup_timeout", c.StoreStartupTimeout.String()),
		slog.Int("store_committers", c.StoreCommitters),
		slog.Int("db_max_conns", c.StoreMaxConns),
		slog.String("season_tick", c.SeasonTick.String()),
		slog.Bool("auto_tune", c.AutoTune),
		slog.String("auto_tune_interval", c.AutoTuneInterval.String()),
		slog.Float64("auto_tune_cpu_share", c.AutoTuneShare),
	)
}

func countKeys(keys string) int {
	n := 0
	for k := range strings.SplitSeq(keys, ",") {
		if strings.TrimSpace(k) != "" {
			n++
		}
	}
	return n
}

// maskURL hides the password of a database URL.
func maskURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(set)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	// libpq and pgx also take the password (and a key file's passphrase) as query parameters.
	q := u.Query()
	for _, secret := range []string{"password", "sslpassword"} {
		if q.Has(secret) {
			q.Set(secret, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// envReader reads typed environment variables and collects every malformed one.
type envReader struct {
	getenv func(string) string
	errs   []error
}

func (e *envReader) str(name, def string) string {
	if v := e.getenv(name); v != "" {
		return v
	}
	return def
}

func (e *envReader) boolean(name string, def bool) bool {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want true or false", name, v))
		return def
	}
	return b
}

func (e *envReader) onOff(name string, def bool) bool {
	switch v := strings.ToLower(e.getenv(name)); v {
	case "":
		return def
	case "on", "true", "1":
		return true
	case "off", "false", "0":
		return false
	default:
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want on or off", name, v))
		return def
	}
}

func (e *envReader) integer(name string, def int) int {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want an integer", name, v))
		return def
	}
	return n
}

// bytes reads a size: a whole number of bytes, or one with a KiB, MiB or GiB suffix.
func (e *envReader) bytes(name string, def int64) int64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	unit := int64(1)
	for suffix, size := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			v, unit = n, size
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/unit {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a size such as 256MiB (0 turns it off)", name, e.getenv(name)))
		return def
	}
	return n * unit
}

func (e *envReader) fraction(name string, def float64) float64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a number such as 0.25", name, v))
		return def
	}
	return f
}

func (e *envReader) duration(name string, def time.Duration) time.Duration {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a duration such as 15s", name, v))
		return def
	}
	return d
}

func (e *envReader) level(name string, def slog.Level) slog.Level {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want debug, info, warn or error", name, v))
		return def
	}
	return l
}

// lineConfig is the line protocol's configuration.
func (c config) lineConfig() lineproto.Config {
	lc := lineproto.DefaultConfig()
	lc.MaxConnsPerAddr = c.LegacyMaxConnsPerAddr
	if raw, err := hex.DecodeString(c.LegacySecret); err == nil && len(raw) == sha256.Size {
		copy(lc.SecretHash[:], raw)
	}
	return lc
}

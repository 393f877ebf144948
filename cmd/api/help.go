package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/matchmakerhq/matchmaker/internal/handlers"
)

// isHelp reports whether arg asks for the usage: -h, -help, --help or the word help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// usage writes `api --help`: the subcommands, the flags of the service's commands and every
// environment variable the program reads, with its default. The defaults come from
// parseConfig itself, so they cannot drift from what the program does; TestHelp checks that
// every variable the code reads is listed.
func usage(w io.Writer) {
	def, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil { // the defaults are valid; a test holds them to it
		def = config{}
	}
	fmt.Fprint(w, `Matchmaker: an HTTP/JSON matchmaking service for team games.

Usage:
  api [serve] [flags]            run the service (the default command)
  api migrate [flags]            apply the database migrations and exit (needs DATABASE_URL)
  api rebuild -game-type T [-solve]
                                 recompute a game type's ratings from its stored results (needs DATABASE_URL);
                                 -solve fits the skills to the whole history at once (docs/ratings.md)
  api tune -game-type T [-rebuild]
                                 fit the rating model's hyperparameters to each context of a game type
                                 and store them (needs DATABASE_URL; docs/ratings.md#tuning)
  api healthcheck                ask /healthz on MATCHMAKER_ADDR's port; exit 0 if it answers 200
  api evaluate [flags]           score the rating models on a history of results (api evaluate -h)
  api simulate [flags]           simulate a queue before changing its settings (api simulate -h)
  api help, api -h, api --help   this text

Flags of serve, migrate, rebuild, tune and healthcheck (each overrides its environment variable):
`)
	fs := def.flagSet(w)
	fs.PrintDefaults()

	fmt.Fprint(w, "\nEnvironment (serve, migrate, rebuild, tune, healthcheck; evaluate and simulate read none):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range environmentVariables(def) {
		fmt.Fprintf(tw, "  %s\t%s\t(default %s)\n", v[0], v[2], v[1])
	}
	tw.Flush()
	fmt.Fprint(w, "\nEvery variable in full: docs/operations.md#configuration. The service: README.md and docs/.\n")
}

// environmentVariables are the variables the service's commands read: name, default (in
// def, the parsed defaults) and meaning.
func environmentVariables(def config) [][3]string {
	or := func(v, unset string) string {
		if v == "" {
			return unset
		}
		return v
	}
	return [][3]string{
		{"MATCHMAKER_ADDR", def.Addr, "HTTP listen address"},
		{"DATABASE_URL", "unset", "Postgres URL; unset keeps ratings and tickets in memory, lost on exit"},
		{"DATABASE_SESSION_URL", "unset", "the same database, direct or through a pooler in session mode, for leadership, LISTEN and the migrations when DATABASE_URL goes through a pooler in transaction mode (which the service refuses without it)"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "unset", "OpenTelemetry traces over OTLP/HTTP to this collector (its /v1/traces); unset: no traces (also OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER_ARG: docs/operations.md#traces)"},
		{"MATCHMAKER_MIGRATE", fmt.Sprint(def.Migrate), "apply migrations at start-up"},
		{"MATCHMAKER_API_KEYS", "unset", "API keys, NAME:SCOPES:SHA256HEX[:GAMETYPES],... with scopes read+match+results+admin, game types ctf+tdm (default: all)"},
		{"MATCHMAKER_AUTH", "on", "off opens every endpoint (development only)"},
		{"MATCHMAKER_RATE_LIMITS", defaultRateLimits(), "token buckets per caller and scope, SCOPE=RATE/s[:BURST] or SCOPE=off"},
		{"MATCHMAKER_RATING_MODELS", def.RatingModels.String(), "the rating model per context, SCOPE=MODEL,... (rebuild after a change)"},
		{"MATCHMAKER_QUEUE_RETENTION", def.QueueRetention.String(), "how long queue events are kept for resuming streams (at least 10m)"},
		{"MATCHMAKER_SEASON_TICK", def.SeasonTick.String(), "how often seasons are checked for their reset and final standings"},
		{"MATCHMAKER_AUTO_TUNE", "on", "on: each context tunes its rating model itself at 2,000 results, then each doubling (off: never)"},
		{"MATCHMAKER_AUTO_TUNE_INTERVAL", def.AutoTuneInterval.String(), "how often contexts are checked for a self-tuning due"},
		{"MATCHMAKER_AUTO_TUNE_CPU_SHARE", fmt.Sprint(def.AutoTuneShare), "the share of one core self-tuning keeps busy at most: it rests between replays (more than 0, at most 1; 1: unpaced)"},
		{"MATCHMAKER_LEADER_LEASE", def.LeaderLease.String(), "a queue's leader that stops renewing its lease this long is replaced (every replica the same; 1s..10m)"},
		{"MATCHMAKER_WEBHOOK_MAX_ATTEMPTS", strconv.Itoa(def.WebhookMaxAttempts), "failed deliveries of one webhook event before it is dead-lettered"},
		{"MATCHMAKER_WEBHOOK_MAX_AGE", def.WebhookMaxAge.String(), "a webhook event failing past this age is dead-lettered"},
		{"MATCHMAKER_WEBHOOK_ALLOW_CIDRS", "unset", "internal addresses (CIDRs) webhooks may reach; loopback, private, link-local and CGNAT are refused otherwise"},
		{"MATCHMAKER_LEGACY_ADDR", or(def.LegacyAddr, "unset"), "TCP address of the line protocol; unset is off"},
		{"MATCHMAKER_LEGACY_SECRET_SHA256", "unset", "sha256 hex of the line protocol's shared secret: mods send AUTH <secret> first (required with API keys)"},
		{"MATCHMAKER_LEGACY_MAX_CONNS_PER_ADDR", strconv.Itoa(def.LegacyMaxConnsPerAddr), "line-protocol connections one client address may hold"},
		{"MATCHMAKER_LOG_LEVEL", strings.ToLower(def.LogLevel.String()), "debug, info, warn or error (JSON logs on stdout)"},
		{"MATCHMAKER_DEBUG_ADDR", or(def.DebugAddr, "unset"), "address of a private listener serving /debug/pprof/"},
		{"MATCHMAKER_INSTANCE", "host name:port", "this replica's name in a partitioned queue's stats (who leads each partition)"},
		{"MATCHMAKER_SHUTDOWN_TIMEOUT", def.ShutdownTimeout.String(), "the whole shutdown on SIGINT/SIGTERM"},
		{"MATCHMAKER_STORE_TIMEOUT", def.StoreTimeout.String(), "deadline of every Postgres call (then 503 with Retry-After)"},
		{"MATCHMAKER_STORE_STARTUP_TIMEOUT", def.StoreStartupTimeout.String(), "how long start-up waits for the database (0 tries once)"},
		{"MATCHMAKER_STORE_REBUILD_TIMEOUT", def.StoreRebuildTimeout.String(), "deadline of a rebuild"},
		{"MATCHMAKER_DB_MAX_CONNS", fmt.Sprint(def.StoreMaxConns), "the Postgres pool's size per replica"},
		{"MATCHMAKER_STORE_COMMITTERS", fmt.Sprint(def.StoreCommitters), "batches of results written at once (0: a transaction per result)"},
		{"MATCHMAKER_READ_TIMEOUT", def.ReadTimeout.String(), "time to read a whole request"},
		{"MATCHMAKER_WRITE_TIMEOUT", def.WriteTimeout.String(), "time to write a whole response"},
		{"MATCHMAKER_IDLE_TIMEOUT", def.IdleTimeout.String(), "keep-alive idle time"},
		{"MATCHMAKER_MAX_BODY_BYTES", fmt.Sprint(def.Limits.MaxBodyBytes), "request body limit"},
		{"MATCHMAKER_MAX_MATCHMAKE_PLAYERS", fmt.Sprint(def.Limits.MaxMatchmakePlayers), "players in one /v1/matchmake queue"},
		{"MATCHMAKER_MAX_TEAM_PLAYERS", fmt.Sprint(def.Limits.MaxTeamPlayers), "humans in one team request"},
		{"MATCHMAKER_MEMORY_BUDGET", fmt.Sprint(def.Limits.Admission.Budget), "bytes compute requests may hold together (0: no admission control)"},
		{"MATCHMAKER_ADMISSION_WAIT", def.Limits.Admission.Wait.String(), "how long a request waits for room in the budget"},
		{"MATCHMAKER_ADMISSION_PER_KEY", strconv.Itoa(def.Limits.Admission.PerCaller), "compute and ticket-creation requests one API key (or address) has in flight on a replica (then 429)"},
		{"MATCHMAKER_BODY_TIMEOUT", def.Limits.Admission.BodyTimeout.String(), "time for a compute or ticket-creation body to arrive (then 400)"},
		{"MATCHMAKER_HEAVY_SEARCHES", fmt.Sprint(def.Limits.HeavySearches), "heavy team searches running at once"},
		{"MATCHMAKER_MAX_WAITERS", strconv.Itoa(def.Limits.Waiters.PerReplica), "event streams and long-polls one replica holds open (then 503)"},
		{"MATCHMAKER_MAX_WAITERS_PER_KEY", strconv.Itoa(def.Limits.Waiters.PerCaller), "event streams and long-polls one API key holds open on a replica (then 429)"},
		{"GOGC", fmt.Sprint(defaultGCPercent), "Go's GC target (Go's own default is 100)"},
		{"GOMEMLIMIT", "unset", "Go's soft memory limit; set it below a container's memory limit"},
	}
}

// defaultRateLimits is MATCHMAKER_RATE_LIMITS's default, written as the variable is.
func defaultRateLimits() string {
	var limits []string
	for _, scope := range []handlers.Scope{handlers.ScopeMatch, handlers.ScopeResults, handlers.ScopeRead, handlers.ScopeAdmin} {
		if l, ok := handlers.DefaultRateLimits()[scope]; ok {
			limits = append(limits, fmt.Sprintf("%s=%g/s:%d", scope, l.PerSecond, l.Burst))
		}
	}
	return strings.Join(limits, ",")
}

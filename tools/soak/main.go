// Command soak drives the real service as game backends do: it builds cmd/api, starts
// replicas of it on one Postgres, defines a 5v5 queue, lets players arrive at a rate (20%
// parties of 2-5, ratings normal around 1000), has every ticket wait for its match by
// long-poll or Server-Sent Events, posts a result for every match, and reports what the
// clients saw (creations per second, errors by endpoint and status, the latency from a
// match's creation to its client seeing it, how many waited at once) beside what the
// replicas and the database spent (connections, transactions per second and per tick, RSS,
// goroutines). All its traffic goes to loopback, and the run ends by itself: arrivals stop
// after -duration, waits after -drain.
//
//	go run ./tools/soak -rate 300 -duration 10m -wait longpoll
//
// The database: -database-url (or DATABASE_URL) is used as it is; -server-url (or
// TEST_DATABASE_URL) names a server on which a fresh database soak_<random> is created, and
// dropped at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// The driver allocates for every request and keeps little: a rarer collection is
		// CPU left to the service it shares the host's cores with, for memory the host has.
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// config is the run's settings, from the flags and the environment.
type config struct {
	replicas   int
	queues     int // 2: every player searches two queues led by two replicas (exclusive.go)
	rate       float64
	duration   time.Duration
	drain      time.Duration
	wait       string // "longpoll" or "sse"
	waitS      int    // a long-poll's wait_s
	backends   int    // sse: streams shared by the tickets; 0 = one stream per ticket
	ticketOnly bool   // sse, a stream per ticket: of its own ticket's events (?ticket=)
	keys       int    // API keys the tickets are spread over (game backends of a studio)
	flood      int    // event streams one key of its own opens at once to replica 0
	maxWaiters int
	parties    float64 // the share of arrivals that are parties of 2-5
	ratingSD   float64
	tickMS     int
	teamSize   int
	partitions int           // -partitions: the queue split by a mode of this many values
	killAfter  time.Duration // -kill-after: the last replica SIGKILLed this long into the arrivals
	interval   string        // the queue's expansions.interval as JSON steps
	dbConns    int
	timeout    time.Duration // creations, matches and results
	every      time.Duration // the sampling period
	authOff    bool
	json       bool
	logs       string
	cpuProfile string // -cpuprofile: the soak's own CPU profile over the arrivals
	bin        string
	repo       string
	env        []string
	seed       uint64

	databaseURL string // used as it is
	serverURL   string // a fresh database is created on it
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (c config, err error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.replicas, "replicas", 2, "replicas of cmd/api, on one database")
	fs.IntVar(&c.queues, "queues", 1, "queues the players search: 2 defines a second one, led by another replica, and every arrival searches both (exclusively: matched in one, its ticket in the other is cancelled matched_elsewhere); the run checks that no player is in two matches")
	fs.Float64Var(&c.rate, "rate", 300, "arrivals per second (tickets: players alone or parties)")
	fs.DurationVar(&c.duration, "duration", 10*time.Minute, "how long players arrive")
	fs.DurationVar(&c.drain, "drain", 30*time.Second, "after the arrivals, how long the tickets still waiting may wait before the run ends")
	fs.StringVar(&c.wait, "wait", "longpoll", "how a ticket waits for its match: longpoll (GET /v1/tickets/{id}?wait_s=N, repeated) or sse (GET /v1/queues/{name}/events)")
	fs.IntVar(&c.waitS, "wait-s", 30, "a long-poll's wait_s")
	fs.IntVar(&c.backends, "backends", 0, "with -wait sse: this many streams (game backend processes), each serving its share of the tickets; 0 = a stream per ticket, opened before the ticket is created")
	fs.BoolVar(&c.ticketOnly, "ticket-streams", false, "with -wait sse and no -backends: each ticket's stream carries its own events only (?ticket=), opened once the ticket is created and followed by one read of the ticket")
	fs.IntVar(&c.keys, "keys", 10, "API keys (scopes match+results) the tickets are spread over, as a studio's backends each have their own: ticket n is created and watched by key n mod N (with -backends, its backend's key), so that it waits under its own key's cap on long-polls and streams (MATCHMAKER_MAX_WAITERS_PER_KEY) as in production; 1 = one key with every scope for everything")
	fs.IntVar(&c.flood, "flood", 0, "before the arrivals, one more API key (scope match) opens this many event streams at once to replica 0 and holds those it gets, read, to the end: past the per-key cap (MATCHMAKER_MAX_WAITERS_PER_KEY) they must be answered 429, within the replica's memory; 0 = none")
	fs.IntVar(&c.maxWaiters, "max-waiters", 10000, "tickets waiting (or being created) at once at most; an arrival beyond it is not sent, and counted")
	fs.Float64Var(&c.parties, "parties", 0.2, "the share of arrivals that are parties of 2-5 players")
	fs.Float64Var(&c.ratingSD, "rating-sd", 200, "the standard deviation of ratings around 1000 (a party's players: 50 around its own level)")
	fs.IntVar(&c.tickMS, "tick-ms", 1000, "the queue's tick_ms")
	fs.IntVar(&c.partitions, "partitions", 0, "partition the queue by a mode of this many values (partition_by; ticket n of mode n mod N) and check the partitions: each replica leads some, none crosses a match; 0 = no partition_by")
	fs.DurationVar(&c.killAfter, "kill-after", 0, "with 2+ replicas: SIGKILL the last replica this long after the arrivals start (with -partitions: and measure how long until the others lead every partition)")
	fs.IntVar(&c.teamSize, "team-size", 5, "the queue's team_size (two teams); parties are of 2 to min(5, team size), so 1 needs -parties 0")
	intervalSteps := fs.String("interval", "0:25,10:50,30:150", "the queue's rating interval as AFTER_S:VALUE steps (DESIGN's by default); e.g. 0:0,15:150 keeps nearly every ticket waiting 15 s, so that thousands wait at once")
	fs.IntVar(&c.dbConns, "db-conns", 12, "MATCHMAKER_DB_MAX_CONNS of each replica (it opens two connections more)")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Second, "client timeout of a creation, a match read or a result (a long-poll gets wait-s + 15 s)")
	fs.DurationVar(&c.every, "every", 5*time.Second, "how often the replicas and the database are sampled (and a progress line printed)")
	fs.BoolVar(&c.authOff, "auth-off", false, "run the replicas with MATCHMAKER_AUTH=off instead of a generated API key")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON on stdout (the table goes to stderr)")
	fs.StringVar(&c.logs, "logs", "", "a directory for the replicas' logs (replica-N.log); by default they are only counted")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write the soak's own CPU profile over the arrivals to this file (go tool pprof), to see what the load driver spends beside the service")
	fs.StringVar(&c.bin, "bin", "", "a built cmd/api to run instead of building one")
	fs.StringVar(&c.repo, "repo", ".", "the repository's root, where cmd/api is built")
	fs.Var((*listFlag)(&c.env), "env", "KEY=VALUE added to every replica's environment (repeatable), e.g. -env MATCHMAKER_STORE_TIMEOUT=5s")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the arrivals' players and ratings; 0 = from the clock")
	fs.StringVar(&c.databaseURL, "database-url", "", "Postgres URL the replicas use as it is (default $DATABASE_URL)")
	fs.StringVar(&c.serverURL, "server-url", "", "Postgres URL of a server to create a fresh database soak_<random> on, dropped at the end (default $TEST_DATABASE_URL, when no database URL is given)")
	if err := fs.Parse(args); err != nil {
		return c, errUsage
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if c.databaseURL == "" && c.serverURL == "" {
		c.databaseURL = getenv("DATABASE_URL")
		if c.databaseURL == "" {
			c.serverURL = getenv("TEST_DATABASE_URL")
		}
	}
	switch {
	case c.databaseURL == "" && c.serverURL == "":
		return c, fmt.Errorf("%w: no database: set -database-url or DATABASE_URL (used as it is), or -server-url or TEST_DATABASE_URL "+
			"(a fresh database is made on it), e.g. TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'", errUsage)
	case c.databaseURL != "" && c.serverURL != "":
		return c, fmt.Errorf("%w: give -database-url or -server-url, not both", errUsage)
	case c.replicas < 1 || c.replicas > 16:
		return c, fmt.Errorf("%w: -replicas must be 1..16", errUsage)
	case !(c.rate > 0 && c.rate <= 20000):
		return c, fmt.Errorf("%w: -rate must be in (0, 20000]", errUsage)
	case c.duration <= 0 || c.drain < 0:
		return c, fmt.Errorf("%w: -duration must be positive and -drain not negative", errUsage)
	case c.queues < 1 || c.queues > 2 || (c.queues == 2 && (c.replicas < 2 || c.wait != "longpoll")):
		return c, fmt.Errorf("%w: -queues must be 1 or 2 (2 needs -replicas 2 or more and -wait longpoll)", errUsage)
	case c.wait != "longpoll" && c.wait != "sse":
		return c, fmt.Errorf("%w: -wait must be longpoll or sse", errUsage)
	case c.waitS < 1 || c.waitS > 60:
		return c, fmt.Errorf("%w: -wait-s must be 1..60", errUsage)
	case c.backends < 0 || (c.backends > 0 && c.wait != "sse"):
		return c, fmt.Errorf("%w: -backends is for -wait sse", errUsage)
	case c.ticketOnly && (c.wait != "sse" || c.backends > 0):
		return c, fmt.Errorf("%w: -ticket-streams is for -wait sse without -backends", errUsage)
	case c.keys < 1 || c.keys > 1000 || (c.authOff && c.keys != 1 && keysSet(fs)):
		return c, fmt.Errorf("%w: -keys must be 1..1000 (and not given with -auth-off)", errUsage)
	case c.flood < 0 || c.flood > 50000 || (c.flood > 0 && c.authOff):
		return c, fmt.Errorf("%w: -flood must be 0..50000, and needs API keys (not -auth-off)", errUsage)
	case c.maxWaiters < 1:
		return c, fmt.Errorf("%w: -max-waiters must be positive", errUsage)
	case c.parties < 0 || c.parties > 1 || c.ratingSD < 0:
		return c, fmt.Errorf("%w: -parties must be 0..1 and -rating-sd not negative", errUsage)
	case c.teamSize < 1 || c.teamSize > 64 || (c.teamSize == 1 && c.parties > 0):
		return c, fmt.Errorf("%w: -team-size must be 1..64, and 1 needs -parties 0", errUsage)
	case c.partitions < 0 || c.partitions > 64 || c.killAfter < 0 || (c.killAfter > 0 && c.replicas < 2):
		return c, fmt.Errorf("%w: -partitions must be 0..64, and -kill-after needs 2+ replicas", errUsage)
	case c.tickMS < 50 || c.tickMS > 60000:
		return c, fmt.Errorf("%w: -tick-ms must be 50..60000", errUsage)
	case c.dbConns < 5:
		return c, fmt.Errorf("%w: -db-conns must be at least 5 (above the store's 4 committers)", errUsage)
	case c.every < 100*time.Millisecond || c.timeout <= 0:
		return c, fmt.Errorf("%w: -every must be at least 100ms and -timeout positive", errUsage)
	}
	if c.interval, err = parseSteps(*intervalSteps); err != nil {
		return c, fmt.Errorf("%w: -interval: %v", errUsage, err)
	}
	for _, kv := range c.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return c, fmt.Errorf("%w: -env %q is not KEY=VALUE", errUsage, kv)
		}
	}
	for _, u := range []string{c.databaseURL, c.serverURL} {
		if u == "" {
			continue
		}
		if err := checkLocalDatabase(u); err != nil {
			return c, err
		}
	}
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
	}
	return c, nil
}

// keysSet says whether -keys was given.
func keysSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "keys" })
	return set
}

// parseSteps turns "0:25,10:50" into the JSON steps [{"after_s":0,"value":25},...].
func parseSteps(s string) (string, error) {
	var steps []string
	for part := range strings.SplitSeq(s, ",") {
		a, v, ok := strings.Cut(strings.TrimSpace(part), ":")
		after, err1 := strconv.ParseFloat(a, 64)
		value, err2 := strconv.ParseFloat(v, 64)
		if !ok || err1 != nil || err2 != nil || after < 0 || value < 0 {
			return "", fmt.Errorf("%q is not AFTER_S:VALUE", part)
		}
		if len(steps) == 0 && after != 0 {
			return "", fmt.Errorf("the first step is at 0")
		}
		steps = append(steps, fmt.Sprintf(`{"after_s":%g,"value":%g}`, after, value))
	}
	return "[" + strings.Join(steps, ",") + "]", nil
}

// run is the whole soak: database, replicas, queue, load, checks, clean-up and the summary.
// Cancelling ctx (Ctrl-C) stops the arrivals and the waits at once, cleans up, and still
// prints what was measured.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	c, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	raiseFileLimit()
	stderr = &lockedWriter{w: stderr} // the progress lines and the log come from several goroutines
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "soak: "+format+"\n", a...) }

	// Clean-up runs even when ctx is cancelled: it has contexts of its own.
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	tmp, err := os.MkdirTemp("", "soak-")
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { _ = os.RemoveAll(tmp) })
	bin := c.bin
	if bin == "" {
		bin = tmp + "/api"
		logf("building cmd/api")
		if err := buildAPI(ctx, c.repo, bin, stderr); err != nil {
			return err
		}
	}

	db, err := openDatabase(ctx, c, logf)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, db.close)

	// key (every scope) defines the queue and reads the matches; keys, the tickets' (each a
	// game backend's), create them, wait for them and post their results.
	key, keys := "", []string{""}
	if !c.authOff {
		key = randomHex(24)
		keys = []string{key}
		if c.keys > 1 {
			keys = make([]string, c.keys)
			for i := range keys {
				keys[i] = randomHex(24)
			}
		}
	}
	floodKey := ""
	if c.flood > 0 {
		floodKey = randomHex(24)
	}
	logf("migrating %s", db.name)
	if err := migrate(ctx, bin, db.url, c.env); err != nil {
		return err
	}
	var reps []*replica
	cleanups = append(cleanups, func() {
		for _, r := range reps {
			r.stop(logf)
		}
	})
	for i := range c.replicas {
		r, err := startReplica(ctx, i, bin, replicaEnv(c, db.url, key, keys, floodKey), c.logs)
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	for _, r := range reps {
		if err := r.waitReady(ctx, 30*time.Second); err != nil {
			return err
		}
		logf("replica %d pid %d ready at %s", r.index, r.pid(), r.base)
	}

	l := newLoad(c, reps, key, keys, db)
	if floodKey != "" {
		l.flood = &flood{key: floodKey, streams: c.flood}
	}
	if err := l.defineQueue(ctx); err != nil {
		return err
	}
	cleanups = append(cleanups, func() { l.deleteQueue(logf) })
	if c.queues == 2 {
		if err := l.defineSecondQueue(ctx, logf); err != nil {
			return err
		}
	}
	logf("queue %s defined (%dv%d, tick %d ms); %.0f arrivals/s for %v, wait=%s", l.queue, c.teamSize, c.teamSize, c.tickMS, c.rate, c.duration, l.waitMode())

	if c.partitions > 0 || c.killAfter > 0 {
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go l.watchPartitions(watchCtx, time.Now(), logf)
	}
	sum := l.run(ctx, logf, stderr)
	l.checkDatabase(logf, &sum)
	if c.partitions > 0 || c.killAfter > 0 {
		l.checkPartitions(&sum)
	}
	if l.queue2 != "" {
		sum.Exclusive = l.checkExclusive(logf)
	}
	for _, r := range reps {
		r.sampleEnd()
	}
	sum.Replicas = make([]replicaSummary, len(reps))
	for i, r := range reps {
		sum.Replicas[i] = r.summary()
	}
	sum.Interrupted = ctx.Err() != nil
	if c.json {
		printTable(stderr, &sum)
		return printJSON(stdout, &sum)
	}
	printTable(stdout, &sum)
	return nil
}

func replicaEnv(c config, dbURL, key string, keys []string, floodKey string) []string {
	env := make([]string, 0, len(os.Environ())+len(c.env)+10)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MATCHMAKER_") || k == "DATABASE_URL" {
			continue // the replicas' settings are the soak's, not the shell's
		}
		env = append(env, kv)
	}
	env = append(env,
		"DATABASE_URL="+dbURL,
		"MATCHMAKER_ADDR=127.0.0.1:0",
		"MATCHMAKER_MIGRATE=false", // migrated once before they start
		"MATCHMAKER_RATE_LIMITS=match=off,read=off,results=off,admin=off",
		fmt.Sprintf("MATCHMAKER_DB_MAX_CONNS=%d", c.dbConns),
		"MATCHMAKER_SHUTDOWN_TIMEOUT=5s",
		"MATCHMAKER_LOG_LEVEL=info",
	)
	if key == "" {
		env = append(env, "MATCHMAKER_AUTH=off")
	} else {
		list := "soak:read+match+results+admin:" + sha256Hex(key)
		for i, k := range keys {
			if k != key {
				list += fmt.Sprintf(",soak-backend-%d:match+results:%s", i, sha256Hex(k))
			}
		}
		if floodKey != "" {
			list += ",soak-flood:match:" + sha256Hex(floodKey)
		}
		env = append(env, "MATCHMAKER_API_KEYS="+list)
	}
	return append(env, c.env...) // last: they win
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// raiseFileLimit lifts the soft limit on open files to the hard one: each waiting ticket
// holds a connection, in this process and in a replica (which inherits the limit).
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

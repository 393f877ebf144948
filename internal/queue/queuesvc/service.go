// Package queuesvc is the queue's Service, the use cases every transport calls (tickets,
// long-polls and streams, ready checks, placements, stats, results), and the replica's wiring
// behind them: the leader's loops (package queueleader) it starts and reads, the event feeds,
// webhooks, allocations and match-function calls through the domain's Outbound. The domain
// (package queue) decides what happens to a ticket; this package runs it on a clock, over a
// Store.
package queuesvc

import (
	"cmp"
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuefeed"
	"github.com/matchmakerhq/matchmaker/internal/queue/queueleader"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// DefaultWebhookTimeout bounds one webhook delivery or allocation request unless
// Config.WebhookTimeout says otherwise.
const DefaultWebhookTimeout = 5 * time.Second

// Config tunes the service; zero fields take the defaults.
type Config struct {
	// MaxWait caps a long-poll (GET /v1/tickets/{id}?wait_s=N). Default 60 s.
	MaxWait time.Duration
	// Retention is how long finished tickets, matches and events stay readable (and SSE
	// streams resumable). Default 1 h; at least 10 minutes.
	Retention time.Duration
	// QueueRefresh is how often the tick loop re-reads the queue definitions, so a queue made
	// on another replica starts ticking here. Default 2 s.
	QueueRefresh time.Duration
	// WebhookTimeout bounds one webhook delivery. Default DefaultWebhookTimeout.
	WebhookTimeout time.Duration
	// WebhookBackoff is the pause after a failed delivery, doubled after each failure of the
	// same event up to 60 times it. Default 1 s.
	WebhookBackoff time.Duration
	// An event that failed WebhookMaxAttempts times (default 20), or that fails once older
	// than WebhookMaxAge (default 1 h, on the service's clock), is dead-lettered: logged,
	// counted, and passed over.
	WebhookMaxAttempts int
	WebhookMaxAge      time.Duration
	// CreateTimeout bounds a ticket creation's store work as a whole (the queue's definition,
	// stored ratings, the commit), so that a database that stops answering midway costs the
	// client one deadline, not one per call. Zero: only the store's own per-call bounds.
	CreateTimeout time.Duration
	// DefinitionTTL is how long a replica answers ticket creations from a queue definition it
	// read, rather than reading it again per ticket (under a load of creations that read was
	// the service's largest cost: docs/performance.md, "Ticket queue"). A PUT or DELETE on
	// this replica takes effect at once; one on another replica within DefinitionTTL. A
	// deleted queue takes no ticket either way: the store refuses it. Default 1 s; negative:
	// read per ticket.
	DefinitionTTL time.Duration
	// MatchCache is how many matches this replica keeps the unchanging part of (all but the
	// connection), read once for a match's GET and its result's check (matchcache.go).
	// Default DefaultMatchCache; negative: none, every read goes to the store.
	MatchCache int
	// WebhookAllow are the internal addresses (loopback, private, link-local, CGNAT, ...)
	// webhooks may reach, for receivers on premises; public addresses are always allowed.
	// See WebhookPolicy.
	WebhookAllow []netip.Prefix
	// Instance names this replica in a partitioned queue's stats (which replica leads each
	// partition): MATCHMAKER_INSTANCE, by default the host name and port.
	Instance string
}

func (c Config) withDefaults() Config {
	c.MaxWait = cmp.Or(c.MaxWait, 60*time.Second)
	c.Retention = max(cmp.Or(c.Retention, time.Hour), 10*time.Minute)
	c.QueueRefresh = cmp.Or(c.QueueRefresh, 2*time.Second)
	c.WebhookTimeout = cmp.Or(c.WebhookTimeout, DefaultWebhookTimeout)
	c.WebhookBackoff = cmp.Or(c.WebhookBackoff, time.Second)
	c.WebhookMaxAttempts = cmp.Or(c.WebhookMaxAttempts, 20)
	c.WebhookMaxAge = cmp.Or(c.WebhookMaxAge, time.Hour)
	c.DefinitionTTL = cmp.Or(c.DefinitionTTL, time.Second)
	c.MatchCache = cmp.Or(c.MatchCache, DefaultMatchCache)
	return c
}

// Service is the ticket queue's use cases, for every transport: queue administration,
// tickets, matches, events, and (Run) the tick loop of the queues this replica leads.
type Service struct {
	store    queue.Store
	ratings  *ratings.Service
	matcher  queue.Matcher
	cfg      Config
	clock    clockwork.Clock
	logger   *slog.Logger
	metrics  *Metrics
	outbound queue.Outbound
	policy   queue.WebhookPolicy
	tracer   trace.Tracer          // spans.go
	leaders  *queueleader.Registry // its runners, the leader's loops

	feeds        *queuefeed.Feeds // the queues' events, read once for every waiter of this replica
	ticketQueues ticketQueues     // the queues of tickets made or read lately: a long-poll's one read
	// queuesChanged wakes Run when a queue is made, changed or deleted here, for its runner
	// to start, change or stop at once rather than at the next Config.QueueRefresh.
	queuesChanged chan struct{}
	definitions   definitions
	matches       *matchCache // nil: none
	cacheMu       sync.Mutex
	cache         map[string]cachedStats // the store's snapshots of queues led elsewhere
	statsFlight   singleflight.Group     // the store reads of those snapshots in progress, by queue
	predicted     map[string][]float64   // match id -> its teams' win probabilities (Stats.Recent)
}

type cachedStats struct {
	read  time.Time
	stats queue.Stats
}

// Deps is what a Service needs. Store, Ratings and Matcher are required.
type Deps struct {
	Store   queue.Store
	Ratings *ratings.Service // stored ratings of the queue's context
	Matcher queue.Matcher
	Config  Config
	// Clock is the queue's one clock: the times of tickets, matches and events, when the
	// leader ticks and renews its lease, when ready checks and placements time out, when
	// webhooks and allocators are tried again, how old a definition read is. Tests give a
	// fake one and advance it. nil: the real clock.
	Clock   clockwork.Clock
	Logger  *slog.Logger // nil: discard
	Metrics *Metrics     // nil: not measured
	// Outbound posts webhooks and allocations (package outbound, over HTTP); nil: a queue with
	// a webhook or an allocator fails each post.
	Outbound queue.Outbound
	// Tracer gives the ticks', webhooks' and placements' spans (spans.go); nil: none.
	Tracer trace.TracerProvider
}

// New returns the service.
func New(d Deps) *Service {
	s := &Service{store: d.Store, ratings: d.Ratings, matcher: d.Matcher, cfg: d.Config.withDefaults(),
		clock: d.Clock, logger: d.Logger, metrics: d.Metrics, outbound: d.Outbound, cache: make(map[string]cachedStats),
		predicted: make(map[string][]float64),
		feeds:     queuefeed.New(d.Store), queuesChanged: make(chan struct{}, 1)}
	if s.clock == nil {
		s.clock = clockwork.NewRealClock()
	}
	s.definitions.clock = s.clock
	s.matches = newMatchCache(s.cfg.MatchCache, s.cfg.Retention)
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.policy = queue.WebhookPolicy{Allow: s.cfg.WebhookAllow}
	s.tracer = newTracer(d.Tracer)
	s.leaders = queueleader.New(s.leaderDeps())
	return s
}

// now is the service's time.
func (s *Service) now() time.Time { return s.clock.Now() }

// MaxWait is the longest long-poll the service answers.
func (s *Service) MaxWait() time.Duration { return s.cfg.MaxWait }

// --- queues -------------------------------------------------------------------------------

// PutQueue creates or replaces a queue definition (the admin's PUT /v1/queues/{name}) and
// returns it as stored, and whether it was created.
func (s *Service) PutQueue(ctx context.Context, q queue.Queue) (queue.Queue, bool, error) {
	restricted := callerRestricted(ctx)
	secretless := q.Webhook != nil && q.Webhook.Secret == "" || q.Allocator != nil && q.Allocator.Secret == "" ||
		q.MatchFunction != nil && q.MatchFunction.Secret == ""
	if restricted || secretless {
		stored, ok, err := s.storedQueue(ctx, q.Name)
		if err != nil {
			return queue.Queue{}, false, err
		}
		if ok {
			if err := checkGameType(ctx, stored); restricted && err != nil {
				return queue.Queue{}, false, err
			}
			keepSecrets(&q, stored)
		}
	}
	if err := q.Validate(); err != nil {
		return queue.Queue{}, false, err
	}
	if q.Webhook != nil {
		if err := s.policy.CheckURL(q.Webhook.URL); err != nil {
			return queue.Queue{}, false, err
		}
	}
	if q.Allocator != nil { // posted to as webhooks are, under the same address rule
		if err := s.policy.CheckURL(q.Allocator.URL); err != nil {
			return queue.Queue{}, false, apperr.Rename(err, func(string) string { return "allocator.url" })
		}
	}
	if q.MatchFunction != nil { // and so is a match function
		if err := s.policy.CheckURL(q.MatchFunction.URL); err != nil {
			return queue.Queue{}, false, apperr.Rename(err, func(string) string { return "match_function.url" })
		}
	}
	now := s.now().UTC()
	q.CreatedAt, q.UpdatedAt = now, now
	defer s.definitions.forget(q.Name)
	stored, created, err := s.store.PutQueue(ctx, q)
	if err == nil {
		s.changedQueues()
	}
	return stored, created, err
}

// changedQueues wakes Run, if it runs, to bring its runners up to the definitions.
func (s *Service) changedQueues() {
	select {
	case s.queuesChanged <- struct{}{}:
	default:
	}
}

// keepSecrets gives a webhook, allocator or match function defined without a secret the secret stored for the
// same URL: a definition is read without its secrets, so that one read, changed and put back
// keeps them. Without a stored one for that URL, the empty secret is refused by Validate.
func keepSecrets(q *queue.Queue, stored queue.Queue) {
	if w := q.Webhook; w != nil && w.Secret == "" && stored.Webhook != nil && stored.Webhook.URL == w.URL {
		kept := *w
		kept.Secret = stored.Webhook.Secret
		q.Webhook = &kept
	}
	if a := q.Allocator; a != nil && a.Secret == "" && stored.Allocator != nil && stored.Allocator.URL == a.URL {
		kept := *a
		kept.Secret = stored.Allocator.Secret
		q.Allocator = &kept
	}
	if f := q.MatchFunction; f != nil && f.Secret == "" && stored.MatchFunction != nil && stored.MatchFunction.URL == f.URL {
		kept := *f
		kept.Secret = stored.MatchFunction.Secret
		q.MatchFunction = &kept
	}
}

// storedQueue is the definition stored under name, ok false when there is none (or the name
// is one Validate refuses).
func (s *Service) storedQueue(ctx context.Context, name string) (queue.Queue, bool, error) {
	if ratings.ValidateName(name) != nil {
		return queue.Queue{}, false, nil
	}
	stored, err := s.store.GetQueue(ctx, name)
	if apperr.CodeOf(err) == apperr.NotFound {
		return queue.Queue{}, false, nil
	}
	return stored, err == nil, err
}

// GetQueue returns a queue definition.
func (s *Service) GetQueue(ctx context.Context, name string) (queue.Queue, error) {
	if err := ratings.ValidateName(name); err != nil {
		return queue.Queue{}, apperr.Field("name", "%s", err)
	}
	return s.store.GetQueue(ctx, name)
}

// ListQueues returns every queue, by name.
func (s *Service) ListQueues(ctx context.Context) ([]queue.Queue, error) {
	return s.store.ListQueues(ctx)
}

// DeleteQueue removes a queue; its searching tickets become cancelled.
func (s *Service) DeleteQueue(ctx context.Context, name string) error {
	if err := ratings.ValidateName(name); err != nil {
		return apperr.Field("name", "%s", err)
	}
	if err := s.checkStoredGameType(ctx, name); err != nil {
		return err
	}
	defer s.definitions.forget(name)
	if err := queue.DeleteQueue(ctx, s.store, name, s.now().UTC()); err != nil {
		return err
	}
	s.changedQueues()
	return nil
}

// checkStoredGameType refuses (403 naming game_type) a caller restricted to some game types
// the deletion of a queue stored under another.
func (s *Service) checkStoredGameType(ctx context.Context, name string) error {
	if !callerRestricted(ctx) {
		return nil
	}
	stored, ok, err := s.storedQueue(ctx, name)
	if !ok {
		return err
	}
	return checkGameType(ctx, stored)
}

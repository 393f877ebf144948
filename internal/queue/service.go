package queue

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/sync/singleflight"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Matcher runs one pass of a queue over its waiting tickets at now: the matches to make and
// the tickets to expire. The queue's production Matcher is matchmaker/tick's pass (TickPass);
// tests may give their own. waiting is the caller's again once Match returns: a Matcher keeps
// no part of it.
type Matcher interface {
	Match(q Queue, waiting []Ticket, now time.Time) (TickWrite, error)
}

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
	// WebhookAllow are the internal addresses (loopback, private, link-local, CGNAT, ...)
	// webhooks may reach, for receivers on premises; public addresses are always allowed.
	// See WebhookPolicy.
	WebhookAllow []netip.Prefix
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
	return c
}

// Service is the ticket queue's use cases, for every transport: queue administration,
// tickets, matches, events, and (Run) the tick loop of the queues this replica leads.
type Service struct {
	store    Store
	ratings  *ratings.Service
	matcher  Matcher
	cfg      Config
	clock    clockwork.Clock
	logger   *slog.Logger
	metrics  *Metrics
	outbound Outbound
	policy   WebhookPolicy

	feeds        *feeds       // the queues' events, read once for every waiter of this replica
	ticketQueues ticketQueues // the queues of tickets made or read lately: a long-poll's one read
	runners      sync.Map     // queue name -> *runner, while Run runs
	ticked       sync.Map     // queue name -> *tickMarks
	// queuesChanged wakes Run when a queue is made, changed or deleted here, for its runner
	// to start, change or stop at once rather than at the next Config.QueueRefresh.
	queuesChanged chan struct{}
	definitions   definitions
	cacheMu       sync.Mutex
	cache         map[string]cachedStats // the store's snapshots of queues led elsewhere
	predicted     map[string][]float64   // match id -> its teams' win probabilities (Stats.Recent)
}

type cachedStats struct {
	read  time.Time
	stats Stats
}

// Deps is what a Service needs. Store, Ratings and Matcher are required.
type Deps struct {
	Store   Store
	Ratings *ratings.Service // stored ratings of the queue's context
	Matcher Matcher
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
	Outbound Outbound
}

// NewService returns the service.
func NewService(d Deps) *Service {
	s := &Service{store: d.Store, ratings: d.Ratings, matcher: d.Matcher, cfg: d.Config.withDefaults(),
		clock: d.Clock, logger: d.Logger, metrics: d.Metrics, outbound: d.Outbound, cache: make(map[string]cachedStats),
		predicted: make(map[string][]float64),
		feeds:     newFeeds(d.Store), queuesChanged: make(chan struct{}, 1)}
	if s.clock == nil {
		s.clock = clockwork.NewRealClock()
	}
	s.definitions.clock = s.clock
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.policy = WebhookPolicy{Allow: s.cfg.WebhookAllow}
	return s
}

// now is the service's time.
func (s *Service) now() time.Time { return s.clock.Now() }

// MaxWait is the longest long-poll the service answers.
func (s *Service) MaxWait() time.Duration { return s.cfg.MaxWait }

// --- queues -------------------------------------------------------------------------------

// PutQueue creates or replaces a queue definition (the admin's PUT /v1/queues/{name}) and
// returns it as stored, and whether it was created.
func (s *Service) PutQueue(ctx context.Context, q Queue) (Queue, bool, error) {
	restricted := callerRestricted(ctx)
	secretless := q.Webhook != nil && q.Webhook.Secret == "" || q.Allocator != nil && q.Allocator.Secret == ""
	if restricted || secretless {
		stored, ok, err := s.storedQueue(ctx, q.Name)
		if err != nil {
			return Queue{}, false, err
		}
		if ok {
			if err := checkGameType(ctx, stored); restricted && err != nil {
				return Queue{}, false, err
			}
			keepSecrets(&q, stored)
		}
	}
	if err := q.Validate(); err != nil {
		return Queue{}, false, err
	}
	if q.Webhook != nil {
		if err := s.policy.CheckURL(q.Webhook.URL); err != nil {
			return Queue{}, false, err
		}
	}
	if q.Allocator != nil { // posted to as webhooks are, under the same address rule
		if err := s.policy.CheckURL(q.Allocator.URL); err != nil {
			return Queue{}, false, apperr.Rename(err, func(string) string { return "allocator.url" })
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

// keepSecrets gives a webhook or allocator defined without a secret the secret stored for the
// same URL: a definition is read without its secrets, so that one read, changed and put back
// keeps them. Without a stored one for that URL, the empty secret is refused by Validate.
func keepSecrets(q *Queue, stored Queue) {
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
}

// storedQueue is the definition stored under name, ok false when there is none (or the name
// is one Validate refuses).
func (s *Service) storedQueue(ctx context.Context, name string) (Queue, bool, error) {
	if ratings.ValidateName(name) != nil {
		return Queue{}, false, nil
	}
	stored, err := s.store.GetQueue(ctx, name)
	if apperr.CodeOf(err) == apperr.NotFound {
		return Queue{}, false, nil
	}
	return stored, err == nil, err
}

// GetQueue returns a queue definition.
func (s *Service) GetQueue(ctx context.Context, name string) (Queue, error) {
	if err := ratings.ValidateName(name); err != nil {
		return Queue{}, apperr.Field("name", "%s", err)
	}
	return s.store.GetQueue(ctx, name)
}

// ListQueues returns every queue, by name.
func (s *Service) ListQueues(ctx context.Context) ([]Queue, error) { return s.store.ListQueues(ctx) }

// DeleteQueue removes a queue; its searching tickets become cancelled.
func (s *Service) DeleteQueue(ctx context.Context, name string) error {
	if err := ratings.ValidateName(name); err != nil {
		return apperr.Field("name", "%s", err)
	}
	if err := s.checkStoredGameType(ctx, name); err != nil {
		return err
	}
	defer s.definitions.forget(name)
	if err := s.store.DeleteQueue(ctx, name, s.now().UTC()); err != nil {
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

// definition is the queue's definition for a ticket creation: the one read within
// Config.DefinitionTTL, else a fresh read, one at a time per queue: the creations that come
// while it is read wait for it (else, under a load of creations, every creation in flight
// when the cached one expired read the queue again, and those reads queued for the pool's
// connections with everything else).
func (s *Service) definition(ctx context.Context, name string) (Queue, error) {
	if s.cfg.DefinitionTTL < 0 {
		return s.store.GetQueue(ctx, name)
	}
	q, ok, generation := s.definitions.get(name, s.cfg.DefinitionTTL)
	if ok {
		return q, nil
	}
	// The read is the first caller's, but not cancelled with its request: the others wait
	// for it (each at most until its own context ends).
	read := s.definitions.flight.DoChan(name, func() (any, error) {
		q, err := s.store.GetQueue(context.WithoutCancel(ctx), name)
		if err == nil {
			s.definitions.put(q, generation)
		}
		return q, err
	})
	select {
	case r := <-read:
		if r.Err != nil {
			return Queue{}, r.Err
		}
		return r.Val.(Queue), nil
	case <-ctx.Done():
		return Queue{}, apperr.Wrap(apperr.Unavailable, ctx.Err(), "queue: reading the queue's definition")
	}
}

// CheckQueue says whether the queue exists, from its definition as a ticket creation reads it
// (cached for Config.DefinitionTTL): an event stream checks it as it opens, thousands at once.
func (s *Service) CheckQueue(ctx context.Context, name string) error {
	if err := ratings.ValidateName(name); err != nil {
		return apperr.Field("name", "%s", err)
	}
	_, err := s.definition(ctx, name)
	return err
}

// definitions are the queue definitions a replica read lately, by name, with when it read them.
type definitions struct {
	clock  clockwork.Clock
	flight singleflight.Group // the reads in progress, by queue name
	mu     sync.Mutex
	read   map[string]definitionRead
	// generation counts the changes made here: a read that began before one is not kept,
	// as it may be older than the change.
	generation uint64
}

type definitionRead struct {
	q  Queue
	at time.Time
}

func (d *definitions) get(name string, ttl time.Duration) (_ Queue, ok bool, generation uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.read[name]
	if !ok || d.clock.Since(r.at) >= ttl {
		return Queue{}, false, d.generation
	}
	return r.q, true, d.generation
}

func (d *definitions) put(q Queue, generation uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if generation != d.generation {
		return
	}
	if d.read == nil {
		d.read = make(map[string]definitionRead)
	}
	d.read[q.Name] = definitionRead{q: q, at: d.clock.Now()}
}

func (d *definitions) forget(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.generation++
	delete(d.read, name)
}

// --- tickets ------------------------------------------------------------------------------

// NewTicket is a request for a ticket: one player, or a party that must play on one team.
type NewTicket struct {
	Queue   string
	Players []NewPlayer
	// Latencies is the measured latency to each region, in ms; nil when not given.
	Latencies map[string]float64
	// Attributes are the party's values of the queue's attributes; nil when not given.
	Attributes map[string]matchrules.Value
	// TTL is how long the ticket may wait; 0 is the queue's ticket_ttl_s.
	TTL time.Duration
	// IdempotencyKey makes retries safe (the Idempotency-Key header).
	IdempotencyKey string
}

// NewPlayer is a player of a new ticket, with an inline rating or none (nil: the stored one in
// the queue's context, else the default).
type NewPlayer struct {
	ID     string
	Rating *float64
	Roles  []string // the queue's roles he plays, in order of preference
}

// CreateTicket validates a ticket request against its queue, resolves each player's rating
// (inline, else stored in the queue's context, else the default), and stores the ticket
// searching, committed before it returns. replayed says the Idempotency-Key named a ticket
// made earlier with the same request. Faults name the fields of POST
// /v1/queues/{name}/tickets' body: players[i].id, latencies_ms, ttl_s, ...
func (s *Service) CreateTicket(ctx context.Context, nt NewTicket) (Ticket, bool, error) {
	if err := ratings.ValidateName(nt.Queue); err != nil {
		return Ticket{}, false, apperr.Field("name", "%s", err)
	}
	if nt.IdempotencyKey != "" {
		if err := ratings.ValidateID(nt.IdempotencyKey); err != nil {
			return Ticket{}, false, apperr.Field("Idempotency-Key", "%s", err)
		}
	}
	ctx, cancel := s.createContext(ctx)
	defer cancel()
	q, err := s.definition(ctx, nt.Queue)
	if err != nil {
		return Ticket{}, false, err
	}
	if err := checkGameType(ctx, q); err != nil {
		return Ticket{}, false, err
	}
	if err := nt.validate(q); err != nil {
		return Ticket{}, false, err
	}
	if err := s.checkSearchingCap(ctx, q); err != nil {
		return Ticket{}, false, err
	}
	players, err := s.resolveRatings(ctx, q, nt.Players)
	if err != nil {
		return Ticket{}, false, err
	}
	now := s.now().UTC()
	ttl := cmp.Or(nt.TTL, q.TicketTTL)
	t := Ticket{
		ID: newID("tk-"), Queue: q.Name, Status: Searching, Players: players, Latencies: nt.Latencies,
		Attributes: nt.Attributes, CreatedAt: now, ExpiresAt: now.Add(ttl), UpdatedAt: now,
		IdempotencyKey: nt.IdempotencyKey, BodyHash: nt.fingerprint(), Owner: owner(ctx),
	}
	return s.estimated(ctx)(s.storeTicket(ctx, t, func(player string) string {
		if i := slices.IndexFunc(nt.Players, func(p NewPlayer) bool { return p.ID == player }); i >= 0 {
			return "players[" + strconv.Itoa(i) + "].id"
		}
		return "players"
	}))
}

// storeTicket stores a new ticket; a player already searching is a Conflict naming the field
// fieldOf gives for him.
func (s *Service) storeTicket(ctx context.Context, t Ticket, fieldOf func(player string) string) (Ticket, bool, error) {
	stored, replayed, err := s.store.CreateTicket(ctx, t)
	var se *SearchingError
	if errors.As(err, &se) {
		if holder, gerr := s.store.GetTicket(ctx, se.TicketID); gerr == nil && !mayAccess(ctx, holder) {
			// Another key's ticket: the conflict is told, not which ticket it is.
			msg := "player " + se.PlayerID + " is already searching in this queue, in another API key's ticket"
			return Ticket{}, false, &apperr.Error{Code: apperr.Conflict, Message: msg,
				Fields: []apperr.FieldError{{Field: fieldOf(se.PlayerID), Message: "is already searching in another API key's ticket"}}}
		}
		return Ticket{}, false, &apperr.Error{Code: apperr.Conflict, Message: se.Error(), Err: err,
			Fields: []apperr.FieldError{{Field: fieldOf(se.PlayerID), Message: "is already searching in ticket " + se.TicketID}}}
	}
	var conflict *apperr.Error
	if t.IdempotencyKey != "" && errors.As(err, &conflict) && conflict.Code == apperr.Conflict && len(conflict.Fields) == 0 {
		// The store's other conflict: the key was used for another request.
		return Ticket{}, false, &apperr.Error{Code: apperr.Conflict, Message: conflict.Message, Err: err,
			Fields: []apperr.FieldError{{Field: "Idempotency-Key", Message: "was used for another ticket request"}}}
	}
	if err == nil {
		s.ticketQueues.remember(stored.ID, stored.Queue)
	}
	if err == nil && !replayed {
		s.metrics.ticketCreated(t.Queue)
		if t.Backfill != nil {
			s.metrics.backfillCreated(t.Queue)
		}
	}
	return stored, replayed, err
}

// validate checks a ticket request against its queue, every fault at once.
func (nt *NewTicket) validate(q Queue) error {
	var f apperr.Fields
	switch {
	case len(nt.Players) == 0:
		f.Add("players", "must hold at least one player")
	case len(nt.Players) > q.MaxPartySize:
		f.Add("players", "must hold at most %d players (the queue's max_party_size)", q.MaxPartySize)
	}
	seen := make(map[string]int, len(nt.Players))
	for i, p := range nt.Players {
		path := "players[" + strconv.Itoa(i) + "]"
		if err := ratings.ValidateID(p.ID); err != nil {
			f.Add(path+".id", "%s", err)
		} else if j, dup := seen[p.ID]; dup {
			f.Add(path+".id", "repeats players[%d].id: a player is in a party once", j)
		} else {
			seen[p.ID] = i
		}
		if p.Rating != nil && !(math.Abs(*p.Rating) <= MaxRating) {
			f.Add(path+".rating", "must be a finite number between -%g and %g", float64(MaxRating), float64(MaxRating))
		}
	}
	if len(nt.Latencies) > MaxRegions {
		f.Add("latencies_ms", "must list at most %d regions", MaxRegions)
	}
	for region, ms := range nt.Latencies {
		if err := ratings.ValidateName(region); err != nil {
			f.Add("latencies_ms", "region %q: %s", region, err)
		} else if len(q.Regions) > 0 && !slices.Contains(q.Regions, region) {
			f.Add("latencies_ms", "region %q is not one of the queue's regions %v", region, q.Regions)
		}
		if !(ms >= 0 && ms <= MaxLatencyMS) {
			f.Add("latencies_ms", "region %q: the latency must be 0..%d ms", region, MaxLatencyMS)
		}
	}
	if nt.TTL != 0 && (nt.TTL < time.Second || nt.TTL > MaxTicketTTL) {
		f.Add("ttl_s", "must be 1..%d seconds", int(MaxTicketTTL.Seconds()))
	}
	if len(nt.Attributes) > 0 || len(q.Rules) > 0 {
		f.Include(tick.ValidateAttributes(q.tickConfig(), nt.Attributes, false)) // attributes.<name>
	}
	nt.addRoleFaults(&f, q)
	return f.Err()
}

// fingerprint identifies a ticket request by its meaning, for Idempotency-Key retries: the
// party is a set, and so are the regions.
func (nt *NewTicket) fingerprint() [32]byte {
	var b []byte
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	num := func(x float64) { b = binary.BigEndian.AppendUint64(b, math.Float64bits(x)) }
	str(nt.Queue)
	b = appendPlayerSet(b, nt.Players)
	regions := make([]string, 0, len(nt.Latencies))
	for r := range nt.Latencies {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	for _, r := range regions {
		str(r)
		num(nt.Latencies[r])
	}
	b = binary.AppendVarint(b, int64(nt.TTL))
	if len(nt.Attributes) > 0 { // a request without attributes hashes as it did before them
		b = appendAttributes(b, nt.Attributes)
	}
	return sha256.Sum256(b)
}

// appendPlayerSet appends players to a fingerprint as a set: by id, each with its inline
// rating or a mark for none.
func appendPlayerSet(b []byte, players []NewPlayer) []byte {
	players = slices.Clone(players)
	slices.SortFunc(players, func(a, b NewPlayer) int { return cmp.Compare(a.ID, b.ID) })
	for _, p := range players {
		b = binary.AppendUvarint(b, uint64(len(p.ID)))
		b = append(b, p.ID...)
		if len(p.Roles) > 0 { // a player without roles hashes as he did before roles existed
			b = append(b, 2)
			b = binary.AppendUvarint(b, uint64(len(p.Roles)))
			for _, r := range p.Roles {
				b = binary.AppendUvarint(b, uint64(len(r)))
				b = append(b, r...)
			}
		}
		if p.Rating == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(*p.Rating))
	}
	return b
}

// resolveRatings gives each player its inline rating, else its stored one in the queue's
// context (a weight on the matchmaking scale), else the default.
func (s *Service) resolveRatings(ctx context.Context, q Queue, in []NewPlayer) ([]Player, error) {
	out := make([]Player, len(in))
	var ask []ratings.Participant
	var where []int
	for i, p := range in {
		out[i] = Player{ID: p.ID, Rating: ratings.DefaultMatchRating, Source: RatingDefault, Roles: p.Roles}
		if p.Rating != nil {
			out[i].Rating, out[i].Source = *p.Rating, RatingInline
			continue
		}
		ask = append(ask, ratings.Participant{ID: p.ID})
		where = append(where, i)
	}
	if len(ask) == 0 {
		return out, nil
	}
	c, err := s.ratings.Context(ctx, q.GameType, q.Mutators)
	if err != nil {
		return nil, err
	}
	weights, err := s.ratings.Weights(ctx, c, ask)
	if err != nil {
		return nil, err
	}
	for k, w := range weights {
		if w.Rated {
			out[where[k]].Rating, out[where[k]].Source = w.Value*ratings.MatchRatingScale, RatingStored
		}
	}
	return out, nil
}

// GetTicket returns a ticket. With wait > 0 and the ticket searching, it waits until the
// ticket's status changes or wait passes (at most MaxWait), then answers what it is. A
// searching ticket carries its EstimatedWait.
func (s *Service) GetTicket(ctx context.Context, id string, wait time.Duration) (Ticket, error) {
	return s.GetTicketWhile(ctx, id, wait, "")
}

// GetTicketWhile is GetTicket whose wait lasts while the ticket's status is known, the status
// the caller last saw (GET /v1/tickets/{id}?status=): a ticket already in another is answered
// at once. A caller that knows nothing waits for a change from the status the ticket has when
// the request comes (known ""); one that follows a ticket from answer to answer must say
// what it saw, or a change between two requests (searching to proposed, which needs its
// answer before accept_by) would hold the next until the change after.
func (s *Service) GetTicketWhile(ctx context.Context, id string, wait time.Duration, known Status) (Ticket, error) {
	t, err := s.getTicket(ctx, id, wait, known)
	if err == nil && !mayRead(ctx, t) {
		return Ticket{}, noTicket(id)
	}
	if err == nil {
		s.estimate(ctx, &t)
	}
	return t, err
}

func (s *Service) getTicket(ctx context.Context, id string, wait time.Duration, known Status) (Ticket, error) {
	if err := ratings.ValidateID(id); err != nil {
		return Ticket{}, apperr.Field("id", "%s", err)
	}
	queue, ok := s.ticketQueues.lookup(id)
	if !ok {
		// A ticket made on another replica: while this one follows a single queue (most
		// deployments have few), that is the likely one, and a right guess saves a read.
		queue, ok = s.feeds.onlyQueue()
	}
	var t Ticket
	var err error
	if ok && wait > 0 {
		// The queue is known or guessed: the watch starts before the one read of the ticket.
		var done bool
		if t, err, done = s.waitInQueue(ctx, id, queue, wait, known, true); done {
			return t, err
		}
	}
	switch {
	case t.ID == "":
		t, err = s.readableTicket(ctx, id)
	case !mayRead(ctx, t): // read in another queue than the guess
		return Ticket{}, noTicket(t.ID)
	}
	if err != nil || wait <= 0 || !waitable(t.Status) || known != "" && t.Status != known {
		return t, err
	}
	s.ticketQueues.remember(t.ID, t.Queue)
	if t2, err, done := s.waitInQueue(ctx, id, t.Queue, wait, t.Status, false); done {
		return t2, err
	}
	return t, nil // moved to another queue meanwhile: purged and made again, a new ticket
}

// waitInQueue waits, at most wait, for the next event of ticket id in its queue after a
// status: known, or the one the ticket has when the watch begins. The ticket is read after
// the watch begins: a change before it is in what the read returns, and every later one is
// an event the queue's feed hands the watch, with the ticket. done false: the ticket is not
// in that queue (t is the ticket as read), or guessed (a remembered queue, or the one this
// replica follows) names a queue whose feed cannot start (it was deleted): the caller reads
// the ticket to learn its queue.
func (s *Service) waitInQueue(ctx context.Context, id, queue string, wait time.Duration, known Status, guessed bool) (_ Ticket, _ error, done bool) {
	wctx, cancel := context.WithTimeout(ctx, min(wait, s.cfg.MaxWait))
	defer cancel()
	f, err := s.feeds.acquire(wctx, queue)
	switch {
	case err != nil && ctx.Err() == nil && wctx.Err() != nil:
		t, err := s.readableTicket(ctx, id)
		return t, err, true
	case err != nil && guessed && ctx.Err() == nil:
		return Ticket{}, nil, false
	case err != nil:
		return Ticket{}, err, true
	}
	defer s.feeds.release(f)
	watch := s.feeds.watchTicket(f, id)
	defer s.feeds.unwatch(f, id, watch)
	t, err := s.store.GetTicket(ctx, id)
	switch {
	case err != nil:
		return t, err, true
	case t.Queue != queue:
		return t, nil, false // the caller waits in its queue, from this read
	case !mayRead(ctx, t):
		return Ticket{}, noTicket(t.ID), true
	case !waitable(t.Status) || known != "" && t.Status != known:
		return t, nil, true
	}
	select {
	case <-watch.done:
		if watch.read {
			return watch.ticket.Clone(), nil, true // shared by the ticket's long-polls
		}
	case <-wctx.Done():
		if ctx.Err() != nil {
			return Ticket{}, apperr.Wrap(apperr.Unavailable, ctx.Err(), "the request ended while waiting"), true
		}
		return t, nil, true // the feed brought no event of the ticket: as read after the watch began
	}
	t, err = s.store.GetTicket(ctx, id)
	return t, err, true
}

// CancelTicket cancels a searching ticket (a cancelled one stays so; a matched one is a
// Conflict).
func (s *Service) CancelTicket(ctx context.Context, id string) (Ticket, error) {
	if err := ratings.ValidateID(id); err != nil {
		return Ticket{}, apperr.Field("id", "%s", err)
	}
	before, err := s.ownedTicket(ctx, id)
	if err != nil {
		return Ticket{}, err
	}
	t, err := s.store.CancelTicket(ctx, id, s.now().UTC())
	if err == nil && before.Status == Proposed && t.Reason == ReasonCancelled {
		s.metrics.proposalResolved(t.Queue, ProposalDeclined) // the cancel dissolved its proposal
	}
	return t, err
}

// GetMatch returns a match the queue made.
func (s *Service) GetMatch(ctx context.Context, id string) (Match, error) {
	if err := ratings.ValidateID(id); err != nil {
		return Match{}, apperr.Field("id", "%s", err)
	}
	return s.store.GetMatch(ctx, id)
}

// Events returns up to limit events of a queue after seq, waiting up to wait for the first
// one when there is none yet. It is the body of an SSE stream: it reads from the queue's feed
// (shared by every waiter of this replica), or from the store when the stream is further
// behind than the feed keeps.
func (s *Service) Events(ctx context.Context, queue string, after int64, limit int, wait time.Duration) ([]Event, error) {
	evs, _, err := s.StreamEvents(ctx, queue, "", after, limit, wait)
	return evs, err
}

// StreamEvents is Events for a stream that keeps its place: through is the Seq to ask after
// next, past the events returned and the other keys' events passed over. A stream that
// resumed from its last event instead would fall behind the feed's buffer while the queue
// moves only with other keys' tickets, and read the store at every wait: one key's many
// streams did so at once and took every connection of the pool (docs/performance.md, the
// soak's flood). With a
// ticket, the stream reads that ticket's events only, and sleeps through the others: a
// stream per waiting ticket (a game client's) then costs what its long-poll would.
func (s *Service) StreamEvents(ctx context.Context, queue, ticket string, after int64, limit int, wait time.Duration) (_ []Event, through int64, _ error) {
	if err := ratings.ValidateName(queue); err != nil {
		return nil, after, apperr.Field("name", "%s", err)
	}
	if err := CheckEventTicket(ticket); err != nil {
		return nil, after, err
	}
	scope := eventScopeOf(ctx, ticket)
	if wait <= 0 {
		evs, err := s.store.Events(ctx, queue, after, limit)
		if len(evs) > 0 {
			after = evs[len(evs)-1].Seq
		}
		return scope.filter(evs), after, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	f, err := s.feeds.acquire(wctx, queue)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return nil, after, nil
		}
		return nil, after, err
	}
	defer s.feeds.release(f)
	for {
		evs, through, done, err := s.streamStep(ctx, wctx, f, scope, after, limit)
		if done || err != nil {
			return evs, through, err
		}
		after = through
	}
}

// streamStep is one look of a stream at the feed (or the store, when the stream is behind
// the feed's buffer) and, when it finds nothing, one wait for the feed to move: done with
// the events found, or when the wait ran out; else the stream looks again after through. A
// key sees its own tickets' events only (DESIGN, "Ownership"): a batch of other keys' events
// moves the cursor on, and the wait goes on.
func (s *Service) streamStep(ctx, wctx context.Context, f *feed, scope eventScope, after int64, limit int) (_ []Event, through int64, done bool, _ error) {
	evs, through, covered, moved := s.feeds.since(f, after, limit, scope)
	defer s.feeds.unwait(f, scope, moved)
	switch {
	case covered && len(evs) > 0:
		return evs, through, true, nil
	case covered:
		after = through
	default:
		evs, err := s.store.Events(ctx, f.queue, after, limit)
		if err != nil {
			return nil, after, true, err
		}
		if len(evs) > 0 {
			if kept := scope.filter(evs); len(kept) > 0 {
				return kept, evs[len(evs)-1].Seq, true, nil
			}
			return nil, evs[len(evs)-1].Seq, false, nil
		}
	}
	select {
	case <-moved:
		return nil, after, false, nil
	case <-wctx.Done():
		if ctx.Err() != nil {
			return nil, after, true, ctx.Err()
		}
		return nil, s.feeds.settle(f, after, moved), true, nil
	}
}

// CheckEventTicket refuses (400 naming ticket) a stream's ticket filter that is not a ticket
// id; "" is no filter. A transport checks it before its stream's first byte.
func CheckEventTicket(ticket string) error {
	if ticket == "" {
		return nil
	}
	if err := ratings.ValidateID(ticket); err != nil {
		return apperr.Field("ticket", "%s", err)
	}
	return nil
}

// createContext bounds a creation's store work as a whole by Config.CreateTimeout.
func (s *Service) createContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.CreateTimeout > 0 {
		return context.WithTimeout(ctx, s.cfg.CreateTimeout)
	}
	return ctx, func() {}
}

// CheckResume says whether a stream can resume after the event after (its Last-Event-ID,
// named field): a Gone error naming the oldest and newest events kept when the events right
// after it were purged (the client was away longer than the retention) or never existed, so
// that the client reads its tickets instead of missing their changes. after 0 is "from the
// oldest kept event", always possible.
func (s *Service) CheckResume(ctx context.Context, queue string, after int64, field string) error {
	if after <= 0 {
		return nil
	}
	head, err := s.store.EventHead(ctx, queue)
	if err != nil || after == head {
		return err
	}
	if after < head {
		evs, err := s.store.Events(ctx, queue, after, 1)
		if err != nil || (len(evs) > 0 && evs[0].Seq == after+1) {
			return err
		}
	}
	first, err := s.store.Events(ctx, queue, 0, 1)
	if err != nil {
		return err
	}
	oldest := head + 1
	if len(first) > 0 {
		oldest = first[0].Seq
	}
	kept := fmt.Sprintf("events %d to %d are kept", oldest, head)
	if oldest > head {
		kept = fmt.Sprintf("no event is kept; the newest was %d", head)
	}
	return &apperr.Error{Code: apperr.Gone,
		Message: fmt.Sprintf("%s %d is outside the queue's kept events (%s): read your tickets (GET /v1/tickets/{id}), then resume from %d", field, after, kept, head),
		Fields:  []apperr.FieldError{{Field: field, Message: kept}}}
}

// EventHead returns the Seq of the queue's newest event: an event stream that starts "from
// now on" starts after it.
func (s *Service) EventHead(ctx context.Context, queue string) (int64, error) {
	if err := ratings.ValidateName(queue); err != nil {
		return 0, apperr.Field("name", "%s", err)
	}
	return s.store.EventHead(ctx, queue)
}

// StreamStart is where a stream given no resume point starts: after the queue's newest event
// as this replica's feed of the queue last read it, when one runs (no read of the store for
// each stream: a game client opens one per ticket), else as the store says. The feed may be
// a moment behind the store: such a stream's first events may be a moment old.
func (s *Service) StreamStart(ctx context.Context, queue string) (int64, error) {
	if err := ratings.ValidateName(queue); err != nil {
		return 0, apperr.Field("name", "%s", err)
	}
	if head, ok := s.feeds.head(queue); ok {
		return head, nil
	}
	return s.store.EventHead(ctx, queue)
}

// newID returns prefix and 26 characters of base32 randomness (130 bits): unique without
// coordination between replicas, and a valid id by ratings.ValidateID.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + idEncoding.EncodeToString(b[:])
}

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

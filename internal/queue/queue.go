// Package queue is the ticket queue: players and parties wait in a named queue while their
// tolerances widen, and the replica that leads the queue matches them every tick. It holds the
// domain (queues, tickets, matches, events), the Store interface its persistence implements
// (in process in memstore, on Postgres in db/queuedb; both pass queuetest's contract suite),
// and the Service every transport calls: create, read, long-poll and cancel tickets,
// administer queues, stream events, and the tick loop with its leadership, match write and
// webhooks.
//
// The matching itself is matchmaker/tick, a pure function of (tickets, now, config); this
// package decides when it runs, on which replica, and makes what it returns durable: the
// matches of a tick are written in one transaction that moves each ticket from searching to
// matched only if it is still searching, with their events. No player is ever matched twice,
// even if two replicas believe they lead a queue for a moment: the conditional write, not the
// leadership, is what guarantees it.
//
// What happens to a ticket (searching, proposed, placing, matched, expired, cancelled, and
// back to searching) is decided in one place, lifecycle.go, which both stores ask and neither
// repeats. The service's HTTP goes through Outbound (package outbound), and its schedule runs
// on one clock (Deps.Clock). The subpackages hold the roles around the domain and import it:
// memstore (the in-memory Store), storeguard (a Store with call deadlines), outbound (HTTP),
// queuetest (the stores' contract suite); rulesjson, the rules' JSON, is a leaf it imports.
package queue

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Limits of a queue definition and of its tickets.
const (
	MaxTeamSize      = 16
	MaxExpansionStep = 32             // steps in one expansion schedule
	MaxTicketTTL     = 24 * time.Hour // longest ticket_ttl_s / ttl_s
	MinTick          = 50 * time.Millisecond
	MaxTick          = time.Minute
	MaxRegions       = 64     // regions in one ticket's latencies_ms
	MaxRating        = 1e9    // |rating| accepted inline
	MaxLatencyMS     = 10_000 // a latency above 10 s is a measurement error
	DefaultTicketTTL = 5 * time.Minute
	DefaultTick      = time.Second
	MaxWebhookURLLen = 2048
	MaxSearchingCap  = 10_000_000 // the largest max_searching
	MinWebhookSecret = 16         // bytes: a shorter HMAC key is a guessable one
)

// Strategy is how the pass pairs players, as /v1/matchmake's strategies.
type Strategy string

const (
	StrategyRatingWindow Strategy = "rating_window"
	StrategyGreedyPairs  Strategy = "greedy_pairs"
)

// Step is one step of an expansion schedule: from AfterS seconds of waiting on, the ticket's
// tolerance is Value. A ticket's current value is the last step whose AfterS <= its wait.
type Step struct {
	AfterS float64
	Value  float64
}

// Expansions say how a ticket's tolerances grow with its wait, FlexMatch-style.
type Expansions struct {
	// Interval is the rating interval: two tickets accept each other when each one's current
	// interval covers their rating difference. Ratings are on the matchmaking scale
	// (ratings.MatchRating: 0..2000, an average player 1000), as /v1/matchmake's.
	Interval []Step
	// MaxLatencyMS is the latency a ticket accepts in the match's region. Empty: latency is
	// not considered.
	MaxLatencyMS []Step
}

// Webhook is where a queue's events are POSTed, signed with Secret.
type Webhook struct {
	URL    string
	Secret string
}

// Queue is a named queue and how it matches.
type Queue struct {
	Name       string
	GameType   string   // the rating context's game type: stored ratings come from it,
	Mutators   []string // and the queue's matches' results go to it
	TeamSize   int      // players per team, 1..MaxTeamSize; with TeamDefs, the largest team's
	Teams      int      // teams in a match, 2..rules.MaxTeams; with TeamDefs, their number
	Strategy   Strategy
	Expansions Expansions
	// Regions lists the regions tickets may give latencies for; empty: any region name.
	Regions      []string
	TicketTTL    time.Duration
	MaxPartySize int // players in one ticket, 1..TeamSize
	// MaxSearching caps the queue's searching tickets (0: no cap): a creation past it is a
	// 429, counted against the leader's last snapshot (seconds old at most), so the cap is
	// soft by what arrives meanwhile.
	MaxSearching int
	// MaxSearchingPerKey caps the searching tickets one API key holds in the queue (0: no
	// cap), counted as MaxSearching is.
	MaxSearchingPerKey int
	Tick               time.Duration
	Webhook            *Webhook // nil: no webhook
	// Acceptance, when set, makes the queue propose its matches for a ready check (see
	// acceptance.go) instead of assigning them.
	Acceptance *Acceptance
	// Allocator, when set, is where the queue's matches are placed before they are made
	// (placement.go).
	Allocator *Allocator
	// MatchFunction, when set, is a studio's code that proposes the queue's matches, or
	// is measured beside the built-in pass (matchfunction.go).
	MatchFunction *MatchFunction
	// Attributes declares the attributes tickets carry, by name; Rules are the match rules
	// beside the interval and latency (see rules.go). A queue without them matches as it
	// did before rules existed.
	Attributes map[string]matchrules.Attribute
	Rules      []matchrules.Rule
	// The team shape (shape.go): MinTeamSize and Composition apply to each of the Teams x
	// TeamSize; TeamDefs, when set, are named teams of their own sizes instead. Roles are
	// the roles players may list, which a composition bounds. A queue with none of them and
	// two teams matches as it did before shapes existed.
	MinTeamSize []Step
	Composition map[string]matchrules.RoleRange
	TeamDefs    []matchrules.TeamDef
	Roles       []string
	// Avoid is the scope of the players' avoid lists (Player.Avoid) and when they turn
	// optional (avoid.go).
	Avoid matchrules.Avoid
	// PartitionBy, when set, is the attribute whose values split the queue into partitions,
	// each led and ticked on its own (partition.go).
	PartitionBy string
	// Penalties turn dodges into cooldowns and leaves into low-priority games
	// (penalties.go).
	Penalties Penalties
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DefaultQueue fills what a definition leaves out: 5v5, rating_window, a widening interval
// of 25 -> 50 -> 150, no latency limit, tickets for 5 minutes, parties up to a team, 1 s
// ticks.
func DefaultQueue(name string) Queue {
	return Queue{
		Name: name, TeamSize: 5, Teams: 2, Strategy: StrategyRatingWindow,
		Expansions: Expansions{Interval: []Step{{0, 25}, {10, 50}, {30, 150}}},
		TicketTTL:  DefaultTicketTTL, MaxPartySize: 5, Tick: DefaultTick,
	}
}

// Validate reports every fault of a queue definition at once, named by the fields of
// PUT /v1/queues/{name}'s body.
func (q *Queue) Validate() error {
	var f apperr.Fields
	if err := ratings.ValidateName(q.Name); err != nil {
		f.Add("name", "%s", err)
	}
	if _, err := ratings.NewContext(q.GameType, q.Mutators); err != nil {
		f.Include(err) // context.game_type, context.mutators[i]
	}
	if q.TeamSize < 1 || q.TeamSize > MaxTeamSize {
		f.Add("team_size", "must be 1..%d", MaxTeamSize)
	}
	q.addShapeFaults(&f)
	if q.MaxSearching < 0 || q.MaxSearching > MaxSearchingCap {
		f.Add("max_searching", "must be 0 (no cap) to %d", MaxSearchingCap)
	}
	if q.MaxSearchingPerKey < 0 || q.MaxSearchingPerKey > MaxSearchingCap {
		f.Add("max_searching_per_key", "must be 0 (no cap) to %d", MaxSearchingCap)
	}
	if q.Strategy != StrategyRatingWindow && q.Strategy != StrategyGreedyPairs {
		f.Add("strategy", "must be %q or %q", StrategyRatingWindow, StrategyGreedyPairs)
	}
	checkSteps(&f, "expansions.interval", q.Expansions.Interval, math.MaxFloat64, true)
	checkSteps(&f, "expansions.max_latency_ms", q.Expansions.MaxLatencyMS, MaxLatencyMS, false)
	if len(q.Expansions.MaxLatencyMS) > 0 && len(q.Regions) == 0 {
		f.Add("regions", "must list the regions matches are played in when expansions.max_latency_ms is set")
	}
	if len(q.Regions) > MaxRegions {
		f.Add("regions", "must list at most %d regions", MaxRegions)
	}
	for i, r := range q.Regions {
		if err := ratings.ValidateName(r); err != nil {
			f.Add(fmt.Sprintf("regions[%d]", i), "%s", err)
		}
	}
	if q.TicketTTL < time.Second || q.TicketTTL > MaxTicketTTL {
		f.Add("ticket_ttl_s", "must be 1..%d seconds", int(MaxTicketTTL.Seconds()))
	}
	if q.MaxPartySize < 1 || q.TeamSize >= 1 && q.MaxPartySize > q.TeamSize {
		f.Add("max_party_size", "must be 1..team_size (%d): a party plays on one team", q.TeamSize)
	}
	if q.Tick < MinTick || q.Tick > MaxTick {
		f.Add("tick_ms", "must be %d..%d", MinTick.Milliseconds(), MaxTick.Milliseconds())
	}
	if w := q.Webhook; w != nil {
		u, err := url.Parse(w.URL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			f.Add("webhook.url", "must be an absolute http or https URL")
		case len(w.URL) > MaxWebhookURLLen:
			f.Add("webhook.url", "must be at most %d bytes", MaxWebhookURLLen)
		}
		addSecretFault(&f, "webhook", w.Secret)
	}
	q.addRuleFaults(&f)
	q.addAcceptanceFaults(&f)
	q.addAllocatorFaults(&f)
	q.addMatchFunctionFaults(&f)
	q.addPartitionFaults(&f)
	q.addPenaltyFaults(&f)
	return f.Err()
}

// checkSteps checks an expansion schedule: finite values in [0, max], after_s ascending from
// 0 (required when the schedule must start at once), at most MaxExpansionStep steps.
func checkSteps(f *apperr.Fields, path string, steps []Step, maxValue float64, required bool) {
	if len(steps) == 0 {
		if required {
			f.Add(path, "must have at least one step")
		}
		return
	}
	if len(steps) > MaxExpansionStep {
		f.Add(path, "must have at most %d steps", MaxExpansionStep)
		return
	}
	if steps[0].AfterS != 0 {
		f.Add(path+"[0].after_s", "must be 0: a ticket needs a tolerance from the start")
	}
	for i, s := range steps {
		if !(s.AfterS >= 0 && s.AfterS <= MaxTicketTTL.Seconds()) {
			f.Add(fmt.Sprintf("%s[%d].after_s", path, i), "must be 0..%d", int(MaxTicketTTL.Seconds()))
		} else if i > 0 && s.AfterS <= steps[i-1].AfterS {
			f.Add(fmt.Sprintf("%s[%d].after_s", path, i), "must be greater than the previous step's")
		}
		if i > 0 && s.Value < steps[i-1].Value {
			f.Add(fmt.Sprintf("%s[%d].value", path, i), "must not be less than the previous step's: tolerances only widen")
		}
		if !(s.Value >= 0 && s.Value <= maxValue) {
			f.Add(fmt.Sprintf("%s[%d].value", path, i), "must be a finite number from 0 to %g", maxValue)
		}
	}
}

// Status is where a ticket is in its life: searching until it is matched, expires or is
// cancelled; the last three are final.
type Status string

const (
	Searching Status = "searching"
	Matched   Status = "matched"
	Expired   Status = "expired"
	Cancelled Status = "cancelled"
)

// Player is one player of a ticket, with the rating the queue matches on and where it came
// from.
type Player struct {
	ID     string
	Rating float64 // on the matchmaking scale
	Source RatingSource
	Roles  []string // the queue's roles he plays, in order of preference; none: any
	Avoid  []string // the players he blocked: never in his match, or on his team (Queue.Avoid)
	// LowPriority: he left matches and plays this one in the low-priority pool
	// (LowPriorityPenalty), set when the ticket is created.
	LowPriority bool
}

// RatingSource says where a ticket player's rating came from.
type RatingSource string

const (
	RatingInline  RatingSource = "inline"  // the ticket gave it
	RatingStored  RatingSource = "stored"  // the player's rating in the queue's context
	RatingDefault RatingSource = "default" // the player has none: the average
)

// Ticket is one player, or a party that must play on one team, waiting in a queue.
type Ticket struct {
	ID        string
	Queue     string
	Status    Status
	Players   []Player
	Latencies map[string]float64 // region -> ms; nil: any region
	// Attributes are the party's values of the queue's declared attributes (nil: none).
	Attributes map[string]matchrules.Value
	CreatedAt  time.Time
	ExpiresAt  time.Time
	UpdatedAt  time.Time // when Status last changed
	// Reason says why a ticket expired or was cancelled ("ttl", "queue deleted", ...).
	Reason     string
	Assignment *Assignment // set when matched
	// EstimatedWait is how much longer a searching ticket is expected to wait, set by the
	// Service on the tickets it answers (Stats.Estimate); nil without recent waits. Not
	// stored.
	EstimatedWait *time.Duration
	// WaitingOn says why a searching ticket still waits, set by the Service on the tickets
	// it answers from the replica that leads the queue; nil elsewhere or before its first
	// search. Not stored.
	WaitingOn *WaitingOn
	// Tolerances are a searching ticket's tolerances at its wait now, set by the Service on
	// the tickets it answers; nil otherwise. Not stored.
	Tolerances *Tolerances
	// Backfill, when set, makes this a backfill ticket: a running match asks for players.
	// Players are then the match's players still in it (all teams), which no other
	// searching ticket of the queue may hold.
	Backfill *Backfill
	// IdempotencyKey and BodyHash make creation retries safe: the same key with the same
	// hash is the same ticket, with another hash a conflict.
	IdempotencyKey string
	BodyHash       [32]byte
	// Owner is the API key that created the ticket (its name; "" without keys): only it, or
	// an admin key, reads, cancels and answers for the ticket (queuesvc/owner.go).
	Owner string
	// Exclusive: matched or proposed, the ticket's players are claimed, and their searching
	// exclusive tickets in other queues cancelled (lifecycle_claims.go). The Service makes
	// every ticket exclusive but those that opt out ("exclusive": false) and backfills.
	Exclusive bool
	// Proposal is the ready check a proposed ticket is in (acceptance.go); nil otherwise.
	Proposal *TicketProposal
}

// Tolerances are what a ticket accepts at its current wait, as the pass applies them: the
// rating interval, the latency limit (nil: the queue does not consider latency), and each
// widening rule's (distance, team_balance) by name.
type Tolerances struct {
	Interval     float64
	MaxLatencyMS *float64
	Rules        map[string]float64
}

// Backfill is what a backfill ticket asks: players for a running match that lost some.
type Backfill struct {
	MatchID string         // the running match (the game server's id, or one the queue made)
	Teams   []BackfillTeam // the match's teams as they are, Teams players of the ticket's Players
	// OpenSlots are the players wanted per team: a team never gets more.
	OpenSlots []int
	// Region is where the match is played; joiners must accept it at their current latency
	// limit. "": any region.
	Region string
	// Bots is the server's bot rule (the seed's Ideal Bot Counter), on the matchmaking
	// scale; with it a join counts the bots it removes or adds. nil: bots stay as they are.
	Bots *BotRule
}

// BackfillTeam is one team of a running match: its players' ids (their ratings are the
// ticket's Players') and its bots' ratings.
type BackfillTeam struct {
	Players []string
	Bots    []float64
}

// BotRule is a game server's bot rule, as /v1/teams/assign takes it, with ratings on the
// matchmaking scale.
type BotRule struct {
	MeanRating     float64 // of a bot not known yet
	TargetPlayers  int
	RecommendedMin int
	RecommendedMax int
}

// Assignment is what a matched ticket is told: its match, which team it is on, where the
// match is played and who plays on each team.
type Assignment struct {
	MatchID string
	Team    int
	Region  string
	Teams   [][]string // player ids, by team
	// Joined, for a backfill and its joiners, lists the players that joined, by team (MatchID
	// is then the running match's id, and a backfill ticket's Team is 0: its players are on
	// every team).
	Joined [][]string
	// FillID, for a backfill and its joiners, is the fill's own id (the Match with
	// BackfillOf), by which GetMatch finds it.
	FillID string
	// Attributes are the match's (Match.Attributes).
	Attributes []matchpool.MatchAttribute
	// TeamNames (named teams), Roles (player id -> role, with the queue's roles) and
	// OpenSlots (by team; nil when every team is full) describe a shaped match's teams.
	TeamNames []string
	Roles     map[string]string
	OpenSlots []int
	// Connection is where the match is played, once placed (placement.go); nil before.
	Connection json.RawMessage
}

// Match is a match the queue made. Its id is the match_id a game server posts to
// /v1/results.
type Match struct {
	ID        string
	Queue     string
	CreatedAt time.Time
	Region    string
	Teams     []MatchTeam
	Pairs     []Pair
	// SkillDifference is |difference of the team totals|, AverageDifference |difference of
	// the team averages| (the thesis's measure of a match's fairness).
	SkillDifference   float64
	AverageDifference float64
	// BackfillOf, for a backfill's fill, is the running match's id, and BackfillTicket the
	// backfill ticket, whose players are the match's: the other players joined. Its Pairs are
	// empty.
	BackfillOf     string
	BackfillTicket string
	// Attributes are what the match's equal and intersect rules agreed on, in the rules'
	// order: for equal the one value, for intersect the values common to its tickets' lists
	// (the map to play is among them).
	Attributes []matchpool.MatchAttribute
	// Connection is where the match is played, once placed (placement.go); nil before.
	Connection json.RawMessage
}

// MatchTeam is one team of a match: its players, with their tickets and ratings.
type MatchTeam struct {
	Players     []MatchPlayer
	RatingTotal float64
	Name        string   // a named team's (Queue.TeamDefs)
	Roles       []string // with the queue's roles, each player's, by Players' index
	OpenSlots   int      // the players it lacks of its size: a match that started short
}

// MatchPlayer is a player in a match.
type MatchPlayer struct {
	ID       string
	TicketID string
	Rating   float64
	// LowPriority: the match is one of the low-priority games he owes (Player.LowPriority).
	LowPriority bool
}

// Pair is two opponents of near-equal rating, one on each team.
type Pair struct {
	Players    [2]string
	Difference float64
	Interval   float64 // the widest of the two tickets' intervals when the pair was made
}

// Tickets lists the match's tickets, in the order of first appearance.
func (m *Match) Tickets() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range m.Teams {
		for _, p := range t.Players {
			if !seen[p.TicketID] {
				seen[p.TicketID] = true
				out = append(out, p.TicketID)
			}
		}
	}
	return out
}

// EventType is what happened to a ticket.
type EventType string

const (
	EventMatched   EventType = "matched"
	EventExpired   EventType = "expired"
	EventCancelled EventType = "cancelled"
)

// Event is a change of a ticket's status, as SSE streams and webhooks deliver it. Seq
// increases by one per event within a queue, in commit order, so a reader that has seen Seq n
// has seen every event up to n (Last-Event-ID resumes after it).
type Event struct {
	Queue    string
	Seq      int64
	Type     EventType
	TicketID string
	MatchID  string // matched only
	Team     int    // matched only
	Reason   string // expired and cancelled
	At       time.Time
	// Owner is the owner of the event's ticket, for the event stream to show a key its own
	// tickets' events only; it is not part of the event's JSON.
	Owner string
	// encoded is the event's JSON once the queue's feed has encoded it (EncodeEvent), for
	// all the streams that send it.
	encoded []byte
}

// addSecretFault checks a webhook's or allocator's secret. An empty one was not kept from a
// stored definition (another url, or no queue yet): a new url needs its secret.
func addSecretFault(f *apperr.Fields, of, secret string) {
	switch {
	case secret == "":
		f.Add(of+".secret", "is required unless the url is the one stored, whose secret is then kept")
	case len(secret) < MinWebhookSecret:
		f.Add(of+".secret", "must be at least %d bytes", MinWebhookSecret)
	}
}

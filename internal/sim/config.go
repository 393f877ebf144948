package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Scenario is everything a run needs but the queue's settings: the population, how tickets
// arrive, how matches are played, and the Configurations of the queue to compare. It is the
// JSON of `api simulate -config FILE`.
type Scenario struct {
	Seed    uint64 `json:"seed"`
	Matches int    `json:"matches"` // matches to make per configuration
	// TickS is the queue's tick (a queue's tick_ms / 1000).
	TickS float64 `json:"tick_s"`
	// MaxDays bounds the simulated time, in case the queue cannot make Matches matches.
	MaxDays  float64 `json:"max_days"`
	TeamSize int     `json:"team_size"`
	Rounds   int     `json:"rounds"`  // rounds a match (the thesis: 11)
	RoundS   float64 `json:"round_s"` // simulated seconds a round (the thesis: 43 to 49)
	// OutcomeWeights are the outcome model's weights; omitted: ThesisWeights.
	OutcomeWeights *Coefficients    `json:"outcome_weights,omitempty"`
	Population     PopulationConfig `json:"population"`
	Arrivals       ArrivalConfig    `json:"arrivals"`
	// Attributes are what every ticket carries beside its ratings, by name, and how a
	// ticket draws its value (one for the whole party): what a configuration's Rules read.
	// The draws come from a stream of their own, one set per arrival in arrival order, so
	// every configuration sees the same values on the same arrivals.
	Attributes map[string]AttributeDist `json:"attributes,omitempty"`
	// Roles are the roles the queue offers and how each player picks his (RoleDist): what
	// a configuration's Composition reads.
	Roles *RoleDist `json:"roles,omitempty"`
	// Avoid gives a fraction of the players an avoid list (AvoidDist).
	Avoid          *AvoidDist      `json:"avoid,omitempty"`
	Configurations []Configuration `json:"configurations"`
	// RatingModel is the model of the configurations with the learned rating: a name
	// ratings.ModelByName knows ("ns2", "ns2-kalman", "openskill-pl", "openskill-bt", "ns2-mix");
	// empty: the service's default (ratings.DefaultModel, what a context uses unless
	// MATCHMAKER_RATING_MODELS names another).
	RatingModel string `json:"rating_model,omitempty"`
	// Sweep lists factors by which every configuration with a clock-based widening is also
	// run with its expansion reached that many times later: the points of the
	// wait-versus-one-sided trade-off curve. Empty: no sweep.
	Sweep []float64 `json:"sweep,omitempty"`
}

// Coefficients are eq. 6.5's importance coefficients (or the outcome model's weights) in JSON.
type Coefficients struct {
	Accuracy     float64 `json:"accuracy"`
	ReactionTime float64 `json:"reaction_time"`
	Awareness    float64 `json:"awareness"`
	Movement     float64 `json:"movement"`
}

// Configuration is one setting of the queue to compare.
type Configuration struct {
	Name string `json:"name"`
	// Matcher is "tick" (the queue's own pass, see QueuePass), "pairing" (the
	// /v1/matchmake pairing over the queue, which splits parties; see Pairing), "none"
	// (no matchmaking, see Random) or "function" (a match function's: Function, see
	// FunctionPass; from Go only).
	Matcher string `json:"matcher"`
	// Function makes the "function" matcher's matches, as a queue's match function in
	// replace mode; its queue has the configuration's interval, rules and composition.
	Function Function `json:"-"`
	// Strategy of the tick or the pairing: "greedy_pairs" (the thesis; also when empty) or
	// "rating_window" (the queue's default).
	Strategy string `json:"strategy,omitempty"`
	// Rating is what the queue sees: "performance" (eq. 6.5 with Coefficients, the thesis)
	// or "learned" (the service's rating model learning from the results).
	Rating string `json:"rating,omitempty"`
	// Coefficients of eq. 6.5 for the performance rating; omitted: 0.5 each.
	Coefficients *Coefficients `json:"coefficients,omitempty"`
	// Expansions in a queue definition's form (at most 32 steps); or Widening, which the
	// tick matcher runs as the steps Expansion.Schedule lists; neither: ThesisWidening.
	Expansions *Expansions `json:"expansions,omitempty"`
	Widening   *Widening   `json:"widening,omitempty"`
	// TicketTTLS is how long a ticket waits before it expires; 0: never.
	TicketTTLS float64 `json:"ticket_ttl_s,omitzero"`
	// Rules are the queue's match rules on the scenario's Attributes, in a queue
	// definition's form (docs/rules.md); the tick matcher only: the pairing and no
	// matchmaking know no rules, and a configuration giving them rules is refused.
	Rules []Rule `json:"rules,omitempty"`
	// Composition bounds the players of each role on each of the two teams, as a queue
	// definition's composition (docs/rules.md, "Team shapes"), over the scenario's Roles:
	// every player plays one role he lists; a role it does not name is free. The tick
	// matcher only. Nil: the queue lists no roles and its tickets carry none.
	Composition map[string]RoleRange `json:"composition,omitempty"`
	// Acceptance is the queue's ready check (docs/queue.md, "Ready check"); the tick
	// matcher only. Nil: the queue matches without one.
	Acceptance *Acceptance `json:"acceptance,omitempty"`
	// PartySizes, when given, replaces the arrivals' party sizes for this configuration (as
	// arrivals.party_sizes): the same queue with and without parties, side by side.
	PartySizes []float64 `json:"party_sizes,omitempty"`
}

// Acceptance models a queue's ready check by how often players decline. Each match the pass
// makes is proposed; every player of it declines with probability DeclineRate, each
// independently (from a random stream of its own, so a seed gives the same declines). One
// decline fails the proposal: the tickets of the players who declined are cancelled (their
// players go back to the idle population, as a cancelled ticket's do) and the others search
// again from the next tick with their wait kept (their creation time), as the queue
// requeues them. The players answer at once: the time a proposal holds its players is not
// modelled.
type Acceptance struct {
	DeclineRate float64 `json:"decline_rate"`
}

// Rule is one of a queue's match rules, as a queue definition's rules[i] (docs/rules.md;
// package rulesjson).
type Rule = rulesjson.Rule

// arrivals is the scenario's arrivals with the configuration's party sizes.
func (c Configuration) arrivals(sc *Scenario) ArrivalConfig {
	a := sc.Arrivals
	if len(c.PartySizes) > 0 {
		a.PartySizes = c.PartySizes
	}
	return a
}

// tickRules is the configuration's rules as the pass takes them; nil without any.
func (c Configuration) tickRules() []matchrules.Rule {
	if len(c.Rules) == 0 {
		return nil
	}
	return rulesjson.Rules(c.Rules)
}

// passRules are the configuration's attributes, rules and role composition as the pass
// takes them.
func (c Configuration) passRules(sc *Scenario) PassRules {
	return PassRules{Attributes: sc.attributeDecls(), Rules: c.tickRules(), Shape: c.shape(sc.TeamSize), Roles: c.queueRoles(sc)}
}

// Expansions is a queue definition's expansions field (its interval part).
type Expansions struct {
	Interval []Step `json:"interval"`
}

// ThesisDefault and ThesisOptimised are the thesis's coefficients: 0.5 each, and eq. 8.1's.
var (
	ThesisDefault   = Coefficients{Accuracy: 0.5, ReactionTime: 0.5, Awareness: 0.5, Movement: 0.5}
	ThesisOptimised = Coefficients{Accuracy: 0.7072, ReactionTime: 0.544, Awareness: 0.272, Movement: 0.2}
)

// coefficients returns the configuration's eq. 6.5 coefficients.
func (c Configuration) coefficients() skill.Coefficients {
	if c.Coefficients == nil {
		return skill.Coefficients(ThesisDefault)
	}
	return skill.Coefficients(*c.Coefficients)
}

// expansion returns the configuration's interval expansion.
func (c Configuration) expansion() Expansion {
	switch {
	case c.Expansions != nil:
		return Expansion{Steps: c.Expansions.Interval}
	case c.Widening != nil:
		return Expansion{Widening: *c.Widening}
	}
	return Expansion{Widening: ThesisWidening}
}

// ratingScale is how far apart two of the ratings the queue sees can be: eq. 6.5 rates
// from 0 to 1000 x the sum of the coefficients; the learned rating (weight x 20) from 0 to
// 2000.
func (c Configuration) ratingScale() float64 {
	if c.Rating == "learned" {
		return 100 * storedRatingScale
	}
	k := c.coefficients()
	return 1000 * (k.Accuracy + k.ReactionTime + k.Awareness + k.Movement)
}

// steps is the configuration's interval as a queue definition's steps: what the tick
// matcher runs and QueueSnippet prints.
func (c Configuration) steps() []Step {
	return c.expansion().Schedule(math.Ceil(c.ratingScale()), c.TicketTTLS)
}

func (c Configuration) validate(sc *Scenario) error {
	teamSize := sc.TeamSize
	name := fmt.Sprintf("configuration %q", c.Name)
	if c.Name == "" {
		return errors.New("every configuration needs a name")
	}
	// The rating and the time to live first: the tick's steps are listed from them.
	switch c.Rating {
	case "", "performance":
		if err := c.coefficients().Validate(); err != nil {
			return fmt.Errorf("%s: %w", name, apperr.Rename(err, func(f string) string { return "coefficients." + f }))
		}
	case "learned":
		if c.Coefficients != nil {
			return fmt.Errorf("%s: coefficients apply to the performance rating, not the learned one", name)
		}
	default:
		return fmt.Errorf("%s: rating must be \"performance\" or \"learned\", got %q", name, c.Rating)
	}
	if !(c.TicketTTLS >= 0 && c.TicketTTLS <= 1e9) {
		return fmt.Errorf("%s: ticket_ttl_s must be between 0 (never) and 1e9", name)
	}
	if a := c.Acceptance; a != nil {
		if !c.queueMatcher() {
			return fmt.Errorf("%s: acceptance runs on the tick matcher only, or a function's (matcher %q may split a ticket across matches)", name, c.Matcher)
		}
		if !(a.DeclineRate >= 0 && a.DeclineRate < 1) {
			return fmt.Errorf("%s: acceptance.decline_rate must be in [0, 1), got %g", name, a.DeclineRate)
		}
	}
	if len(c.Rules) > 0 && !c.queueMatcher() {
		return fmt.Errorf("%s: rules run on the tick matcher only, or a function's (matcher %q knows no attributes)", name, c.Matcher)
	}
	if err := c.validateComposition(sc); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := validatePartySizes("party_sizes", c.PartySizes, teamSize); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for i, r := range c.Rules {
		// The queue's limits beyond the pass's (queue.addRuleFaults).
		if err := ratings.ValidateName(r.Name); r.Name != "" && err != nil {
			return fmt.Errorf("%s: rules[%d].name: %w", name, i, err)
		}
		if len(r.Expansions) > maxSteps {
			return fmt.Errorf("%s: rules[%d].expansions: a queue definition holds at most %d steps, got %d", name, i, maxSteps, len(r.Expansions))
		}
	}
	switch c.Matcher {
	case "none":
	case "function":
		if c.Function == nil {
			return fmt.Errorf("%s: matcher \"function\" needs a Go Function (Configuration.Function)", name)
		}
		fallthrough
	case "tick", "pairing":
		if c.Expansions != nil && c.Widening != nil {
			return fmt.Errorf("%s: give expansions or widening, not both", name)
		}
		if c.Expansions != nil && len(c.Expansions.Interval) == 0 {
			return fmt.Errorf("%s: expansions.interval must list at least one step", name)
		}
		if err := c.expansion().validate(name); err != nil {
			return err
		}
		var err error
		if c.queueMatcher() {
			_, err = NewRuledQueuePass(teamSize, string(c.strategy()), c.steps(), 0, c.passRules(sc))
		} else {
			_, err = NewPairing(teamSize, c.strategy(), c.expansion(), 0)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	default:
		return fmt.Errorf("%s: matcher must be \"tick\", \"pairing\", \"none\" or \"function\", got %q", name, c.Matcher)
	}
	return nil
}

// queueMatcher says whether the configuration's matcher plays the queue's own shape and
// rules, whole tickets only: the tick pass, or a function's, checked as the queue checks it.
func (c Configuration) queueMatcher() bool { return c.Matcher == "tick" || c.Matcher == "function" }

func (c Configuration) strategy() pairing.Strategy {
	if c.Strategy == "" {
		return pairing.GreedyPairs
	}
	return pairing.Strategy(c.Strategy)
}

// Validate checks the scenario; it fills nothing in, so a file says everything it runs.
func (sc *Scenario) Validate() error {
	if sc.Matches < 1 || sc.Matches > 100_000_000 {
		return fmt.Errorf("matches must be between 1 and 1e8, got %d", sc.Matches)
	}
	if !(sc.TickS >= 0.001 && sc.TickS <= 3600) {
		return fmt.Errorf("tick_s must be between 0.001 and 3600, got %g", sc.TickS)
	}
	if !(sc.MaxDays > 0 && sc.MaxDays <= 10000) {
		return fmt.Errorf("max_days must be in (0, 10000], got %g", sc.MaxDays)
	}
	if sc.TeamSize < 1 || sc.TeamSize > pairing.MaxTeamSize {
		return fmt.Errorf("team_size must be between 1 and %d, got %d", pairing.MaxTeamSize, sc.TeamSize)
	}
	if sc.Rounds < 1 || sc.Rounds > 1000 {
		return fmt.Errorf("rounds must be between 1 and 1000, got %d", sc.Rounds)
	}
	if !(sc.RoundS > 0 && float64(sc.Rounds)*sc.RoundS <= ratings.MaxDurationS) {
		return fmt.Errorf("round_s must be positive and a match at most %d s", ratings.MaxDurationS)
	}
	if w := sc.OutcomeWeights; w != nil {
		for _, v := range []float64{w.Accuracy, w.ReactionTime, w.Awareness, w.Movement} {
			if !(math.Abs(v) <= 100) {
				return errors.New("outcome_weights must be finite, at most 100 in size")
			}
		}
	}
	if sc.RatingModel != "" {
		if _, err := ratings.ModelByName(sc.RatingModel); err != nil {
			return fmt.Errorf("rating_model: unknown rating model %q (want one of %s)", sc.RatingModel, strings.Join(ratings.ModelNames(), ", "))
		}
	}
	if err := sc.Population.validate(); err != nil {
		return err
	}
	if sc.Population.Players < 2*sc.TeamSize {
		return fmt.Errorf("population.players must be at least 2 x team_size (%d)", 2*sc.TeamSize)
	}
	if err := sc.Arrivals.validate(sc.TeamSize); err != nil {
		return err
	}
	if len(sc.Attributes) > maxAttributes {
		return fmt.Errorf("attributes: at most %d, got %d", maxAttributes, len(sc.Attributes))
	}
	for _, name := range slices.Sorted(maps.Keys(sc.Attributes)) {
		if err := sc.Attributes[name].validate(name); err != nil {
			return err
		}
	}
	if sc.Avoid != nil {
		if err := sc.Avoid.validate(); err != nil {
			return err
		}
	}
	if sc.Roles != nil {
		if err := sc.Roles.validate(); err != nil {
			return err
		}
	}
	if len(sc.Configurations) == 0 {
		return errors.New("configurations: list at least one")
	}
	names := map[string]bool{}
	for _, c := range sc.Configurations {
		if err := c.validate(sc); err != nil {
			return err
		}
		if names[c.Name] {
			return fmt.Errorf("configuration %q is listed twice", c.Name)
		}
		names[c.Name] = true
	}
	for _, f := range sc.Sweep {
		if !(f >= 0.01 && f <= 100) {
			return fmt.Errorf("sweep factors must be between 0.01 and 100, got %g", f)
		}
	}
	return nil
}

// ratingModel returns the learned rating's model: the named one, else the service's default.
func (sc *Scenario) ratingModel() ratings.Model {
	if sc.RatingModel == "" {
		return ratings.DefaultModel()
	}
	m, err := ratings.ModelByName(sc.RatingModel)
	if err != nil { // Validate refuses an unknown name
		panic(err)
	}
	return m
}

// LearnedModel names the model of the learned rating, if a configuration has it.
func (sc *Scenario) LearnedModel() (string, bool) {
	for _, c := range sc.Configurations {
		if c.Rating == "learned" {
			return sc.ratingModel().Name(), true
		}
	}
	return "", false
}

// weights returns the outcome model's weights.
func (sc *Scenario) weights() skill.Coefficients {
	if sc.OutcomeWeights == nil {
		return ThesisWeights
	}
	return skill.Coefficients(*sc.OutcomeWeights)
}

// ReadScenario decodes a scenario from JSON, rejecting unknown fields, and validates it.
func ReadScenario(r io.Reader) (Scenario, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	if dec.More() {
		return Scenario{}, errors.New("scenario: trailing data after the JSON object")
	}
	return sc, sc.Validate()
}

// JSON is the scenario as indented JSON (what -print-config shows and -config reads).
func (sc Scenario) JSON() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(sc); err != nil { // plain data: cannot fail
		panic(err)
	}
	return b.Bytes()
}

// tick is the scenario's tick as a Duration.
func (sc *Scenario) tick() time.Duration { return seconds(sc.TickS) }

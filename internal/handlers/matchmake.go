package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type matchmakeRequest struct {
	Players       []queuedPlayerJSON `json:"players"`
	TeamSize      *int               `json:"team_size"`
	Strategy      *string            `json:"strategy"`
	Interval      *intervalJSON      `json:"interval"`
	Coefficients  *statsJSON         `json:"coefficients"`
	DefaultRating *float64           `json:"default_rating"`
	Context       *contextJSON       `json:"context"`
}

type queuedPlayerJSON struct {
	ID     string         `json:"id"`
	Rating optionalNumber `json:"rating"`
	Stats  *statsJSON     `json:"stats"`
}

// statsJSON holds the thesis's four skills, each optional: a player's stats, or the
// importance coefficients that weigh them.
type statsJSON struct {
	Accuracy     *float64 `json:"accuracy"`
	ReactionTime *float64 `json:"reaction_time"`
	Awareness    *float64 `json:"awareness"`
	Movement     *float64 `json:"movement"`
}

type intervalJSON struct {
	Initial *float64 `json:"initial"`
	Step    *float64 `json:"step"`
	Max     *float64 `json:"max"`
}

type matchmakeResponse struct {
	Strategy  pairing.Strategy   `json:"strategy"`
	TeamSize  int                `json:"team_size"`
	Matches   []matchJSON        `json:"matches"`
	Unmatched []unmatchedJSON    `json:"unmatched"`
	Stats     matchmakeStatsJSON `json:"stats"`
}

type matchJSON struct {
	ID                string           `json:"id"`
	Teams             [2]matchTeamJSON `json:"teams"`
	Pairs             []pairJSON       `json:"pairs"`
	Interval          float64          `json:"interval"`
	SkillDifference   float64          `json:"skill_difference"`
	AverageDifference float64          `json:"average_difference"`
}

type matchTeamJSON struct {
	Players     []string `json:"players"`
	RatingTotal float64  `json:"rating_total"`
}

type pairJSON struct {
	Players    [2]string `json:"players"`
	Difference float64   `json:"difference"`
	Interval   float64   `json:"interval"`
}

type unmatchedJSON struct {
	ID     string  `json:"id"`
	Rating float64 `json:"rating"`
}

type distributionJSON struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

type matchmakeStatsJSON struct {
	Players           int              `json:"players"`
	Matches           int              `json:"matches"`
	Unmatched         int              `json:"unmatched"`
	ElapsedMS         float64          `json:"elapsed_ms"`
	SkillDifference   distributionJSON `json:"skill_difference"`
	AverageDifference distributionJSON `json:"average_difference"`
	PairDifference    distributionJSON `json:"pair_difference"`
}

// handleMatchmake answers POST /v1/matchmake: a queue in, matches out.
func handleMatchmake(logger *slog.Logger, limits Limits, svc *ratings.Service, metrics *domainMetrics, gate *workGate) http.Handler {
	return handleCompute(logger, svc, gate, func(req *matchmakeRequest) (computation, error) {
		queue, opts, stored, err := req.resolve(limits)
		if err != nil {
			return computation{}, err
		}
		var (
			result  pairing.Result
			summary pairing.Summary
			elapsed time.Duration
		)
		return computation{
			stored: stored,
			run: func() (err error) {
				result, err = pairing.Make(queue, opts)
				summary = pairing.Summarize(result.Matches)
				return apperr.Rename(err, matchmakeField)
			},
			observe: func(d time.Duration) {
				elapsed = d
				metrics.observeMatchmaking(opts.Strategy, len(queue), result, elapsed)
			},
			respond: func(w http.ResponseWriter, r *http.Request) {
				resp := req.response(queue, opts, result, summary, elapsed)
				buf := getBuffer()
				defer putBuffer(buf)
				buf.Write(resp.appendJSON(buf.AvailableBuffer()))
				if err := writeJSON(w, http.StatusOK, buf.Bytes()); err != nil {
					// Almost always a client that hung up: theirs to see, not ours to page on.
					logger.DebugContext(r.Context(), "write matchmake response", "err", err)
				}
			},
		}, nil
	})
}

// resolve validates the request and turns it into the matchmaker's inputs: one rating per
// queue position and the options, and the stored ratings still to be read for players who
// gave neither a rating nor stats. Every fault is reported at once.
func (req *matchmakeRequest) resolve(limits Limits) ([]float64, pairing.Options, *storedWeights, error) {
	var fields apperr.Fields
	opts := pairing.DefaultOptions()
	setIf(&opts.TeamSize, req.TeamSize)
	if req.Strategy != nil {
		opts.Strategy = pairing.Strategy(*req.Strategy)
	}
	if iv := req.Interval; iv != nil {
		setIf(&opts.Interval.Initial, iv.Initial)
		setIf(&opts.Interval.Step, iv.Step)
		setIf(&opts.Interval.Max, iv.Max)
	}
	fields.Include(opts.Validate())

	coef := skill.DefaultCoefficients()
	if c := req.Coefficients; c != nil {
		setIf(&coef.Accuracy, c.Accuracy)
		setIf(&coef.ReactionTime, c.ReactionTime)
		setIf(&coef.Awareness, c.Awareness)
		setIf(&coef.Movement, c.Movement)
	}
	fields.Include(apperr.Rename(coef.Validate(), under("coefficients")))

	fallback := float64(ratings.DefaultMatchRating)
	if req.DefaultRating != nil {
		fallback = *req.DefaultRating
		if !(math.Abs(fallback) <= pairing.MaxMagnitude) {
			fields.Add("default_rating", "must be a number between -%g and %g", pairing.MaxMagnitude, pairing.MaxMagnitude)
		}
	}

	switch {
	case req.Players == nil:
		fields.Add("players", "is required")
	case len(req.Players) > limits.MaxMatchmakePlayers:
		fields.Add("players", "must hold at most %d players", limits.MaxMatchmakePlayers)
	}
	stored := newStoredWeights(req.Context, ratings.MatchRatingScale, &fields)
	if fields.Len() > 0 {
		return nil, opts, nil, fields.Err()
	}

	queue := make([]float64, len(req.Players))
	ids := make([]string, len(req.Players))
	for i := range req.Players {
		ids[i] = req.Players[i].ID
	}
	checkIDs(&fields, ids, func(i int) string { return playerField(i, "id") })
	for i := range req.Players {
		p := &req.Players[i]
		switch {
		case p.Rating.Set && p.Stats != nil:
			fields.Add(playerField(i, ""), "must give rating or stats, not both")
		case p.Rating.Set:
			queue[i] = p.Rating.Value
		case p.Stats != nil:
			s, ok := p.Stats.resolve(&fields, playerField(i, "stats"))
			if ok {
				queue[i] = skill.Rating(s, coef)
			}
		default:
			queue[i] = fallback
			stored.note(ratings.Participant{ID: p.ID}, &queue[i])
		}
	}
	return queue, opts, stored, fields.Err()
}

// resolve checks that all four stats are present and in range.
func (sj *statsJSON) resolve(fields *apperr.Fields, path string) (skill.Stats, bool) {
	before := fields.Len()
	var s skill.Stats
	for _, v := range [...]struct {
		name string
		src  *float64
		dst  *float64
	}{
		{"accuracy", sj.Accuracy, &s.Accuracy},
		{"reaction_time", sj.ReactionTime, &s.ReactionTime},
		{"awareness", sj.Awareness, &s.Awareness},
		{"movement", sj.Movement, &s.Movement},
	} {
		if v.src == nil {
			fields.Add(path+"."+v.name, "is required")
			continue
		}
		*v.dst = *v.src
	}
	if fields.Len() == before {
		fields.Include(apperr.Rename(s.Validate(), under(path)))
	}
	return s, fields.Len() == before
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// matchmakeField names a pairing fault by its JSON path: the package's ratings[i] is
// players[i].rating here; the options have the same names in both.
func matchmakeField(f string) string {
	if rest, ok := strings.CutPrefix(f, "ratings["); ok {
		return "players[" + rest + ".rating"
	}
	return f
}

// under renames a value's own fields (a Validate method's "accuracy") to their path inside
// the request ("players[3].stats.accuracy").
func under(path string) func(string) string {
	return func(f string) string { return path + "." + f }
}

func playerField(i int, name string) string {
	f := "players[" + strconv.Itoa(i) + "]"
	if name != "" {
		f += "." + name
	}
	return f
}

func (req *matchmakeRequest) response(ratings []float64, opts pairing.Options,
	result pairing.Result, summary pairing.Summary, elapsed time.Duration) matchmakeResponse {
	// One backing array for every team's ids: a 100,000-player queue makes 20,000 teams.
	teamIDs := make([]string, 0, len(result.Matches)*2*opts.TeamSize)
	ids := func(players []int) []string {
		start := len(teamIDs)
		for _, p := range players {
			teamIDs = append(teamIDs, req.Players[p].ID)
		}
		return teamIDs[start:len(teamIDs):len(teamIDs)]
	}
	prefix := matchIDPrefix()
	matches := make([]matchJSON, len(result.Matches))
	pairs := make([]pairJSON, 0, len(result.Matches)*opts.TeamSize)
	for i, m := range result.Matches {
		start := len(pairs)
		for _, p := range m.Pairs {
			pairs = append(pairs, pairJSON{
				Players:    [2]string{req.Players[p.Players[0]].ID, req.Players[p.Players[1]].ID},
				Difference: p.Difference,
				Interval:   p.Interval,
			})
		}
		matches[i] = matchJSON{
			ID: prefix + strconv.Itoa(i),
			Teams: [2]matchTeamJSON{
				{Players: ids(m.Teams[0].Players), RatingTotal: m.Teams[0].RatingTotal},
				{Players: ids(m.Teams[1].Players), RatingTotal: m.Teams[1].RatingTotal},
			},
			Pairs:             pairs[start:len(pairs):len(pairs)],
			Interval:          m.Interval,
			SkillDifference:   m.SkillDifference,
			AverageDifference: m.AverageDifference,
		}
	}
	unmatched := make([]unmatchedJSON, len(result.Unmatched))
	for i, p := range result.Unmatched {
		unmatched[i] = unmatchedJSON{ID: req.Players[p].ID, Rating: ratings[p]}
	}
	return matchmakeResponse{
		Strategy:  opts.Strategy,
		TeamSize:  opts.TeamSize,
		Matches:   matches,
		Unmatched: unmatched,
		Stats: matchmakeStatsJSON{
			Players:           len(ratings),
			Matches:           len(result.Matches),
			Unmatched:         len(result.Unmatched),
			ElapsedMS:         float64(elapsed.Nanoseconds()) / 1e6,
			SkillDifference:   distribution(summary.SkillDifference),
			AverageDifference: distribution(summary.AverageDifference),
			PairDifference:    distribution(summary.PairDifference),
		},
	}
}

func distribution(d pairing.Distribution) distributionJSON {
	return distributionJSON{Mean: d.Mean, Median: d.Median, Max: d.Max}
}

// matchIDPrefix makes match ids unique across requests and replicas without coordination:
// 64 random bits per request, then the match's index.
func matchIDPrefix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "m-" + hex.EncodeToString(b[:]) + "-"
}

package sim

import (
	"math"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Played is a finished match as a Rater learns from it.
type Played struct {
	Seq       int // 0, 1, 2, ... in the order the matches were made
	Teams     [2][]int
	Rounds    [2]int // rounds won by each team
	DurationS float64
}

// Rater gives the queue its ratings and learns from results.
type Rater interface {
	// Rating is the rating the queue sees for a player, on the thesis's 0..2000 scale; a
	// ticket takes its players' ratings when it is made.
	Rating(player int) float64
	// Record learns from a finished match. It returns the rater's prediction, made before
	// learning, of the probability that team 0 wins, or NaN if the rater does not predict.
	Record(m Played) (float64, error)
}

// Performance is the thesis's rating: eq. 6.5 on each player's (fixed, exactly measured)
// stats with the given coefficients. It learns nothing, as in the thesis.
type Performance struct {
	ratings []float64
}

// NewPerformance rates the population with eq. 6.5.
func NewPerformance(pop []Player, c skill.Coefficients) *Performance {
	r := make([]float64, len(pop))
	for i, p := range pop {
		r[i] = skill.Rating(p.Stats, c)
	}
	return &Performance{ratings: r}
}

// Rating implements Rater.
func (p *Performance) Rating(player int) float64 { return p.ratings[player] }

// Record implements Rater: the performance rating makes no prediction.
func (p *Performance) Record(Played) (float64, error) { return math.NaN(), nil }

// Learned is the service's rating model (internal/ratings) learning from every result as
// POST /v1/results would: each match becomes a ratings.Result of the two teams, the winner
// the team with more rounds (a draw when they tie), every player present throughout. The
// side-bias table stays empty: the outcome model has no sides.
type Learned struct {
	model   ratings.Model
	ids     []string
	current map[ratings.Participant]ratings.Rating
	buf     [2][]ratings.Player
}

// NewLearned starts every player at the model's default (unrated) rating.
func NewLearned(players int, model ratings.Model) *Learned {
	ids := make([]string, players)
	for i := range ids {
		ids[i] = "p" + strconv.Itoa(i)
	}
	return &Learned{model: model, ids: ids, current: make(map[ratings.Participant]ratings.Rating, players)}
}

// storedRatingScale puts a stored rating's 0..100 weight on the thesis's 0..2000 scale, as
// POST /v1/matchmake does for players without an inline rating.
const storedRatingScale = 20

// Rating implements Rater: the player's weight x 20.
func (l *Learned) Rating(player int) float64 {
	return storedRatingScale * l.current[ratings.Participant{ID: l.ids[player]}].Weight()
}

// Record implements Rater.
func (l *Learned) Record(m Played) (float64, error) {
	res := ratings.Result{MatchID: "m" + strconv.Itoa(m.Seq), GameType: "sim", Map: "arena", DurationS: m.DurationS}
	for side, name := range [2]string{"red", "blue"} {
		ps := l.buf[side][:0]
		for _, p := range m.Teams[side] {
			ps = append(ps, ratings.Player{ID: l.ids[p], LeftS: m.DurationS})
		}
		l.buf[side] = ps
		res.Teams = append(res.Teams, ratings.Team{Side: name, Players: ps})
	}
	switch {
	case m.Rounds[0] > m.Rounds[1]:
		res.Winner = new(0)
	case m.Rounds[1] > m.Rounds[0]:
		res.Winner = new(1)
	}
	out, err := l.model.Apply(l.current, ratings.BiasTable{}, res)
	if err != nil {
		return math.NaN(), err
	}
	for _, u := range out.Updates {
		l.current[u.Participant] = u.After
	}
	return out.WinProbability[0], nil
}

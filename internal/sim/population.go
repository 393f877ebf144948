package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
)

// Distribution is how one stat is drawn for the population; every draw lies in [0,1].
type Distribution struct {
	// Kind is "uniform" (the thesis: Min..Max, default 0..1) or "normal" (Mean, SD; a draw
	// outside [0,1] is drawn again, so the distribution is truncated, not piled up at the ends).
	Kind string  `json:"kind"`
	Min  float64 `json:"min,omitzero"`
	Max  float64 `json:"max,omitzero"`
	Mean float64 `json:"mean,omitzero"`
	SD   float64 `json:"sd,omitzero"`
}

// Uniform01 is the thesis's distribution of every stat.
var Uniform01 = Distribution{Kind: "uniform", Min: 0, Max: 1}

func (d Distribution) validate(name string) error {
	switch d.Kind {
	case "uniform":
		if !(0 <= d.Min && d.Min <= d.Max && d.Max <= 1) {
			return fmt.Errorf("%s: uniform needs 0 <= min <= max <= 1", name)
		}
	case "normal":
		if !(0 <= d.Mean && d.Mean <= 1 && d.SD > 0 && d.SD <= 1) {
			return fmt.Errorf("%s: normal needs mean in [0,1] and sd in (0,1]", name)
		}
	default:
		return fmt.Errorf("%s: kind must be \"uniform\" or \"normal\", got %q", name, d.Kind)
	}
	return nil
}

func (d Distribution) draw(rng *rand.Rand) float64 {
	if d.Kind == "normal" {
		for {
			// With mean in [0,1] and sd <= 1 at least 34% of draws land in [0,1].
			if x := d.Mean + d.SD*rng.NormFloat64(); x >= 0 && x <= 1 {
				return x
			}
		}
	}
	return d.Min + (d.Max-d.Min)*rng.Float64()
}

// PopulationConfig describes the players of a run.
type PopulationConfig struct {
	Players      int          `json:"players"`
	Accuracy     Distribution `json:"accuracy"`
	ReactionTime Distribution `json:"reaction_time"`
	Awareness    Distribution `json:"awareness"`
	Movement     Distribution `json:"movement"`
}

func (c PopulationConfig) validate() error {
	if c.Players < 2 {
		return fmt.Errorf("population.players must be at least 2, got %d", c.Players)
	}
	for _, d := range []struct {
		name string
		d    Distribution
	}{{"population.accuracy", c.Accuracy}, {"population.reaction_time", c.ReactionTime},
		{"population.awareness", c.Awareness}, {"population.movement", c.Movement}} {
		if err := d.d.validate(d.name); err != nil {
			return err
		}
	}
	return nil
}

// Player is one member of the population.
type Player struct {
	Stats skill.Stats
	Skill float64 // TrueSkill of Stats: hidden from the queue
}

// NewPopulation draws c.Players players, stats in the order accuracy, reaction time,
// awareness, movement for each player in turn.
func NewPopulation(c PopulationConfig, weights skill.Coefficients, rng *rand.Rand) []Player {
	ps := make([]Player, c.Players)
	for i := range ps {
		s := skill.Stats{
			Accuracy:     c.Accuracy.draw(rng),
			ReactionTime: c.ReactionTime.draw(rng),
			Awareness:    c.Awareness.draw(rng),
			Movement:     c.Movement.draw(rng),
		}
		ps[i] = Player{Stats: s, Skill: TrueSkill(s, weights)}
	}
	return ps
}

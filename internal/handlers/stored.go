package handlers

import (
	"context"
	"fmt"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// storedWeights fills in the values a request leaves out from the ratings service. Whoever
// gives no value gets a default at once and is noted; load then asks the service for the noted
// participants' weights (0..100, times scale) in the request's context in one batch, and for
// the mean bot weight when a bot rule left it out. Without a
// context nothing is read and the defaults stay. The team endpoints and /v1/matchmake (with
// scale ratings.MatchRatingScale) share it.
type storedWeights struct {
	ctx     *contextJSON
	scale   float64
	asked   []ratings.Participant
	dst     []*float64 // where each asked participant's value goes
	meanDst *float64   // where the mean bot weight goes, when it is to be read
}

func newStoredWeights(c *contextJSON, scale float64, fields *apperr.Fields) *storedWeights {
	if c != nil {
		// Checked here, before any store call, even when no value is missing.
		if _, err := ratings.NewContext(c.GameType, c.Mutators); err != nil {
			fields.Include(err)
		}
	}
	return &storedWeights{ctx: c, scale: scale}
}

// human sets *dst to w, or to 50 with id noted for load.
func (tw *storedWeights) human(id string, w *float64, dst *float64) {
	if w != nil {
		*dst = *w
		return
	}
	*dst = ratings.UnknownWeight
	tw.note(ratings.Participant{ID: id}, dst)
}

// bot checks the name of teams[i].bots[j] and sets *dst to w, or to 50 with the bot noted
// for load.
func (tw *storedWeights) bot(fields *apperr.Fields, i, j int, name string, w *float64, dst *float64) {
	if err := ratings.ValidateID(name); err != nil {
		fields.Add(fmt.Sprintf("teams[%d].bots[%d].name", i, j), "%s", err)
	}
	if w != nil {
		*dst = *w
		return
	}
	*dst = ratings.UnknownWeight
	tw.note(ratings.Participant{ID: name, Bot: true}, dst)
}

// meanBot sets *dst to w, or to 50 with the context's mean bot weight to be read.
func (tw *storedWeights) meanBot(w *float64, dst *float64) {
	if w != nil {
		*dst = *w
		return
	}
	*dst = ratings.UnknownWeight
	if tw.ctx != nil {
		tw.meanDst = dst
	}
}

func (tw *storedWeights) note(p ratings.Participant, dst *float64) {
	if tw.ctx == nil {
		return
	}
	tw.asked = append(tw.asked, p)
	tw.dst = append(tw.dst, dst)
}

// load reads the noted weights through the ratings service, whose rule decides what an
// unrated player or bot weighs. Bots with the same name share one rating. A request whose
// key may not use the context's game type is refused first (403).
func (tw *storedWeights) load(ctx context.Context, svc *ratings.Service) error {
	if tw.ctx == nil {
		return nil
	}
	// A key restricted to some game types names no other, even with every weight given.
	if err := allowGameType(ctx, "context.game_type", tw.ctx.GameType); err != nil {
		return err
	}
	if len(tw.asked) == 0 && tw.meanDst == nil {
		return nil
	}
	c, err := svc.Context(ctx, tw.ctx.GameType, tw.ctx.Mutators)
	if err != nil {
		return err
	}
	if len(tw.asked) > 0 {
		weights, err := svc.Weights(ctx, c, tw.asked)
		if err != nil {
			return err
		}
		for k, w := range weights {
			*tw.dst[k] = w.Value * tw.scale
		}
	}
	if tw.meanDst != nil {
		mean, _, err := svc.BotMean(ctx, c)
		if err != nil {
			return err
		}
		*tw.meanDst = mean * tw.scale
	}
	return nil
}

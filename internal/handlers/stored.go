package handlers

import (
	"context"
	"fmt"

	"matchmaker/internal/apperr"
	"matchmaker/internal/ratings"
)

// storedWeights fills in the values a request leaves out from the rating store. Whoever gives
// no value gets a default at once and is noted; load then reads the noted participants' stored
// weights (Rating.Weight, 0..100, times scale) in the request's context with one batched
// Ratings call, and the mean bot weight with BotMean when a bot rule left it out. Without a
// context nothing is read and the defaults stay. The team endpoints and /v1/matchmake (with
// scale storedRatingScale) share it.
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
	*dst = unknownWeight
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
	*dst = unknownWeight
	tw.note(ratings.Participant{ID: name, Bot: true}, dst)
}

// meanBot sets *dst to w, or to 50 with the context's mean bot weight to be read.
func (tw *storedWeights) meanBot(w *float64, dst *float64) {
	if w != nil {
		*dst = *w
		return
	}
	*dst = unknownWeight
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

// load reads the noted weights from the store. Bots with the same name share one rating.
func (tw *storedWeights) load(ctx context.Context, store ratings.Store) error {
	if tw.ctx == nil || len(tw.asked) == 0 && tw.meanDst == nil {
		return nil
	}
	c, err := storedContext(ctx, store, tw.ctx)
	if err != nil {
		return err
	}
	if len(tw.asked) > 0 {
		stored, err := store.Ratings(ctx, c, tw.asked)
		if err != nil {
			return err
		}
		for k, p := range tw.asked {
			if rating, ok := stored[p]; ok {
				*tw.dst[k] = rating.Weight() * tw.scale
			}
		}
	}
	if tw.meanDst != nil {
		mean, _, err := store.BotMean(ctx, c)
		if err != nil {
			return err
		}
		*tw.meanDst = mean * tw.scale
	}
	return nil
}

// storedContext resolves a request's context through the stored mutator policy.
func storedContext(ctx context.Context, store ratings.Store, cj *contextJSON) (ratings.Context, error) {
	policy, err := store.Policy(ctx)
	if err != nil {
		return ratings.Context{}, err
	}
	c, _, err := policy.Context(cj.GameType, cj.Mutators)
	return c, err
}

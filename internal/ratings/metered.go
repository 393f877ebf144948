package ratings

import (
	"context"
	"time"
)

// StoreObserver is told of every call into a store: which operation, its error (nil when it
// succeeded) and how long it took.
type StoreObserver func(operation string, err error, elapsed time.Duration)

// Metered wraps store so that observe is told of every call, whichever transport made it.
// Wrap the store once, under the Service.
func Metered(store Store, observe StoreObserver) Store {
	return MeteredWithSpans(store, observe, nil)
}

// StoreSpan starts the trace span of one store call, op, under ctx's (internal/tracing's
// StoreSpans); the function it returns ends it with the call's error.
type StoreSpan func(ctx context.Context, op string) (context.Context, func(error))

// MeteredWithSpans is Metered that also starts span (nil: none) for every call it observes.
func MeteredWithSpans(store Store, observe StoreObserver, span StoreSpan) Store {
	if span == nil {
		span = func(ctx context.Context, _ string) (context.Context, func(error)) { return ctx, func(error) {} }
	}
	return &meteredStore{Store: store, observe: observe, span: span}
}

type meteredStore struct {
	Store
	observe StoreObserver
	span    StoreSpan
}

// call starts timing op (and its span); the returned function, deferred with the address of
// the named error result, reports the call once its outcome is known.
func (m *meteredStore) call(ctx context.Context, op string) (context.Context, func(*error)) {
	start := time.Now()
	ctx, end := m.span(ctx, op)
	return ctx, func(err *error) {
		m.observe(op, *err, time.Since(start))
		end(*err)
	}
}

func (m *meteredStore) RecordResult(ctx context.Context, req RecordRequest, apply ApplyFunc) (rec Recorded, err error) {
	ctx, done := m.call(ctx, "record_result")
	defer done(&err)
	return m.Store.RecordResult(ctx, req, apply)
}

func (m *meteredStore) Ratings(ctx context.Context, c Context, ps []Participant) (out map[Participant]Rating, err error) {
	ctx, done := m.call(ctx, "ratings")
	defer done(&err)
	return m.Store.Ratings(ctx, c, ps)
}

func (m *meteredStore) PlayerRatings(ctx context.Context, id string) (out []ContextRating, err error) {
	ctx, done := m.call(ctx, "player_ratings")
	defer done(&err)
	return m.Store.PlayerRatings(ctx, id)
}

func (m *meteredStore) Leaderboard(ctx context.Context, c Context, limit int, by Ranking) (out []RatedParticipant, err error) {
	ctx, done := m.call(ctx, "leaderboard")
	defer done(&err)
	return m.Store.Leaderboard(ctx, c, limit, by)
}

func (m *meteredStore) Bias(ctx context.Context, c Context, k BiasKey) (t BiasTable, err error) {
	ctx, done := m.call(ctx, "bias")
	defer done(&err)
	return m.Store.Bias(ctx, c, k)
}

func (m *meteredStore) BotMean(ctx context.Context, c Context) (mean float64, count int, err error) {
	ctx, done := m.call(ctx, "bot_mean")
	defer done(&err)
	return m.Store.BotMean(ctx, c)
}

func (m *meteredStore) Policy(ctx context.Context) (p *MutatorPolicy, err error) {
	ctx, done := m.call(ctx, "policy")
	defer done(&err)
	return m.Store.Policy(ctx)
}

func (m *meteredStore) SetMutator(ctx context.Context, name string, affects bool) (info MutatorInfo, err error) {
	ctx, done := m.call(ctx, "set_mutator")
	defer done(&err)
	return m.Store.SetMutator(ctx, name, affects)
}

func (m *meteredStore) Rebuild(ctx context.Context, gameType string, replay ReplayFunc, progress func(Progress)) (r RebuildReport, err error) {
	ctx, done := m.call(ctx, "rebuild")
	defer done(&err)
	return m.Store.Rebuild(ctx, gameType, replay, progress)
}

func (m *meteredStore) StoredResult(ctx context.Context, matchID string) (r Result, err error) {
	ctx, done := m.call(ctx, "stored_result")
	defer done(&err)
	return m.Store.StoredResult(ctx, matchID)
}

func (m *meteredStore) DeleteResult(ctx context.Context, matchID, gameType string, replay ReplayFunc, progress func(Progress)) (r RebuildReport, err error) {
	ctx, done := m.call(ctx, "delete_result")
	defer done(&err)
	return m.Store.DeleteResult(ctx, matchID, gameType, replay, progress)
}

func (m *meteredStore) History(ctx context.Context, gameType string, fn func(Result) error) (err error) {
	ctx, done := m.call(ctx, "history")
	defer done(&err)
	return m.Store.History(ctx, gameType, fn)
}

func (m *meteredStore) Tunings(ctx context.Context, gameType string) (t map[string]Tuning, err error) {
	ctx, done := m.call(ctx, "tunings")
	defer done(&err)
	return m.Store.Tunings(ctx, gameType)
}

func (m *meteredStore) SaveTunings(ctx context.Context, gameType string, ts []Tuning) (err error) {
	ctx, done := m.call(ctx, "save_tunings")
	defer done(&err)
	return m.Store.SaveTunings(ctx, gameType, ts)
}

// Ready passes the store's readiness check on (see Service.Ready).
func (m *meteredStore) Ready(ctx context.Context) error {
	if r, ok := m.Store.(interface{ Ready(context.Context) error }); ok {
		return r.Ready(ctx)
	}
	return m.Ping(ctx)
}

func (m *meteredStore) Ping(ctx context.Context) (err error) {
	ctx, done := m.call(ctx, "ping")
	defer done(&err)
	return m.Store.Ping(ctx)
}

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
	return &meteredStore{Store: store, observe: observe}
}

type meteredStore struct {
	Store
	observe StoreObserver
}

// time starts timing op; the returned function, deferred with the address of the named
// error result, reports the call once its outcome is known.
func (m *meteredStore) time(op string) func(*error) {
	start := time.Now()
	return func(err *error) { m.observe(op, *err, time.Since(start)) }
}

func (m *meteredStore) RecordResult(ctx context.Context, req RecordRequest, apply ApplyFunc) (rec Recorded, err error) {
	defer m.time("record_result")(&err)
	return m.Store.RecordResult(ctx, req, apply)
}

func (m *meteredStore) Ratings(ctx context.Context, c Context, ps []Participant) (out map[Participant]Rating, err error) {
	defer m.time("ratings")(&err)
	return m.Store.Ratings(ctx, c, ps)
}

func (m *meteredStore) PlayerRatings(ctx context.Context, id string) (out []ContextRating, err error) {
	defer m.time("player_ratings")(&err)
	return m.Store.PlayerRatings(ctx, id)
}

func (m *meteredStore) Leaderboard(ctx context.Context, c Context, limit int, by Ranking) (out []RatedParticipant, err error) {
	defer m.time("leaderboard")(&err)
	return m.Store.Leaderboard(ctx, c, limit, by)
}

func (m *meteredStore) Bias(ctx context.Context, c Context, k BiasKey) (t BiasTable, err error) {
	defer m.time("bias")(&err)
	return m.Store.Bias(ctx, c, k)
}

func (m *meteredStore) BotMean(ctx context.Context, c Context) (mean float64, count int, err error) {
	defer m.time("bot_mean")(&err)
	return m.Store.BotMean(ctx, c)
}

func (m *meteredStore) Policy(ctx context.Context) (p *MutatorPolicy, err error) {
	defer m.time("policy")(&err)
	return m.Store.Policy(ctx)
}

func (m *meteredStore) SetMutator(ctx context.Context, name string, affects bool) (info MutatorInfo, err error) {
	defer m.time("set_mutator")(&err)
	return m.Store.SetMutator(ctx, name, affects)
}

func (m *meteredStore) Rebuild(ctx context.Context, gameType string, replay ReplayFunc, progress func(Progress)) (r RebuildReport, err error) {
	defer m.time("rebuild")(&err)
	return m.Store.Rebuild(ctx, gameType, replay, progress)
}

func (m *meteredStore) StoredResult(ctx context.Context, matchID string) (r Result, err error) {
	defer m.time("stored_result")(&err)
	return m.Store.StoredResult(ctx, matchID)
}

func (m *meteredStore) DeleteResult(ctx context.Context, matchID, gameType string, replay ReplayFunc, progress func(Progress)) (r RebuildReport, err error) {
	defer m.time("delete_result")(&err)
	return m.Store.DeleteResult(ctx, matchID, gameType, replay, progress)
}

func (m *meteredStore) History(ctx context.Context, gameType string, fn func(Result) error) (err error) {
	defer m.time("history")(&err)
	return m.Store.History(ctx, gameType, fn)
}

func (m *meteredStore) Tunings(ctx context.Context, gameType string) (t map[string]Tuning, err error) {
	defer m.time("tunings")(&err)
	return m.Store.Tunings(ctx, gameType)
}

func (m *meteredStore) SaveTunings(ctx context.Context, gameType string, ts []Tuning) (err error) {
	defer m.time("save_tunings")(&err)
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
	defer m.time("ping")(&err)
	return m.Store.Ping(ctx)
}

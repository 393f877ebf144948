package ratings

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Self-tuning. A context that learns with ns2-kalman or ns2-mix tunes itself on its own history as it
// grows: once it holds MinTuneResults results, then each time it has doubled since its last
// attempt. An attempt starts from the parameters the context uses now (its last accepted
// tuning, else the model's defaults) and is kept only if it predicts the held-out tail of the
// history better than they do (Tune); the attempt is stored either way (Tuning.Auto), so the
// next one waits for the next doubling. A kept one takes effect as `api tune`'s does: results
// are learnt with it at once on this replica, within TuningRefresh on the others, and with
// AutoTune.Rebuild the game type is rebuilt with it.

// AutoTune says how a service tunes itself.
type AutoTune struct {
	// Rebuild replays the game type with the new parameters after a kept tuning, so that the
	// ratings stored are those they would have learnt.
	Rebuild bool
	// Share bounds the share of one core self-tuning keeps busy (see pacer): from 0 to 1,
	// where 0 and 1 do not pace it.
	Share float64
}

// AutoTuned is one attempt of AutoTuneTick.
type AutoTuned struct {
	Tuning  Tuning
	Rebuilt bool
	// Paced is how long the attempt waited to keep under AutoTune.Share.
	Paced time.Duration
}

// pacer keeps self-tuning under a share of one core beside the service it runs in: after each
// stretch of work (a replay of the history, a rebuild) it rests worked*(1-share)/share, so
// that the work is at most share of the time since it last rested. A tuning replays the whole
// history up to maxTuneEvaluations times, longer at each doubling, and it is due on a replica
// that is serving at its limit (a launch); unpaced, it took 31% of a follower's CPU at
// 4,000 tickets/s (docs/performance.md). Worked is wall time, which is longer than the
// CPU time when the replica is busy: the pacing errs on the side of the service. A rest ends
// with ctx.
type pacer struct {
	share float64
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	mark  time.Time // the end of the last rest
	paced time.Duration
}

// newPacer starts a pacer for one attempt at the service's pacing clock.
func (s *Service) newPacer(share float64) *pacer {
	p := &pacer{share: share, now: time.Now, sleep: sleepCtx}
	if s.paceNow != nil {
		p.now, p.sleep = s.paceNow, s.paceSleep
	}
	p.mark = p.now()
	return p
}

// pace rests after a stretch of work, and says whether ctx ended.
func (p *pacer) pace(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.share <= 0 || p.share >= 1 {
		return nil
	}
	rest := time.Duration(float64(p.now().Sub(p.mark)) * (1 - p.share) / p.share)
	if rest > 0 {
		if err := p.sleep(ctx, rest); err != nil {
			return err
		}
		p.paced += rest
	}
	p.mark = p.now()
	return nil
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// nextAutoTune is the number of results at which a context tuned last at last results tunes
// again: MinTuneResults, then each doubling.
func nextAutoTune(last int) int {
	if last < MinTuneResults {
		return MinTuneResults
	}
	return 2 * last
}

// AutoTuneTick tunes every context that is due (see above), of every game type, and reports
// each attempt. It holds one context's history at a time.
func (s *Service) AutoTuneTick(ctx context.Context, opts AutoTune) ([]AutoTuned, error) {
	ats := s.store
	counts, err := ats.ResultCounts(ctx, "")
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(counts))
	for key := range counts {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	tunings := map[string]map[string]Tuning{} // by game type
	var out []AutoTuned
	var errs []error
	for _, key := range keys {
		c, err := ParseContextKey(key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if tunings[c.GameType] == nil {
			if tunings[c.GameType], err = s.store.Tunings(ctx, c.GameType); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		last := tunings[c.GameType][key]
		if counts[key] < nextAutoTune(last.Report.Results) {
			continue
		}
		at, err := s.claimedAutoTune(ctx, ats, c, counts[key], opts)
		if err != nil {
			errs = append(errs, err)
		}
		if at != nil {
			out = append(out, *at)
		}
	}
	return out, errors.Join(errs...)
}

// claimedAutoTune tunes a context that was due at results results if this replica gets its
// claim and it is still due. Replicas nudged by the same flow of results each used to tune
// the same history at once and each rebuild the game type with its fit (the soak on 2
// replicas: both tuned at about 2,000 and 8,000 results and both rebuilt, a quarter of a
// replica's CPU; docs/performance.md, "The throughput table"); a context another replica
// is tuning is left to it (nil), and its stored attempt makes it not due.
func (s *Service) claimedAutoTune(ctx context.Context, ats AutoTuneStore, c Context, results int, opts AutoTune) (*AutoTuned, error) {
	release, claimed, err := ats.ClaimTune(ctx, c.Key())
	if err != nil || !claimed {
		return nil, err
	}
	defer release()
	// The claim's last holder may have stored its attempt since the counts were read.
	tunings, err := s.store.Tunings(ctx, c.GameType)
	if err != nil {
		return nil, err
	}
	last := tunings[c.Key()]
	if results < nextAutoTune(last.Report.Results) {
		return nil, nil
	}
	return s.autoTune(ctx, ats, c, last, opts)
}

// autoTune fits one context from what it uses now (last, if accepted), stores the attempt,
// and rebuilds the game type with a kept fit when opts say so. A context whose model has no
// tuned parameters (not a Tunable) is skipped (nil).
func (s *Service) autoTune(ctx context.Context, ats AutoTuneStore, c Context, last Tuning, opts AutoTune) (*AutoTuned, error) {
	km, ok := s.models.For(c).(Tunable)
	if !ok {
		return nil, nil
	}
	base := km
	if last.Report.Accepted && last.Model == km.Name() {
		base = km.withTuned(last.Params)
	}
	pc := s.newPacer(opts.Share)
	history, err := s.contextHistory(ctx, c)
	if err != nil {
		return nil, err
	}
	rep, err := tune(base, history, 1, func() error { return pc.pace(ctx) })
	if err != nil {
		return nil, err
	}
	t := Tuning{Context: c, Model: km.Name(), Params: rep.Params, Report: rep, At: s.clock(), Auto: true}
	if !rep.Accepted && last.Report.Accepted { // the last fit stays in use; this attempt is recorded with it
		t.Params, t.Report.Accepted = last.Params, true
	}
	if err := ats.SaveTuning(ctx, t); err != nil {
		return nil, err
	}
	s.tunings.forget(c.GameType)
	out := &AutoTuned{Tuning: t}
	if rep.Accepted && opts.Rebuild {
		if _, err := s.Rebuild(ctx, c.GameType, nil); err != nil {
			return out, err
		}
		out.Rebuilt = true
	}
	// The rest after the rebuild (or the save) keeps the next context's attempt, or the next
	// nudge's, from following at once.
	err = pc.pace(ctx)
	out.Paced = pc.paced
	return out, err
}

// contextHistory is the stored history of one context, in the order accepted, as the mutator
// policy splits it now.
func (s *Service) contextHistory(ctx context.Context, c Context) ([]Result, error) {
	policy, err := s.store.Policy(ctx)
	if err != nil {
		return nil, err
	}
	var out []Result
	err = s.store.History(ctx, c.GameType, func(r Result) error {
		rc, _, err := policy.Context(r.GameType, r.Mutators)
		if err == nil && rc.Equal(c) {
			out = append(out, r)
		}
		return err
	})
	return out, err
}

// tuneNudges wakes RunAutoTune before its interval when this replica has recorded
// MinTuneResults/2 results, then each time they double: a history that grows fast (a replay
// of a game's past, a launch) tunes itself when it crosses its thresholds, not up to an
// interval later; a check is a count of the results, so it is not made at every result.
type tuneNudges struct {
	n, next atomic.Int64
	once    sync.Once
	ch      chan struct{}
}

func (tn *tuneNudges) channel() chan struct{} {
	tn.once.Do(func() { tn.ch = make(chan struct{}, 1) })
	return tn.ch
}

// recorded counts a result recorded, and nudges at the thresholds.
func (tn *tuneNudges) recorded() {
	n := tn.n.Add(1)
	next := tn.next.Load()
	if next == 0 {
		tn.next.CompareAndSwap(0, MinTuneResults/2)
		next = MinTuneResults / 2
	}
	if n < next || !tn.next.CompareAndSwap(next, 2*next) {
		return
	}
	select {
	case tn.channel() <- struct{}{}:
	default: // a check is due already
	}
}

// RunAutoTune runs AutoTuneTick every interval, and when this replica's results cross a
// threshold (tuneNudges), until ctx ends; report, if not nil, is told of each attempt and
// error.
func (s *Service) RunAutoTune(ctx context.Context, every time.Duration, opts AutoTune, report func(AutoTuned, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.nudges.channel():
		}
		done, err := s.AutoTuneTick(ctx, opts)
		if report == nil || ctx.Err() != nil {
			continue
		}
		for _, at := range done {
			report(at, nil)
		}
		if err != nil {
			report(AutoTuned{}, err)
		}
	}
}

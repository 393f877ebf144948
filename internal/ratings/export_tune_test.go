package ratings

import (
	"context"
	"time"
)

// OnlineLoss is onlineLoss for the external tests.
var OnlineLoss = onlineLoss

// ScoreAll is tune's fan-out, SleepCtx self-tuning's rest on the real timer.
var (
	ScoreAll = scoreAll
	SleepCtx = sleepCtx
)

// TuneReplaysAtOnce is Tune with its count of replays at once.
func TuneReplaysAtOnce(m Kalman, history []Result, replaysAtOnce int) (TuneReport, error) {
	return tune(m, history, replaysAtOnce, nil)
}

// SetPaceClock makes self-tuning's pacing read the time from now and rest with sleep.
func (s *Service) SetPaceClock(now func() time.Time, sleep func(context.Context, time.Duration) error) {
	s.paceNow, s.paceSleep = now, sleep
}

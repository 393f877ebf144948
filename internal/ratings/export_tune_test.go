package ratings

// OnlineLoss is onlineLoss for the external tests.
var OnlineLoss = onlineLoss

// TuneReplaysAtOnce is Tune with its count of replays at once, and ScoreAll its fan-out.
var (
	TuneReplaysAtOnce = tune
	ScoreAll          = scoreAll
)

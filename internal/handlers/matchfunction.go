package handlers

import (
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A queue's match function as PUT and GET /v1/queues/{name} carry it (DESIGN, "Match
// functions"): what the leader calls each tick, and what the queue does with its answer.

// matchFunctionJSON is a queue's match function as PUT /v1/queues/{name} takes it; what it
// leaves out takes the defaults (timeout_ms 1000, mode replace, on_failure wait, max_pool
// 10,000).
type matchFunctionJSON struct {
	URL       string  `json:"url"`
	Secret    string  `json:"secret"`
	TimeoutMS *int    `json:"timeout_ms"`
	Mode      *string `json:"mode"`
	OnFailure *string `json:"on_failure"`
	MaxPool   *int    `json:"max_pool"`
}

// matchFunctionPublicJSON is a queue's match function as the API shows it: never its secret.
type matchFunctionPublicJSON struct {
	URL       string `json:"url"`
	TimeoutMS int64  `json:"timeout_ms"`
	Mode      string `json:"mode"`
	OnFailure string `json:"on_failure"`
	MaxPool   int    `json:"max_pool"`
}

// matchFunction is the queue's match function; nil without one.
func (j *matchFunctionJSON) matchFunction() *queue.MatchFunction {
	if j == nil {
		return nil
	}
	mf := &queue.MatchFunction{URL: j.URL, Secret: j.Secret, Timeout: queue.DefaultFunctionTimeout,
		Mode: queue.FunctionReplace, OnFailure: queue.FailureWait, MaxPool: queue.DefaultFunctionPool}
	if j.TimeoutMS != nil {
		mf.Timeout = durationOf(int64(*j.TimeoutMS), time.Millisecond)
	}
	if j.Mode != nil {
		mf.Mode = queue.FunctionMode(*j.Mode)
	}
	if j.OnFailure != nil {
		mf.OnFailure = queue.FunctionFailure(*j.OnFailure)
	}
	setIf(&mf.MaxPool, j.MaxPool)
	return mf
}

func newMatchFunctionPublicJSON(mf *queue.MatchFunction) *matchFunctionPublicJSON {
	if mf == nil {
		return nil
	}
	return &matchFunctionPublicJSON{URL: mf.URL, TimeoutMS: mf.Timeout.Milliseconds(), Mode: string(mf.Mode),
		OnFailure: string(mf.OnFailure), MaxPool: mf.MaxPool}
}

package queuedb

import (
	"encoding/json"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A queue's match function is a column of its definition (migration 00014): the matches it
// proposes are stored as the built-in pass's are, through CommitTick and Propose.

// matchFunctionJSON is a queue's match function as its column keeps it.
type matchFunctionJSON struct {
	URL       string `json:"url"`
	Secret    string `json:"secret"`
	TimeoutMS int64  `json:"timeout_ms"`
	Mode      string `json:"mode"`
	OnFailure string `json:"on_failure"`
	MaxPool   int    `json:"max_pool"`
}

// matchFunctionDoc is a queue's match_function column: NULL without one.
func matchFunctionDoc(q queue.Queue) *string {
	mf := q.MatchFunction
	if mf == nil {
		return nil
	}
	b, err := json.Marshal(matchFunctionJSON{URL: mf.URL, Secret: mf.Secret, TimeoutMS: mf.Timeout.Milliseconds(),
		Mode: string(mf.Mode), OnFailure: string(mf.OnFailure), MaxPool: mf.MaxPool})
	if err != nil {
		panic(err) // strings and numbers
	}
	return new(string(b))
}

func readMatchFunction(doc []byte) (*queue.MatchFunction, error) {
	var j matchFunctionJSON
	if err := json.Unmarshal(doc, &j); err != nil {
		return nil, err
	}
	return &queue.MatchFunction{URL: j.URL, Secret: j.Secret, Timeout: time.Duration(j.TimeoutMS) * time.Millisecond,
		Mode: queue.FunctionMode(j.Mode), OnFailure: queue.FunctionFailure(j.OnFailure), MaxPool: j.MaxPool}, nil
}

package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A match function's definition, field by field: each fault named by its field of PUT
// /v1/queues/{name}'s body.
func TestMatchFunctionFaults(t *testing.T) {
	t.Parallel()
	good := queue.MatchFunction{URL: "https://mmf.example.com/match", Secret: "0123456789abcdef", Timeout: time.Second,
		Mode: queue.FunctionReplace, OnFailure: queue.FailureWait, MaxPool: 10_000}
	cases := []struct {
		name   string
		change func(*queue.MatchFunction)
		fields []string
	}{
		{"valid", func(*queue.MatchFunction) {}, nil},
		{"shadow, rules", func(f *queue.MatchFunction) { f.Mode, f.OnFailure = queue.FunctionShadow, queue.FailureRules }, nil},
		{"not http", func(f *queue.MatchFunction) { f.URL = "ftp://mmf.example.com" }, []string{"match_function.url"}},
		{"relative", func(f *queue.MatchFunction) { f.URL = "/match" }, []string{"match_function.url"}},
		{"no secret", func(f *queue.MatchFunction) { f.Secret = "" }, []string{"match_function.secret"}},
		{"a short secret", func(f *queue.MatchFunction) { f.Secret = "short" }, []string{"match_function.secret"}},
		{"too quick", func(f *queue.MatchFunction) { f.Timeout = time.Millisecond }, []string{"match_function.timeout_ms"}},
		{"too slow", func(f *queue.MatchFunction) { f.Timeout = time.Minute }, []string{"match_function.timeout_ms"}},
		{"a mode", func(f *queue.MatchFunction) { f.Mode = "ab" }, []string{"match_function.mode"}},
		{"a failure", func(f *queue.MatchFunction) { f.OnFailure = "" }, []string{"match_function.on_failure"}},
		{"no pool", func(f *queue.MatchFunction) { f.MaxPool = 0 }, []string{"match_function.max_pool"}},
		{"a pool too large", func(f *queue.MatchFunction) { f.MaxPool = queue.MaxFunctionPool + 1 }, []string{"match_function.max_pool"}},
	}
	for _, tc := range cases {
		q := queue.DefaultQueue("q")
		q.GameType = "ctf"
		mf := good
		tc.change(&mf)
		q.MatchFunction = &mf
		var fields []string
		var e *apperr.Error
		if err := q.Validate(); errors.As(err, &e) {
			for _, f := range e.Fields {
				fields = append(fields, f.Field)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(fields, tc.fields) {
			t.Errorf("%s: faults %v, want %v", tc.name, fields, tc.fields)
		}
	}
}

// A rule may not take the match function's name: waiting_on would say one for the other.
func TestARuleMayNotBeNamedMatchFunction(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.GameType = "ctf"
	q.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}}
	q.Rules = []matchrules.Rule{{Name: queue.WaitMatchFunction, Kind: matchrules.RuleEqual, Attribute: "mode"}}
	var e *apperr.Error
	if err := q.Validate(); !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "rules[0].name" {
		t.Fatalf("%v, want one fault naming rules[0].name", err)
	}
	q.Rules[0].Name = "mode"
	if err := q.Validate(); err != nil {
		t.Fatalf("the rule renamed: %v", err)
	}
}

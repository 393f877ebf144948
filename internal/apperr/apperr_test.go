package apperr

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodeOfFindsTheCodeThroughWrapping(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Code
	}{
		{"direct", New(NotFound, "player %q", "a"), NotFound},
		{"wrapped with fmt", fmt.Errorf("store: %w", New(Conflict, "match id used")), Conflict},
		{"field error", Field("team_size", "must be 1..16"), Invalid},
		{"plain error is internal", errors.New("boom"), Internal},
		{"nil cause wrap keeps code", Wrap(Unavailable, errors.New("dial"), "database down"), Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(tt.err); got != tt.want {
				t.Fatalf("CodeOf(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestFieldsReportsEveryFaultUpToALimit(t *testing.T) {
	var f Fields
	if f.Err() != nil {
		t.Fatal("empty Fields must give a nil error")
	}
	for i := range maxFields + 10 {
		f.Add(fmt.Sprintf("players[%d].rating", i), "must be a finite number")
	}
	var e *Error
	if !errors.As(f.Err(), &e) {
		t.Fatalf("Err() = %T, want *Error", f.Err())
	}
	if e.Code != Invalid || len(e.Fields) != maxFields {
		t.Fatalf("got code %q with %d fields, want invalid with %d", e.Code, len(e.Fields), maxFields)
	}
	if e.Fields[3].Field != "players[3].rating" {
		t.Fatalf("fields out of order: %+v", e.Fields[3])
	}
}

func TestWrapKeepsTheCauseForLogsOnly(t *testing.T) {
	cause := errors.New("connection refused")
	err := Wrap(Unavailable, cause, "the database is unreachable")
	if !errors.Is(err, cause) {
		t.Fatal("Wrap must keep the cause in the chain")
	}
	if err.Message != "the database is unreachable" {
		t.Fatalf("message = %q", err.Message)
	}
}

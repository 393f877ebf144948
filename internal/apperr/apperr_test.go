package apperr

import (
	"errors"
	"fmt"
	"slices"
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

// An adapter renames a domain's fields to its request's paths; the original is untouched and
// errors without fields pass through.
func TestRenameMapsEveryFieldAndLeavesOtherErrors(t *testing.T) {
	var f Fields
	f.Add("weights[3]", "must be a finite number")
	f.Add("candidates", "must be 1..20")
	domain := f.Err()
	toJSON := func(field string) string {
		if field == "weights[3]" {
			return "players[3].weight"
		}
		return field
	}
	var e *Error
	if !errors.As(Rename(domain, toJSON), &e) || e.Code != Invalid {
		t.Fatalf("Rename gave %v, want an Invalid *Error", Rename(domain, toJSON))
	}
	want := []FieldError{{"players[3].weight", "must be a finite number"}, {"candidates", "must be 1..20"}}
	if !slices.Equal(e.Fields, want) {
		t.Fatalf("renamed fields %+v, want %+v", e.Fields, want)
	}
	var orig *Error
	if errors.As(domain, &orig); orig.Fields[0].Field != "weights[3]" {
		t.Fatalf("Rename changed the original: %+v", orig.Fields)
	}
	plain := errors.New("boom")
	if Rename(plain, toJSON) != plain || Rename(nil, toJSON) != nil {
		t.Fatal("errors without fields must pass through unchanged")
	}
	notFound := New(NotFound, "player %q", "a")
	if Rename(notFound, toJSON) != error(notFound) {
		t.Fatal("an *Error without fields must pass through unchanged")
	}
}

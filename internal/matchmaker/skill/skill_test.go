package skill

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

func TestRating(t *testing.T) {
	t.Parallel()
	optimised := Coefficients{Accuracy: 0.7072, ReactionTime: 0.544, Awareness: 0.272, Movement: 0.2}
	tests := []struct {
		name string
		s    Stats
		c    Coefficients
		want float64
	}{
		{"best player, defaults", Stats{Accuracy: 0, ReactionTime: 0, Awareness: 1, Movement: 1}, DefaultCoefficients(), 2000},
		{"worst player, defaults", Stats{Accuracy: 1, ReactionTime: 1, Awareness: 0, Movement: 0}, DefaultCoefficients(), 0},
		{"middle player, defaults", Stats{0.5, 0.5, 0.5, 0.5}, DefaultCoefficients(), 1000},
		// (1000-250)*0.5 + (1000-500)*0.5 + 750*0.5 + 100*0.5
		{"mixed, defaults", Stats{Accuracy: 0.25, ReactionTime: 0.5, Awareness: 0.75, Movement: 0.1}, DefaultCoefficients(), 375 + 250 + 375 + 50},
		{"only accuracy counts", Stats{Accuracy: 0.2, ReactionTime: 0.9, Awareness: 0.9, Movement: 0.9}, Coefficients{Accuracy: 1}, 800},
		{"best player, optimised", Stats{Accuracy: 0, ReactionTime: 0, Awareness: 1, Movement: 1}, optimised, 707.2 + 544 + 272 + 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rating(tt.s, tt.c); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("Rating(%+v, %+v) = %v, want %v", tt.s, tt.c, got, tt.want)
			}
		})
	}
	if c := DefaultCoefficients(); c != (Coefficients{0.5, 0.5, 0.5, 0.5}) {
		t.Fatalf("DefaultCoefficients() = %+v", c)
	}
}

func TestRatingValidation(t *testing.T) {
	t.Parallel()
	fields := func(err error) []string {
		if err == nil {
			return nil
		}
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.Invalid {
			t.Fatalf("%v is not apperr.Invalid", err)
		}
		var out []string
		for _, f := range e.Fields {
			out = append(out, f.Field)
		}
		return out
	}
	if err := DefaultCoefficients().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Coefficients{0, 1, 0, 1}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := Coefficients{Accuracy: -0.1, ReactionTime: 1.5, Awareness: math.NaN(), Movement: math.Inf(1)}.Validate()
	want := []string{"accuracy", "reaction_time", "awareness", "movement"}
	if got := fields(err); !slices.Equal(got, want) {
		t.Fatalf("Coefficients.Validate() = %v", err)
	}

	if err := (Stats{0, 1, 0.5, 0.999}).Validate(); err != nil {
		t.Fatal(err)
	}
	err = Stats{Accuracy: 2, Movement: math.NaN()}.Validate()
	want = []string{"accuracy", "movement"}
	if got := fields(err); !slices.Equal(got, want) {
		t.Fatalf("Stats.Validate() = %v", err)
	}
}

package sim

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestExpansionAt(t *testing.T) {
	t.Parallel()
	steps := Expansion{Steps: []Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 50}, {AfterS: 30, Value: 150}}}
	linear := Expansion{Widening: Widening{Initial: 25, Step: 25, EverySeconds: 5, Max: 100}}
	for _, tc := range []struct {
		e    Expansion
		wait time.Duration
		want float64
	}{
		{steps, 0, 25}, {steps, 9999 * time.Millisecond, 25}, {steps, 10 * time.Second, 50},
		{steps, 29 * time.Second, 50}, {steps, time.Hour, 150},
		{linear, 0, 25}, {linear, 4 * time.Second, 25}, {linear, 5 * time.Second, 50},
		{linear, 12 * time.Second, 75}, {linear, time.Hour, 100},
		{Expansion{Widening: ThesisWidening}, 0, math.Inf(1)},
	} {
		if got := tc.e.At(tc.wait); got != tc.want {
			t.Errorf("%+v.At(%v) = %v, want %v", tc.e, tc.wait, got, tc.want)
		}
	}
}

func TestExpansionScheduleIsAQueueDefinition(t *testing.T) {
	t.Parallel()
	got := Expansion{Widening: Widening{Initial: 25, Step: 50, EverySeconds: 10}}.Schedule(150, 0)
	want := []Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 75}, {AfterS: 20, Value: 125}, {AfterS: 30, Value: 150}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Schedule = %v, want %v", got, want)
	}
	got = Expansion{Widening: Widening{Initial: 25, Step: 50, EverySeconds: 10, Max: 80}}.Schedule(1000, 0)
	if want := []Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 75}, {AfterS: 20, Value: 80}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Schedule with max = %v, want %v", got, want)
	}
	got = Expansion{Widening: Widening{Initial: 25, Step: 50, EverySeconds: 10}}.Schedule(1000, 15)
	if want := []Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 75}, {AfterS: 20, Value: 125}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Schedule until 15 s = %v, want %v", got, want)
	}
	// A queue definition holds 32 steps: the live preset's widening stops at 800 after 155 s.
	got = Expansion{Widening: Widening{Initial: 25, Step: 25, EverySeconds: 5}}.Schedule(2000, 300)
	if len(got) != 32 || got[31] != (Step{AfterS: 155, Value: 800}) {
		t.Errorf("Schedule of a long widening = %v, want 32 steps to {155 800}", got)
	}
	if got := (Expansion{Widening: ThesisWidening}).Schedule(2000, 0); !reflect.DeepEqual(got, []Step{{AfterS: 0, Value: 2000}}) {
		t.Errorf("thesis Schedule = %v, want one step covering the scale", got)
	}
}

func TestExpansionSlower(t *testing.T) {
	t.Parallel()
	e := Expansion{Steps: []Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 50}}}
	if got := e.slower(2); !reflect.DeepEqual(got.Steps, []Step{{AfterS: 0, Value: 25}, {AfterS: 20, Value: 50}}) {
		t.Errorf("slower steps = %v", got.Steps)
	}
	w := Expansion{Widening: Widening{Initial: 25, Step: 25, EverySeconds: 5}}
	if got := w.slower(4); got.At(19*time.Second) != 25 || got.At(20*time.Second) != 50 {
		t.Errorf("slower widening = %+v", got)
	}
}

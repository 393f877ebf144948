package queue

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

var penaltyT0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func secsAt(s int) time.Time { return penaltyT0.Add(time.Duration(s) * time.Second) }

func TestCooldownBySteps(t *testing.T) {
	p := DodgePenalty{Window: 100 * time.Second, Steps: []CooldownStep{{Count: 2, Cooldown: 60 * time.Second}, {Count: 3, Cooldown: 600 * time.Second}}}
	standing := func(dodges ...int) Standing {
		var s Standing
		for _, d := range dodges {
			s.Dodges = append(s.Dodges, Dodge{At: secsAt(d)})
		}
		return s
	}
	cases := []struct {
		name   string
		dodges []int
		now    int
		want   int // 0: none
	}{
		{"one dodge: below the first step", []int{0}, 1, 0},
		{"two: the first step's minute from the second", []int{0, 10}, 11, 70},
		{"two, after the minute", []int{0, 10}, 70, 0},
		{"two apart by the window: each alone", []int{0, 100}, 101, 0},
		{"three: ten minutes", []int{0, 10, 20}, 21, 620},
		{"in any order", []int{20, 0, 10}, 21, 620},
		{"the window counts up to each dodge, not now", []int{0, 99}, 150, 159},
		{"an old pair's cooldown over, a new dodge alone", []int{0, 10, 500}, 501, 0},
	}
	for _, c := range cases {
		got := p.Cooldown(standing(c.dodges...), secsAt(c.now))
		if (c.want == 0) != got.IsZero() || c.want != 0 && !got.Equal(secsAt(c.want)) {
			t.Errorf("%s: cooldown until %v, want second %d", c.name, got, c.want)
		}
	}
}

func TestAddLeaveSendsToTheLowPriorityPool(t *testing.T) {
	p := LowPriorityPenalty{Leaves: 2, Window: 100 * time.Second, Games: 3, ExtraWait: time.Minute}
	var s Standing
	if changed, sent := s.AddLeave(p, "m1", secsAt(0)); !changed || sent || s.LowPriorityGames != 0 {
		t.Fatalf("one leave: changed %v sent %v, %+v", changed, sent, s)
	}
	if changed, sent := s.AddLeave(p, "m1", secsAt(5)); changed || sent {
		t.Fatalf("the same match again: changed %v sent %v", changed, sent)
	}
	if _, sent := s.AddLeave(p, "m2", secsAt(50)); !sent || s.LowPriorityGames != 3 || !s.LeavesCounted.Equal(secsAt(50)) {
		t.Fatalf("the second leave within the window: sent %v, %+v", sent, s)
	}
	// The leaves paid for do not count again: a third leave is one of a new count.
	if _, sent := s.AddLeave(p, "m3", secsAt(60)); sent {
		t.Fatalf("a third leave sent him again: %+v", s)
	}
	s.LowPriorityGames = 0
	if _, sent := s.AddLeave(p, "m4", secsAt(200)); sent {
		t.Fatalf("a leave outside the window of the third sent him: %+v", s)
	}
	if _, sent := s.AddLeave(p, "m5", secsAt(250)); !sent || s.LowPriorityGames != 3 {
		t.Fatalf("two new leaves within the window: sent %v, %+v", sent, s)
	}
}

func TestLeavers(t *testing.T) {
	m := Match{ID: "m", Teams: []MatchTeam{
		{Players: []MatchPlayer{{ID: "a"}, {ID: "b"}}}, {Players: []MatchPlayer{{ID: "c"}, {ID: "d"}}}}}
	got := Leavers(m, 600, map[string]float64{"a": 600, "b": 299, "c": 300})
	if !slices.Equal(got, []string{"b", "d"}) {
		t.Fatalf("leavers %v, want b (below half) and d (not in the result)", got)
	}
}

func TestPenaltiesValidation(t *testing.T) {
	steps := func(s ...CooldownStep) *DodgePenalty { return &DodgePenalty{Window: time.Hour, Steps: s} }
	cases := []struct {
		name  string
		p     Penalties
		field string
	}{
		{"steps out of order", Penalties{Dodge: steps(CooldownStep{3, time.Minute}, CooldownStep{2, time.Hour})}, "penalties.dodge.steps[1].count"},
		{"a cooldown over a week", Penalties{Dodge: steps(CooldownStep{2, 8 * 24 * time.Hour})}, "penalties.dodge.steps[0].cooldown_s"},
		{"cooldowns shrinking", Penalties{Dodge: steps(CooldownStep{2, time.Hour}, CooldownStep{3, time.Minute})}, "penalties.dodge.steps[1].cooldown_s"},
		{"a zero count", Penalties{Dodge: steps(CooldownStep{0, time.Minute})}, "penalties.dodge.steps[0].count"},
		{"no steps", Penalties{Dodge: steps()}, "penalties.dodge.steps"},
		{"a negative window", Penalties{Dodge: &DodgePenalty{Window: -time.Second, Steps: []CooldownStep{{1, time.Minute}}}}, "penalties.dodge.window_s"},
		{"zero leaves", Penalties{LowPriority: &LowPriorityPenalty{Leaves: 0, Window: time.Hour, Games: 3, ExtraWait: time.Minute}}, "penalties.low_priority.leaves"},
		{"zero games", Penalties{LowPriority: &LowPriorityPenalty{Leaves: 2, Window: time.Hour, Games: 0, ExtraWait: time.Minute}}, "penalties.low_priority.games"},
		{"no extra wait", Penalties{LowPriority: &LowPriorityPenalty{Leaves: 2, Window: time.Hour, Games: 3}}, "penalties.low_priority.extra_wait_s"},
		{"a window over 30 days", Penalties{LowPriority: &LowPriorityPenalty{Leaves: 2, Window: 31 * 24 * time.Hour, Games: 3, ExtraWait: time.Minute}}, "penalties.low_priority.window_s"},
	}
	for _, c := range cases {
		q := DefaultQueue("q")
		q.GameType, q.Penalties = "ctf", c.p
		err := q.Validate()
		var e *apperr.Error
		if !errors.As(err, &e) || !slices.ContainsFunc(e.Fields, func(f apperr.FieldError) bool { return f.Field == c.field }) {
			t.Errorf("%s: %v, want a fault of %s", c.name, err, c.field)
		}
	}
	q := DefaultQueue("q")
	q.GameType = "ctf"
	q.Penalties = Penalties{Dodge: steps(CooldownStep{2, time.Minute}, CooldownStep{3, 7 * 24 * time.Hour}),
		LowPriority: &LowPriorityPenalty{Leaves: 2, Window: 7 * 24 * time.Hour, Games: 3, ExtraWait: 2 * time.Minute}}
	if err := q.Validate(); err != nil {
		t.Fatalf("the design's penalties: %v", err)
	}
}

package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func testHistory(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	ns2, tdm := league(12, 3, "ns2"), league(5, 4, "tdm")
	for i := range 12 {
		recordBoth(t, st, f, ns2[i])
		if i < len(tdm) {
			recordBoth(t, st, f, tdm[i])
		}
	}
	var got []ratings.Result
	if err := st.History(ctx, "NS2", func(r ratings.Result) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ns2) {
		t.Fatalf("history of ns2: %d results, want %d", len(got), len(ns2))
	}
	for i := range got {
		if got[i].MatchID != ns2[i].MatchID || hashOf(got[i]) != hashOf(ns2[i]) {
			t.Fatalf("history[%d] = %+v, want %+v (in the order accepted)", i, got[i], ns2[i])
		}
	}
	// The callback's error stops the read and comes back as it is.
	stop := errors.New("enough")
	n := 0
	err := st.History(ctx, "ns2", func(ratings.Result) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("History with a failing callback: %v after %d results, want %v after 3", err, n, stop)
	}
	if err := st.History(ctx, "no such game", func(ratings.Result) error { return nil }); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("History of an invalid game type: %v", err)
	}
}

func testTunings(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	got, err := st.Tunings(ctx, "ns2")
	if err != nil || len(got) != 0 {
		t.Fatalf("Tunings of an empty store: %v %v", got, err)
	}
	p := ratings.DefaultKalman().Tuned()
	p.SkillSD, p.NewcomerSkill, p.Noise = 1.25, -0.5, 0.75
	bare, insta := mustContext(t, "ns2"), mustContext(t, "ns2", "instagib")
	rep := ratings.TuneReport{Results: 4000, Evaluations: 31, Accepted: true, Default: ratings.DefaultKalman().Tuned(), Params: p,
		FitBefore: 0.65, FitAfter: 0.64, HeldOutBefore: 0.66, HeldOutAfter: 0.655}
	mix := ratings.DefaultMixture().Tuned() // an ns2-mix context's: with its memory
	mix.Memory = 1.75
	first := []ratings.Tuning{
		{Context: bare, Model: "ns2-kalman", Params: p, Report: rep},
		{Context: insta, Model: "ns2-mix", Params: mix},
	}
	if err := st.SaveTunings(ctx, "ns2", first); err != nil {
		t.Fatal(err)
	}
	other := []ratings.Tuning{{Context: mustContext(t, "tdm"), Model: "ns2-kalman", Params: p}}
	if err := st.SaveTunings(ctx, "tdm", other); err != nil {
		t.Fatal(err)
	}
	got, err = st.Tunings(ctx, "ns2")
	if err != nil || len(got) != 2 || !sameTuning(got[bare.Key()], first[0]) || !sameTuning(got[insta.Key()], first[1]) {
		t.Fatalf("Tunings(ns2) = %+v, %v; want %+v", got, err, first)
	}
	// Saving replaces the game type's set, and only its.
	if err := st.SaveTunings(ctx, "ns2", first[1:]); err != nil {
		t.Fatal(err)
	}
	got, err = st.Tunings(ctx, "ns2")
	if err != nil || len(got) != 1 || !sameTuning(got[insta.Key()], first[1]) {
		t.Fatalf("Tunings(ns2) after replacing: %+v, %v", got, err)
	}
	got, err = st.Tunings(ctx, "tdm")
	if err != nil || len(got) != 1 || !sameTuning(got["tdm"], other[0]) {
		t.Fatalf("Tunings(tdm) = %+v, %v; want %+v", got, err, other)
	}
	// What no model could use is refused, and changes nothing.
	bad, badMemory := p, mix
	bad.SkillSD, badMemory.Memory = -1, -1
	for _, ts := range [][]ratings.Tuning{
		{{Context: mustContext(t, "tdm"), Model: "ns2-kalman", Params: p}}, // another game type's context
		{{Context: bare, Model: "ns2-kalman", Params: bad}},
		{{Context: insta, Model: "ns2-mix", Params: badMemory}},
		{{Context: bare, Model: "ns2-kalman", Params: p}, {Context: bare, Model: "ns2-kalman", Params: p}},
	} {
		wantCode(t, st.SaveTunings(ctx, "ns2", ts), apperr.Invalid)
	}
	got, err = st.Tunings(ctx, "ns2")
	if err != nil || len(got) != 1 {
		t.Fatalf("Tunings(ns2) after refused saves: %+v, %v", got, err)
	}
	if err := st.SaveTunings(ctx, "ns2", nil); err != nil {
		t.Fatal(err)
	}
	if got, err = st.Tunings(ctx, "ns2"); err != nil || len(got) != 0 {
		t.Fatalf("Tunings(ns2) after saving none: %+v, %v", got, err)
	}
}

// sameTuning compares tunings exactly (their numbers survive a store bit for bit).
func sameTuning(a, b ratings.Tuning) bool {
	return a.Context.Equal(b.Context) && a.Model == b.Model && a.Params == b.Params && a.Report == b.Report
}

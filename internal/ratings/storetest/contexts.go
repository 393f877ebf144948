package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func testContextsByMutators(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	for name, gameplay := range map[string]bool{"InstaGib": true, "anticheat": false} {
		info, err := st.SetMutator(ctx, name, gameplay)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.policy.Set(name, gameplay); err != nil {
			t.Fatal(err)
		}
		if info.Name != strings.ToLower(name) {
			t.Fatalf("SetMutator(%q) stored %q", name, info.Name)
		}
	}
	cases := []struct {
		mutators []string
		gameType string
		want     string
	}{
		{[]string{"instagib", "anticheat", "NewMut"}, "tdm", "tdm+instagib"},
		{[]string{"AntiCheat"}, "tdm", "tdm"},
		{[]string{"newmut", "Other"}, "TDM", "tdm"},
		{[]string{"INSTAGIB", "instagib"}, "tdm", "tdm+instagib"},
		{nil, "ctf", "ctf"},
		{[]string{"instagib"}, "ctf", "ctf+instagib"},
	}
	for i, tc := range cases {
		m := fiveVFive(fmt.Sprintf("ctx-%d", i), i%3)
		m.gameType, m.mutators = tc.gameType, tc.mutators
		rec := recordBoth(t, st, f, m.result())
		if rec.Context.Key() != tc.want {
			t.Fatalf("mutators %q in %s: context %q, want %q", tc.mutators, tc.gameType, rec.Context, tc.want)
		}
	}
	assertRef(t, st, f)
	pol, err := st.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []ratings.MutatorInfo{
		{Name: "anticheat", Status: ratings.MutatorNeutral},
		{Name: "instagib", Status: ratings.MutatorGameplay},
		{Name: "newmut", Status: ratings.MutatorUnknown},
		{Name: "other", Status: ratings.MutatorUnknown},
	}
	if got := pol.Mutators(); !slices.Equal(got, want) {
		t.Fatalf("policy %v, want %v", got, want)
	}
	// p02 played in tdm, tdm+instagib, ctf and ctf+instagib.
	prs, err := st.PlayerRatings(ctx, "p02")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, cr := range prs {
		keys = append(keys, cr.Context.Key())
	}
	if want := []string{"ctf", "ctf+instagib", "tdm", "tdm+instagib"}; !slices.Equal(keys, want) {
		t.Fatalf("PlayerRatings(p02) contexts %q, want %q", keys, want)
	}
}

func testSetMutatorAndPolicy(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	info, err := st.SetMutator(ctx, "LowGrav", true)
	if err != nil {
		t.Fatal(err)
	}
	if info != (ratings.MutatorInfo{Name: "lowgrav", Status: ratings.MutatorGameplay}) {
		t.Fatalf("SetMutator: %+v", info)
	}
	info, err = st.SetMutator(ctx, "lowgrav", false)
	if err != nil || info.Status != ratings.MutatorNeutral {
		t.Fatalf("SetMutator again: %+v %v", info, err)
	}
	for _, bad := range []string{"", "two words", "comma,name", "plus+name", strings.Repeat("m", 65)} {
		_, err := st.SetMutator(ctx, bad, true)
		wantCode(t, err, apperr.Invalid)
	}
	pol, err := st.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.Mutators(); !slices.Equal(got, []ratings.MutatorInfo{{Name: "lowgrav", Status: ratings.MutatorNeutral}}) {
		t.Fatalf("policy %v", got)
	}
	// The policy is a copy.
	if err := pol.Set("instagib", true); err != nil {
		t.Fatal(err)
	}
	pol2, err := st.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pol2.Status("instagib") != ratings.MutatorUnknown || len(pol2.Mutators()) != 1 {
		t.Fatalf("changing the returned policy changed the store's: %v", pol2.Mutators())
	}
	// SetMutator changes no rating: results recorded before stay where they were.
	f := newRef()
	m := fiveVFive("before-set", 0)
	m.mutators = []string{"vampire"}
	recordBoth(t, st, f, m.result())
	if _, err := st.SetMutator(ctx, "vampire", true); err != nil {
		t.Fatal(err)
	}
	assertRef(t, st, f)
}

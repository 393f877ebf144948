package ratings

import (
	"math"
	"testing"
)

func TestBiasTable(t *testing.T) {
	var b BiasTable
	k, first := NewBiasKey("Marines", "aliens", "NS2_Summit", 6)
	if first || k != (BiasKey{SideA: "aliens", SideB: "marines", Map: "ns2_summit", Size: 5}) {
		t.Fatalf("key = %+v, team 0 first = %v", k, first)
	}
	if f := b.F(k, 50); f != 0 {
		t.Errorf("empty table: F = %v, want 0", f)
	}
	b.Record(BiasEntry{k, BiasCell{Wins: 1, Games: 1}})
	b.Record(BiasEntry{k, BiasCell{Wins: 0.5, Games: 1}})
	other := k
	other.Map = "ns2_veil"
	b.Record(BiasEntry{other, BiasCell{Wins: 7, Games: 8}})
	if got := b.Total(k); got != (BiasCell{Wins: 8.5, Games: 10}) {
		t.Errorf("total = %+v", got)
	}
	// Two-level smoothing with k = 10: pair (8.5 + 5) / 20, cell (1.5 + 10 pair) / 12.
	pair := 13.5 / 20
	cell := (1.5 + 10*pair) / 12
	near(t, "F", b.F(k, 10), math.Log(cell/(1-cell)))
	// A map never seen starts from the pair's rate.
	unseen := k
	unseen.Map = "ns2_new"
	near(t, "F of an unseen map", b.F(unseen, 10), math.Log(pair/(1-pair)))

	// Set (loading from storage) keeps the totals consistent, and Clone is independent.
	c := b.Clone()
	if err := c.Set(BiasEntry{k, BiasCell{Wins: 4, Games: 4}}); err != nil {
		t.Fatal(err)
	}
	if got := c.Total(k); got != (BiasCell{Wins: 11, Games: 12}) {
		t.Errorf("total after Set = %+v", got)
	}
	if got := b.Cell(k); got != (BiasCell{Wins: 1.5, Games: 2}) {
		t.Errorf("the original changed: %+v", got)
	}
	for _, bad := range []BiasEntry{
		{k, BiasCell{Wins: 3, Games: 2}},
		{k, BiasCell{Wins: -1, Games: 2}},
		{k, BiasCell{Wins: math.NaN(), Games: 2}},
		{BiasKey{SideA: "z", SideB: "a"}, BiasCell{}},
	} {
		if c.Set(bad) == nil {
			t.Errorf("Set(%+v) = nil, want an error", bad)
		}
	}
	if es := c.Entries(); len(es) != 2 || es[0].Key.Map != "ns2_summit" || es[1].Key.Map != "ns2_veil" {
		t.Errorf("Entries() = %+v", es)
	}
}

func TestSizeBucket(t *testing.T) {
	want := map[int]int{0: 1, 1: 1, 2: 2, 3: 3, 4: 3, 5: 5, 6: 5, 7: 7, 9: 7, 10: 10, 13: 10, 14: 14, 19: 14, 20: 20, 64: 20}
	for n, w := range want {
		if got := SizeBucket(n); got != w {
			t.Errorf("SizeBucket(%d) = %d, want %d", n, got, w)
		}
	}
}

func TestSetTotalOverridesTheSumOfLoadedCells(t *testing.T) {
	k, _ := NewBiasKey("red", "blue", "face", 5)
	var b BiasTable
	if err := b.Set(BiasEntry{Key: k, BiasCell: BiasCell{Wins: 3, Games: 10}}); err != nil {
		t.Fatal(err)
	}
	if got := b.Total(k); got != (BiasCell{Wins: 3, Games: 10}) {
		t.Fatalf("after Set alone the total is the cell: %+v", got)
	}
	// A store that loaded this cell and, beside it, the pair's total over 100 games elsewhere.
	if err := b.SetTotal(k, BiasCell{Wins: 60, Games: 110}); err != nil {
		t.Fatal(err)
	}
	if got := b.Total(k); got != (BiasCell{Wins: 60, Games: 110}) {
		t.Fatalf("total = %+v", got)
	}
	if pairs := b.Pairs(); len(pairs) != 1 || pairs[0].SideA != "blue" || pairs[0].SideB != "red" {
		t.Fatalf("pairs = %+v", pairs)
	}
	if err := b.SetTotal(k, BiasCell{Wins: 5, Games: 4}); err == nil {
		t.Fatal("a total with more wins than games must be refused")
	}
}

// TestBiasTermsAddUp: the model statistics a cell carries add like its wins and games, into
// the cell and the side pair's total, and Set and SetTotal refuse ones a store could not keep.
func TestBiasTermsAddUp(t *testing.T) {
	t.Parallel()
	var b BiasTable
	k, _ := NewBiasKey("red", "blue", "m", 5)
	other := k
	other.Map = "n"
	u := Terms{Presence: 1, PresenceWeight: 0.5, Newcomer: -0.25, NewcomerWeight: 0.125, Scale: 2, ScaleWeight: 4,
		AltScale: -1, AltScaleWeight: 3, Evidence: -0.5}
	b.Record(BiasEntry{k, BiasCell{Wins: 1, Games: 1, Terms: u}})
	b.Record(BiasEntry{k, BiasCell{Games: 1, Terms: u}})
	b.Record(BiasEntry{other, BiasCell{Games: 1, Terms: u}})
	twice := Terms{2, 1, -0.5, 0.25, 4, 8, -2, 6, -1}
	if got := b.Cell(k).Terms; got != twice {
		t.Errorf("cell terms %+v, want %+v", got, twice)
	}
	if got := b.Total(k).Terms; got != (Terms{3, 1.5, -0.75, 0.375, 6, 12, -3, 9, -1.5}) {
		t.Errorf("total terms %+v", got)
	}
	if err := b.Set(BiasEntry{k, BiasCell{Wins: 1, Games: 2, Terms: u}}); err != nil || b.Total(k).Terms != twice {
		t.Errorf("after Set: %v, total terms %+v, want %+v", err, b.Total(k).Terms, twice)
	}
	for _, bad := range []Terms{{PresenceWeight: -1}, {Scale: math.NaN()}, {NewcomerWeight: math.Inf(1)}, {AltScaleWeight: -1}, {Evidence: math.Inf(-1)}} {
		if err := b.Set(BiasEntry{k, BiasCell{Games: 1, Terms: bad}}); err == nil {
			t.Errorf("Set accepted terms %+v", bad)
		}
		if err := b.SetTotal(k, BiasCell{Games: 1, Terms: bad}); err == nil {
			t.Errorf("SetTotal accepted terms %+v", bad)
		}
	}
}

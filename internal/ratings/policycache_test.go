package ratings

import (
	"context"
	"testing"
	"time"
)

// policyReads counts the store's reads of the mutator policy.
type policyReads struct {
	Store
	n int
}

func (s *policyReads) Policy(ctx context.Context) (*MutatorPolicy, error) {
	s.n++
	return s.Store.Policy(ctx)
}

func cachedForTest(store Store) (*policyCache, *time.Time) {
	clock := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	pc := CachePolicy(store, PolicyRefresh).(*policyCache)
	pc.now = func() time.Time { return clock }
	return pc, &clock
}

// Contexts are resolved from a policy read at most every refresh, and a mutator classified
// through the cache applies to the next call at once.
func TestCachePolicyReadsOncePerRefresh(t *testing.T) {
	ctx := context.Background()
	reads := &policyReads{Store: NewMemoryStore(nil)}
	pc, clock := cachedForTest(reads)
	svc := NewService(pc, DefaultModel())

	for range 100 {
		c, err := svc.Context(ctx, "ns2", []string{"instagib"})
		if err != nil {
			t.Fatal(err)
		}
		if c.Key() != "ns2" {
			t.Fatalf("an unclassified mutator split the context: %q", c.Key())
		}
	}
	if reads.n != 1 {
		t.Fatalf("100 contexts read the policy %d times, want 1", reads.n)
	}

	*clock = clock.Add(PolicyRefresh)
	if _, err := svc.Context(ctx, "ns2", nil); err != nil {
		t.Fatal(err)
	}
	if reads.n != 2 {
		t.Fatalf("after the refresh the policy was read %d times in all, want 2", reads.n)
	}

	if _, err := svc.SetMutator(ctx, "instagib", true); err != nil {
		t.Fatal(err)
	}
	c, err := svc.Context(ctx, "ns2", []string{"instagib"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Key() == "ns2" {
		t.Fatal("a mutator classified as gameplay through the cache did not split the next context")
	}
}

// A classification made elsewhere (another replica: straight in the store) reaches the
// contexts within the refresh, not before.
func TestCachePolicyTakesOtherReplicasClassificationsWithinTheRefresh(t *testing.T) {
	ctx := context.Background()
	store := NewMemoryStore(nil)
	pc, clock := cachedForTest(store)
	svc := NewService(pc, DefaultModel())
	if _, err := svc.Context(ctx, "ns2", []string{"instagib"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetMutator(ctx, "instagib", true); err != nil {
		t.Fatal(err)
	}
	*clock = clock.Add(PolicyRefresh - time.Millisecond)
	if c, _ := svc.Context(ctx, "ns2", []string{"instagib"}); c.Key() != "ns2" {
		t.Fatalf("the cached policy was not used within the refresh: %q", c.Key())
	}
	*clock = clock.Add(time.Millisecond)
	if c, _ := svc.Context(ctx, "ns2", []string{"instagib"}); c.Key() == "ns2" {
		t.Fatal("the classification did not arrive after the refresh")
	}
}

// A result naming a mutator the cached policy does not list makes the list show it at once;
// the copies handed out do not share the cache's state.
func TestCachePolicyListsAMutatorFirstSeenInAResult(t *testing.T) {
	ctx := context.Background()
	pc, _ := cachedForTest(NewMemoryStore(nil))
	svc := NewService(pc, DefaultModel())
	if _, err := svc.Mutators(ctx); err != nil {
		t.Fatal(err)
	}
	first := 0
	r := Result{MatchID: "m1", GameType: "ns2", Mutators: []string{"lowgrav"}, Map: "ns2_veil", DurationS: 600, Winner: &first,
		Teams: []Team{
			{Side: "red", Players: []Player{{ID: "alice", LeftS: 600}}},
			{Side: "blue", Players: []Player{{ID: "bob", LeftS: 600}}},
		}}
	if _, err := svc.Record(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Mutators(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "lowgrav" {
		t.Fatalf("mutators after a result with lowgrav: %+v", got)
	}

	p, _ := pc.Policy(ctx)
	p.Observe("scribbled")
	if again, _ := pc.Policy(ctx); again.knows("scribbled") {
		t.Fatal("a caller's change to its copy reached the cache")
	}
}

package queuesvc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// partitionedQueue is a 1v1 queue partitioned by its equal rule's mode.
func partitionedQueue(name string) queue.Queue {
	q := queue.DefaultQueue(name)
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	q.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}}
	q.Rules = []matchrules.Rule{{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}
	q.PartitionBy = "mode"
	return q
}

// Each mode of a queue partitioned by mode is ticked alone: a matcher that pairs whatever it
// is given in order (it reads no rule) pairs the tickets of one mode only, as a partition's
// tick gives it only its partition's. Without partition_by it pairs across modes (the test's
// control). The stats give each partition, led by this replica (its Config.Instance), and the
// metrics say it leads each.
func TestPartitionsTickApart(t *testing.T) {
	t.Parallel()
	for _, partitioned := range []bool{true, false} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			svc := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Matcher: pairInOrder{}, Metrics: queuesvc.NewMetrics(reg),
				Config:  queuesvc.Config{Instance: "replica-a"},
				Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())})
			q := partitionedQueue("modes")
			if !partitioned {
				q.PartitionBy = ""
			}
			ctx := context.Background()
			if _, _, err := svc.PutQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
			modes := []string{"a", "b", "c", "d"}
			var ids []string
			for i := range 8 {
				tk, _, err := svc.CreateTicket(ctx, queue.NewTicket{Queue: "modes", Players: []queue.NewPlayer{{ID: fmt.Sprintf("p%d", i), Rating: rating(1000)}},
					Attributes: map[string]matchrules.Value{"mode": matchrules.StringValue(modes[i%4])}})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tk.ID)
			}
			runService(t, svc)
			crossed := 0
			for _, id := range ids {
				tk := waitFor(t, svc, id, queue.Matched)
				m, err := svc.GetMatch(ctx, tk.Assignment.MatchID)
				if err != nil {
					t.Fatal(err)
				}
				var seen []string
				for _, other := range m.Tickets() {
					o, err := svc.GetTicket(ctx, other, 0)
					if err != nil {
						t.Fatal(err)
					}
					seen = append(seen, o.Attributes["mode"].Str)
				}
				slices.Sort(seen)
				if len(slices.Compact(seen)) > 1 {
					crossed++
				}
			}
			if partitioned && crossed > 0 {
				t.Fatalf("%d tickets matched across modes in a queue partitioned by mode", crossed)
			}
			if !partitioned {
				if crossed == 0 {
					t.Fatal("the control: without partition_by the matcher should pair across modes")
				}
				return
			}
			checkPartitionStats(t, svc, reg, modes)
		})
	}
}

// checkPartitionStats waits for the stats to give every partition, led by replica-a, with its
// two matches, and checks the leading metric of each.
func checkPartitionStats(t *testing.T, svc *queuesvc.Service, reg *prometheus.Registry, modes []string) {
	t.Helper()
	var got []string
	matches, queueMatches := 0, 0
	if !afterTicks(svc, "modes", func() bool {
		st, err := svc.Stats(context.Background(), "modes")
		if err != nil {
			t.Fatal(err)
		}
		got, matches, queueMatches = nil, 0, st.MatchesLastMinute
		for _, p := range st.Partitions {
			if p.Leader == "replica-a" {
				got = append(got, p.Partition)
			}
			matches += p.MatchesLastMinute
		}
		return slices.Equal(got, modes) && matches == 4 && queueMatches == 4
	}) {
		t.Fatalf("stats partitions led by replica-a %v (want %v), %d matches in them and %d in the queue (want 4) after 10 s",
			got, modes, matches, queueMatches)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	led := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "matchmaker_queue_leading" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			led[labels["queue"]+"/"+labels["partition"]] = m.GetGauge().GetValue()
		}
	}
	for _, m := range modes {
		if led["modes/"+m] != 1 {
			t.Errorf("matchmaker_queue_leading{queue=modes, partition=%s} = %v, want 1 (all: %v)", m, led["modes/"+m], led)
		}
	}
}

// partition_by must name the attribute of an equal rule that always binds: 400 naming it.
func TestPartitionByValidation(t *testing.T) {
	t.Parallel()
	after := 30.0
	for name, edit := range map[string]func(q *queue.Queue){
		"no such attribute": func(q *queue.Queue) { q.PartitionBy = "region" },
		"optional rule":     func(q *queue.Queue) { q.Rules[0].OptionalAfterS = &after },
		"not an equal rule": func(q *queue.Queue) { q.Rules[0].Kind = matchrules.RuleIntersect },
		"a number":          func(q *queue.Queue) { q.Attributes["mode"] = matchrules.Attribute{Type: matchrules.TypeNumber} },
	} {
		q := partitionedQueue("modes")
		edit(&q)
		err := q.Validate()
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.Invalid || !slices.ContainsFunc(e.Fields, func(f apperr.FieldError) bool { return f.Field == "partition_by" }) {
			t.Errorf("%s: %v, want a fault naming partition_by", name, err)
		}
	}
	q := partitionedQueue("modes")
	if err := q.Validate(); err != nil {
		t.Fatalf("a queue partitioned by its equal rule's attribute: %v", err)
	}
	q.Acceptance = &queue.Acceptance{Timeout: 10 * time.Second}
	q.Allocator = &queue.Allocator{URL: "https://alloc.example/place", Secret: "an-allocator-secret-of-16-bytes", Timeout: 10 * time.Second}
	if err := q.Validate(); err != nil {
		t.Fatalf("a partitioned queue with a ready check and an allocator: %v", err)
	}
}

// A queue whose partition_by is removed is one partition again: its stats have no
// partitions, and its tickets of two modes are matched together (the in-order matcher reads
// no rule), which its partitions would never have done.
func TestPartitionByRemoved(t *testing.T) {
	t.Parallel()
	svc := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Matcher: pairInOrder{},
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())})
	ctx := context.Background()
	q := partitionedQueue("modes")
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	runService(t, svc)
	a, _, err := svc.CreateTicket(ctx, queue.NewTicket{Queue: "modes", Players: []queue.NewPlayer{{ID: "a", Rating: rating(1000)}},
		Attributes: map[string]matchrules.Value{"mode": matchrules.StringValue("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if !afterTicks(svc, "modes", func() bool {
		st, err := svc.Stats(ctx, "modes")
		return err == nil && len(st.Partitions) == 1
	}) {
		t.Fatal("partition x not in the stats after 10 s")
	}
	q.PartitionBy = ""
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.CreateTicket(ctx, queue.NewTicket{Queue: "modes", Players: []queue.NewPlayer{{ID: "b", Rating: rating(1000)}},
		Attributes: map[string]matchrules.Value{"mode": matchrules.StringValue("y")}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, svc, a.ID, queue.Matched)
	var st queue.Stats
	if !afterTicks(svc, "modes", func() bool {
		st, err = svc.Stats(ctx, "modes")
		return err == nil && st.Partitions == nil && st.MatchesLastMinute == 1
	}) {
		t.Fatalf("stats after partition_by was removed: %d partitions, %d matches (%v)", len(st.Partitions), st.MatchesLastMinute, err)
	}
}

// afterTicks reports whether cond comes to hold within 10 s, checking it as each tick of
// queueName ends: what a tick leaves (its stats) it tells no one of.
func afterTicks(svc *queuesvc.Service, queueName string, cond func() bool) bool {
	return awaitEach(cond, func() <-chan struct{} { return queuesvc.NextTickEnd(svc, queueName) })
}

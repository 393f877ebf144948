package memstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// BenchmarkQueueCreateExclusiveTicket: creations of exclusive solo tickets in the memory
// store, in a deployment of 4 queues with 10,000 tickets searching: what the lifecycle's
// TicketsCreated (the claims read under the mutex) adds to a creation. The file compiles on
// the build before it, for interleaved runs:
//
//	go test -run '^$' -bench QueueCreateExclusiveTicket -benchmem -count 1 ./internal/queue/memstore
func BenchmarkQueueCreateExclusiveTicket(b *testing.B) {
	st := memstore.New()
	ctx := context.Background()
	for _, name := range []string{"bench", "casual", "ranked", "spectate"} {
		q := queue.DefaultQueue(name)
		q.GameType = "ctf"
		if _, _, err := st.PutQueue(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10000 {
		t := queuetest.Ticket("casual", fmt.Sprintf("seed%d", i), 1, fmt.Sprintf("seedp%d", i))
		t.Exclusive = true
		if _, _, err := st.CreateTicket(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t := queuetest.Ticket("bench", fmt.Sprintf("t%d", i), 1, fmt.Sprintf("p%d", i))
		t.Exclusive = true
		if _, _, err := st.CreateTicket(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
}

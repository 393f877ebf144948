package queue_test

import (
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
)

// The package's internal tests run on the memory store, given them here: an external test
// file may import memstore, which imports queue.
func init() { queue.NewTestStore = func() queue.Store { return memstore.New() } }

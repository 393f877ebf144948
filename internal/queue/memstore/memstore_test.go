package memstore_test

import (
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

func TestMemoryStorePassesTheContract(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(t *testing.T) queue.Store { return memstore.New() })
}

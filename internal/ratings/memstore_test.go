package ratings_test

import (
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ratings.Store { return ratings.NewMemoryStore(nil) })
}

func BenchmarkRecordResultMemory(b *testing.B) {
	storetest.BenchRecord(b, ratings.NewMemoryStore(nil), nil)
}

func TestTuneServiceMemory(t *testing.T) {
	storetest.TuneService(t, ratings.NewMemoryStore(nil), 3000)
	t.Run("ns2-mix", func(t *testing.T) {
		storetest.TuneServiceOf(t, ratings.NewMemoryStore(nil), 3000, storetest.OffMixture())
	})
}

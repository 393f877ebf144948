package db_test

import (
	"testing"

	"matchmaker/internal/ratings/storetest"
)

// Tuning over Postgres: the fit stored in rating_tunings, used by rebuilds, by results and by
// another service over the same database.
func TestTuneServicePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("records 3,000 results")
	}
	s, _ := openStore(t)
	storetest.TuneService(t, s, 3000)
}

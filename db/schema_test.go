package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// A store on a database the migrations have not reached is not ready (the readiness probe's
// 503, naming the versions); once migrated, it is.
func TestReadyWaitsForTheSchema(t *testing.T) {
	url := dbtest.URL(t)
	ctx := context.Background()
	s, err := db.Open(ctx, url, db.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Ready(ctx)
	if apperr.CodeOf(err) != apperr.Unavailable || !strings.Contains(err.Error(), "version 0") {
		t.Fatalf("unmigrated: %v, want Unavailable naming version 0", err)
	}
	if db.SchemaVersion < 6 {
		t.Fatalf("SchemaVersion %d: the embedded migrations were not read", db.SchemaVersion)
	}
	if err := db.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("migrated: %v", err)
	}
}

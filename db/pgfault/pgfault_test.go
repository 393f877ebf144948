package pgfault_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db/pgfault"
)

// ping connects and runs a statement within d.
func ping(url string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

func TestFaultServerStopsFreezesAndComesBack(t *testing.T) {
	s := pgfault.Start(t)
	if err := ping(s.URL(), 10*time.Second); err != nil {
		t.Fatalf("a started server: %v", err)
	}

	// A connection opened before the freeze hangs on its next statement.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	s.Freeze()
	if !s.Frozen() {
		t.Fatal("Frozen() = false after Freeze")
	}
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = conn.Exec(qctx, "SELECT 1")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a statement on a frozen server: %v, want it to run out of time", err)
	}
	if err := ping(s.URL(), 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connecting to a frozen server: %v, want it to run out of time", err)
	}
	s.Thaw()
	if err := ping(s.URL(), 10*time.Second); err != nil {
		t.Fatalf("a thawed server: %v", err)
	}

	s.Stop()
	if err := ping(s.URL(), 2*time.Second); err == nil {
		t.Fatal("a stopped server answered")
	}
	s.Start()
	s.Exec("CREATE TABLE kept (n int)")
	if err := ping(s.URL(), 10*time.Second); err != nil {
		t.Fatalf("a restarted server: %v", err)
	}
}

func TestMissingBinariesSkipOrFail(t *testing.T) {
	if os.Getenv(pgfault.EnvRequire) == "1" {
		t.Skip("with " + pgfault.EnvRequire + "=1 missing binaries fail the test; that is what this checks without it")
	}
	t.Setenv(pgfault.EnvBin, t.TempDir())
	skipped := false
	t.Run("start", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		pgfault.Start(t)
	})
	if !skipped {
		t.Fatal("Start without binaries did not skip the test")
	}
}

func TestFaultReplicatedStandbyTakesOverAfterAKill(t *testing.T) {
	r := pgfault.StartReplicated(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, r.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE acked (n int); INSERT INTO acked VALUES (1)"); err != nil {
		t.Fatalf("on the primary: %v", err)
	}
	// The primary acknowledges a commit only once the standby has it: with the standby
	// stopped, a commit waits.
	r.Standby.Freeze()
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = conn.Exec(qctx, "INSERT INTO acked VALUES (2)")
	cancel()
	if err == nil {
		t.Fatal("a commit was acknowledged while the synchronous standby was frozen")
	}
	r.Standby.Thaw()

	r.Primary.Kill()
	if err := ping(r.URL(), 2*time.Second); err == nil {
		t.Fatal("the URL reached a server after the primary was killed, before the promotion (the standby took a read-write session)")
	}
	r.Promote()
	after, err := pgx.Connect(ctx, r.URL())
	if err != nil {
		t.Fatalf("the URL after the promotion: %v", err)
	}
	defer after.Close(ctx)
	var n int
	if err := after.QueryRow(ctx, "SELECT count(*) FROM acked WHERE n = 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the acknowledged row on the promoted standby: %d rows, %v", n, err)
	}
	if _, err := after.Exec(ctx, "INSERT INTO acked VALUES (3)"); err != nil {
		t.Fatalf("a write on the promoted standby: %v", err)
	}
}

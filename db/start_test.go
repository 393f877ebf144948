package db_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/pgfault"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// syncBuffer is a log destination safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFaultConnectWaitsForADatabaseThatStartsLate: the server is down when Connect begins and
// comes up a second later; Connect logs the failed attempts, then migrates and returns a
// working store.
func TestFaultConnectWaitsForADatabaseThatStartsLate(t *testing.T) {
	t.Parallel()
	srv := pgfault.Start(t)
	srv.Stop()
	var logs syncBuffer
	started := make(chan struct{})
	go func() {
		time.Sleep(time.Second)
		srv.Start()
		close(started)
	}()
	s, n, err := db.Connect(context.Background(), srv.URL(), db.Options{Timeout: time.Second},
		db.Startup{Within: 30 * time.Second, Migrate: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	<-started
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, logs.String())
	}
	defer s.Close()
	if want := migrationCount(t); n != want {
		t.Errorf("applied %d migrations, want all %d", n, want)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"msg":"database not ready, retrying","attempt":1`) ||
		!strings.Contains(logs.String(), `"msg":"database ready"`) {
		t.Errorf("the log does not tell the attempts:\n%s", logs.String())
	}
}

// TestFaultConnectGivesUpOnASilentDatabase: a frozen server accepts TCP connections and never
// answers; Connect gives up once its time has passed, with Unavailable. The bound is a control
// timer of the same 2 s plus 500 ms: under load the start-up's deadline fires as late as the
// control does, which a fixed 2.5 s did not allow for.
func TestFaultConnectGivesUpOnASilentDatabase(t *testing.T) {
	t.Parallel()
	srv := pgfault.Start(t)
	srv.Freeze()
	defer srv.Thaw()
	var logs syncBuffer
	const within = 2 * time.Second
	start, control := time.Now(), dbtest.Control(within)
	_, _, err := db.Connect(context.Background(), srv.URL(), db.Options{Timeout: 300 * time.Millisecond},
		db.Startup{Within: within, Migrate: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	took := time.Since(start)
	if apperr.CodeOf(err) != apperr.Unavailable || !strings.Contains(err.Error(), "not ready after") {
		t.Fatalf("Connect to a frozen server: %v", err)
	}
	if bound := control() + 500*time.Millisecond; took > bound {
		t.Errorf("Connect took %v with %v to try (the control timer of %v fired after %v)", took, within, within, control())
	}
	if c := strings.Count(logs.String(), "database not ready"); c < 2 {
		t.Errorf("%d attempts logged in 2s, want several:\n%s", c, logs.String())
	}
}

func TestConnectFailsAtOnceOnAMalformedURL(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, _, err := db.Connect(context.Background(), "postgres://a b@/", db.Options{}, db.Startup{Within: time.Minute})
	if apperr.CodeOf(err) != apperr.Invalid || time.Since(start) > time.Second {
		t.Fatalf("Connect with a malformed URL: %v after %v", err, time.Since(start))
	}
}

// A server that answers and refuses (no such database, a user it does not know) is reported at
// once, with what it said: waiting would not change its answer.
func TestConnectFailsAtOnceWhenTheServerRefuses(t *testing.T) {
	t.Parallel()
	admin := dbtest.URL(t) // a server that answers
	missing, err := dbtest.WithDatabase(admin, "mm_no_such_database")
	if err != nil {
		t.Fatal(err)
	}
	unknownUser := strings.Replace(admin, "postgres://postgres@", "postgres://mm_no_such_user@", 1)
	if unknownUser == admin {
		t.Skip("TEST_DATABASE_URL names no user postgres to swap for an unknown one")
	}
	for name, tc := range map[string]struct{ url, says string }{
		"no such database": {missing, "does not exist"},
		"unknown user":     {unknownUser, "user or password"},
	} {
		start := time.Now()
		_, _, err := db.Connect(context.Background(), tc.url, db.Options{}, db.Startup{Within: 30 * time.Second})
		if err == nil || !strings.Contains(err.Error(), tc.says) || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %v after %v; want at once, saying %q", name, err, time.Since(start), tc.says)
		}
	}
}

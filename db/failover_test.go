package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/pgfault"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// A URL that lists several hosts must ask for the one that takes writes; one host needs
// nothing. The check is made before any connection (these hosts do not exist).
func TestOpenRefusesSeveralHostsWithoutReadWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url     string
		refused bool
	}{
		{"postgres://u@a.invalid:5432,b.invalid:5432/d?connect_timeout=1", true},
		{"postgres://u@a.invalid,b.invalid/d?target_session_attrs=any&connect_timeout=1", true},
		{"postgres://u@a.invalid,b.invalid/d?target_session_attrs=prefer-standby&connect_timeout=1", true},
		{"host=a.invalid,b.invalid user=u dbname=d connect_timeout=1", true},
		{"postgres://u@a.invalid,b.invalid/d?target_session_attrs=read-write&connect_timeout=1", false},
		{"postgres://u@a.invalid,b.invalid/d?target_session_attrs=primary&connect_timeout=1", false},
		{"host=a.invalid,b.invalid user=u dbname=d target_session_attrs=read-write connect_timeout=1", false},
		{"postgres://u@a.invalid/d?connect_timeout=1", false},
		{"postgres://u@a.invalid:5432,a.invalid:5432/d?connect_timeout=1", false}, // one host, twice
	} {
		_, err := db.Open(context.Background(), tc.url, db.Options{})
		refused := apperr.CodeOf(err) == apperr.Invalid && strings.Contains(err.Error(), "target_session_attrs=read-write")
		if refused != tc.refused {
			t.Errorf("Open(%s): %v; refused for the hosts: %v, want %v", tc.url, err, refused, tc.refused)
		}
	}
}

func TestReplicationRisk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r    db.Replication
		says string // "" for no risk
	}{
		{db.Replication{SynchronousCommit: "on", StandbyNames: "*", Streaming: 1}, ""},
		{db.Replication{SynchronousCommit: "remote_apply", StandbyNames: "FIRST 1 (s1, s2)", Streaming: 2}, ""},
		{db.Replication{SynchronousCommit: "on", StandbyNames: "*", Streaming: -1}, ""}, // cannot see: trust the setting
		{db.Replication{SynchronousCommit: "on", StandbyNames: "", Streaming: 1}, "synchronous_standby_names is empty"},
		{db.Replication{SynchronousCommit: "local", StandbyNames: "*", Streaming: 1}, "synchronous_commit is local"},
		{db.Replication{SynchronousCommit: "off", StandbyNames: "*", Streaming: 1}, "synchronous_commit is off"},
		{db.Replication{SynchronousCommit: "on", StandbyNames: "s1", Streaming: 0}, "no synchronous standby streams"},
	} {
		got := tc.r.Risk()
		if (tc.says == "") != (got == "") || !strings.Contains(got, tc.says) {
			t.Errorf("%+v: Risk() = %q, want %q", tc.r, got, tc.says)
		}
	}
}

// Replication reads what the primary says: a lone server waits for no standby; a primary with
// a synchronous standby streaming does.
func TestFaultReplicationAsThePrimarySaysIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lone, err := db.Open(ctx, dbtest.URL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lone.Close()
	if r, err := lone.Replication(ctx); err != nil || r.Risk() == "" || lone.Hosts() != 1 {
		t.Errorf("a lone server: %+v, %v, risk %q, %d hosts; want a risk and 1 host", r, err, r.Risk(), lone.Hosts())
	}
	pair := pgfault.StartReplicated(t)
	d, err := db.Open(ctx, pair.URL(), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if r, err := d.Replication(ctx); err != nil || r.Risk() != "" || r.Streaming != 1 || d.Hosts() != 2 {
		t.Errorf("a primary with a synchronous standby: %+v, %v, risk %q, %d hosts; want no risk, 1 standby and 2 hosts", r, err, r.Risk(), d.Hosts())
	}
}

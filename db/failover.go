package db

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// hosts lists the distinct host:port pairs a parsed URL names, in its order (pgx makes a
// fallback of each host, and one more per host for sslmode=prefer's second try).
func hosts(cfg *pgconn.Config) []string {
	seen := map[string]bool{}
	var out []string
	add := func(host string, port uint16) {
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	add(cfg.Host, cfg.Port)
	for _, fb := range cfg.Fallbacks {
		add(fb.Host, fb.Port)
	}
	return out
}

// checkHosts refuses a URL that lists several hosts without asking for the one that takes
// writes: pgx then connects to the first that answers, a standby as readily as the primary,
// and every write on that connection fails.
func checkHosts(cfg *pgconn.Config) error {
	hs := hosts(cfg)
	if len(hs) < 2 {
		return nil
	}
	for _, writable := range []pgconn.ValidateConnectFunc{pgconn.ValidateConnectTargetSessionAttrsReadWrite, pgconn.ValidateConnectTargetSessionAttrsPrimary} {
		if cfg.ValidateConnect != nil && reflect.ValueOf(cfg.ValidateConnect).Pointer() == reflect.ValueOf(writable).Pointer() {
			return nil
		}
	}
	return apperr.New(apperr.Invalid, "db: the database URL lists %d hosts (%s) without target_session_attrs=read-write: add it, "+
		"so that every connection goes to the one that takes writes (the primary, whichever it is after a failover)",
		len(hs), strings.Join(hs, ", "))
}

// Hosts is how many database hosts the URL lists: more than one for a primary and its
// standbys, of which the pool connects to the one that takes writes.
func (d *DB) Hosts() int { return len(hosts(&d.pool.Config().ConnConfig.Config)) }

// Replication is what the primary says of its synchronous replication: whether a COMMIT it
// acknowledges is already on a standby, and so on the standby promoted if the primary dies
// the next moment.
type Replication struct {
	// SynchronousCommit is the pool's sessions' synchronous_commit: on (or remote_apply,
	// remote_write) waits for the standbys of StandbyNames; local and off do not.
	SynchronousCommit string
	// StandbyNames is the primary's synchronous_standby_names: empty, no standby is waited
	// for.
	StandbyNames string
	// Streaming is how many standbys stream synchronously now (sync or quorum), or -1 when
	// this role may not see them (pg_read_all_stats).
	Streaming int
}

const sqlReplication = `
SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names'),
       (SELECT CASE WHEN count(*) > 0 AND count(sync_state) = 0 THEN -1
                    ELSE count(*) FILTER (WHERE sync_state IN ('sync', 'quorum')) END
        FROM pg_stat_replication)`

var opReplication = NewOp("replication")

// Replication reads the primary's synchronous replication settings.
func (d *DB) Replication(ctx context.Context) (r Replication, err error) {
	ctx, done := d.Call(ctx, opReplication)
	defer done(&err)
	err = d.pool.QueryRow(ctx, sqlReplication).Scan(&r.SynchronousCommit, &r.StandbyNames, &r.Streaming)
	return r, MapError(err, "replication")
}

// Risk says how an acknowledged write could be missing on a standby promoted after the
// primary's death, or "" when every COMMIT waits for a synchronous standby that streams.
func (r Replication) Risk() string {
	switch {
	case r.SynchronousCommit == "off" || r.SynchronousCommit == "local":
		return fmt.Sprintf("synchronous_commit is %s: a COMMIT does not wait for any standby", r.SynchronousCommit)
	case strings.TrimSpace(r.StandbyNames) == "":
		return "synchronous_standby_names is empty: a COMMIT does not wait for any standby"
	case r.Streaming == 0:
		return fmt.Sprintf("no synchronous standby streams now (synchronous_standby_names is %q): every COMMIT waits until one does", r.StandbyNames)
	}
	return ""
}

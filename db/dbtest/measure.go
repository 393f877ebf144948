package dbtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ServerCPU is the CPU time used so far by the Postgres processes that serve pool's database:
// its backends and the server's background processes (WAL writer, checkpointer...), which
// other databases share. It reads /proc, so it is 0 when the server runs elsewhere. The
// benchmarks of both stores report it per operation.
func ServerCPU(pool *pgxpool.Pool) time.Duration {
	ctx := context.Background()
	rows, err := pool.Query(ctx, `
SELECT pid FROM pg_stat_activity
WHERE datname = current_database() OR (datname IS NULL AND backend_type <> 'client backend')`)
	if err != nil {
		return 0
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0
	}
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) start after the last ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64) // utime: field 14 of stat
		s, _ := strconv.ParseInt(f[12], 10, 64) // stime: field 15
		ticks += u + s
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// WALBytes is the server's WAL position: the bytes of WAL it has written, by every database.
func WALBytes(tb testing.TB, pool *pgxpool.Pool) int64 {
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

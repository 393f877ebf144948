// Package dbtest gives each test a Postgres database of its own. Only tests import it: it
// pulls testcontainers-go (and a Docker client) into whatever imports it.
//
// Where the server comes from, in order:
//  1. TEST_DATABASE_URL: a server (and a database on it to connect to) on which the test may
//     CREATE DATABASE; CI sets it.
//  2. A Docker engine, if one answers: a Postgres container started with testcontainers-go,
//     one per test process, removed by testcontainers' reaper when the process exits.
//  3. Neither: the test is skipped, or fails when MATCHMAKER_REQUIRE_TEST_DB=1 (CI sets it, so
//     that a broken set-up cannot pass as a run of skipped tests).
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
)

const (
	// EnvURL names the variable with the server to create test databases on.
	EnvURL = "TEST_DATABASE_URL"
	// EnvRequire, set to 1, turns "no database, skipped" into a failure.
	EnvRequire = "MATCHMAKER_REQUIRE_TEST_DB"
	// Image is the Postgres image started when only a Docker engine is available.
	Image = "postgres:15-alpine"
	// MaxConns is the pool size of the stores' tests. A store package's tests run two at a
	// time beside another package's on a server that other runs share (max_connections 100
	// by default): with the service's default of 16 a connection each, one package peaked at
	// 40 connections and runs failed with "too many clients already".
	MaxConns = 6
)

// URL creates a new, empty database for the calling test and returns its URL. The database is
// dropped (WITH (FORCE), so connections left open do not keep it) when the test and its
// subtests have finished. It skips the test, or fails it under MATCHMAKER_REQUIRE_TEST_DB=1,
// when there is no server to create it on.
func URL(tb testing.TB) string {
	tb.Helper()
	admin := server(tb)
	name := "mm_test_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := adminExec(ctx, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("dbtest: creating a test database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("dbtest: dropping test database %s: %v", name, err)
		}
	})
	u, err := WithDatabase(admin, name)
	if err != nil {
		tb.Fatalf("dbtest: %v", err)
	}
	return u
}

// WithDatabase returns the connection string s (a URL or key=value pairs) pointed at another
// database on the same server.
func WithDatabase(s, name string) (string, error) {
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return s + " dbname=" + name, nil // later keys win
	}
	if u, err := url.Parse(s); err == nil {
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// A URL Go's parser refuses but pgx reads (a socket directory as the host, escaped):
	// pgx lets a dbname query parameter override the path.
	sep := "?"
	if strings.Contains(s, "?") {
		sep = "&"
	}
	return s + sep + "dbname=" + url.QueryEscape(name), nil
}

// server returns the connection string of the server to create databases on, or ends the test.
func server(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	u, err := dockerServer()
	if err == nil {
		return u
	}
	if !errors.Is(err, errNoDocker) {
		tb.Fatalf("dbtest: starting Postgres in Docker: %v", err)
	}
	msg := fmt.Sprintf("dbtest: no test database: set %s (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) or run a Docker engine (%v)", EnvURL, err)
	if os.Getenv(EnvRequire) == "1" {
		tb.Fatalf("%s; %s=1 requires one", msg, EnvRequire)
	}
	tb.Skip(msg)
	return ""
}

var errNoDocker = errors.New("no Docker engine answers")

var docker struct {
	once sync.Once
	url  string
	err  error
}

// dockerServer starts one Postgres container for the whole test process, the first time a
// test asks for it.
func dockerServer() (string, error) {
	docker.once.Do(func() {
		docker.url, docker.err = startContainer()
	})
	return docker.url, docker.err
}

func startContainer() (_ string, err error) {
	defer func() {
		if r := recover(); r != nil { // testcontainers panics when it finds no Docker at all
			err = fmt.Errorf("%w: %v", errNoDocker, r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	provider, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return "", fmt.Errorf("%w: %v", errNoDocker, err)
	}
	hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
	err = provider.Health(hctx)
	hcancel()
	_ = provider.Close()
	if err != nil {
		return "", fmt.Errorf("%w: %v", errNoDocker, err)
	}
	c, err := postgres.Run(ctx, Image,
		postgres.WithDatabase("matchmaker"),
		postgres.WithUsername("postgres"),
		postgres.WithPassword("postgres"),
		postgres.BasicWaitStrategies(),
	)
	if err != nil {
		return "", err
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

// adminExec runs one statement on the server's own database, retrying while template1 is
// busy (two CREATE DATABASE at the same instant can see each other's connection to it).
func adminExec(ctx context.Context, admin, stmt string) error {
	for attempt := 1; ; attempt++ {
		err := func() error {
			conn, err := pgx.Connect(ctx, admin)
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(ctx))
			_, err = conn.Exec(ctx, stmt)
			return err
		}()
		var pe *pgconn.PgError
		if err == nil || attempt == 10 || !errors.As(err, &pe) || pe.Code != "55006" { // object_in_use
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

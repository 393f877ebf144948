package dbtest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

func TestURLGivesAFreshDatabaseAndDropsIt(t *testing.T) {
	ctx := context.Background()
	var url, name string
	t.Run("user", func(t *testing.T) {
		url = dbtest.URL(t)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var tables int
		if err := conn.QueryRow(ctx, `SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')`).Scan(&name, &tables); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "mm_test_") || tables != 0 {
			t.Fatalf("database %q with %d tables, want a new empty mm_test_ database", name, tables)
		}
		if other := dbtest.URL(t); other == url {
			t.Fatal("two calls gave the same database")
		}
	})
	if name == "" {
		t.Skip("the subtest did not get a database")
	}
	conn, err := pgx.Connect(ctx, os.Getenv(dbtest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s outlived its test", name)
	}
}

func TestWithDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:p@h:5432/postgres?sslmode=disable": "postgres://u:p@h:5432/other?sslmode=disable",
		"postgresql://h/db": "postgresql://h/other",
		"postgres://h":      "postgres://h/other",
		"host=h user=u dbname=postgres sslmode=disable":    "host=h user=u dbname=postgres sslmode=disable dbname=other",
		"postgres://u@%2Fvar%2Frun%2Fpostgresql/x?a=b&c=d": "postgres://u@%2Fvar%2Frun%2Fpostgresql/x?a=b&c=d&dbname=other",
	} {
		got, err := dbtest.WithDatabase(in, "other")
		if err != nil || got != want {
			t.Errorf("WithDatabase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// Without a server, a test skips, unless MATCHMAKER_REQUIRE_TEST_DB=1 makes it fail: run
// this test binary again without TEST_DATABASE_URL and without a reachable Docker engine.
func TestNoServerSkipsOrFails(t *testing.T) {
	if os.Getenv("DBTEST_CHILD") == "1" {
		dbtest.URL(t)
		t.Fatal("URL returned without a server")
	}
	if testing.Short() {
		t.Skip("runs the test binary twice")
	}
	for _, require := range []string{"", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoServerSkipsOrFails$", "-test.v")
		cmd.Env = append(withoutVars(os.Environ(), dbtest.EnvURL, dbtest.EnvRequire, "DOCKER_HOST"),
			"DBTEST_CHILD=1", dbtest.EnvRequire+"="+require,
			"DOCKER_HOST=unix:///nonexistent/docker.sock", "TESTCONTAINERS_RYUK_DISABLED=true")
		out, err := cmd.CombinedOutput()
		text := string(out)
		if !strings.Contains(text, "set TEST_DATABASE_URL") {
			t.Fatalf("require=%q: the message does not say what to do:\n%s", require, text)
		}
		switch require {
		case "":
			if err != nil || !strings.Contains(text, "--- SKIP") {
				t.Fatalf("without a server the test should skip (err %v):\n%s", err, text)
			}
		default:
			if err == nil || !strings.Contains(text, "--- FAIL") {
				t.Fatalf("with %s=1 and no server the test should fail (err %v):\n%s", dbtest.EnvRequire, err, text)
			}
		}
	}
}

func withoutVars(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// dbtest pulls testcontainers and a Docker client into whatever imports it: only tests may.
func TestOnlyTestsImportDBTest(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "github.com/matchmakerhq/matchmaker/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if (imp == "github.com/matchmakerhq/matchmaker/db/dbtest" || strings.HasPrefix(imp, "github.com/testcontainers/")) && pkg != "github.com/matchmakerhq/matchmaker/db/dbtest" {
				t.Errorf("%s imports %s outside its tests", pkg, imp)
			}
		}
	}
}

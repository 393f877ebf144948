package handlers

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Benchmarks of the whole team handlers (middleware, decode, validate, the algorithm, encode)
// without the network, on players with weights uniform in [0, 100):
//
//	go test -run '^$' -bench 'BenchmarkTeams' -benchmem ./internal/handlers/
//
// "bots" is a server for more players than there are humans (mean bot 50, target N+6, map
// for 4..64), as in the matchmaker's BenchmarkSplit, so several head-count classes are
// searched. Split is exact up to 40 humans on 2 teams and heuristic above.

// teamsBenchPlayers lists n players with weights uniform in [0, 100).
func teamsBenchPlayers(n int) string {
	rng := rand.New(rand.NewPCG(uint64(n), 17))
	var b strings.Builder
	b.WriteString(`[`)
	for i := range n {
		if i > 0 {
			b.WriteString(`,`)
		}
		fmt.Fprintf(&b, `{"id":"player-%03d","weight":%.3f}`, i, rng.Float64()*100)
	}
	b.WriteString(`]`)
	return b.String()
}

// teamsBenchRosters is n players dealt onto 2 teams in order (so the first team is not the
// stronger by construction), each team with one bot.
func teamsBenchRosters(n int) string {
	rng := rand.New(rand.NewPCG(uint64(n), 18))
	var teams [2]strings.Builder
	for i := range n {
		t := &teams[i%2]
		if t.Len() > 0 {
			t.WriteString(`,`)
		}
		fmt.Fprintf(t, `{"id":"player-%03d","weight":%.3f}`, i, rng.Float64()*100)
	}
	return `[{"players":[` + teams[0].String() + `],"bots":[{"name":"Jakob","weight":40}]},` +
		`{"players":[` + teams[1].String() + `],"bots":[{"name":"Gorge","weight":60}]}]`
}

func benchTeamsHandler(b *testing.B, path, body string) {
	h := NewServer(Deps{Logger: slog.New(slog.DiscardHandler)})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		_, _ = io.Copy(io.Discard, rec.Body)
	}
}

func BenchmarkTeamsHandler(b *testing.B) {
	b.Run("seed-example/players=17", func(b *testing.B) {
		benchTeamsHandler(b, "/v1/teams", seedTeamsBody())
	})
	for _, n := range []int{24, 64} {
		for _, bots := range []bool{false, true} {
			body := `{"teams":2,"players":` + teamsBenchPlayers(n)
			if bots {
				body += fmt.Sprintf(`,"bots":{"mean_weight":50,"target_players":%d,"recommended":{"min":4,"max":64}}`, n+6)
			}
			body += `}`
			b.Run(fmt.Sprintf("players=%d/bots=%v", n, bots), func(b *testing.B) {
				benchTeamsHandler(b, "/v1/teams", body)
			})
		}
	}
}

func BenchmarkTeamsAssignHandler(b *testing.B) {
	body := `{"teams":` + teamsBenchRosters(24) + `,"joiner":{"id":"late","weight":61},` +
		`"bots":{"mean_weight":50,"target_players":30,"recommended":{"min":4,"max":64}}}`
	benchTeamsHandler(b, "/v1/teams/assign", body)
}

func BenchmarkTeamsRebalanceHandler(b *testing.B) {
	for _, n := range []int{20, 60, 252} {
		body := `{"teams":` + teamsBenchRosters(n) + `,"unplaced":` + strings.ReplaceAll(teamsBenchPlayers(4), "player-", "new-") + `}`
		b.Run(fmt.Sprintf("players=%d", n+4), func(b *testing.B) {
			benchTeamsHandler(b, "/v1/teams/rebalance", body)
		})
	}
}

func BenchmarkTeamsAdvantageHandler(b *testing.B) {
	benchTeamsHandler(b, "/v1/teams/advantage", `{"teams":`+teamsBenchRosters(24)+`}`)
}

package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// The check counts a player in both queues' matches as a double only when the two matches
// were live at once: a second match made after the first one's result, or after its
// ticket_ttl_s, is the player's next game.
func TestExclusiveCheckCountsOnlyOverlappingMatches(t *testing.T) {
	url := dbtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, q := range []string{"qa", "qb"} {
		exec(`INSERT INTO queues (name, game_type, mutators, team_size, teams, strategy, expansions, regions, ticket_ttl,
		      max_party_size, tick, created_at, updated_at)
		      VALUES ($1, 'soak', '{}', 1, 2, 'skill', '{}', '{}', '300 s', 1, '1 s', $2, $2)`, q, t0)
	}
	matched := func(queue, player, match string, made time.Time, result bool) {
		t.Helper()
		exec(`INSERT INTO queue_tickets (id, queue, status, players, created_at, expires_at, updated_at, assignment, changed_xid)
		      VALUES ($1, $2, 'matched', jsonb_build_array(jsonb_build_object('id', $3::text)), $4::timestamptz, $4::timestamptz + interval '300 s', $4::timestamptz,
		              jsonb_build_object('match_id', $5::text), pg_current_xact_id())`, queue+"-"+player, queue, player, made, match)
		exec(`INSERT INTO queue_matches (id, queue, created_at, region, teams, pairs, skill_difference, average_difference)
		      VALUES ($1, $2, $3, '', '[]', '[]', 0, 0)`, match, queue, made)
		if result {
			exec(`INSERT INTO matches (match_id, game_type, context_key, body_hash, result, response, created_at)
			      VALUES ($1, 'soak', 'soak', sha256('x'), '{}', '', $2)`, match, made.Add(time.Second))
		}
	}
	// seq: his first match's result came before his second match was made.
	matched("qa", "seq", "m1", t0, true)
	matched("qb", "seq", "m2", t0.Add(2*time.Second), false)
	// ttl: no result, but the second match was made after the first's ticket_ttl_s.
	matched("qa", "ttl", "m3", t0, false)
	matched("qb", "ttl", "m4", t0.Add(400*time.Second), false)
	// live: no result, the second match made while the first was live: the double.
	matched("qb", "live", "m5", t0, false)
	matched("qa", "live", "m6", t0.Add(2*time.Second), true)
	// ok: matched in one, cancelled matched_elsewhere in the other.
	matched("qa", "ok", "m7", t0, true)
	exec(`INSERT INTO queue_tickets (id, queue, status, reason, players, created_at, expires_at, updated_at, changed_xid)
	      VALUES ('qb-ok', 'qb', 'cancelled', 'matched_elsewhere', '[{"id": "ok"}]', $1, $1, $1, pg_current_xact_id())`, t0)

	var s exclusiveSummary
	if err := conn.QueryRow(ctx, sqlExclusive, "qa", "qb").Scan(&s.Arrivals, &s.Unpaired, &s.MatchedTwice, &s.Sequential,
		&s.NotCancelled, &s.WrongCancels); err != nil {
		t.Fatal(err)
	}
	want := exclusiveSummary{Arrivals: 4, MatchedTwice: 1, Sequential: 2}
	if s.Arrivals != want.Arrivals || s.Unpaired != 0 || s.MatchedTwice != want.MatchedTwice || s.Sequential != want.Sequential ||
		s.NotCancelled != 0 || s.WrongCancels != 0 {
		t.Errorf("check: arrivals %d unpaired %d twice %d sequential %d not cancelled %d wrong cancels %d; want 4 0 1 2 0 0",
			s.Arrivals, s.Unpaired, s.MatchedTwice, s.Sequential, s.NotCancelled, s.WrongCancels)
	}
}

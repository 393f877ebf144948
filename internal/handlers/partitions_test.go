package handlers

import (
	"net/http"
	"testing"
	"time"
)

// partition_by over HTTP (issue 37): a 400 naming it when no equal rule that always binds reads
// the attribute, the definition echoes it, and the stats (validated against the spec as
// every answer of exchange) give each partition with its matches; a backfill that names no
// partition is a 400 naming the attribute.
func TestPartitionsOverHTTP(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	const duel = `"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"expansions":{"interval":[{"after_s":0,"value":1000}]},"attributes":{"mode":{"type":"string"}}`
	for _, body := range []string{
		`{` + duel + `,"partition_by":"mode"}`,
		`{` + duel + `,"rules":[{"name":"mode","type":"equal","attribute":"mode","optional_after_s":30}],"partition_by":"mode"}`,
		`{` + duel + `,"rules":[{"name":"mode","type":"equal","attribute":"mode"}],"partition_by":"map"}`,
	} {
		resp := exchange(t, h, http.MethodPut, "/v1/queues/bad", "application/json", body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, "partition_by") {
			t.Errorf("%s: %d %+v, want a 400 naming partition_by", body, resp.StatusCode, p.Errors)
		}
	}
	var q queueJSON
	resp := exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json",
		`{`+duel+`,"rules":[{"name":"mode","type":"equal","attribute":"mode"}],"partition_by":"mode"}`)
	if decodeJSON(t, resp, &q); resp.StatusCode != http.StatusCreated || q.PartitionBy != "mode" {
		t.Fatalf("definition: %d %+v", resp.StatusCode, q)
	}
	backfill := `{"match_id":"g1","teams":[{"players":[{"id":"b1","rating":1000}]},{"players":[]}],"open_slots":[0,1]}`
	if resp := exchange(t, h, http.MethodPost, "/v1/queues/duel/backfill", "application/json", backfill); resp.StatusCode != http.StatusBadRequest ||
		!hasField(readProblem(t, resp), "attributes.mode") {
		t.Errorf("a backfill without its partition: %d, want a 400 naming attributes.mode", resp.StatusCode)
	}
	for i, mode := range []string{"ranked", "casual", "ranked", "casual"} {
		body := `{"players":[{"id":"p` + string(rune('a'+i)) + `","rating":1000}],"attributes":{"mode":"` + mode + `"}}`
		if resp := exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", body); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", body, resp.StatusCode)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st queueStatsJSON
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/queues/duel/stats", "", ""), &st)
		if len(st.Partitions) == 2 && st.Partitions[0].Value == "casual" && st.Partitions[0].Matches.LastMinute == 1 &&
			st.Partitions[1].Matches.LastMinute == 1 && st.Matches.LastMinute == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats after 10 s: partitions %+v, matches %+v; want casual and ranked, a match each", st.Partitions, st.Matches)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

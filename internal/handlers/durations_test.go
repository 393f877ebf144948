package handlers

import (
	"net/http"
	"testing"
)

// A duration too large for a Duration is refused by its range check, naming the field, where
// its product wrapped around to a small value that passed (ttl_s=18446744075 was 1.29 s).
func TestHugeDurationsAreRefusedNotWrapped(t *testing.T) {
	t.Parallel()
	h, _ := queueServer(t)
	if resp := exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", duelQueue); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d", resp.StatusCode)
	}
	for _, tc := range []struct {
		method, path, body, field string
	}{
		{http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"a"}],"ttl_s":18446744075}`, "ttl_s"},
		{http.MethodPut, "/v1/queues/other", `{"context":{"game_type":"ctf"},"team_size":1,"ticket_ttl_s":18446744075}`, "ticket_ttl_s"},
		{http.MethodPut, "/v1/queues/other", `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":18446744073709}`, "tick_ms"},
		{http.MethodPost, "/v1/queues/duel/backfill", `{"match_id":"m1","teams":[{"players":[{"id":"b"}]},{"players":[{"id":"c"}]}],"open_slots":[0,1],"ttl_s":18446744075}`, "ttl_s"},
	} {
		resp := exchange(t, h, tc.method, tc.path, "application/json", tc.body)
		p := readProblem(t, resp)
		named := false
		for _, e := range p.Errors {
			named = named || e.Field == tc.field
		}
		if resp.StatusCode != http.StatusBadRequest || !named {
			t.Errorf("%s %s with a huge %s: %d %+v, want 400 naming it", tc.method, tc.path, tc.field, resp.StatusCode, p)
		}
	}
}

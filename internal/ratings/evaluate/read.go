package evaluate

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/resultjson"
)

// Formats are the results-file formats Read knows.
var Formats = []string{"atp", "results-jsonl"}

// Read parses a results file in the named format, in file order. Results are not validated
// here: Run skips the invalid ones, as the service would answer them 422.
func Read(r io.Reader, format string) ([]ratings.Result, error) {
	switch format {
	case "atp":
		return readATP(r)
	case "results-jsonl":
		return readJSONL(r)
	}
	return nil, fmt.Errorf("unknown format %q (want one of %v)", format, Formats)
}

// atpColumns is the header of the ATP doubles format.
var atpColumns = []string{"date", "event", "round", "surface", "team_a", "team_b", "winner", "retired"}

// readATP reads the ATP doubles CSV format: a header row, then one match per row with the
// columns date,event,round,surface,team_a,team_b,winner,retired; a team is its player ids
// joined by '+', winner is 0 (team_a) or 1 (team_b). A match becomes a result of game type
// "tennis" on the surface as its map, sides "a" and "b" (assigned at random in that data, so a
// model should learn nothing from them), every player present for the whole match, ending on
// the date (the tournament's first day, midnight UTC).
func readATP(r io.Reader) ([]ratings.Result, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("atp: header: %w", err)
	}
	if !slices.Equal(head, atpColumns) {
		return nil, fmt.Errorf("atp: header %q, want %q", head, atpColumns)
	}
	var out []ratings.Result
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("atp: %w", err)
		}
		line, _ := cr.FieldPos(0)
		var w int
		switch rec[6] {
		case "0":
		case "1":
			w = 1
		default:
			return nil, fmt.Errorf("atp: line %d: winner %q, want 0 or 1", line, rec[6])
		}
		date, err := time.Parse("20060102", rec[0])
		if err != nil {
			return nil, fmt.Errorf("atp: line %d: date %q, want YYYYMMDD", line, rec[0])
		}
		res := ratings.Result{MatchID: fmt.Sprintf("atp-%d", len(out)+1), GameType: "tennis", Map: rec[3],
			DurationS: 1, Winner: &w, EndedAt: date}
		for ti, side := range []string{"a", "b"} {
			t := ratings.Team{Side: side}
			for id := range strings.SplitSeq(rec[4+ti], "+") {
				t.Players = append(t.Players, ratings.Player{ID: id, LeftS: 1})
			}
			res.Teams = append(res.Teams, t)
		}
		out = append(out, res)
	}
}

// readJSONL reads one POST /v1/results request body per line (blank lines are skipped), with
// the service's defaults: joined_s 0, left_s duration_s, commander_s 0, winner null a draw. A
// line that is not JSON is an error: the file is broken.
func readJSONL(r io.Reader) ([]ratings.Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []ratings.Result
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		// encoding/json, not the service's strict decoder: members the service does not read
		// are ignored, so an export with more fields still reads.
		var body resultjson.Body
		if err := json.Unmarshal(b, &body); err != nil {
			return nil, fmt.Errorf("results-jsonl: line %d: %w", line, err)
		}
		r, err := body.Result()
		if err != nil {
			// A body the service would refuse for a missing or malformed duration_s or
			// winner becomes the zero Result, which fails validation, so that Prepare skips
			// and counts it like every other result the service refuses.
			r = ratings.Result{}
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results-jsonl: %w", err)
	}
	return out, nil
}

// WriteJSONL writes results as POST /v1/results request bodies, one per line: the format
// Read calls "results-jsonl", which the peers' tool (tools/rating-peers) replays too.
func WriteJSONL(w io.Writer, results []ratings.Result) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, r := range results {
		if err := enc.Encode(resultjson.FromResult(r)); err != nil {
			return err
		}
	}
	return bw.Flush()
}

package handlers

import (
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

// This file holds GET /v1/queues/{name}/stats (scope read).

type queueStatsJSON struct {
	Queue              string          `json:"queue"`
	At                 time.Time       `json:"at"`
	Source             string          `json:"source"`
	SearchingTickets   int             `json:"searching_tickets"`
	SearchingPlayers   int             `json:"searching_players"`
	SearchingBackfills int             `json:"searching_backfills"`
	OldestWaitS        float64         `json:"oldest_wait_s"`
	Matches            countsJSON      `json:"matches"`
	Backfills          countsJSON      `json:"backfills"`
	Expired            countsJSON      `json:"expired"`
	WaitS              waitJSON        `json:"wait_s"`
	MeanQuality        *float64        `json:"mean_quality,omitempty"`
	QualitySamples     int             `json:"quality_samples"`
	Bands              []bandStatsJSON `json:"bands"`
	WaitingOn          map[string]int  `json:"waiting_on,omitempty"`
	// The hour, as the console charts it.
	MatchesPerMinute []int             `json:"matches_per_minute"`
	ExpiredByReason  map[string]int    `json:"expired_by_reason"`
	WaitSLastHour    waitJSON          `json:"wait_s_last_hour"`
	RecentMatches    []recentMatchJSON `json:"recent_matches"`
	Shadow           *shadowStatsJSON  `json:"shadow,omitempty"`
	// Partitions, in a queue with partition_by: each partition's leader and counts.
	Partitions []partitionStatsJSON `json:"partitions,omitempty"`
}

// partitionStatsJSON is one partition's part of a partitioned queue's stats.
type partitionStatsJSON struct {
	Value              string     `json:"value"`
	Leader             string     `json:"leader"`
	At                 *time.Time `json:"at,omitempty"`
	SearchingTickets   int        `json:"searching_tickets"`
	SearchingPlayers   int        `json:"searching_players"`
	SearchingBackfills int        `json:"searching_backfills"`
	Matches            countsJSON `json:"matches"`
}

func newPartitionStatsJSON(parts []queue.Stats) []partitionStatsJSON {
	if parts == nil {
		return nil
	}
	out := make([]partitionStatsJSON, len(parts))
	for i, p := range parts {
		out[i] = partitionStatsJSON{Value: p.Partition, Leader: p.Leader, SearchingTickets: p.SearchingTickets,
			SearchingPlayers: p.SearchingPlayers, SearchingBackfills: p.SearchingBackfills,
			Matches: countsJSON{p.MatchesLastMinute, p.MatchesLastHour}}
		if !p.At.IsZero() {
			at := p.At.UTC()
			out[i].At = &at
		}
	}
	return out
}

// shadowStatsJSON is a shadow-mode queue's comparison of its rules and its match function.
type shadowStatsJSON struct {
	WindowS          int            `json:"window_s"`
	FunctionCalls    int            `json:"function_calls"`
	FunctionFailures int            `json:"function_failures"`
	Rules            shadowSideJSON `json:"rules"`
	Function         shadowSideJSON `json:"function"`
}

type shadowSideJSON struct {
	Matches               int            `json:"matches"`
	TicketsMatched        int            `json:"tickets_matched"`
	MeanAverageDifference *float64       `json:"mean_average_difference,omitempty"`
	MedianWaitS           *float64       `json:"median_wait_s,omitempty"`
	Rejected              map[string]int `json:"rejected"`
}

func newShadowStatsJSON(st *queue.ShadowStats) *shadowStatsJSON {
	if st == nil {
		return nil
	}
	side := func(s queue.ShadowSide) shadowSideJSON {
		out := shadowSideJSON{Matches: s.Matches, TicketsMatched: s.TicketsMatched, Rejected: make(map[string]int, len(s.Rejected))}
		if s.Matches > 0 {
			out.MeanAverageDifference = &s.MeanAverageDifference
		}
		if s.HasWait {
			out.MedianWaitS = &s.MedianWaitS
		}
		for reason, n := range s.Rejected {
			out.Rejected[string(reason)] = n
		}
		return out
	}
	return &shadowStatsJSON{WindowS: int(st.Window / time.Second), FunctionCalls: st.FunctionCalls,
		FunctionFailures: st.FunctionFailed, Rules: side(st.Rules), Function: side(st.Function)}
}

type recentMatchJSON struct {
	ID                string           `json:"id"`
	CreatedAt         time.Time        `json:"created_at"`
	Region            string           `json:"region,omitempty"`
	Teams             []recentTeamJSON `json:"teams"`
	AverageDifference float64          `json:"average_difference"`
	WinProbability    []float64        `json:"win_probability,omitempty"`
}

type recentTeamJSON struct {
	Players       []string `json:"players"`
	AverageRating float64  `json:"average_rating"`
}

type countsJSON struct {
	LastMinute int `json:"last_minute"`
	LastHour   int `json:"last_hour"`
}

type waitJSON struct {
	Samples int      `json:"samples"`
	Median  *float64 `json:"median,omitempty"`
	P90     *float64 `json:"p90,omitempty"`
}

type bandStatsJSON struct {
	Band             string   `json:"band"`
	Min              *float64 `json:"min,omitempty"` // absent: open below
	Max              *float64 `json:"max,omitempty"` // absent: open above
	SearchingTickets int      `json:"searching_tickets"`
	SearchingPlayers int      `json:"searching_players"`
	WaitS            waitJSON `json:"wait_s"`
}

func newWaitJSON(w queue.WaitSummary) waitJSON {
	out := waitJSON{Samples: w.Samples}
	if m, ok := w.Median(); ok {
		out.Median = &m
	}
	if p, ok := w.P90(); ok {
		out.P90 = &p
	}
	return out
}

func finite(x float64) *float64 {
	if math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// handleQueueStats answers GET /v1/queues/{name}/stats: what is searching now (in all and
// per rating band), the matches, fills and expiries of the last minute and hour, the waits
// of the tickets matched in the last 10 minutes and the mean quality of their matches, and
// the hour the console charts: matches per minute, expiries by reason, the hour's waits and
// the last matches with their predicted win probabilities. The
// leader answers from its counters; another replica from the snapshot the leader publishes
// every 2 s (source says which).
func handleQueueStats(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := svc.Stats(r.Context(), chi.URLParam(r, "name"))
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		out := queueStatsJSON{Queue: st.Queue, At: st.At, Source: st.Source, SearchingTickets: st.SearchingTickets,
			SearchingPlayers: st.SearchingPlayers, SearchingBackfills: st.SearchingBackfills, OldestWaitS: st.OldestWait.Seconds(),
			Matches:        countsJSON{st.MatchesLastMinute, st.MatchesLastHour},
			Backfills:      countsJSON{st.BackfillsLastMinute, st.BackfillsLastHour},
			Expired:        countsJSON{st.ExpiredLastMinute, st.ExpiredLastHour},
			WaitS:          newWaitJSON(st.Wait),
			QualitySamples: st.QualitySamples, Bands: make([]bandStatsJSON, len(st.Bands)), WaitingOn: st.WaitingOn}
		if st.QualitySamples > 0 {
			out.MeanQuality = &st.MeanQuality
		}
		out.MatchesPerMinute = st.MatchesPerMinute
		if len(out.MatchesPerMinute) == 0 { // no snapshot yet, or one published before these were
			out.MatchesPerMinute = make([]int, 60)
		}
		out.ExpiredByReason = st.ExpiredByReason
		if out.ExpiredByReason == nil {
			out.ExpiredByReason = map[string]int{}
		}
		out.WaitSLastHour = newWaitJSON(st.HourWait)
		out.Shadow = newShadowStatsJSON(st.Shadow)
		out.Partitions = newPartitionStatsJSON(st.Partitions)
		out.RecentMatches = make([]recentMatchJSON, len(st.Recent))
		for i, m := range st.Recent {
			rm := recentMatchJSON{ID: m.ID, CreatedAt: m.At.UTC(), Region: m.Region, AverageDifference: m.AverageDifference,
				Teams: make([]recentTeamJSON, len(m.Teams)), WinProbability: m.WinProbability}
			for t, players := range m.Teams {
				rm.Teams[t] = recentTeamJSON{Players: players}
				if t < len(m.Averages) {
					rm.Teams[t].AverageRating = m.Averages[t]
				}
			}
			out.RecentMatches[i] = rm
		}
		for i, b := range st.Bands {
			out.Bands[i] = bandStatsJSON{Band: b.Name, Min: finite(b.Min), Max: finite(b.Max), SearchingTickets: b.SearchingTickets,
				SearchingPlayers: b.SearchingPlayers, WaitS: newWaitJSON(b.Wait)}
		}
		respond(w, r, logger, http.StatusOK, out)
	})
}

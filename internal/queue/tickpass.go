package queue

import (
	"slices"
	"time"

	"matchmaker/internal/matchmaker/tick"
)

// TickPass is the production Matcher: matchmaker/tick's pass over the waiting tickets, with
// times as seconds since the pass's own epoch (the oldest ticket's creation), so that the
// float64 seconds the pass works in keep sub-microsecond precision.
type TickPass struct{}

var _ Matcher = TickPass{}

// Match runs one pass of q over waiting at now.
func (TickPass) Match(q Queue, waiting []Ticket, now time.Time) (TickWrite, error) {
	if len(waiting) == 0 {
		return TickWrite{}, nil
	}
	epoch := waiting[0].CreatedAt
	for _, t := range waiting {
		if t.CreatedAt.Before(epoch) {
			epoch = t.CreatedAt
		}
	}
	secs := func(t time.Time) float64 { return t.Sub(epoch).Seconds() }
	in := make([]tick.Ticket, len(waiting))
	for i, t := range waiting {
		tt := tick.Ticket{WaitingSince: secs(t.CreatedAt), ExpiresAt: secs(t.ExpiresAt), Ratings: make([]float64, len(t.Players))}
		for j, p := range t.Players {
			tt.Ratings[j] = p.Rating
		}
		if len(q.Expansions.MaxLatencyMS) > 0 { // latency considered: the queue's regions only
			for _, region := range sortedRegions(t.Latencies) {
				if slices.Contains(q.Regions, region) {
					tt.Latencies = append(tt.Latencies, tick.RegionLatency{Region: region, MS: t.Latencies[region]})
				}
			}
		}
		in[i] = tt
	}
	cfg := tick.Config{TeamSize: q.TeamSize, Strategy: string(q.Strategy),
		Interval: tickSteps(q.Expansions.Interval), MaxLatency: tickSteps(q.Expansions.MaxLatencyMS)}
	out, err := tick.Run(in, secs(now), cfg)
	if err != nil {
		return TickWrite{}, err
	}
	w := TickWrite{At: now, Matches: make([]Match, len(out.Matches))}
	for i, m := range out.Matches {
		match := Match{ID: newID("mt-"), CreatedAt: now, Region: m.Region, Teams: make([]MatchTeam, 2),
			SkillDifference: m.SkillDifference, AverageDifference: m.AverageDifference}
		for team, slots := range m.Teams {
			for _, s := range slots {
				t := waiting[s.Ticket]
				p := t.Players[s.Player]
				match.Teams[team].Players = append(match.Teams[team].Players, MatchPlayer{ID: p.ID, TicketID: t.ID, Rating: p.Rating})
				match.Teams[team].RatingTotal += p.Rating
			}
		}
		for _, p := range m.Pairs {
			a, b := waiting[p.Players[0].Ticket].Players[p.Players[0].Player], waiting[p.Players[1].Ticket].Players[p.Players[1].Player]
			match.Pairs = append(match.Pairs, Pair{Players: [2]string{a.ID, b.ID}, Difference: p.Difference, Interval: p.Interval})
		}
		w.Matches[i] = match
	}
	for _, e := range out.Expired {
		w.Expired = append(w.Expired, Expiry{TicketID: waiting[e.Ticket].ID, Reason: e.Reason})
	}
	return w, nil
}

func tickSteps(in []Step) []tick.Step {
	out := make([]tick.Step, len(in))
	for i, s := range in {
		out[i] = tick.Step{AfterS: s.AfterS, Value: s.Value}
	}
	return out
}

// sortedRegions lists a ticket's regions in order, as the pass wants its latencies.
func sortedRegions(latencies map[string]float64) []string {
	regions := make([]string, 0, len(latencies))
	for r := range latencies {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	return regions
}

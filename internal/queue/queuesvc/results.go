package queuesvc

import (
	"context"
	"slices"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// CheckResult checks a match result against the queue match of its id, if the queue made
// one: its context's game type is the queue's, and every player it names is one of the
// match's, on the team the match gave him (team i of the result is team i of the match; a
// player who left may be left out, bots are not the match's to check). A result of a match
// the queue did not make (a backfill's running match, a match made elsewhere) passes: only
// its own checks apply. So a results key cannot move ratings through a queue match with
// players who did not play it. Faults name the fields of POST /v1/results' body. It returns
// the match it checked (nil: the queue made none), for RecordLeavesOf: a result reads its
// match once, and none when this replica kept it (matchcache.go: a GET of it, or a result
// before). The match returned is shared: read only.
func (s *Service) CheckResult(ctx context.Context, matchID, gameType string, teams [][]string) (*queue.Match, error) {
	m, err := s.immutableMatch(ctx, matchID)
	switch {
	case apperr.CodeOf(err) == apperr.NotFound:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return m, s.checkRoster(ctx, *m, gameType, teams)
}

// checkRoster is CheckResult's check of the result against m.
func (s *Service) checkRoster(ctx context.Context, m queue.Match, gameType string, teams [][]string) error {
	matchID := m.ID
	var f apperr.Fields
	if q, err := s.definition(ctx, m.Queue); err == nil && q.GameType != gameType {
		f.Add("context.game_type", "must be %q: match %s was made by queue %s", q.GameType, matchID, m.Queue)
	}
	if len(teams) != len(m.Teams) {
		f.Add("teams", "must list the %d teams of queue match %s", len(m.Teams), matchID)
		return f.Err()
	}
	for i, team := range teams {
		for j, id := range team {
			if id == "" {
				continue // a bot
			}
			if !slices.ContainsFunc(m.Teams[i].Players, func(p queue.MatchPlayer) bool { return p.ID == id }) {
				f.Add("teams["+strconv.Itoa(i)+"].players["+strconv.Itoa(j)+"].id",
					"is not on team %d of queue match %s: a result names the players the queue matched", i, matchID)
			}
		}
	}
	return f.Err()
}

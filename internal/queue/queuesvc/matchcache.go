package queuesvc

import (
	"context"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// DefaultMatchCache is how many matches a replica keeps unless Config.MatchCache says
// otherwise: at a thousand matches a second, the last few seconds', which is when a game
// backend reads a match it was told of and a soak posts its result.
const DefaultMatchCache = 8192

// matchCache keeps, per replica, the part of the matches it read that never changes once a
// match is made: everything but its connection (which a placement may put on it, on any
// replica, at any time). A match's result is checked against it without a store read, and
// GET /v1/matches/{id} reads only the connection. Each replica has its own, and none is told
// of the others' reads: what it answers is what the store would, so it cannot matter which
// replica is asked. The store keeps a match until the purge of what was made before
// now - Retention (on its leader's clock): an entry is answered only while its match is
// younger than the retention less matchCacheMargin, the clocks' difference allowed between
// replicas, so the match is still stored whenever it is answered from here. Bounded by
// count: the oldest entry in goes first. The matches it gives are shared: read only.
type matchCache struct {
	mu     sync.Mutex
	byID   map[string]*queue.Match
	ring   []string // the ids in the order they came in; next is the oldest once full
	next   int
	maxAge time.Duration
}

// matchCacheMargin is how far a replica's clock may be ahead of the purging leader's before
// an entry could outlive its match's row.
const matchCacheMargin = time.Minute

// newMatchCache keeps up to size matches younger than retention less the margin; size < 1:
// none.
func newMatchCache(size int, retention time.Duration) *matchCache {
	if size < 1 {
		return nil
	}
	return &matchCache{byID: make(map[string]*queue.Match, size), ring: make([]string, 0, size),
		maxAge: retention - matchCacheMargin}
}

// get returns the match of id if it is kept and young enough at now.
func (c *matchCache) get(id string, now time.Time) (*queue.Match, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	m, ok := c.byID[id]
	c.mu.Unlock()
	if !ok || now.Sub(m.CreatedAt) >= c.maxAge {
		return nil, false
	}
	return m, true
}

// put keeps m, without its connection, if it is young enough at now.
func (c *matchCache) put(m queue.Match, now time.Time) {
	if c == nil || now.Sub(m.CreatedAt) >= c.maxAge {
		return
	}
	m.Connection = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[m.ID]; ok {
		return
	}
	if len(c.ring) < cap(c.ring) {
		c.ring = append(c.ring, m.ID)
	} else {
		delete(c.byID, c.ring[c.next])
		c.ring[c.next] = m.ID
		c.next = (c.next + 1) % len(c.ring)
	}
	c.byID[m.ID] = &m
}

// drop forgets the match of id (the store has none: purged early, by a clock further ahead
// than the margin).
func (c *matchCache) drop(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byID, id) // its slot in the ring is reused in its turn
}

// len is how many matches are kept.
func (c *matchCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID)
}

// immutableMatch is the match of id but for its connection: kept, or read from the store
// and kept. The caller must not change it.
func (s *Service) immutableMatch(ctx context.Context, id string) (*queue.Match, error) {
	now := s.now()
	if m, ok := s.matches.get(id, now); ok {
		s.metrics.matchRead("cache")
		return m, nil
	}
	s.metrics.matchRead("store")
	m, err := s.store.GetMatch(ctx, id)
	if err != nil {
		return nil, err
	}
	s.matches.put(m, now)
	return &m, nil
}

// matchNow is the match of id as the store has it now: the kept part, and its connection
// read from the store (the store's NotFound if it has no such match).
func (s *Service) matchNow(ctx context.Context, id string) (queue.Match, error) {
	now := s.now()
	m, ok := s.matches.get(id, now)
	if !ok {
		s.metrics.matchRead("store")
		m, err := s.store.GetMatch(ctx, id)
		if err == nil {
			s.matches.put(m, now)
		}
		return m, err
	}
	s.metrics.matchRead("cache")
	conn, err := s.store.MatchConnection(ctx, id)
	if apperr.CodeOf(err) == apperr.NotFound {
		s.matches.drop(id)
	}
	if err != nil {
		return queue.Match{}, err
	}
	out := *m
	out.Connection = conn
	return out, nil
}

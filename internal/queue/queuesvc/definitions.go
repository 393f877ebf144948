package queuesvc

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"golang.org/x/sync/singleflight"
)

// The queue definitions a replica reads for ticket creations, at most once per
// Config.DefinitionTTL and one read at a time per queue.

// definition is the queue's definition for a ticket creation: the one read within
// Config.DefinitionTTL, else a fresh read, one at a time per queue: the creations that come
// while it is read wait for it (else, under a load of creations, every creation in flight
// when the cached one expired read the queue again, and those reads queued for the pool's
// connections with everything else).
func (s *Service) definition(ctx context.Context, name string) (queue.Queue, error) {
	if s.cfg.DefinitionTTL < 0 {
		return s.store.GetQueue(ctx, name)
	}
	q, ok, generation := s.definitions.get(name, s.cfg.DefinitionTTL)
	if ok {
		return q, nil
	}
	// The read is the first caller's, but not cancelled with its request: the others wait
	// for it (each at most until its own context ends).
	read := s.definitions.flight.DoChan(name, func() (any, error) {
		q, err := s.store.GetQueue(context.WithoutCancel(ctx), name)
		if err == nil {
			s.definitions.put(q, generation)
		}
		return q, err
	})
	select {
	case r := <-read:
		if r.Err != nil {
			return queue.Queue{}, r.Err
		}
		return r.Val.(queue.Queue), nil
	case <-ctx.Done():
		return queue.Queue{}, apperr.Wrap(apperr.Unavailable, ctx.Err(), "queue: reading the queue's definition")
	}
}

// CheckQueue says whether the queue exists, from its definition as a ticket creation reads it
// (cached for Config.DefinitionTTL): an event stream checks it as it opens, thousands at once.
func (s *Service) CheckQueue(ctx context.Context, name string) error {
	if err := ratings.ValidateName(name); err != nil {
		return apperr.Field("name", "%s", err)
	}
	_, err := s.definition(ctx, name)
	return err
}

// definitions are the queue definitions a replica read lately, by name, with when it read them.
type definitions struct {
	clock  clockwork.Clock
	flight singleflight.Group // the reads in progress, by queue name
	mu     sync.Mutex
	read   map[string]definitionRead
	// generation counts the changes made here: a read that began before one is not kept,
	// as it may be older than the change.
	generation uint64
}

type definitionRead struct {
	q  queue.Queue
	at time.Time
}

func (d *definitions) get(name string, ttl time.Duration) (_ queue.Queue, ok bool, generation uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.read[name]
	if !ok || d.clock.Since(r.at) >= ttl {
		return queue.Queue{}, false, d.generation
	}
	return r.q, true, d.generation
}

func (d *definitions) put(q queue.Queue, generation uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if generation != d.generation {
		return
	}
	if d.read == nil {
		d.read = make(map[string]definitionRead)
	}
	d.read[q.Name] = definitionRead{q: q, at: d.clock.Now()}
}

func (d *definitions) forget(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.generation++
	delete(d.read, name)
}

package ratingsdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Group commit. RecordResult does not run a transaction of its own: it queues its result, and
// a few committer goroutines, each with one connection at a time, write whatever results are
// waiting in one transaction (a batch). Nothing waits to fill a batch: a committer takes what
// the queue holds the moment it is free, so a lone result is written at once, alone, and under
// load the results that arrive while the committers are busy go together into the next
// transactions. A batch costs one BEGIN, two round trips, one COMMIT and one WAL flush
// however many results it holds, and its statements take arrays, so Postgres parses, plans
// and executes each once per batch instead of once per result.
//
// Inside a batch the results are applied one after the other in the order they were queued,
// each seeing the ratings and bias cells the ones before it left, exactly as a rebuild
// replays them (their history rows take their sequence numbers in the same order); results
// that share a participant may therefore share a batch. Between concurrent batches the row
// locks serialise, as between single results before. A result that fails (its ApplyFunc
// returns an error, its outcome is malformed, its match id was used with another body) fails
// alone: it is left out of its batch's writes. A batch whose writes fail for a reason the
// data gives (a constraint) is run again one result at a time, so only the result at fault
// fails. RecordResult returns once the transaction holding its result has committed.
//
// What it saves is the database's CPU per result, which is what limits throughput when the
// database's cores are busy. It cannot shorten the WAL flush that every COMMIT waits for, and
// when that flush is the limit (a slow disk) Postgres already shares each flush among the
// commits waiting for it, while a result here also waits for a committer and a batch holds
// its rows' locks until its flush: the README's Performance section has the measurements.

const (
	// DefaultCommitters is how many batches are written at once, each on its own connection:
	// enough that a batch is being assembled, applied in Go and sent while others wait on
	// the server. Fewer make bigger batches, which cost the database less per result, but a
	// result waits longer for a committer; more approach one transaction per result.
	// Options.Committers < 0 turns group commit off.
	DefaultCommitters = 4
	// maxBatch bounds a batch: its arrays, its locks, and the work lost if it must be rerun.
	maxBatch = 64
)

// job is one queued result.
type job struct {
	ctx      context.Context // the caller's: a job whose caller has gone is not written
	p        *prepared
	apply    ratings.ApplyFunc
	attempts int
	out      chan jobResult // buffered: a committer never waits for the caller
}

type jobResult struct {
	rec ratings.Recorded
	err error
}

func (j *job) finish(rec ratings.Recorded, err error) { j.out <- jobResult{rec, err} }

// errQueueClosed is a result queued after the store began to close.
var errQueueClosed = errors.New("db: record result: the store is closing")

// jobQueue holds the jobs waiting for a committer.
type jobQueue struct {
	mu     sync.Mutex
	ready  sync.Cond
	jobs   []*job
	closed bool
}

func newQueue() *jobQueue {
	q := &jobQueue{}
	q.ready.L = &q.mu
	return q
}

// push adds a job at the back; it fails once the queue is closed.
func (q *jobQueue) push(j *job) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errQueueClosed
	}
	q.jobs = append(q.jobs, j)
	q.ready.Signal()
	return nil
}

// pushFront puts jobs back at the front, in their order: they were taken before the others.
func (q *jobQueue) pushFront(jobs []*job) {
	if len(jobs) == 0 {
		return
	}
	q.mu.Lock()
	q.jobs = append(jobs[:len(jobs):len(jobs)], q.jobs...)
	q.ready.Broadcast()
	q.mu.Unlock()
}

// take waits for jobs and takes up to n of them; it returns none once the queue is closed and
// empty.
func (q *jobQueue) take(n int) []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.jobs) == 0 && !q.closed {
		q.ready.Wait()
	}
	k := min(n, len(q.jobs))
	out := make([]*job, k)
	copy(out, q.jobs)
	q.jobs = q.jobs[k:]
	if len(q.jobs) > 0 {
		q.ready.Signal() // another committer can take the rest
	}
	return out
}

// close refuses new jobs; the committers write the queued ones and stop.
func (q *jobQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.ready.Broadcast()
	q.mu.Unlock()
}

// startCommitters starts n committers; the returned channel closes when all have stopped
// (after the queue was closed and emptied).
func (s *Store) startCommitters(n int) <-chan struct{} {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				jobs := s.queue.take(maxBatch)
				if len(jobs) == 0 {
					return
				}
				s.commitJobs(jobs)
			}
		})
	}
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	return stopped
}

// record queues a result and waits for its transaction to commit, or for ctx to end.
func (s *Store) record(ctx context.Context, p *prepared, apply ratings.ApplyFunc) (ratings.Recorded, error) {
	j := &job{ctx: ctx, p: p, apply: apply, out: make(chan jobResult, 1)}
	if s.queue == nil {
		// No group commit: the result is a batch of its own, written on this goroutine.
		for again := []*job{j}; len(again) > 0; {
			if err := ctx.Err(); err != nil {
				return ratings.Recorded{}, db.MapError(err, "record result")
			}
			again = s.commitBatch(again)
		}
		r := <-j.out
		return r.rec, r.err
	}
	if err := s.queue.push(j); err != nil {
		return ratings.Recorded{}, apperr.Wrap(apperr.Unavailable, err, "db: record result: the store is closing")
	}
	select {
	case r := <-j.out:
		return r.rec, r.err
	case <-ctx.Done():
		// The result may still be written (its batch may be committing): the client's retry
		// is answered as a replay if it was.
		return ratings.Recorded{}, db.MapError(ctx.Err(), "record result")
	}
}

// commitJobs writes the jobs a committer took: those whose callers are still waiting, with
// no match id twice (a second result under a match id waits for the next batch, where it is
// a replay or a conflict).
func (s *Store) commitJobs(jobs []*job) {
	var live, later []*job
	ids := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		switch id := j.p.req.Result.MatchID; {
		case j.ctx.Err() != nil:
			j.finish(ratings.Recorded{}, db.MapError(j.ctx.Err(), "record result"))
		case ids[id]:
			later = append(later, j)
		default:
			ids[id] = true
			live = append(live, j)
		}
	}
	again := s.commitBatch(live)
	s.queue.pushFront(append(again, later...))
}

// commitBatch runs one transaction for jobs and answers each job it settles; it returns the
// jobs to queue again (a stale guess of their context, or a transaction to retry).
func (s *Store) commitBatch(jobs []*job) (again []*job) {
	if len(jobs) == 0 {
		return nil
	}
	ctx, cancel := s.db.Background()
	defer cancel()
	b := newBatch(jobs)
	err := s.writeBatch(ctx, b) // its connection is released, the transaction over, when it returns
	for _, bj := range b.jobs {
		if bj.state == settled {
			bj.finish(bj.answer.rec, bj.answer.err)
		}
	}
	if err == nil {
		for _, bj := range b.jobs {
			switch bj.state {
			case accepted:
				bj.finish(bj.rec, nil)
			case stale:
				again = append(again, s.retry(bj.job, errStaleGuess)...)
			}
		}
		return again
	}
	open := b.unsettled()
	switch {
	case db.Retryable(err):
		// Back off a little, at random, so the same transactions do not collide again.
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		for _, j := range open {
			again = append(again, s.retry(j, err)...)
		}
	case len(open) > 1 && apperr.CodeOf(db.MapError(err, "")) == apperr.Internal:
		// Something in the data: one result at a time, so that only its own fails.
		for _, j := range open {
			again = append(again, s.commitBatch([]*job{j})...)
		}
	default:
		if db.TimedOut(ctx) {
			err = apperr.Wrap(apperr.Unavailable, err, fmt.Sprintf("db: record result: the database did not answer within %s", s.db.Timeout()))
		}
		for _, j := range open {
			j.finish(ratings.Recorded{}, db.MapError(err, "record result"))
		}
	}
	return again
}

// retry returns j to run again after err, or answers it if it has run too often.
func (s *Store) retry(j *job, err error) []*job {
	j.attempts++
	if j.attempts < maxAttempts {
		return []*job{j}
	}
	switch {
	case errors.Is(err, errStaleGuess): // the policy keeps changing under us
		err = apperr.Wrap(apperr.Unavailable, err, "db: record result: the mutator policy kept changing, try again")
	case db.Retryable(err): // not the client's fault: a conflict with other results, every time
		err = apperr.Wrap(apperr.Unavailable, err, "db: record result: the database is too busy, try again")
	}
	j.finish(ratings.Recorded{}, db.MapError(err, "record result"))
	return nil
}

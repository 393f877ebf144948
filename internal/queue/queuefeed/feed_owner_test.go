package queuefeed

import "github.com/matchmakerhq/matchmaker/internal/queue"
import "testing"

// A key's event stream sleeps through other keys' events and wakes at its own; a stream that
// reads every ticket's events wakes at any; the feed's stop wakes them all.
func TestAKeysStreamWakesAtItsOwnEventsOnly(t *testing.T) {
	t.Parallel()
	fs := New(nil)
	f := &Feed{Queue: "q", moved: make(chan struct{}), watch: map[string]*TicketWatch{}, stop: func() {}}
	mine := Scope{Owner: "alpha"}
	woken := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	_, _, _, movedMine := fs.Since(f, 0, 10, mine)
	_, _, _, movedAll := fs.Since(f, 0, 10, Scope{All: true})
	fs.publish(f, []queue.Event{{Queue: "q", Seq: 1, Type: queue.EventMatched, TicketID: "t1", Owner: "beta"}}, nil)
	if woken(movedMine) {
		t.Fatal("alpha's stream woke at beta's event")
	}
	if !woken(movedAll) {
		t.Fatal("a stream of every ticket's events slept through beta's event")
	}
	evs, through, covered, again := fs.Since(f, 0, 10, mine)
	if len(evs) != 0 || through != 1 || !covered || again != movedMine {
		t.Fatalf("alpha's stream after beta's event: %v through %d covered %v, same channel %v", evs, through, covered, again == movedMine)
	}

	fs.publish(f, []queue.Event{{Queue: "q", Seq: 2, Type: queue.EventMatched, TicketID: "t2", Owner: "alpha"}}, nil)
	if !woken(movedMine) {
		t.Fatal("alpha's stream slept through its own event")
	}
	evs, through, _, movedMine = fs.Since(f, 1, 10, mine)
	if len(evs) != 1 || evs[0].TicketID != "t2" || through != 2 {
		t.Fatalf("alpha's stream reads %v through %d, want t2's event through 2", evs, through)
	}

	// Two buffers' worth of beta's events later, alpha's stream, behind the buffer, still
	// knows it missed nothing: no read of the store.
	var betas []queue.Event
	for seq := int64(3); seq < 3+2*feedBuffer+10; seq++ {
		betas = append(betas, queue.Event{Queue: "q", Seq: seq, Type: queue.EventMatched, TicketID: "b", Owner: "beta"})
	}
	fs.publish(f, betas, nil)
	if woken(movedMine) {
		t.Fatal("alpha's stream woke at beta's events")
	}
	head := betas[len(betas)-1].Seq
	if evs, through, covered, _ := fs.Since(f, 2, 10, mine); len(evs) != 0 || !covered || through != head {
		t.Fatalf("alpha's stream behind the buffer: %d events through %d covered %v, want none through %d", len(evs), through, covered, head)
	}
	if _, _, covered, _ := fs.Since(f, 2, 10, Scope{All: true}); covered {
		t.Fatal("a stream of every event behind the buffer is told the buffer covers it")
	}
	if evs, _, covered, _ := fs.Since(f, head-feedBuffer, 10, Scope{All: true}); !covered || len(evs) != 10 {
		t.Fatalf("the buffer does not keep its latest %d events: %d read, covered %v", feedBuffer, len(evs), covered)
	}
	if _, _, covered, _ := fs.Since(f, 1, 10, mine); covered {
		t.Fatal("alpha's stream from before its own event t2, behind the buffer, is told the buffer covers it")
	}

	fs.mu.Lock()
	fs.stopLocked(f)
	fs.mu.Unlock()
	if !woken(movedMine) {
		t.Fatal("the feed stopped and alpha's stream sleeps on")
	}
	if _, _, covered, moved := fs.Since(f, 2, 10, mine); covered || !woken(moved) {
		t.Fatal("a stopped feed hands a stream a channel that never closes, or says it covers it")
	}
}

// The streams of one ticket share the channel of its next event; the last of them to stop
// waiting drops it, so that a ticket whose last event came before its streams (or an id of no
// ticket) leaves nothing behind in a feed that runs for days.
func TestTheStreamsOfATicketLeaveNoWakeBehind(t *testing.T) {
	t.Parallel()
	fs := New(nil)
	f := &Feed{Queue: "q", moved: make(chan struct{}), watch: map[string]*TicketWatch{}, stop: func() {}}
	scope := Scope{All: true, Ticket: "tk-a"}
	_, _, _, first := fs.Since(f, 0, 10, scope)
	_, _, _, second := fs.Since(f, 0, 10, scope)
	if first != second {
		t.Fatal("two streams of one ticket wait on different channels")
	}
	fs.Unwait(f, scope, first)
	if len(f.ticketMoved) != 1 {
		t.Fatal("the first stream to stop waiting dropped the second's channel")
	}
	fs.publish(f, []queue.Event{{Queue: "q", Seq: 1, Type: queue.EventCancelled, TicketID: "tk-a", Owner: "alpha"}}, nil)
	select {
	case <-second:
	default:
		t.Fatal("the ticket's event did not wake its stream")
	}
	fs.Unwait(f, scope, second) // after its channel was closed and dropped: nothing to do
	for range 3 {               // streams of a ticket with no event to come
		_, _, _, moved := fs.Since(f, 1, 10, scope)
		fs.Unwait(f, scope, moved)
	}
	if len(f.ticketMoved) != 0 {
		t.Fatalf("the feed keeps %d ticket channels with no stream waiting", len(f.ticketMoved))
	}
}

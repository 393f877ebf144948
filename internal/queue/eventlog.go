package queue

// EventLog is a window of one queue's events: the newest, in Seq order without gaps, the
// oldest dropped. The memory store keeps each queue's events in one (purged from the front),
// and a feed (queuefeed) the latest it read.
type EventLog struct {
	events  []Event
	dropped int64 // the Seq of the last event dropped, or before the first kept
}

// EventLogAfter is an empty log whose first event will be the one after head.
func EventLogAfter(head int64) EventLog { return EventLog{dropped: head} }

// Head is the Seq of the newest event appended (or of the head it started after).
func (l *EventLog) Head() int64 { return l.dropped + int64(len(l.events)) }

// Append adds events that follow the head, numbered (Seq) on from it.
func (l *EventLog) Append(evs ...Event) { l.events = append(l.events, evs...) }

// Kept is the events kept, oldest first: the log's own, not to be changed.
func (l *EventLog) Kept() []Event { return l.events }

// After is the kept events after Seq after (the log's own, as Kept), and whether the log
// reaches back to after: none after it was dropped.
func (l *EventLog) After(after int64) (evs []Event, covered bool) {
	start := min(max(after-l.dropped, 0), int64(len(l.events)))
	return l.events[start:], after >= l.dropped
}

// Drop drops the n oldest events kept. The others move down, so that a log that grows at
// the back and is dropped from at the front does not keep the dropped events alive.
func (l *EventLog) Drop(n int) {
	if n == 0 {
		return
	}
	k := copy(l.events, l.events[n:])
	clear(l.events[k:])
	l.events, l.dropped = l.events[:k], l.dropped+int64(n)
}

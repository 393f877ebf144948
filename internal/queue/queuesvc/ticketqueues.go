package queuesvc

import "sync"

// ticketQueues remembers the queues of the tickets this replica made or read lately, so that
// a long-poll of one watches its queue's feed before its one read of the ticket: without it,
// a long-poll reads the ticket to learn its queue, starts the watch, and reads it again (two
// of the database's transactions per long-poll: docs/performance.md, the soak's fourth
// session). Two generations of at
// most ticketQueuesGeneration entries bound it: a ticket made or polled within the last
// generation's worth of tickets is found.
type ticketQueues struct {
	mu       sync.Mutex
	cur, old map[string]string // ticket id -> queue name
}

// ticketQueuesGeneration is a generation's size: a long-poll comes back within its wait_s
// (60 s at most), so a generation must hold more than a minute of a busy queue's new tickets
// (the soak's 300 a second), and two generations of ids and names stay a few MB.
const ticketQueuesGeneration = 32_768

func (c *ticketQueues) remember(ticketID, queue string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		c.cur = make(map[string]string)
	}
	if _, ok := c.cur[ticketID]; !ok && len(c.cur) >= ticketQueuesGeneration {
		c.old, c.cur = c.cur, make(map[string]string, ticketQueuesGeneration)
	}
	c.cur[ticketID] = queue
}

// lookup returns the queue of a ticket remembered. A ticket id is never moved to another
// queue, but a purged one may be made again in another: the caller checks what it reads.
func (c *ticketQueues) lookup(ticketID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.cur[ticketID]; ok {
		return q, true
	}
	q, ok := c.old[ticketID]
	return q, ok
}

package rulesjson

// A queue's penalties in JSON (DESIGN, "A player across queues, avoid lists, penalties"),
// for the API and the queue store: seconds as whole numbers. The queue maps them
// (queue.PenaltiesOf, queue.PenaltiesJSON).
type (
	Penalties struct {
		Dodge       *DodgePenalty       `json:"dodge,omitempty"`
		LowPriority *LowPriorityPenalty `json:"low_priority,omitempty"`
	}
	DodgePenalty struct {
		WindowS int64          `json:"window_s"`
		Steps   []CooldownStep `json:"steps"`
	}
	CooldownStep struct {
		Count     int   `json:"count"`
		CooldownS int64 `json:"cooldown_s"`
	}
	LowPriorityPenalty struct {
		Leaves     int   `json:"leaves"`
		WindowS    int64 `json:"window_s"`
		Games      int   `json:"games"`
		ExtraWaitS int64 `json:"extra_wait_s"`
	}
)

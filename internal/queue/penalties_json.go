package queue

import (
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// seconds is n seconds, saturated so that no count of seconds overflows into a valid
// duration (the domain's checks then refuse it).
func seconds(n int64) time.Duration {
	const most = int64(1<<63-1) / int64(time.Second)
	switch {
	case n > most:
		return time.Duration(1<<63 - 1)
	case n < -most:
		return time.Duration(-1 << 63)
	}
	return time.Duration(n) * time.Second
}

// PenaltiesOf is p in the domain's types; nil is none.
func PenaltiesOf(p *rulesjson.Penalties) Penalties {
	if p == nil {
		return Penalties{}
	}
	var out Penalties
	if d := p.Dodge; d != nil {
		out.Dodge = &DodgePenalty{Window: seconds(d.WindowS), Steps: make([]CooldownStep, len(d.Steps))}
		for i, s := range d.Steps {
			out.Dodge.Steps[i] = CooldownStep{Count: s.Count, Cooldown: seconds(s.CooldownS)}
		}
	}
	if lp := p.LowPriority; lp != nil {
		out.LowPriority = &LowPriorityPenalty{Leaves: lp.Leaves, Window: seconds(lp.WindowS), Games: lp.Games,
			ExtraWait: seconds(lp.ExtraWaitS)}
	}
	return out
}

// PenaltiesJSON is p in JSON; nil when none is on.
func PenaltiesJSON(p Penalties) *rulesjson.Penalties {
	if !p.Any() {
		return nil
	}
	out := &rulesjson.Penalties{}
	if d := p.Dodge; d != nil {
		out.Dodge = &rulesjson.DodgePenalty{WindowS: int64(d.Window / time.Second), Steps: make([]rulesjson.CooldownStep, len(d.Steps))}
		for i, s := range d.Steps {
			out.Dodge.Steps[i] = rulesjson.CooldownStep{Count: s.Count, CooldownS: int64(s.Cooldown / time.Second)}
		}
	}
	if lp := p.LowPriority; lp != nil {
		out.LowPriority = &rulesjson.LowPriorityPenalty{Leaves: lp.Leaves, WindowS: int64(lp.Window / time.Second), Games: lp.Games,
			ExtraWaitS: int64(lp.ExtraWait / time.Second)}
	}
	return out
}

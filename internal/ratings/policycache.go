package ratings

import (
	"context"
	"sync"
	"time"
)

// PolicyRefresh is how long CachePolicy keeps the mutator policy before reading it again: how
// soon a mutator classified on another replica changes the rating context this one reads
// weights in, and how soon another replica's newly seen mutators reach this one's list.
const PolicyRefresh = 5 * time.Second

// CachePolicy wraps store so that the mutator policy is read at most every refresh: every
// team split, matchmake, ticket creation with stored ratings and line-protocol game asks for
// its rating context, and each used to read the whole mutators table. A classification or a
// result recorded through the wrapper applies to its next read at once. (Recording resolves
// a result's context inside its own transaction, so results are always split by the policy
// as stored.) Wrap the store once, at wiring, under the Service.
func CachePolicy(store Store, refresh time.Duration) Store {
	return &policyCache{Store: store, refresh: refresh, now: time.Now}
}

type policyCache struct {
	Store
	refresh time.Duration
	now     func() time.Time

	mu     sync.Mutex
	policy *MutatorPolicy // never handed out: callers get copies
	at     time.Time
}

func (pc *policyCache) forget() {
	pc.mu.Lock()
	pc.policy = nil
	pc.mu.Unlock()
}

// Policy returns a copy of the policy, from the cache while fresh.
func (pc *policyCache) Policy(ctx context.Context) (*MutatorPolicy, error) {
	pc.mu.Lock()
	cached, at := pc.policy, pc.at
	pc.mu.Unlock()
	if cached != nil && pc.now().Sub(at) < pc.refresh {
		return cached.Clone(), nil
	}
	p, err := pc.Store.Policy(ctx)
	if err != nil {
		return nil, err
	}
	pc.mu.Lock()
	pc.policy, pc.at = p.Clone(), pc.now()
	pc.mu.Unlock()
	return p, nil
}

func (pc *policyCache) SetMutator(ctx context.Context, name string, affectsGameplay bool) (MutatorInfo, error) {
	defer pc.forget()
	return pc.Store.SetMutator(ctx, name, affectsGameplay)
}

// RecordResult forgets the policy when the result names a mutator it does not list: the store
// registers it, and the list of mutators should show it.
func (pc *policyCache) RecordResult(ctx context.Context, req RecordRequest, apply ApplyFunc) (Recorded, error) {
	pc.mu.Lock()
	cached := pc.policy
	pc.mu.Unlock()
	if cached != nil {
		for _, m := range req.Result.Mutators {
			if !cached.knows(m) {
				defer pc.forget()
				break
			}
		}
	}
	return pc.Store.RecordResult(ctx, req, apply)
}

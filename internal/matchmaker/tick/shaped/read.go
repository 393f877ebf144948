package shaped

import (
	"cmp"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/check"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/avoid"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/intern"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// read checks the tickets and reads the live ones, in one sweep: each ticket's attributes
// are looked up once, for the check and the rules (its map is a cache miss or two). A large
// queue is cut into a sweep a core, each over its own part of the tickets, joined after in
// input order.
func (s *shaper) read(f *apperr.Fields) {
	cfg := s.cfg
	s.roles = cfg.Roles
	s.latency = len(cfg.MaxLatency) > 0
	s.startRules()
	parts, workers := 1, 1
	// Sweeps in parallel pay where reading a ticket is heavy (its attribute map, its role
	// lists): without either, a second goroutine cost more CPU than it saved.
	if len(s.tickets) >= parallelMin && (len(cfg.Rules) > 0 || len(cfg.Roles) > 0) {
		workers = runtime.GOMAXPROCS(0)
		parts = min(workers*sweepsPerCore, maxSweeps)
	}
	sweeps := make([]sweep, parts)
	sc := s.buffers
	sc.sweeps = scratch.Resize(sc.sweeps, parts)
	// Each sweep reads its live tickets into one array at its tickets' own places, which
	// joinSweeps closes the gaps of (the expired ones'): no sweep's array is copied.
	sc.live, sc.kept = scratch.Resize(sc.live, len(s.tickets)), scratch.Resize(sc.kept, len(s.tickets))
	for k := range sweeps {
		from, to := k*len(s.tickets)/parts, (k+1)*len(s.tickets)/parts
		sweeps[k].start(s, &sc.sweeps[k], from, to)
		sweeps[k].live, sweeps[k].kept = sc.live[from:from:to], sc.kept[from:from:to]
	}
	// Each core takes the next sweep left: a core slowed by another machine's work on its
	// host reads fewer of them. One sweep runs here (a small pass: no goroutine to start).
	var next atomic.Int32
	var wg sync.WaitGroup
	take := func() {
		for k := int(next.Add(1)) - 1; k < parts; k = int(next.Add(1)) - 1 {
			sweeps[k].run()
		}
	}
	for range workers - 1 {
		wg.Go(take)
	}
	take()
	wg.Wait()
	regions := s.joinSweeps(f, sweeps)
	if regions > matchpool.MaxRegions {
		f.Add("tickets", "must name at most %d regions in one pass", matchpool.MaxRegions)
	}
	if f.Len() > 0 {
		return
	}
	slices.Sort(s.regions)
	if s.latency {
		for j := range s.live {
			s.live[j].regions = s.regionMask(&s.tickets[s.live[j].input])
		}
	}
	s.endRules(sweeps[0].readers, s.inputs)
	if slices.ContainsFunc(sweeps, func(w sweep) bool { return w.avoiding }) {
		live := make([]int32, len(s.live))
		for j := range s.live {
			live[j] = s.live[j].input
		}
		s.avoid = avoid.Read(s.tickets, live, s.now, cfg)
	}
}

// maxSweeps bounds the sweeps read cuts a queue into; sweepsPerCore is how many it cuts a
// queue into for each core.
const (
	maxSweeps     = 8
	sweepsPerCore = 2
)

// sweep is read's work on the tickets in[from:to]: their faults, and the live ones as read,
// with the rules' values numbered by its own interners (join renumbers them).
type sweep struct {
	pass     *shaper
	from, to int
	faults   apperr.Fields
	checker  *check.Checker
	readers  []ruleReader
	rules    []ruleArrays
	touchKey string // touch's lookup: an attribute a rule reads
	widest   float64
	touched  int // touch's sum, kept so that the reads are not dropped
	live     []sticket
	kept     []int
	expired  []matchpool.Expiry
	regionID map[string]int
	ratings  []float64
	// the players' role lists, by ticket from sticket.ratings as the ratings; each the
	// check's (attributeChecker.roleLists)
	playerRoles []matchrules.RoleList
	types       fillTypes
	avoiding    bool // a live ticket has an avoid list
}

// sweepArrays are a sweep's arrays, kept from one pass to the next.
type sweepArrays struct {
	ratings     []float64
	playerRoles []matchrules.RoleList
	rules       []ruleArrays
}

// start readies the sweep over in[from:to]; the first one's arrays take every sweep's
// tickets after (joinSweeps appends them).
func (w *sweep) start(s *shaper, arrays *sweepArrays, from, to int) {
	cfg := s.cfg
	n := to - from
	if from == 0 {
		n = len(s.tickets)
	}
	*w = sweep{pass: s, from: from, to: to, checker: check.NewChecker(cfg), widest: -1,
		regionID: map[string]int{}, ratings: scratch.Reuse(arrays.ratings, n)}
	if s.latency {
		w.widest = cfg.MaxLatency[len(cfg.MaxLatency)-1].Value
	}
	if len(s.roles) > 0 {
		w.playerRoles = scratch.Reuse(arrays.playerRoles, n)
	}
	for _, r := range cfg.Rules {
		if r.ReadsAttribute() {
			w.touchKey = r.Attribute
			break
		}
	}
	arrays.rules = scratch.Resize(arrays.rules, len(cfg.Rules))
	w.rules = make([]ruleArrays, len(cfg.Rules))
	w.readers = make([]ruleReader, len(cfg.Rules))
	for k := range cfg.Rules {
		r := &cfg.Rules[k]
		d, was, rd := &w.rules[k], &arrays.rules[k], &w.readers[k]
		d.bound = scratch.Reuse(was.bound, n)
		rd.declared = w.checker.DeclaredIndex(r.Attribute)
		if a, ok := cfg.Attributes[r.Attribute]; ok && a.Default != nil {
			rd.defaultValue = *a.Default
		}
		if r.HasTolerance() {
			d.tolerance = scratch.Reuse(was.tolerance, n)
		}
		switch r.Kind {
		case matchrules.RuleEqual:
			d.valueID = scratch.Reuse(was.valueID, n)
			rd.numberIDs = map[float64]int32{}
		case matchrules.RuleIntersect:
			d.listSet = scratch.Reuse(was.listSet, n)
		case matchrules.RuleDistance:
			d.number = scratch.Reuse(was.number, n)
		}
	}
}

// run checks and reads the sweep's tickets.
func (w *sweep) run() {
	s, cfg := w.pass, w.pass.cfg
	for i := w.from; i < w.to; i++ {
		t := &s.tickets[i]
		if j := i + touchAhead; j < w.to {
			w.touched += touch(&s.tickets[j], w.touchKey)
		}
		check.Ticket(&w.faults, cfg, t, i, w.checker)
		for _, l := range t.Latencies {
			if _, ok := w.regionID[l.Region]; !ok && l.Region != "" {
				w.regionID[l.Region] = len(w.regionID)
			}
		}
		if w.faults.Len() > 0 {
			continue // the pass fails: the rest is only checked
		}
		if why := matchpool.ExpiryReason(t, s.now, w.widest); why != "" {
			w.expired = append(w.expired, matchpool.Expiry{Ticket: i, Reason: why})
			continue
		}
		w.kept = append(w.kept, i)
		w.avoiding = w.avoiding || len(t.Avoid) > 0
		w.live = append(w.live, w.readTicket(t, i))
		w.readRules(t)
	}
}

// joinSweeps puts the sweeps' faults, tickets and values together in input order, the values of
// each rule numbered as one sweep would have, and returns the number of regions named.
func (s *shaper) joinSweeps(f *apperr.Fields, sweeps []sweep) int {
	regions := map[string]bool{}
	lives, players := 0, 0
	for k := range sweeps {
		w := &sweeps[k]
		if k == 0 {
			*f = w.faults
		} else {
			f.Include(w.faults.Err())
		}
		for r := range w.regionID {
			regions[r] = true
		}
		lives, players = lives+len(w.live), players+len(w.ratings)
		s.touched += w.touched
	}
	s.regions = make([]string, 0, len(regions))
	for r := range regions {
		s.regions = append(s.regions, r)
	}
	if f.Len() > 0 {
		return len(regions)
	}
	first := &sweeps[0]
	s.ratings, s.ticketTypes, s.expired = first.ratings, first.types, first.expired
	s.playerRoles = first.playerRoles
	for k := range s.rules {
		d, a := &s.rules[k], &first.rules[k]
		d.bound, d.tolerance, d.valueID, d.listSet, d.number = a.bound, a.tolerance, a.valueID, a.listSet, a.number
	}
	for k := range sweeps[1:] {
		w := &sweeps[k+1]
		shift := int32(len(s.ratings))
		var types []int32
		if s.fillSpace != nil {
			types = s.ticketTypes.renumber(s.fillSpace, &w.types)
		}
		for j := range w.live {
			w.live[j].ratingsAt += shift
			if types != nil {
				w.live[j].fillType = types[w.live[j].fillType]
			}
		}
		s.ratings, s.expired = append(s.ratings, w.ratings...), append(s.expired, w.expired...)
		if s.playerRoles != nil { // a list per player, as the ratings
			s.playerRoles = append(s.playerRoles, w.playerRoles...)
		}
		for r := range s.rules {
			s.joinRule(r, &first.readers[r], &w.readers[r], &w.rules[r])
		}
	}
	sc := s.buffers
	s.live, s.inputs = sc.live[:0], sc.kept[:0]
	for k := range sweeps { // each sweep's tickets right after the one's before
		w := &sweeps[k]
		n := len(s.live)
		s.live, s.inputs = s.live[:n+len(w.live)], s.inputs[:n+len(w.kept)]
		if n != w.from { // some tickets before had expired: close the gap
			copy(s.live[n:], w.live)
			copy(s.inputs[n:], w.kept)
		}
	}
	// The joined arrays but the tickets' are the first sweep's, grown.
	sc.sweeps[0].ratings = s.ratings[:0]
	sc.sweeps[0].playerRoles = s.playerRoles[:0]
	for k := range s.rules {
		d := &s.rules[k]
		sc.sweeps[0].rules[k] = ruleArrays{bound: d.bound[:0], valueID: d.valueID[:0], listSet: d.listSet[:0], number: d.number[:0], tolerance: d.tolerance[:0]}
	}
	for k := range sweeps[1:] {
		w := &sweeps[k+1]
		a := &sc.sweeps[k+1]
		a.ratings, a.playerRoles = w.ratings[:0], w.playerRoles[:0]
		for r := range w.rules {
			x := &w.rules[r]
			a.rules[r] = ruleArrays{bound: x.bound[:0], valueID: x.valueID[:0], listSet: x.listSet[:0], number: x.number[:0], tolerance: x.tolerance[:0]}
		}
	}
	return len(regions)
}

// joinRule appends a later sweep's values of rule k (its reader rd, arrays a) to the pass's,
// renumbered by the first sweep's reader into.
func (s *shaper) joinRule(k int, into, rd *ruleReader, a *ruleArrays) {
	d := &s.rules[k]
	d.bound = append(d.bound, a.bound...)
	d.tolerance = append(d.tolerance, a.tolerance...)
	d.number = append(d.number, a.number...)
	switch d.rule.Kind {
	case matchrules.RuleEqual:
		renumber := make([]int32, 0, len(rd.interned.Names)+len(rd.nums))
		same := true
		for id, name := range rd.interned.Names {
			renumber = append(renumber, into.interned.ID(name))
			same = same && renumber[id] == int32(id)
		}
		for id, x := range rd.nums {
			to, ok := into.numberIDs[x]
			if !ok {
				to = int32(len(into.nums))
				into.numberIDs[x] = to
				into.nums = append(into.nums, x)
			}
			renumber = append(renumber, to)
			same = same && to == int32(id)
		}
		from := len(d.valueID)
		d.valueID = append(d.valueID, a.valueID...)
		if !same {
			for j, id := range d.valueID[from:] {
				d.valueID[from+j] = renumber[id]
			}
		}
	case matchrules.RuleIntersect:
		renumber := make([]int32, len(rd.interned.Names))
		same := true
		for id, name := range rd.interned.Names {
			renumber[id] = into.interned.ID(name)
			same = same && renumber[id] == int32(id)
		}
		from := len(d.listSet)
		d.listSet = append(d.listSet, a.listSet...)
		if !same { // beyond 64 values in all the sets are dropped: endRules reads lists
			for j, set := range d.listSet[from:] {
				var out uint64
				for ; set != 0; set &= set - 1 {
					if to := renumber[bits.TrailingZeros64(set)]; to < 64 {
						out |= 1 << to
					}
				}
				d.listSet[from+j] = out
			}
		}
	}
}

// touchAhead is how far ahead of the sweep read touches a ticket's scattered parts.
const touchAhead = 8

// touch reads a word of two of the ticket's scattered parts (its attribute map, by a
// lookup of key, and its ratings), so that their cache misses overlap with the sweep's
// work on the tickets before it rather than stall the sweep when it gets there (touching
// their lists and roles too did not help). The result only keeps the reads from being
// dropped.
func touch(t *matchpool.Ticket, key string) int {
	n := len(t.Ratings)
	if len(t.Ratings) > 0 {
		n += int(t.Ratings[0])
	}
	if key != "" {
		if v, ok := t.Attributes[key]; ok {
			n += len(v.Type)
		}
	}
	return n
}

func (w *sweep) readTicket(t *matchpool.Ticket, i int) sticket {
	s := w.pass
	wait := s.now - t.WaitingSince
	x := sticket{input: int32(i), since: t.WaitingSince, size: len(t.Ratings), interval: matchrules.Current(s.cfg.Interval, wait),
		ratingsAt: int32(len(w.ratings))}
	for _, r := range t.Ratings {
		x.total += r
	}
	w.ratings = append(w.ratings, t.Ratings...)
	x.mean = x.total / float64(x.size)
	x.regions = math.MaxUint64      // regionMask's, once every region is known
	var roles []matchrules.RoleList // per player, the roles it plays in order
	if len(s.roles) > 0 {
		for j := range x.size {
			var rs matchrules.RoleList        // none: any
			if j < len(w.checker.RoleLists) { // the check's, of this ticket
				rs = w.checker.RoleLists[j]
			}
			w.playerRoles = append(w.playerRoles, rs)
		}
		roles = w.playerRoles[x.ratingsAt : int(x.ratingsAt)+x.size : int(x.ratingsAt)+x.size]
		x.rolesKey = roleSignature(roles)
		if x.size == 1 {
			x.soloRoles[0] = roles[0]
		}
	}
	if s.fillSpace != nil {
		x.fillType = w.types.typeOf(s.fillSpace, roles, x.size)
	}
	return x
}

// regionMask is the regions ticket t accepts now: all without latency data.
func (s *shaper) regionMask(t *matchpool.Ticket) uint64 {
	if len(t.Latencies) == 0 {
		return math.MaxUint64
	}
	limit := matchrules.Current(s.cfg.MaxLatency, s.now-t.WaitingSince)
	mask := uint64(0)
	for _, l := range t.Latencies {
		if l.MS <= limit {
			r, _ := slices.BinarySearch(s.regions, l.Region)
			mask |= 1 << r
		}
	}
	return mask
}

// ruleReader reads one rule's values of the live tickets as the sweep meets them.
type ruleReader struct {
	declared     int              // the rule's attribute among the checker's declared ones, -1: none
	defaultValue matchrules.Value // its default
	interned     intern.Table
	numberIDs    map[float64]int32
	nums         []float64 // equal (numbers): by id
}

// startRules makes the pass's rules, without their arrays (the sweeps').
func (s *shaper) startRules() {
	s.partitionRule = -1
	s.rules = make([]shapeRule, len(s.cfg.Rules))
	for k := range s.cfg.Rules {
		r := &s.cfg.Rules[k]
		d := &s.rules[k]
		d.rule = r
		d.always, d.kind, d.minCommon = r.OptionalAfterS == nil, walkKinds[r.Kind], r.MinCommonValues()
		if s.partitionRule < 0 && r.Kind == matchrules.RuleEqual && d.always {
			s.partitionRule = k
		}
		if r.ReportsValue() {
			s.reported = append(s.reported, k)
		}
	}
}

// readRules appends each rule's values of ticket t, the last live one, whose attributes
// check has just checked.
func (w *sweep) readRules(t *matchpool.Ticket) {
	s := w.pass
	wait := s.now - t.WaitingSince
	for k := range s.rules {
		d, rd := &w.rules[k], &w.readers[k]
		r := s.rules[k].rule
		if r.HasTolerance() {
			d.tolerance = append(d.tolerance, matchrules.Current(r.Expansions, wait))
		}
		v := rd.defaultValue // validated: a rule reads a given attribute or a default
		if rd.declared >= 0 && w.checker.Given[rd.declared] {
			v = w.checker.Values[rd.declared]
		}
		d.bound = append(d.bound, r.BindsAt(wait) || r.OptionalOnly != "" && r.BindsValue(wait, &v))
		switch r.Kind {
		case matchrules.RuleEqual:
			if v.Type == matchrules.TypeNumber {
				id, ok := rd.numberIDs[v.Num]
				if !ok {
					id = int32(len(rd.nums))
					rd.numberIDs[v.Num] = id
					rd.nums = append(rd.nums, v.Num)
				}
				d.valueID = append(d.valueID, id)
			} else {
				d.valueID = append(d.valueID, rd.interned.ID(v.Str))
			}
		case matchrules.RuleIntersect:
			var set uint64 // the values numbered below 64: all of them while bits holds
			for _, x := range v.List {
				if id := rd.interned.ID(x); id < 64 {
					set |= 1 << id
				}
			}
			d.listSet = append(d.listSet, set)
		case matchrules.RuleDistance:
			if r.ReadsRating() {
				d.number = append(d.number, w.live[len(w.live)-1].mean)
			} else {
				d.number = append(d.number, v.Num)
			}
		}
	}
}

// endRules completes the rules' arrays once every live ticket is read (kept: their input
// indices): an intersect rule of more than 64 values keeps its lists as value ids, read
// again from the tickets.
func (s *shaper) endRules(readers []ruleReader, kept []int) {
	for k := range s.rules {
		d, rd := &s.rules[k], &readers[k]
		d.names, d.nums = rd.interned.Names, rd.nums
		if d.rule.Kind != matchrules.RuleIntersect {
			continue
		}
		if d.listAsBits = len(d.names) <= 64; d.listAsBits {
			d.byName = make([]int32, len(d.names)) // common lists a match's values in this order
			for id := range d.byName {
				d.byName[id] = int32(id)
			}
			slices.SortFunc(d.byName, func(a, b int32) int { return cmp.Compare(d.names[a], d.names[b]) })
			continue
		}
		d.listSet = nil
		d.list = scratch.Reuse(s.buffers.lists, len(kept))
		for _, i := range kept {
			v, ok := s.tickets[i].Attributes[d.rule.Attribute]
			if !ok {
				v = rd.defaultValue
			}
			ids := s.listIDs.Take(len(v.List))
			for n, x := range v.List {
				ids[n] = rd.interned.ID(x)
			}
			intern.SortIDs(ids)
			d.list = append(d.list, ids)
		}
	}
}

// values is the number of values intersect rule d's ticket i lists.
func (d *shapeRule) values(i int32) int {
	if d.listAsBits {
		return bits.OnesCount64(d.listSet[i])
	}
	return len(d.list[i])
}

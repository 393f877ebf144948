package shaped

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Fill states: the exact test, for a walk, that a group's parties and roles can still fill
// the teams. The teams' compositions summed (rolesCanFill) let a group take tickets that no
// split into teams can seat: a party of five is a whole team, so the other team's five
// players must meet the composition alone, which the sum does not see. Such a group took
// candidate after candidate, each one's split failing, until its walk ended: on the role
// benchmark most splits failed so, and the anchors stuck that way did much of the walking.
//
// A team's state is its players counted by role dimension (each role its composition
// bounds, and one free dimension for the roles it leaves free, 0..size); a group's states
// are the teams' states of every way of seating its tickets, parties whole, and giving
// each player one of his roles: one bit per combination of the teams' states. A state from
// which the team can no longer be filled and meet its minimums (its deficit of minimums
// beyond the places left) is dropped: adding players never brings it back. So a candidate
// may join when some state reaches a kept state with it seated on some team, and a group
// of the shape's players has a state only when its split exists. The split's search
// (split.go) seats its tickets through the same states, a team at a time, and drops a
// placement as soon as a team has none.
//
// A group keeps its states as a word per combination of the states of every team but the
// last (a row), a bit per state of the last team, so that seating a ticket on the last team
// is a step of a whole word; and each team's states in any of them (its projection): a
// ticket can join when, for some team, a state of the projection can seat it (canSeat), a
// test of a word per team against the ticket type's answers computed once.
//
// The states are kept only while they are few (fillMaxStates: 324 for 5v5 with a 1/2/2
// composition); a larger shape keeps the summed check and its failed splits.
const (
	fillMaxStates    = 1 << 10
	fillMaxTeamState = 64 // a team's states fit one word
)

// fillSpace is the geometry of the group states of one shape.
type fillSpace struct {
	teams  []fillTeam
	states int // combinations of the teams' states
	rows   int // combinations of the states of every team but the last
	kinds  int // distinct team definitions: a ticket's players' dimensions are kept per kind
	// digits[row*len(teams)+k]: team k's state in row (k < the last team)
	digits []uint8
}

// fillTeam is one team's states, numbered in mixed radix over its dimensions.
type fillTeam struct {
	mult  int     // the group state is Σ team state x mult
	n     int     // its states
	dims  int     // role dimensions
	kind  int     // its definition's index among the distinct ones
	twin  int     // an earlier team of the same definition, -1: seating there is the same
	step  []int8  // [state*dims+d]: the state with one more player in dimension d, -1 beyond a bound
	ok    uint64  // the states from which the team can still be filled
	met   uint64  // the states that meet every minimum of its composition
	dimOf []uint8 // by role
	// trans[m*n+st]: the states, among ok, that st reaches with a player of dimensions m
	// (a bit per dimension) seated
	trans []uint64
}

// newFillSpace returns the states of cfg's shape, nil when they would be too many or the
// shape has no composition (packing the parties is then checked as it was).
func newFillSpace(cfg *matchrules.Config, in *shapeInfo) *fillSpace {
	if !slices.Contains(in.hasComposition, true) || len(cfg.Roles) == 0 {
		return nil
	}
	fs := &fillSpace{states: 1}
	kindOf := map[int]int{} // by the first team of a definition (shapeInfo.twinOf)
	for k, size := range in.sizes {
		t := fillTeam{mult: fs.states, twin: -1, dimOf: make([]uint8, len(cfg.Roles))}
		if c := in.twinOf[k]; c != k {
			t.twin = c
		}
		kind, ok := kindOf[in.twinOf[k]]
		if !ok {
			kind = len(kindOf)
			kindOf[in.twinOf[k]] = kind
		}
		t.kind = kind
		// The bounded roles get a dimension each, the free ones (if any) share the last.
		var lo, hi []int
		for r := range cfg.Roles {
			if in.hasComposition[k] && (in.roleMin[k][r] > 0 || in.roleMax[k][r] < size) {
				t.dimOf[r] = uint8(len(hi))
				lo, hi = append(lo, in.roleMin[k][r]), append(hi, min(in.roleMax[k][r], size))
			}
		}
		free := len(hi)
		for r := range cfg.Roles {
			if !in.hasComposition[k] || in.roleMin[k][r] == 0 && in.roleMax[k][r] >= size {
				t.dimOf[r] = uint8(free)
				if len(hi) == free {
					lo, hi = append(lo, 0), append(hi, size)
				}
			}
		}
		t.dims, t.n = len(hi), 1
		for _, h := range hi {
			if t.n *= h + 1; t.n > fillMaxTeamState {
				return nil
			}
		}
		if fs.states *= t.n; fs.states > fillMaxStates {
			return nil
		}
		t.build(lo, hi, size)
		fs.teams = append(fs.teams, t)
	}
	fs.kinds = len(kindOf)
	last := len(fs.teams) - 1
	fs.rows = fs.teams[last].mult
	fs.digits = make([]uint8, fs.rows*len(fs.teams))
	for row := range fs.rows {
		for k := range last {
			t := &fs.teams[k]
			fs.digits[row*len(fs.teams)+k] = uint8(row / t.mult % t.n)
		}
	}
	return fs
}

// build fills the team's step table and the states it can still be filled from.
func (t *fillTeam) build(lo, hi []int, size int) {
	t.step = make([]int8, t.n*t.dims)
	count := make([]int, t.dims)
	for st := range t.n {
		x, players, deficit, spare := st, 0, 0, 0
		for d := range t.dims {
			count[d] = x % (hi[d] + 1)
			x /= hi[d] + 1
			players += count[d]
			deficit += max(0, lo[d]-count[d])
			spare += hi[d] - count[d]
		}
		room := size - players
		if room >= 0 && deficit <= room && spare >= room {
			t.ok |= 1 << st
			if deficit == 0 {
				t.met |= 1 << st
			}
		}
		stride := 1
		for d := range t.dims {
			t.step[st*t.dims+d] = -1
			if count[d] < hi[d] && players < size {
				t.step[st*t.dims+d] = int8(st + stride)
			}
			stride *= hi[d] + 1
		}
	}
	t.trans = make([]uint64, t.n<<t.dims)
	for m := range 1 << t.dims {
		for st := range t.n {
			var to uint64
			for d := range t.dims {
				if m&(1<<d) != 0 && t.step[st*t.dims+d] >= 0 {
					to |= 1 << t.step[st*t.dims+d]
				}
			}
			t.trans[m*t.n+st] = to & t.ok
		}
	}
}

// playerDims is a player's role dimensions on a team of kind t (a bit per dimension): those
// of the roles he lists, or every one when he lists none.
func (t *fillTeam) playerDims(roles []uint8) uint32 {
	if len(roles) == 0 {
		return 1<<t.dims - 1
	}
	var m uint32
	for _, r := range roles {
		m |= 1 << t.dimOf[r]
	}
	return m
}

// ticketDims appends ticket x's players' dimensions, kind by kind, to out.
func (fs *fillSpace) ticketDims(out []uint32, roles []matchrules.RoleList, size int) []uint32 {
	for kind := range fs.kinds {
		t := fs.kindTeam(kind)
		for p := range size {
			var rs []uint8
			if p < len(roles) {
				rs = roles[p].Roles()
			}
			out = append(out, t.playerDims(rs))
		}
	}
	return out
}

func (fs *fillSpace) kindTeam(kind int) *fillTeam {
	for k := range fs.teams {
		if fs.teams[k].kind == kind {
			return &fs.teams[k]
		}
	}
	return nil
}

// seat returns the states of team k reachable from its state st with the ticket whose
// players' dimensions are dims seated on it, among those it can still be filled from.
func (t *fillTeam) seat(st int, dims []uint32) uint64 {
	return t.seatFrom(1<<st, dims)
}

// seatFrom is seat from any of the states of cur.
func (t *fillTeam) seatFrom(cur uint64, dims []uint32) uint64 {
	for _, m := range dims {
		var next uint64
		trans := t.trans[int(m)*t.n : int(m+1)*t.n]
		for c := cur; c != 0; c &= c - 1 {
			next |= trans[bits.TrailingZeros64(c)]
		}
		if cur = next; cur == 0 {
			return 0
		}
	}
	return cur
}

// stride is the length of a type's seat table: fillMaxTeamState states a kind.
func (fs *fillSpace) stride() int { return fs.kinds * fillMaxTeamState }

// seatType is seatFrom for a ticket of type typ on a team of the given kind: by the
// type's table, a word a state of cur.
func (s *shaper) seatType(typ int32, kind int, cur uint64) uint64 {
	to := s.ticketTypes.to[typ][kind*fillMaxTeamState : (kind+1)*fillMaxTeamState]
	var next uint64
	for ; cur != 0; cur &= cur - 1 {
		next |= to[bits.TrailingZeros64(cur)]
	}
	return next
}

// canSeat says whether the group, some way its tickets are seated, can take the ticket of
// node n on some team and still fill the shape: whether some team's projection holds a
// state that seats a ticket of its type (the teams are seated independently of each
// other, given the group's state).
func (s *shaper) canSeat(g *group, n *walkNode) bool {
	can := s.ticketTypes.can[n.fillType]
	for k := range s.fillSpace.teams {
		if g.projection[k]&can[s.fillSpace.teams[k].kind] != 0 {
			return true
		}
	}
	return false
}

// seatAll sets the group's states to those with a ticket of type typ and size players
// seated too: on the last team a row's
// word at once, on another team row by row. A team whose state is its twin's (an earlier
// team of the same definition) is not seated on: the twin's seating is the same up to the
// teams' order.
func (s *shaper) seatAll(g *group, typ int32, size int) {
	fs := s.fillSpace
	teams := len(fs.teams)
	last := &fs.teams[teams-1]
	next := scratch.Resize(s.fillBuf, fs.rows)
	clear(next)
	for row, word := range g.fill {
		if word == 0 {
			continue
		}
		digits := fs.digits[row*teams : (row+1)*teams]
		cur := word
		if last.twin >= 0 {
			cur &^= 1 << digits[last.twin]
		}
		if cur != 0 {
			next[row] |= s.seatType(typ, last.kind, cur)
		}
		for k := range teams - 1 {
			t := &fs.teams[k]
			local := int(digits[k])
			if t.twin >= 0 && local == int(digits[t.twin]) {
				continue
			}
			for to := s.ticketTypes.to[typ][t.kind*fillMaxTeamState+local]; to != 0; to &= to - 1 {
				next[row+(bits.TrailingZeros64(to)-local)*t.mult] |= word
			}
		}
	}
	s.fillBuf, g.fill = g.fill, next
	s.project(g)
}

// project sets each team's projection of the group's states.
func (s *shaper) project(g *group) {
	fs := s.fillSpace
	teams := len(fs.teams)
	g.projection = scratch.Resize(g.projection, teams)
	clear(g.projection)
	for row, word := range g.fill {
		if word == 0 {
			continue
		}
		for k, d := range fs.digits[row*teams : (row+1)*teams-1] {
			g.projection[k] |= 1 << d
		}
		g.projection[teams-1] |= word
	}
}

// fillTypes numbers the tickets' types: a ticket's players' dimensions, each kind's
// sorted (a ticket's seats do not depend on the order of its players), so that tickets of
// one type seat alike. A pass has one table; each of read's sweeps numbers its own tickets,
// renumbered when the sweeps are joined.
type fillTypes struct {
	of map[string]int32 // by key (the dimensions' bytes)
	// solos' types, by their role set (a bit per role)
	solos map[uint32]int32
	keys  []string
	// by type: its players' dimensions, kind by kind (a small table a walk reads in cache),
	// by kind the team states that can seat it, and by kind and team state the states it
	// reaches seated there (seat's, looked up rather than stepped player by player)
	dims [][]uint32
	can  [][]uint64
	to   [][]uint64
	// scratch
	key     []byte
	dimsBuf []uint32
}

// typeOf is the type of a ticket of these players' roles.
func (ft *fillTypes) typeOf(fs *fillSpace, roles []matchrules.RoleList, size int) int32 {
	// Most tickets are solos, whose type is their one role set's: looked up by that set
	// rather than by the key of their dimensions.
	var solo uint32
	if size == 1 {
		solo = 1 << 31 // any: a set no list gives (MaxRoles bits)
		if len(roles) > 0 && roles[0].Len() > 0 {
			solo = 0
			for _, r := range roles[0].Roles() {
				solo |= 1 << r
			}
		}
		if t, ok := ft.solos[solo]; ok {
			return t
		}
	}
	t := ft.typeOfDims(fs, roles, size)
	if size == 1 {
		if ft.solos == nil {
			ft.solos = map[uint32]int32{}
		}
		ft.solos[solo] = t
	}
	return t
}

// typeOfDims is typeOf, by the key of the ticket's dimensions.
func (ft *fillTypes) typeOfDims(fs *fillSpace, roles []matchrules.RoleList, size int) int32 {
	dims := fs.ticketDims(ft.dimsBuf[:0], roles, size)
	ft.dimsBuf = dims
	key := ft.key[:0]
	for kind := range fs.kinds {
		slices.Sort(dims[kind*size : (kind+1)*size])
	}
	for _, m := range dims {
		key = binary.LittleEndian.AppendUint32(key, m)
	}
	ft.key = key
	if t, ok := ft.of[string(key)]; ok {
		return t
	}
	return ft.add(fs, string(key), dims)
}

// add numbers a new type, of key and dims.
func (ft *fillTypes) add(fs *fillSpace, key string, dims []uint32) int32 {
	if ft.of == nil {
		ft.of = map[string]int32{}
	}
	t := int32(len(ft.dims))
	ft.of[key] = t
	ft.keys = append(ft.keys, key)
	ft.dims = append(ft.dims, slices.Clone(dims))
	size := len(dims) / fs.kinds
	can := make([]uint64, fs.kinds)   // by kind: the team states that can seat it
	to := make([]uint64, fs.stride()) // by kind, by state: seat's
	for kind := range can {
		team := fs.kindTeam(kind)
		for st := range team.n {
			seated := team.seat(st, dims[kind*size:(kind+1)*size])
			to[kind*fillMaxTeamState+st] = seated
			if seated != 0 && team.ok&(1<<st) != 0 {
				can[kind] |= 1 << st
			}
		}
	}
	ft.can, ft.to = append(ft.can, can), append(ft.to, to)
	return t
}

// renumber gives types of another table (from) this table's numbers: the map from its
// numbers to this one's.
func (ft *fillTypes) renumber(fs *fillSpace, from *fillTypes) []int32 {
	to := make([]int32, len(from.keys))
	for t, key := range from.keys {
		n, ok := ft.of[key]
		if !ok {
			n = ft.add(fs, key, from.dims[t])
		}
		to[t] = n
	}
	return to
}

// resetFill makes the group's states the one of empty teams.
func (s *shaper) resetFill(g *group) {
	g.fill = scratch.Resize(g.fill, s.fillSpace.rows)
	clear(g.fill)
	g.fill[0] = 1
	s.project(g)
}

package matchrules

// FitRoles gives each player one of the roles he lists (any role, when he lists none), each
// role r to at least lo[r] and at most hi[r] players, preferring a player's earlier roles.
// It returns whether every player got a role and how many of the minimums are met; out[p]
// is player p's role (-1: none).
//
// It is a flow with lower bounds in two phases of augmenting paths: first every role is
// capped at its minimum, which meets as many minimums as any assignment can; then at its
// maximum, for the players left. An augmenting path never lowers a role's count, so the
// second phase keeps what the first met.
func FitRoles(players []RoleList, lo, hi []int, out []int8) (all bool, covered int) {
	f := roleFlow{players: players, out: out, roles: len(lo)}
	for p := range players {
		out[p] = -1
	}
	f.limit = lo
	for p := range players {
		f.visited = [MaxRoles]bool{}
		f.augment(p)
	}
	for r := range f.roles {
		covered += f.count[r]
	}
	all = true
	f.limit = hi
	for p := range players {
		if out[p] >= 0 {
			continue
		}
		f.visited = [MaxRoles]bool{}
		if !f.augment(p) {
			all = false
		}
	}
	return all, covered
}

// RoleList is a player's roles in his order of preference, as indices of the queue's roles
// (none: any); Config.RoleListOf makes one. It is a value, not a slice: a pass copies
// players' lists into groups and splits at every check, and lists without pointers cost
// neither a write barrier nor the collector's scan.
type RoleList struct {
	n     uint8
	roles [MaxRoles]uint8
}

// Roles is l's roles, in order of preference.
func (l *RoleList) Roles() []uint8 { return l.roles[:l.n] }

// Len is how many roles l lists (0: any).
func (l *RoleList) Len() int { return int(l.n) }

// roleFlow is the state of FitRoles's augmenting paths.
type roleFlow struct {
	players []RoleList
	out     []int8
	roles   int
	limit   []int
	count   [MaxRoles]int
	visited [MaxRoles]bool
}

// augment finds player p a role: one with room, or one whose player can move to another.
func (f *roleFlow) augment(p int) bool {
	if f.players[p].n == 0 {
		for r := range f.roles {
			if f.try(p, r) {
				return true
			}
		}
		return false
	}
	for _, r := range f.players[p].Roles() {
		if f.try(p, int(r)) {
			return true
		}
	}
	return false
}

func (f *roleFlow) try(p, r int) bool {
	if f.visited[r] {
		return false
	}
	f.visited[r] = true
	if f.count[r] < f.limit[r] {
		f.out[p] = int8(r)
		f.count[r]++
		return true
	}
	for q := range f.players {
		if q != p && f.out[q] == int8(r) && f.augment(q) {
			f.out[p] = int8(r) // q moved away: its place is p's
			return true
		}
	}
	return false
}

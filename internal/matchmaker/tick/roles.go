package tick

// roleFit gives each player one of the roles he lists (any role, when he lists none), each
// role r to at least lo[r] and at most hi[r] players, preferring a player's earlier roles.
// It returns whether every player got a role and how many of the minimums are met; out[p]
// is player p's role (-1: none).
//
// It is a flow with lower bounds in two phases of augmenting paths: first every role is
// capped at its minimum, which meets as many minimums as any assignment can; then at its
// maximum, for the players left. An augmenting path never lowers a role's count, so the
// second phase keeps what the first met.
func roleFit(players [][]uint8, lo, hi []int, out []int8) (all bool, covered int) {
	n := len(lo)
	var count [MaxRoles]int
	var visited [MaxRoles]bool
	for p := range players {
		out[p] = -1
	}
	var augment func(p int, limit []int) bool
	augment = func(p int, limit []int) bool {
		try := func(r int) bool {
			if visited[r] {
				return false
			}
			visited[r] = true
			if count[r] < limit[r] {
				out[p] = int8(r)
				count[r]++
				return true
			}
			for q := range players {
				if q != p && out[q] == int8(r) && augment(q, limit) {
					out[p] = int8(r) // q moved away: its place is p's
					return true
				}
			}
			return false
		}
		if len(players[p]) == 0 {
			for r := range n {
				if try(r) {
					return true
				}
			}
			return false
		}
		for _, r := range players[p] {
			if try(int(r)) {
				return true
			}
		}
		return false
	}
	for p := range players {
		visited = [MaxRoles]bool{}
		augment(p, lo)
	}
	for r := range n {
		covered += count[r]
	}
	all = true
	for p := range players {
		if out[p] >= 0 {
			continue
		}
		visited = [MaxRoles]bool{}
		if !augment(p, hi) {
			all = false
		}
	}
	return all, covered
}

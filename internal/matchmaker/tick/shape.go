package tick

import (
	"slices"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Limits of a team shape.
const (
	MaxTeams = 64 // teams in one match
	MaxRoles = 16 // roles a queue declares
	// MaxShapedPlayers bounds the players of one shaped match (Σ team sizes).
	MaxShapedPlayers = 512
)

// WaitTeams is what "why a ticket waits" calls a shape its candidates cannot fill: enough
// of them passed every rule, but their parties do not pack into the teams, or their roles
// do not meet the composition.
const WaitTeams = "teams"

// TeamDef is one team of a shaped match (Config.Shape).
type TeamDef struct {
	Name string // "" in a symmetric shape; unique when given
	Size int    // players, 1..MaxTeamSize
	// MinSize is the fewest players the team may start with, by the anchor's wait: steps
	// whose values never increase (a 5v5 that may start as 4v4 after 90 s: [{0, 5}, {90,
	// 4}]). Empty: Size, always.
	MinSize []Step
	// Composition bounds the players of each role in the team; a role it does not name is
	// free (0..Size). Every player of a team with a composition plays one role he listed
	// (Ticket.Roles; a player who lists none plays any).
	Composition map[string]RoleRange
}

// RoleRange is how many players of a team play one role.
type RoleRange struct{ Min, Max int }

// Team is one team of a shaped match.
type Team struct {
	Name    string
	Players []Slot
	// Roles are the players' roles, by Players' index; nil when the queue declares none.
	Roles []string
	// OpenSlots is how many players the team lacks of its Size: a match may start short once
	// its anchor waited past a step of MinSize.
	OpenSlots int
	Total     float64 // the players' ratings summed
}

// shaped says whether a pass runs the shaped search: any shape but two teams of TeamSize
// without roles.
func (c *Config) shaped() bool { return len(c.Shape) > 0 }

func (c *Config) addShapeFaults(f *apperr.Fields) {
	if len(c.Roles) > MaxRoles {
		f.Add("roles", "must list at most %d roles", MaxRoles)
	}
	for i, r := range c.Roles {
		switch {
		case r == "":
			f.Add("roles["+strconv.Itoa(i)+"]", "must not be empty")
		case slices.Contains(c.Roles[:i], r):
			f.Add("roles["+strconv.Itoa(i)+"]", "must not repeat a role: %q is listed before", r)
		}
	}
	if !c.shaped() {
		return
	}
	if len(c.Shape) < 2 || len(c.Shape) > MaxTeams {
		f.Add("teams", "must be 2..%d teams", MaxTeams)
	}
	if c.Strategy == GreedyPairs {
		f.Add("strategy", "must be %q for a queue with a team shape: greedy_pairs pairs two teams", RatingWindow)
	}
	players, names := 0, map[string]bool{}
	for i, d := range c.Shape {
		at := func(field string) string { return "teams[" + strconv.Itoa(i) + "]." + field }
		if d.Name != "" {
			if names[d.Name] {
				f.Add(at("name"), "must be unique: %q is taken", d.Name)
			}
			names[d.Name] = true
		}
		if d.Size < 1 || d.Size > MaxTeamSize {
			f.Add(at("size"), "must be 1..%d", MaxTeamSize)
			continue
		}
		players += d.Size
		for j, s := range d.MinSize {
			step := func() string { return at("min_size[" + strconv.Itoa(j) + "]") }
			switch {
			case j == 0 && s.AfterS != 0:
				f.Add(step()+".after_s", "must be 0: the first step holds from the start")
			case j > 0 && !(s.AfterS > d.MinSize[j-1].AfterS && s.AfterS <= MaxMagnitude):
				f.Add(step()+".after_s", "must be greater than the previous step's and at most %g", MaxMagnitude)
			}
			switch {
			case s.Value != float64(int(s.Value)) || s.Value < 1 || int(s.Value) > d.Size:
				f.Add(step()+".value", "must be a whole number of players, 1..size (%d)", d.Size)
			case j > 0 && s.Value > d.MinSize[j-1].Value:
				f.Add(step()+".value", "must be at most the previous step's (%g): a team may start shorter as its anchor waits", d.MinSize[j-1].Value)
			}
		}
		c.addCompositionFaults(f, at, d)
	}
	if players > MaxShapedPlayers {
		f.Add("teams", "must hold at most %d players in all: they hold %d", MaxShapedPlayers, players)
	}
}

func (c *Config) addCompositionFaults(f *apperr.Fields, at func(string) string, d TeamDef) {
	if len(d.Composition) > 0 && len(c.Roles) == 0 {
		f.Add(at("composition"), "needs the queue's roles")
		return
	}
	mins := 0
	free := false // a role without bounds takes any number
	for _, r := range c.Roles {
		b, ok := d.Composition[r]
		if !ok {
			free = true
			continue
		}
		mins += b.Min
	}
	maxes := 0
	for role, b := range d.Composition {
		field := at("composition." + role)
		if !slices.Contains(c.Roles, role) {
			f.Add(field, "must be one of the queue's roles")
			continue
		}
		if b.Min < 0 || b.Max < b.Min || b.Max > d.Size {
			f.Add(field, "must have 0 <= min <= max <= size (%d)", d.Size)
		}
		maxes += b.Max
	}
	switch {
	case mins > d.Size:
		f.Add(at("composition"), "cannot fill a team: its minimums need %d players, the team holds %d", mins, d.Size)
	case len(d.Composition) > 0 && !free && maxes < d.Size:
		f.Add(at("composition"), "cannot fill a team: its maximums allow %d players, the team holds %d", maxes, d.Size)
	}
}

// ValidateShape reports the faults of c's team shape and roles alone (teams,
// teams[i].size|name|min_size[j].after_s|min_size[j].value|composition.<role>, roles[i],
// strategy), for a service that checks the rest of its definition itself.
func (c Config) ValidateShape() error {
	var f apperr.Fields
	c.addShapeFaults(&f)
	return f.Err()
}

// addRoleFaults checks a ticket's roles: one list per player at most, each a queue role,
// none twice; k, when not nil, keeps partyFits's answers for the pass.
func (c *Config) addRoleFaults(f *apperr.Fields, t *Ticket, at func(string) string, k *attributeChecker) {
	if len(t.Roles) == 0 {
		return
	}
	if len(t.Roles) > len(t.Ratings) {
		f.Add(at("roles"), "must give at most one list per player (%d)", len(t.Ratings))
	}
	// The lists as indices: a pass reads them from k (roleLists) rather than look the names
	// up again, and the names are checked one by one only when some list is not valid.
	valid := true
	lists := k.listsBuf(len(t.Roles))
	for i, rs := range t.Roles {
		var ok bool
		lists[i], ok = c.roleListOf(rs)
		valid = valid && ok
	}
	if c.shaped() && len(t.Roles) > 1 && len(c.Roles) > 0 && !k.partyFits(c, lists) {
		f.Add(at("roles"), "cannot all be played on one team: no team's composition takes this party's roles")
	}
	if valid {
		return
	}
	for i, rs := range t.Roles {
		for j, r := range rs {
			field := func() string { return at("roles[" + strconv.Itoa(i) + "][" + strconv.Itoa(j) + "]") }
			switch {
			case !slices.Contains(c.Roles, r):
				f.Add(field(), "must be one of the queue's roles %v", c.Roles)
			case slices.Contains(rs[:j], r):
				f.Add(field(), "must not repeat a role: %q is listed before", r)
			}
		}
	}
}

// partyFits says whether a party with these roles (a list per player, none: any) can play
// on one of the shape's teams: as many players as the team holds at most, each with a role
// its composition still allows. A party that fits no team can never be matched.
func (c *Config) partyFits(roles [][]string) bool {
	if len(roles) > MaxTeamSize {
		return false // refused by a check of its own
	}
	var lists [MaxTeamSize]roleList
	for j, rs := range roles {
		lists[j], _ = c.roleListOf(rs)
	}
	return c.partyListsFit(lists[:len(roles)])
}

// roleListOf is a player's roles as indices of the queue's roles, those it does not know left
// out; ok says that every one was known and none repeated.
func (c *Config) roleListOf(names []string) (l roleList, ok bool) {
	ok = true
	var seen uint32
	for _, r := range names {
		k := slices.Index(c.Roles, r)
		switch {
		case k < 0 || k >= MaxRoles:
			ok = false
		case seen&(1<<k) != 0:
			ok = false
		case l.n < MaxRoles:
			seen |= 1 << k
			l.roles[l.n] = uint8(k)
			l.n++
		}
	}
	return l, ok
}

// partyListsFit is partyFits for a party's role lists (roleListOf's).
func (c *Config) partyListsFit(players []roleList) bool {
	if len(players) > MaxTeamSize || len(c.Roles) > MaxRoles {
		return false // refused by the checks of their own
	}
	var loA, hiA [MaxRoles]int
	var outA [MaxTeamSize]int8
	lo, hi, out := loA[:len(c.Roles)], hiA[:len(c.Roles)], outA[:len(players)]
	for _, d := range c.Shape {
		if len(players) > d.Size {
			continue
		}
		for k, r := range c.Roles {
			hi[k] = d.Size
			if b, ok := d.Composition[r]; ok {
				hi[k] = b.Max
			}
		}
		if all, _ := roleFit(players, lo, hi, out); all {
			return true
		}
	}
	return false
}

// PartyFits says whether a party whose players list these roles can play on one of the
// shape's teams (see partyFits): a service refuses a party that cannot.
func (c Config) PartyFits(roles [][]string) bool { return c.partyFits(roles) }

// largestTeam is the most players a shape's team holds: a party may be no larger.
func (c *Config) largestTeam() int {
	if !c.shaped() {
		return c.TeamSize
	}
	n := 0
	for _, d := range c.Shape {
		n = max(n, d.Size)
	}
	return n
}

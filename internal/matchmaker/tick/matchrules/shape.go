package matchrules

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

// Shaped says whether a pass runs the shaped search (tick/shaped): any shape but two teams of TeamSize
// without roles.
func (c *Config) Shaped() bool { return len(c.Shape) > 0 }

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
	if !c.Shaped() {
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

// partyFits says whether a party with these roles (a list per player, none: any) can play
// on one of the shape's teams: as many players as the team holds at most, each with a role
// its composition still allows. A party that fits no team can never be matched.
func (c *Config) partyFits(roles [][]string) bool {
	if len(roles) > MaxTeamSize {
		return false // refused by a check of its own
	}
	var lists [MaxTeamSize]RoleList
	for j, rs := range roles {
		lists[j], _ = c.RoleListOf(rs)
	}
	return c.PartyListsFit(lists[:len(roles)])
}

// RoleListOf is a player's roles as indices of the queue's roles, those it does not know left
// out; ok says that every one was known and none repeated.
func (c *Config) RoleListOf(names []string) (l RoleList, ok bool) {
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

// PartyListsFit is PartyFits for a party's role lists (RoleListOf's).
func (c *Config) PartyListsFit(players []RoleList) bool {
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
		if all, _ := FitRoles(players, lo, hi, out); all {
			return true
		}
	}
	return false
}

// PartyFits says whether a party whose players list these roles can play on one of the
// shape's teams (see partyFits): a service refuses a party that cannot.
func (c Config) PartyFits(roles [][]string) bool { return c.partyFits(roles) }

// LargestTeam is the most players a shape's team holds: a party may be no larger.
func (c *Config) LargestTeam() int {
	if !c.Shaped() {
		return c.TeamSize
	}
	n := 0
	for _, d := range c.Shape {
		n = max(n, d.Size)
	}
	return n
}

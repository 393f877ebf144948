package ratings

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

// fuzzBytes turns fuzz input into choices: small values most of the time, raw float bits
// (NaN, infinities, negative zero, subnormals) now and then.
type fuzzBytes struct{ b []byte }

func (f *fuzzBytes) byte() byte {
	if len(f.b) == 0 {
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c
}

func (f *fuzzBytes) float(scale float64) float64 {
	switch mode := f.byte(); {
	case mode < 200: // a fraction of scale, on a grid of 1/199
		return float64(f.byte()%200) / 199 * scale
	case mode < 240:
		return float64(mode-200) - 5 // small integers, some negative
	default:
		var raw [8]byte
		for i := range raw {
			raw[i] = f.byte()
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(raw[:]))
	}
}

var (
	goodNames = []string{"a", "b", "Bob", "marines", "aliens", "red", "blue", "instagib", "LowGrav", "ns2_x"}
	badNames  = []string{"", "x y", "é", "\x00", "a,b", "p+q", "\xff"}
)

// name is a valid name most of the time.
func (f *fuzzBytes) name() string {
	if c := f.byte(); c >= 230 {
		return badNames[int(c)%len(badNames)]
	}
	return goodNames[int(f.byte())%len(goodNames)]
}

// result builds a mostly valid result whose faults, when it has some, are few.
func (f *fuzzBytes) result() Result {
	r := Result{MatchID: f.name(), GameType: f.name(), Map: f.name()}
	for range f.byte() % 4 {
		r.Mutators = append(r.Mutators, f.name())
	}
	r.DurationS = f.float(3600)
	if f.byte() < 230 {
		r.DurationS = 1 + r.DurationS
	}
	nTeams := 2
	if c := f.byte(); c >= 240 {
		nTeams = int(c % 4)
	}
	sides := []string{"marines", "aliens"}
	next := 0
	for ti := range nTeams {
		t := Team{Side: sides[ti%2]}
		if f.byte() >= 230 {
			t.Side = f.name()
		}
		for range 1 + f.byte()%6 {
			p := Player{}
			id := fmt.Sprintf("p%d", next)
			next++
			if c := f.byte(); c >= 240 { // perhaps someone listed before
				id = fmt.Sprintf("p%d", int(c)%max(next, 1))
			}
			switch f.byte() % 16 {
			case 0:
				p.ID, p.Bot = id, f.name()
			case 1:
				p.ID = f.name()
			case 2, 3, 4:
				p.Bot = id
			default:
				p.ID = id
			}
			p.JoinedS = f.float(r.DurationS)
			p.LeftS = f.float(r.DurationS)
			if f.byte() < 220 && p.LeftS < p.JoinedS {
				p.JoinedS, p.LeftS = p.LeftS, p.JoinedS
			}
			if c := f.byte(); c%3 == 0 {
				p.CommanderS = f.float(1) * (p.LeftS - p.JoinedS)
			} else if c%3 == 1 && c > 200 {
				p.CommanderS = f.float(r.DurationS)
			}
			t.Players = append(t.Players, p)
		}
		r.Teams = append(r.Teams, t)
	}
	if w := f.byte(); w < 200 {
		r.Winner = intp(int(w % 2))
	} else if w >= 240 {
		r.Winner = intp(int(w%5) - 2)
	}
	return r
}

// FuzzValidateAndApply checks, for every model, that Validate and Apply agree, never panic, and that a valid
// result always gives finite ratings, a probability and shares that sum to one; three results
// in a row, so later ones start from ratings the model produced.
func FuzzValidateAndApply(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 1, 7, 2, 3, 0, 199, 3, 2, 0, 199, 5, 0, 3, 0, 0, 199, 6, 2, 3, 1, 0, 199, 1})
	f.Add([]byte{5, 1, 6, 0, 100, 50, 0, 5, 2, 4, 2, 0, 0, 0, 199, 0, 6, 2, 3, 0, 0, 3, 10, 0, 190, 0, 0})
	f.Add([]byte("this is a longer seed with assorted bytes in it \xff\xfe\xfd\x00\x01 to start from"))
	var models []Model
	for _, name := range ModelNames() {
		m, _ := ModelByName(name)
		models = append(models, m)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{data}
		states := make([]State, len(models))
		for range 3 { // a short history, so priors are ratings the model produced
			r := in.result()
			verr := r.Validate()
			for i, m := range models {
				o, err := states[i].Apply(m, r)
				if (verr == nil) != (err == nil) {
					t.Fatalf("%s: Validate = %v but Apply = %v", m.Name(), verr, err)
				}
				if err != nil {
					continue
				}
				p := o.WinProbability
				if !(p[0] >= 0 && p[0] <= 1 && p[1] >= 0 && p[1] <= 1) || !finite(o.Bias) || !o.BiasUpdate.Terms.valid() {
					t.Fatalf("%s: prediction %v, bias %v, %+v for %+v", m.Name(), p, o.Bias, o.BiasUpdate, r)
				}
				var shares float64
				for _, u := range o.Updates {
					shares += u.Share
					a := u.After
					for _, v := range []float64{a.Skill, a.Offset, a.Commander, a.SkillG, a.CommanderG, a.Sigma, a.OffsetSigma,
						a.CommanderSigma, u.Share, u.CommandShare, a.Weight()} {
						if !finite(v) {
							t.Fatalf("%s: non-finite value in %+v for %+v", m.Name(), u, r)
						}
					}
					if a.Sigma < 0 || a.OffsetSigma < 0 || a.CommanderSigma < 0 {
						t.Fatalf("%s: negative uncertainty in %+v", m.Name(), u)
					}
				}
				if math.Abs(shares-1) > 1e-9 {
					t.Fatalf("%s: shares sum to %v for %+v", m.Name(), shares, r)
				}
			}
		}
	})
}

// Package skill is the thesis's performance-based skill rating (eq. 6.5): a rating from
// four measured skills, each weighed by an importance coefficient. The pairing package
// matches on such ratings; the simulator searches the coefficients.
package skill

import "github.com/matchmakerhq/matchmaker/internal/apperr"

// Stats are the four measured skills of the thesis's skill rating (eq. 6.5), each in [0,1].
// Accuracy and ReactionTime are better when smaller (they are a spread and a delay);
// Awareness and Movement are better when larger.
type Stats struct {
	Accuracy     float64
	ReactionTime float64
	Awareness    float64
	Movement     float64
}

// Coefficients weigh each skill in the rating ("importance coefficients" a, r, w, m of
// eq. 6.5), each in [0,1]. The thesis's default is 0.5 each; its optimised set (eq. 8.1) is
// Accuracy 0.7072, ReactionTime 0.544, Awareness 0.272, Movement 0.2.
type Coefficients struct {
	Accuracy     float64
	ReactionTime float64
	Awareness    float64
	Movement     float64
}

// DefaultCoefficients returns the thesis's default coefficients: 0.5 each, which rates
// players between 0 and 2000.
func DefaultCoefficients() Coefficients {
	return Coefficients{Accuracy: 0.5, ReactionTime: 0.5, Awareness: 0.5, Movement: 0.5}
}

// Rating is the thesis's eq. 6.5:
//
//	(1000 - Accuracy*1000)*a + (1000 - ReactionTime*1000)*r + Awareness*1000*w + Movement*1000*m
//
// It does not check its input; validate Stats and Coefficients first when they come from a
// request.
func Rating(s Stats, c Coefficients) float64 {
	return (1000-s.Accuracy*1000)*c.Accuracy +
		(1000-s.ReactionTime*1000)*c.ReactionTime +
		s.Awareness*1000*c.Awareness +
		s.Movement*1000*c.Movement
}

// Validate reports every coefficient outside [0,1] (NaN included) as an apperr.Invalid
// naming accuracy, reaction_time, awareness or movement; the caller says where the
// coefficients sit in its input (apperr.Rename).
func (c Coefficients) Validate() error {
	return checkUnit(c.Accuracy, c.ReactionTime, c.Awareness, c.Movement)
}

// Validate reports every stat outside [0,1] (NaN included) as an apperr.Invalid naming
// accuracy, reaction_time, awareness or movement, as Coefficients.Validate does.
func (s Stats) Validate() error {
	return checkUnit(s.Accuracy, s.ReactionTime, s.Awareness, s.Movement)
}

func checkUnit(acc, rt, aw, mv float64) error {
	var f apperr.Fields
	for _, v := range [...]struct {
		name  string
		value float64
	}{{"accuracy", acc}, {"reaction_time", rt}, {"awareness", aw}, {"movement", mv}} {
		if !(v.value >= 0 && v.value <= 1) { // false for NaN too
			f.Add(v.name, "must be a number between 0 and 1")
		}
	}
	return f.Err()
}

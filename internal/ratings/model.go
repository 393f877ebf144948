package ratings

import "math"

// NS2 is the NS2 logistic team model of the seed "A Skill Ranking System for Natural
// Selection 2", with its learning rates. Every method is a pure function of its arguments.
//
// Prediction. For a match between team 0 and team 1, with T_i = +1 on team 0 and -1 on team 1,
//
//	logit p0 = sum_i T_i t_i (B + s_i + sigma_i o_i) / sum_i t_i  skill, per side
//	         + sum_i T_i c_i chi_i / sum_i c_i                    commanders (when any c_i > 0)
//	         + F                                                  side, map and size bias
//
// where p0 is the probability that team 0 wins;
//   - t_i = a^-joined_s - a^-left_s is the participation weight, with a = 2^(2/r) and r the
//     median round length (NS2.RoundS): being there early counts more than late, and playing
//     until the middle of an average round counts as much as all the rest, however long it runs;
//   - c_i is the same integral over the time spent commanding. The API gives only commander_s,
//     the seconds spent commanding, so the model takes them as one interval starting at
//     joined_s: c_i = a^-joined_s - a^-(joined_s + commander_s). Commanders usually take the
//     chair when they arrive; one who took it late in their stay is weighted a little more
//     than the exact interval would give;
//   - B is NS2.BaseSkill, what an average participant is worth over an empty slot. The seed's
//     skills are positive (its full solve puts a Gamma prior on them), which is what makes
//     "the team with more players" the favourite; here skills are centred (0 is the average
//     participant, weight 50), so that baseline is the explicit B. It contributes
//     B (sum_0 t - sum_1 t) / sum t: nothing in an even match;
//   - s_i is the skill, o_i the side offset and sigma_i = +1 when the participant played
//     BiasKey.SideA (the side whose lower-case name sorts first: "aliens" before "marines",
//     "blue" before "red") and -1 on SideB. This is the seed's s_marine = s + o,
//     s_alien = s - o, with the sign tied to the side rather than to the team index, because
//     here team 0 is not always the same side. Skill s stays the average of the two sides'
//     skills, which is what team balancing uses;
//   - chi_i is the commander skill;
//   - F = +-BiasTable.F for team 0's side (see BiasTable.F for the smoothing).
//
// Learning. With G = 1 if team 0 won, 0 if it lost, 1/2 for a draw, and w_i = t_i / sum t,
//
//	grad s_i = T_i (G - p0) w_i;  g_i += grad^2;  s_i += (c + a / sqrt(g_i + eps)) grad
//	grad o_i = sigma_0 (G - p0) w_i;              o_i += c_o grad   (c_o = NS2.OffsetRate)
//	grad chi_i = T_i (G - p0) c_i / sum c;  the same Adagrad + constant rate, own accumulator
//
// The accumulator sums SQUARED gradients (the blog post's formula omits the square; Adagrad
// needs it). The offset gradient carries no team sign, as in the seed ("winning on marines, or
// losing on aliens contribute the same gradient"): d logit / d o_i = T_i sigma_i w_i, and
// T_i sigma_i = sigma_0, the sign of team 0's side, for everyone in the match. Offsets learn
// with a constant rate only (no Adagrad), so early games move both side skills together.
//
// Uneven teams and partial participation need nothing more: the shares w_i are normalised over
// both teams, so (with B > 0) a team with more weighted presence is the favourite, and a
// player who was there for a sliver of the match moves by a sliver.
type NS2 struct {
	// RoundS is r, the median round length in seconds of the context, which sets a = 2^(2/r).
	// 0 uses each match's own duration: then the first half of any match weighs twice the
	// second half, and a match never depends on anything but its own record, which keeps
	// replays exact. Set it (from configuration or the stored history's median) to weigh a
	// long match's late joiners less than a short match's; the league cannot tell 0 from a
	// fixed r (docs/ratings.md, "Why these defaults").
	RoundS float64
	// BaseSkill is B, the skill of an average participant over nobody: it makes the team with
	// more weighted presence the favourite. It does not change any gradient.
	BaseSkill float64
	// Constant is c, the constant learning rate of skills, commander skills and offsets: it
	// lets ratings keep following players whose skill changes.
	Constant float64
	// Adagrad is a, the scale of the Adagrad learning rate. A new player's first update is
	// about a * grad / sqrt(grad^2 + eps) and the n-th about a / sqrt(n) in size.
	Adagrad float64
	// Epsilon is eps, added to the accumulator: it bounds the step of the first games and of
	// participants who played a sliver of every match.
	Epsilon float64
	// OffsetRate is the constant learning rate of the side offsets. The seed uses c for them;
	// it is a separate parameter here because the simulation wants c near 0 for skills, which
	// would freeze the offsets. Set OffsetRate = Constant for the seed's exact rule.
	OffsetRate float64
	// BiasPrior is k, the pseudo-games of the smoothing of the bias table (BiasTable.F).
	BiasPrior float64
	// ScalePrior, when positive, calibrates the served win probability with a learnt
	// temperature (calibrate.go) of this prior weight, as the other models do
	// (DefaultScalePrior in DefaultNS2); 0 serves the seed's sigmoid(x). It changes what is
	// served, never what is learnt: the gradients use sigmoid(x).
	ScalePrior float64
}

// Defaults, tuned with the simulated league in league_test.go (200 players, random 5v5 with
// late joiners, leavers and substitutes, skills ~ N(0, 2^2) drifting 0.03 a game, side offsets
// ~ N(0, 0.5^2), commanders, a side bias per map, an empty slot worth B = 4). TestTuneLeague
// prints the sweeps behind each: mean log loss over three seeds the league test does not
// use; docs/ratings.md ("Why these defaults", ns2) has what each value costs against the
// others. The surface is flat near the defaults; what follows is why each sits where it does.
const (
	// DefaultBaseSkill is an assumption more than a fit: the league's truth has B = 4 by
	// construction, and the model recovers it. With skills spread about +-2, an empty slot is
	// worth less than a player two spreads below average; a whole-match 5v4 of average players
	// then gives the five sigmoid(4/9) = 61%, a 16v15 sigmoid(4/31) = 53%. Calibrate it on
	// real results when there are some: its gradient is (G - p) (sum_0 t - sum_1 t) / sum t.
	DefaultBaseSkill = 4.0
	// DefaultConstant: the league prefers c = 0, even when true skills drift faster, because
	// Adagrad's steps shrink only as 1/sqrt(games). c stays a little above 0, as the seed
	// intends, so that no rating ever freezes.
	DefaultConstant = 0.05
	// DefaultAdagrad: a player's n-th step is about a / sqrt(n) logit units; 0.4 and 0.5 tie,
	// and smaller or larger cost.
	DefaultAdagrad = 0.5
	// DefaultEpsilon: in a full 5v5 a gradient is at most 0.1 (|G - p| < 1, share 1/10), so
	// eps = 0.01 makes the first step about 0.5 * 0.05 / sqrt(0.0025 + 0.01) = 0.22 for an
	// even match instead of 0.5: one game cannot fling a newcomer to the top of the table.
	DefaultEpsilon = 0.01
	// DefaultOffsetRate: per-player side offsets are learnt from the same weak signal as
	// skills and need many games to pay off: a rate that helps where true offsets are large
	// costs where they are small, and 0.5 is the compromise between the two.
	DefaultOffsetRate = 0.5
	// DefaultBiasPrior: k = 50 pseudo-games. A cell's rate is shrunk towards the side pair's
	// overall rate with weight k/(N+k); with per-map deviations of the side advantage of about
	// 0.3 logit (a rate sd near 0.075), the Bayes-optimal weight is p(1-p)/sd^2 = 0.25/0.0056,
	// about 45 games.
	DefaultBiasPrior = 50.0
)

// DefaultNS2 returns the NS2 model with the default parameters.
func DefaultNS2() NS2 {
	return NS2{BaseSkill: DefaultBaseSkill, Constant: DefaultConstant, Adagrad: DefaultAdagrad, Epsilon: DefaultEpsilon,
		OffsetRate: DefaultOffsetRate, BiasPrior: DefaultBiasPrior, ScalePrior: DefaultScalePrior}
}

// Validate checks the parameters: finite, RoundS >= 0, Constant, Adagrad and ScalePrior >= 0,
// Epsilon and BiasPrior > 0.
func (m NS2) Validate() error {
	return validateParams(param{"round_s", m.RoundS, false}, param{"base_skill", m.BaseSkill, false},
		param{"constant", m.Constant, false}, param{"adagrad", m.Adagrad, false}, param{"offset_rate", m.OffsetRate, false},
		param{"epsilon", m.Epsilon, true}, param{"bias_prior", m.BiasPrior, true}, param{"scale_prior", m.ScalePrior, false})
}

// Rating is what the model knows of one participant in one context. The zero Rating is the
// default for a newcomer: average skill, no history.
type Rating struct {
	Skill      float64 // s, in logit units; 0 is the average participant
	Offset     float64 // o: the skill on BiasKey.SideA is Skill+Offset, on SideB Skill-Offset
	Commander  float64 // chi, the commander skill
	SkillG     float64 // Adagrad accumulator of Skill: the sum of squared gradients
	CommanderG float64 // Adagrad accumulator of Commander
	Games      int     // results this participant was listed in
	// Sigma is the standard deviation of Skill, in the model's units (NS2 writes its Laplace
	// approximation, ns2Sigma, and never reads it). 0 means the model's prior: a newcomer, or a
	// rating stored before the field existed, which then starts as uncertain as a newcomer
	// around its Skill.
	Sigma float64
	// OffsetSigma and CommanderSigma are the standard deviations of Offset and Commander, for
	// the models that keep them; 0 means the prior's.
	OffsetSigma    float64
	CommanderSigma float64
	// LastPlayed is when the participant's last match ended, in Unix seconds (Result.EndedAt);
	// 0 when no result of his carried a time.
	LastPlayed int64
	// Season is the epoch of the last season reset the rating had (Season.Epoch; 0: none),
	// SeasonGames the results the participant was listed in since.
	Season      int64
	SeasonGames int
	// Surprise is a newcomer's evidence of being far better than his rating (Kalman's smurf
	// detector): the log-likelihood ratio of his first results, were he SmurfGap better, to
	// as rated, summed and floored at 0 (a CUSUM). Never negative.
	Surprise float64
	// AltSkill and AltSigma are the belief of the second model of a Mixture (openskill-pl's
	// mu - Mu and sigma; 0 is its prior's), which learns beside the first; zero in the other
	// models.
	AltSkill, AltSigma float64
}

// Weight is the 0..100 weight used by team splits and the line protocol:
// 100 * sigmoid(Skill / 2). In this model a team of players of skill s beats an equal-size team
// of average players with probability sigmoid(s/2), whatever the size (the logit is the
// time-weighted mean over both teams), so the weight is that probability in percent: 50 is the
// average (and unknown) player, 73 wins 73% of such matches. It is monotone in Skill.
func (r Rating) Weight() float64 { return 100 * sigmoid(r.Skill/2) }

// SkillForWeight inverts Rating.Weight (weights are clamped into (0, 100)).
func SkillForWeight(w float64) float64 {
	p := min(max(w/100, 1e-9), 1-1e-9)
	return 2 * logit(p)
}

// Participation is the seed's t = a^-joinedS - a^-leftS with a = 2^(2/roundS): the weight of
// being present from joinedS to leftS in a match whose median round length is roundS. It is 0
// when leftS <= joinedS or roundS <= 0.
func Participation(joinedS, leftS, roundS float64) float64 {
	if !(roundS > 0) {
		return 0
	}
	return presence(joinedS, leftS, 2/roundS)
}

// presence is 2^(-k from) - 2^(-k to), written as -2^(-k from) * expm1(-k ln2 (to - from)) so
// that short stays keep their precision.
func presence(from, to, k float64) float64 {
	if to <= from {
		return 0
	}
	return -math.Exp2(-k*from) * math.Expm1(-k*math.Ln2*(to-from))
}

// Update is one participant's part in an Outcome.
type Update struct {
	Participant  Participant
	Team         int     // 0 or 1
	Share        float64 // t_i / sum t: share of the match's weighted presence
	CommandShare float64 // c_i / sum c: share of the weighted commanding (0 if none)
	Before       Rating
	After        Rating
}

// Outcome is what one result does to the ratings.
type Outcome struct {
	// WinProbability is the pre-match prediction for team 0 and team 1 (they sum to 1).
	WinProbability [2]float64
	// Bias is the bias term F for team 0 that entered the prediction, in logit units.
	Bias float64
	// Updates lists every participant, ordered by team, then players before bots, then id.
	Updates []Update
	// BiasUpdate is the result's entry for the bias table: record it with BiasTable.Record.
	BiasUpdate BiasEntry
}

// Apply learns from one result. prior holds the current ratings of the result's context;
// participants absent from it start from the zero Rating. bias is only read. The outcome holds
// the prediction, every participant's rating before and after, and the bias table's entry for
// this match; the caller stores them. Apply validates the result first (Result.Validate) and
// the model (NS2.Validate). It is deterministic: participants are processed in a fixed order,
// so the same inputs give bit-identical outputs, whatever the order of the teams' lists.
func (m NS2) Apply(prior map[Participant]Rating, bias BiasTable, r Result) (Outcome, error) {
	var buf [32]matchEntry
	order, ups, err := prepare(m, prior, &r, buf[:0])
	if err != nil {
		return Outcome{}, err
	}
	sumT, sumC := shares(&r, order, ups, m.RoundS)
	entry, sigma0 := r.biasEntry()
	var x float64
	for i := range ups {
		u := &ups[i]
		u.Share = ratio(u.Share, sumT)
		u.CommandShare = ratio(u.CommandShare, sumC)
		tsign := teamSign(u.Team)
		x += tsign*u.Share*(m.BaseSkill+u.Before.Skill) + sigma0*u.Share*u.Before.Offset + tsign*u.CommandShare*u.Before.Commander
	}
	f := sigma0 * bias.F(entry.Key, m.BiasPrior) // F is SideA's
	x += f
	p0 := sigmoid(x)
	served := p0
	if m.ScalePrior > 0 {
		t, weight := temperature(bias.Total(entry.Key), m.ScalePrior)
		served = sigmoid(t * x)
		entry.Terms.Scale, entry.Terms.ScaleWeight = scaleTerms(x, r.Score(), t, weight)
	}

	d := r.Score() - p0
	for i := range ups {
		u := &ups[i]
		a := u.Before
		tsign := teamSign(u.Team)
		if u.Share > 0 {
			gs := tsign * d * u.Share
			a.SkillG += gs * gs
			a.Skill += (m.Constant + m.Adagrad/math.Sqrt(a.SkillG+m.Epsilon)) * gs
			a.Offset += m.OffsetRate * sigma0 * d * u.Share
			a.Sigma = ns2Sigma(a.SkillG)
		}
		if u.CommandShare > 0 {
			gc := tsign * d * u.CommandShare
			a.CommanderG += gc * gc
			a.Commander += (m.Constant + m.Adagrad/math.Sqrt(a.CommanderG+m.Epsilon)) * gc
		}
		a.played(&r)
		u.After = a
	}
	return Outcome{WinProbability: [2]float64{served, 1 - served}, Bias: f, Updates: ups, BiasUpdate: entry}, nil
}

// played counts a result in the rating: its games, its season's games and when it was last
// played. Every model calls it for every participant of a result.
func (a *Rating) played(r *Result) {
	a.Games++
	a.SeasonGames++
	a.LastPlayed = r.lastPlayed(a.LastPlayed)
}

// NS2PriorSigma is the standard deviation of a newcomer's skill that NS2's uncertainty starts
// from: the spread of skills the defaults were tuned for (the league's N(0, 2^2)), and the
// Kalman model's SkillSD.
const NS2PriorSigma = 2.0

// ns2Sigma is the uncertainty NS2 reports for a skill whose Adagrad accumulator is g: the
// Laplace approximation 1 / sqrt(1/NS2PriorSigma^2 + g). The accumulator sums the squared
// gradients (G - p)^2 w^2, whose expectation p (1 - p) w^2 is the Fisher information of the
// skill in that match, so 1/NS2PriorSigma^2 + g estimates the posterior's precision. NS2 does
// not read it back; it is what reads and the conservative leaderboard show, and what the
// Kalman model starts from if a context switches to it without a rebuild.
func ns2Sigma(g float64) float64 { return 1 / math.Sqrt(1/(NS2PriorSigma*NS2PriorSigma)+g) }

// teamSize is the size of the larger team counted in presence: the sum of its participants'
// (left_s - joined_s) / duration_s, rounded, at least 1. A player replaced at half time and
// the replacement count as one, so a 5v5 with substitutes is still a 5v5.
func (r *Result) teamSize() int {
	size := 0.0
	for _, t := range r.Teams {
		var s float64
		for _, p := range t.Players {
			s += p.LeftS - p.JoinedS
		}
		size = max(size, s/r.DurationS)
	}
	return max(1, int(math.Round(size)))
}

// TeamSize is the size the bias table files the match under (before SizeBucket).
func (r Result) TeamSize() int { return r.teamSize() }

func teamSign(team int) float64 {
	if team == 0 {
		return 1
	}
	return -1
}

func ratio(a, b float64) float64 {
	if b > 0 {
		return a / b
	}
	return 0
}

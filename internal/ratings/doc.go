// Package ratings learns player ratings from match results, in rating contexts (game type
// plus gameplay mutators), behind the Store interface the service keeps them in. It knows
// nothing of HTTP or SQL. Its models (Model; ModelByName):
//
//   - "ns2-kalman", the default (DefaultModel): the NS2 prediction with a Gaussian belief
//     over every term (Kalman).
//   - "ns2": the NS2 logistic team model of the seed (NS2): time-weighted participation, a
//     side/map/size bias table, Adagrad plus a constant learning rate, per-side offsets,
//     commander skill.
//   - "openskill-pl", "openskill-bt": OpenSkill's Weng-Lin models (WengLin), held to the npm
//     reference by a fixture.
//
// Every model serves a calibrated win probability: its own logit times a temperature learnt
// per context (calibrate.go), whose statistics the stores keep in the bias table. A ModelSet
// gives each context its model (MATCHMAKER_RATING_MODELS).
//
// # Why ns2-kalman
//
// The NS2 model predicts well where its settings fit (the league it was tuned on) but learns
// every player at one speed, set by the number of games alone: a newcomer moves no faster
// for being unknown, so on data with many newcomers its predictions are too timid, and a
// veteran who changes is followed slowly. OpenSkill keeps an uncertainty per player and moves
// newcomers fast, but knows no sides, maps, commanders or partial play, and its
// probabilities are far too confident.
//
// ns2-kalman keeps NS2's prediction -- the time-weighted mean of skills over both teams, B for
// an average participant's presence, side offsets, commander skills, the bias table -- and
// replaces its learning rates by Bayes: each term is a Gaussian, the match's logit is their
// weighted sum, and a result updates the belief by assumed-density filtering (the exact
// posterior moments for the probit closest to the logistic, spread over the terms by their
// coefficient times variance: a rank-one Kalman update). The uncertainty enters the prediction
// too (p = sigmoid(m / sqrt(1 + pi V / 8))), so an unknown player's match is predicted nearer
// 1/2. Three numbers no single player carries are learnt per context from the residuals:
// B (which decides matches of uneven teams and which NS2 fixes at 4), the mean skill of a
// newcomer (real newcomers are weaker than the players they meet), and the temperature.
// Round 4 weighs a big team's players more (Kalman.SizeExponent, sizeScale), because real
// histories' calibration slope rose with the team size under the mean.
//
// Each default sits where the leagues (package league) and the ATP doubles put it, one
// parameter varied at a time by TestTuneKalman, each of the model's parts taken out; what each
// costs or buys, and the table of models it was chosen from, is in docs/ratings.md ("Why
// these defaults"), the figures beside the command that measures them. In short: a
// newcomer's SkillSD and the drift per match where real players change faster than the
// leagues'; side offsets kept but shrunk (OffsetSD), since where sides are random they cannot
// help and where they are not the data can hardly tell them from noise; B and the newcomers'
// mean learnt, since fixing them costs where teams are uneven or newcomers weaker; the
// temperature, without which ATP and the pro league are overconfident; commander skills,
// worth much where they exist and nothing elsewhere.
//
// Rating.Sigma, OffsetSigma and CommanderSigma hold the uncertainties; 0 means the prior's,
// so ratings stored before they existed (and NS2's) are read as uncertain as a newcomer's
// around their own means. Only the zero Rating is a newcomer.
package ratings

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
// for being unknown, so on data with many newcomers its predictions are too timid (the
// calibration slope of real 4v4 data with about five games a player is 1.76, and 1.6 on the
// simulated league of newcomers), and a veteran who changes is followed slowly. OpenSkill
// keeps an uncertainty per player and moves newcomers fast, but knows no sides, maps,
// commanders or partial play, and its probabilities are far too confident (slope 0.69 on ATP
// doubles, 0.36 on the NS2 league).
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
//
// The measurements behind it (TestTuneKalman: accuracy / log loss / calibration slope, each
// replayed online as the service does, a fifth of the history as burn-in; ATP is 25,782 real
// doubles matches, 2000-2020; the leagues (package league) are the mean of three seeds: NS2
// (the league NS2 was tuned on), newcomers (4v4, five matches a player, uneven teams), pro
// (fixed teams of five)):
//
//	                      ATP doubles        NS2 league         newcomers          pro
//	ns2                   .6275 .6412 0.90  .6392 .6363 0.90  .6289 .6269 1.61  .5940 .6654 0.98
//	openskill-pl (uncal.) .6468 .6406 0.69  .6085 .7322 0.36  .6331 .6199 0.85  .5837 .7052 0.42
//	openskill-pl          .6468 .6313 0.98  .6085 .6604 0.88  .6331 .6186 0.96  .5837 .6747 0.91
//	ns2-kalman            .6480 .6273 0.97  .6453 .6329 0.96  .6350 .6151 0.98  .5962 .6651 0.96
//	  B fixed at 4        .6480 .6273 0.97  .6446 .6329 0.96  .6313 .6171 1.08  .5962 .6651 0.96
//	  no newcomers' mean  .6448 .6296 0.98  .6457 .6327 0.96  .6353 .6150 0.98  .5960 .6650 0.96
//	  no temperature      .6480 .6294 0.83  .6453 .6330 0.92  .6350 .6148 0.99  .5962 .6657 0.83
//	  no commander skills .6480 .6273 0.97  .6305 .6418 0.97  .6350 .6151 0.98  .5962 .6651 0.96
//	  no side offsets     .6472 .6271 0.97  .6447 .6329 0.96  .6352 .6151 0.98  .5962 .6650 0.96
//
// Round 4 weighs a big team's players more (Kalman.SizeExponent 1/2, sizeScale): the rows
// above are exponent 0, the mean, as the leagues' truth is. With 1/2 ATP is the same (a 2v2),
// the three leagues cost .0016 to .0026 of log loss (NS2 .6355, newcomers .6167, pro .6677;
// slopes 0.96, 0.98, 0.93), and an 8v8 league whose truth adds up its players gains .0077
// (.6454 against .6531, slope 1.01 against 1.20); docs/ratings.md, "Big teams", has the table.
//
// What each default costs or buys (same table, one parameter varied):
//   - SkillSD 2, a newcomer's skill uncertainty in NS2's logit units: 1.5 and 2.5 are within
//     .0006 log loss everywhere; 3 costs .0009 on ATP and .0018 on the newcomers league.
//   - SkillDrift 0.1 a match: real players change faster than the leagues' 0.03; on ATP 0.03
//     costs .0025 log loss and .005 accuracy, on the NS2 league 0.1 costs .0006 against 0.03.
//   - OffsetSD 0.3: side offsets are kept, shrunk. Where sides are random (ATP) they cannot
//     help; 0.3 costs .0002 log loss there against none, and 0.6 costs .0012. Where true
//     offsets have a spread of 0.5 (the NS2 league) the data cannot tell them from noise
//     either: 0 and 0.6 score the same. The bias table's F is smoothed towards the side
//     pair's rate, and that towards 1/2, by k = 50 pseudo-games, and its variance enters V.
//   - B is learnt (BasePrior 0.3 from 4): the newcomers league's B is 8 and is learnt as 8.1
//     (seed 1); fixing it at 4 costs .004 accuracy and .002 log loss there. Where teams are even
//     it is never used.
//   - The newcomers' mean (NewcomerPrior 1) buys .003 accuracy and .0023 log loss on ATP and
//     is neutral on the leagues, whose newcomers are drawn like everyone else.
//   - The temperature (ScalePrior 20) makes ATP's slope 0.97 instead of 0.83 (the pro
//     league's 0.96 instead of 0.83), and ATP's log loss .6273 instead of .6294; it weighs
//     the n-th result (n + 1)^2, forgetting what a model that knew little predicted.
//   - Commander skills (CommanderSD 1) are worth .009 log loss on the NS2 league, where they
//     exist, and cost nothing elsewhere.
//
// Rating.Sigma, OffsetSigma and CommanderSigma hold the uncertainties; 0 means the prior's,
// so ratings stored before they existed (and NS2's) are read as uncertain as a newcomer's
// around their own means. Only the zero Rating is a newcomer.
package ratings

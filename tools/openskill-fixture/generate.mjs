// Generates internal/ratings/testdata/openskill-fixture.json with the reference implementation
// of OpenSkill's Weng-Lin models, the npm package `openskill` (version pinned in
// package-lock.json): random two-team matches -- uneven teams, wins, losses and draws, default
// and custom parameters, players who played part of the match -- each with the ratings before,
// the outcome, and the reference's ratings after. The Go models must match it
// to 1e-9 (internal/ratings/openskill_test.go).
//
//   cd tools/openskill-fixture && npm ci && npm run generate
//
// Partial play. The npm package declares a `weight` option but ignores it, so a weighted match
// is given to the reference through a change of variables: a player present for a share w of
// the match adds w times their performance to the team's, so the reference rates the scaled
// player (w mu, w sigma') -- sigma' being sigma with tau's drift already added, and tau set to
// 0 for that call -- and the rating after is mapped back, mu + (mu_ref - w mu) / w and
// sigma_ref / w. That is exactly the Weng-Lin update with the player's coefficient w (a
// player's mean moves by w sigma^2 / sigma_team^2 times the team's step, their variance
// shrinks by w^2 sigma^2 / sigma_team^2 times it). A player with w = 0 is left out of the
// call and keeps their rating. Matches with every w = 1 call the reference unmodified.
import { rate } from 'openskill'
import { bradleyTerryFull, plackettLuce } from 'openskill/models'

// mulberry32: a small seeded generator, so the fixture is reproducible.
function rng(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const rand = rng(20260401)
const pick = (xs) => xs[Math.floor(rand() * xs.length)]

const models = { 'openskill-pl': plackettLuce, 'openskill-bt': bradleyTerryFull }
const defaults = { mu: 25, sigma: 25 / 3, beta: 25 / 6, tau: 25 / 300, kappa: 1e-4 }

// rateWeighted is the reference's rate() with partial play, as described above.
function rateWeighted(teams, rank, options) {
  const tau = options.tau
  const weighted = teams.some((t) => t.some((p) => p.w !== 1))
  if (!weighted) return rate(teams.map((t) => t.map(({ mu, sigma }) => ({ mu, sigma }))), options)
  const scaled = teams.map((t) =>
    t.filter((p) => p.w > 0).map((p) => {
      const s = Math.sqrt(p.sigma * p.sigma + tau * tau)
      return { mu: p.w * p.mu, sigma: p.w * s }
    }),
  )
  const out = rate(scaled, { ...options, tau: 0, rank })
  return teams.map((t, ti) => {
    let k = 0
    return t.map((p) => {
      if (p.w === 0) return { mu: p.mu, sigma: p.sigma }
      const r = out[ti][k++]
      return { mu: p.mu + (r.mu - p.w * p.mu) / p.w, sigma: r.sigma / p.w }
    })
  })
}

function randomPlayer(params) {
  const fresh = rand() < 0.25
  const w = rand() < 0.6 ? 1 : rand() < 0.1 ? 0 : 0.05 + 0.95 * rand()
  return {
    mu: fresh ? params.mu : params.mu + (rand() - 0.5) * 40,
    sigma: fresh ? params.sigma : 0.3 + rand() * 10,
    w,
  }
}

function randomParams() {
  if (rand() < 0.75) return { ...defaults }
  return { mu: 25, sigma: 25 / 3, beta: 1 + rand() * 8, tau: rand() < 0.3 ? 0 : rand() * 0.5, kappa: pick([1e-4, 1e-3, 0.05]) }
}

const cases = []
for (let i = 0; i < 600; i++) {
  const model = i % 2 === 0 ? 'openskill-pl' : 'openskill-bt'
  const params = randomParams()
  const partial = i % 3 === 0 // a third of the matches have partial play
  const teams = [0, 1].map(() =>
    Array.from({ length: 1 + Math.floor(rand() * 6) }, () => {
      const p = randomPlayer(params)
      if (!partial) p.w = 1
      return p
    }),
  )
  for (const t of teams) if (t.every((p) => p.w === 0)) t[0].w = 1 // nobody absent for the whole match
  const outcome = pick(['win', 'loss', 'draw', 'win', 'loss'])
  const rank = outcome === 'win' ? [1, 2] : outcome === 'loss' ? [2, 1] : [1, 1]
  const options = { model: models[model], rank, mu: params.mu, sigma: params.sigma, beta: params.beta, tau: params.tau, kappa: params.kappa }
  const after = rateWeighted(teams, rank, options)
  cases.push({ model, params, teams, winner: outcome === 'win' ? 0 : outcome === 'loss' ? 1 : null, after })
}

// A chained history: 400 matches among 24 players, each rated from the ratings the previous
// matches produced, so errors that compound would show.
const history = []
for (const model of Object.keys(models)) {
  const ratings = Array.from({ length: 24 }, () => ({ mu: defaults.mu, sigma: defaults.sigma }))
  const matches = []
  for (let i = 0; i < 200; i++) {
    const order = [...ratings.keys()].sort(() => rand() - 0.5)
    const sizes = [1 + Math.floor(rand() * 5), 1 + Math.floor(rand() * 5)]
    const ids = [order.slice(0, sizes[0]), order.slice(sizes[0], sizes[0] + sizes[1])]
    const weights = ids.map((t) => t.map(() => (rand() < 0.8 ? 1 : 0.1 + 0.9 * rand())))
    const winner = pick([0, 1, 0, 1, null])
    const rank = winner === 0 ? [1, 2] : winner === 1 ? [2, 1] : [1, 1]
    const teams = ids.map((t, ti) => t.map((id, k) => ({ ...ratings[id], w: weights[ti][k] })))
    const after = rateWeighted(teams, rank, { model: models[model], rank, tau: defaults.tau })
    ids.forEach((t, ti) => t.forEach((id, k) => (ratings[id] = after[ti][k])))
    matches.push({ teams: ids, weights, winner })
  }
  history.push({ model, players: ratings.length, matches, final: ratings })
}

// One case or history per line: compact, and a diff of a regenerated fixture stays readable.
const lines = (xs) => xs.map((x) => JSON.stringify(x)).join(',\n')
process.stdout.write(`{"reference": "openskill@5.0.1 (npm)",\n"cases": [\n${lines(cases)}\n],\n"history": [\n${lines(history)}\n]}\n`)

// Replays a results file through the peers -- OpenSkill (Plackett-Luce and Bradley-Terry full,
// npm `openskill`), TrueSkill (npm `ts-trueskill`) and team Elo -- exactly the way
// `go run ./cmd/api evaluate` replays our models: in file order, each result first predicted
// (team 0's win probability) from the ratings learnt so far, then learnt from; contexts split
// by game type; a repeated match id skipped; the first -burnin share learnt from only. It
// prints the same metrics, computed the same way (see internal/ratings/evaluate/score.go).
//
//   node peers.mjs -data FILE [-format atp|results-jsonl] [-burnin 0.2]
//
// Every library runs with its defaults. OpenSkill's rows come in two forms: its own predictWin
// (a normal CDF), and the logistic form of its Bradley-Terry likelihood,
// p = 1 / (1 + exp(-(muA - muB) / c)), c = sqrt(sigmaA^2 + sigmaB^2 + 2 beta^2), with team mu
// and sigma^2 summed over the players. TrueSkill gets each player's participation as its
// partial-play weight (the npm openskill declares a `weight` option but ignores it); team Elo
// averages the listed players' ratings and moves each by K (G - E), for several K.
import { readFileSync } from 'node:fs'
import { rate, rating, predictWin } from 'openskill'
import { bradleyTerryFull, plackettLuce } from 'openskill/models'
import { TrueSkill, Rating } from 'ts-trueskill'

function args() {
  const a = { format: '', burnin: 0.2 }
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i].replace(/^-+/, ''), argv[i + 1]]
    if (!['data', 'format', 'burnin'].includes(k) || v === undefined) usage()
    a[k] = k === 'burnin' ? Number(v) : v
  }
  if (!a.data || !(a.burnin >= 0 && a.burnin < 1)) usage()
  if (!a.format) a.format = a.data.toLowerCase().endsWith('.csv') ? 'atp' : 'results-jsonl'
  return a
}

function usage() {
  console.error('usage: node peers.mjs -data FILE [-format atp|results-jsonl] [-burnin 0.2]')
  process.exit(2)
}

// A match: teams of { id, w } (w = participation in [0, 1]) and g, team 0's outcome.
function readATP(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '')
  if (lines[0].trim() !== 'date,event,round,surface,team_a,team_b,winner,retired') throw new Error('atp: bad header')
  return lines.slice(1).map((line, i) => {
    const c = line.trim().split(',')
    const team = (s) => s.split('+').map((id) => ({ id: 'player:' + id, w: 1 }))
    return { id: `atp-${i + 1}`, context: 'tennis', teams: [team(c[4]), team(c[5])], g: c[6] === '0' ? 1 : 0 }
  })
}

// The seed's time weighting with the match's own length as the round length (the NS2 model's
// default), as a share of a whole match: (2^(-2 joined/d) - 2^(-2 left/d)) / (1 - 2^-2).
function participation(joined, left, d) {
  return (2 ** ((-2 * joined) / d) - 2 ** ((-2 * left) / d)) / 0.75
}

function readJSONL(text) {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      const b = JSON.parse(line)
      const d = b.duration_s
      const teams = b.teams.map((t) =>
        t.players.map((p) => ({
          id: p.bot ? 'bot:' + p.bot : 'player:' + p.id,
          w: participation(p.joined_s ?? 0, p.left_s ?? d, d),
        })),
      )
      const g = b.winner === null ? 0.5 : b.winner === 0 ? 1 : 0
      return { id: b.match_id, context: b.context.game_type.toLowerCase(), teams, g }
    })
}

// Score mirrors evaluate.Score.
class Score {
  constructor() {
    Object.assign(this, { n: 0, decisive: 0, logLoss: 0, brier: 0, correct: 0, x: [], y: [] })
  }
  add(p, g) {
    p = Math.min(Math.max(p, 1e-15), 1 - 1e-15)
    this.n++
    this.logLoss -= g * Math.log(p) + (1 - g) * Math.log(1 - p)
    this.brier += (p - g) ** 2
    if (g !== 0.5) {
      this.decisive++
      if (p === 0.5) this.correct += 0.5
      else if (p > 0.5 === (g === 1)) this.correct++
    }
    this.x.push(Math.log(p / (1 - p)))
    this.y.push(g)
  }
  slope() {
    let [a, b] = [0, 0]
    for (let it = 0; it < 100; it++) {
      let [ga, gb, haa, hab, hbb] = [0, 0, 0, 0, 0]
      this.x.forEach((x, i) => {
        const p = 1 / (1 + Math.exp(-(a + b * x)))
        const w = p * (1 - p)
        const d = this.y[i] - p
        ga += d
        gb += d * x
        haa += w
        hab += w * x
        hbb += w * x * x
      })
      const det = haa * hbb - hab * hab
      if (!(det > 1e-12 * haa * hbb)) return NaN
      const da = (hbb * ga - hab * gb) / det
      const db = (haa * gb - hab * ga) / det
      a += da
      b += db
      if (Math.abs(da) < 1e-12 && Math.abs(db) < 1e-12) return b
      if (Number.isNaN(b) || Math.abs(b) > 1e6) break
    }
    return NaN
  }
  row(name, width) {
    const f = (v, w, d) => v.toFixed(d).padStart(w)
    return `${name.padEnd(width)}  ${String(this.n).padStart(6)}  ${f(this.correct / this.decisive, 8, 4)}  ${f(this.logLoss / this.n, 8, 4)}  ${f(this.brier / this.n, 6, 4)}  ${f(this.slope(), 5, 3)}`
  }
}

// Each peer keeps its ratings per context and player; predict(ctx, teams) gives team 0's win
// probability (or several, one per form), learn(ctx, teams, g) updates.
function openSkill(model) {
  const ratings = new Map()
  const get = (ctx, id) => ratings.get(ctx + '\0' + id) ?? rating()
  const team = (ctx, t) => t.map((p) => get(ctx, p.id))
  const betaSq = (25 / 6) ** 2
  return {
    predict(ctx, teams) {
      const [a, b] = teams.map((t) => team(ctx, t))
      const sum = (t, f) => t.reduce((s, r) => s + f(r), 0)
      const c = Math.sqrt(sum(a, (r) => r.sigma ** 2) + sum(b, (r) => r.sigma ** 2) + 2 * betaSq)
      const logistic = 1 / (1 + Math.exp(-(sum(a, (r) => r.mu) - sum(b, (r) => r.mu)) / c))
      return [predictWin([a, b])[0], logistic]
    },
    learn(ctx, teams, g) {
      const rank = g === 1 ? [1, 2] : g === 0 ? [2, 1] : [1, 1]
      const after = rate(teams.map((t) => team(ctx, t)), { model, rank })
      teams.forEach((t, ti) => t.forEach((p, i) => ratings.set(ctx + '\0' + p.id, after[ti][i])))
    },
  }
}

function trueSkill() {
  const env = new TrueSkill()
  const ratings = new Map()
  const get = (ctx, id) => ratings.get(ctx + '\0' + id) ?? env.createRating()
  const team = (ctx, t) => t.map((p) => get(ctx, p.id))
  return {
    predict(ctx, teams) {
      return [env.winProbability(team(ctx, teams[0]), team(ctx, teams[1]))]
    },
    learn(ctx, teams, g) {
      const ranks = g === 1 ? [0, 1] : g === 0 ? [1, 0] : [0, 0]
      const weights = teams.map((t) => t.map((p) => Math.max(p.w, 1e-6)))
      const after = env.rate(teams.map((t) => team(ctx, t)), ranks, weights)
      teams.forEach((t, ti) => t.forEach((p, i) => ratings.set(ctx + '\0' + p.id, new Rating(after[ti][i].mu, after[ti][i].sigma))))
    },
  }
}

function teamElo(k) {
  const ratings = new Map()
  const get = (ctx, id) => ratings.get(ctx + '\0' + id) ?? 1500
  const avg = (ctx, t) => t.reduce((s, p) => s + get(ctx, p.id), 0) / t.length
  return {
    predict(ctx, teams) {
      return [1 / (1 + 10 ** ((avg(ctx, teams[1]) - avg(ctx, teams[0])) / 400))]
    },
    learn(ctx, teams, g) {
      const e = 1 / (1 + 10 ** ((avg(ctx, teams[1]) - avg(ctx, teams[0])) / 400))
      teams.forEach((t, ti) => t.forEach((p) => ratings.set(ctx + '\0' + p.id, get(ctx, p.id) + (ti === 0 ? 1 : -1) * k * (g - e))))
    },
  }
}

const opts = args()
const text = readFileSync(opts.data, 'utf8')
const all = opts.format === 'atp' ? readATP(text) : opts.format === 'results-jsonl' ? readJSONL(text) : usage()
const seen = new Set()
const matches = all.filter((m) => !seen.has(m.id) && seen.add(m.id))
const burnin = Math.floor(opts.burnin * matches.length)

const peers = [
  { names: ['openskill-pl', 'openskill-pl-logistic'], peer: openSkill(plackettLuce) },
  { names: ['openskill-bt', 'openskill-bt-logistic'], peer: openSkill(bradleyTerryFull) },
  { names: ['trueskill'], peer: trueSkill() },
  ...[16, 24, 32, 48].map((k) => ({ names: [`elo-k${k}`], peer: teamElo(k) })),
]
for (const p of peers) p.scores = p.names.map(() => new Score())
matches.forEach((m, i) => {
  for (const p of peers) {
    if (i >= burnin) p.peer.predict(m.context, m.teams).forEach((q, j) => p.scores[j].add(q, m.g))
    p.peer.learn(m.context, m.teams, m.g)
  }
})
console.log(`${matches.length} results replayed (${all.length - matches.length} skipped as repeated), the first ${burnin} learnt from only`)
const width = Math.max(...peers.flatMap((p) => p.names.map((n) => n.length)))
console.log(`${'model'.padEnd(width)}  ${'n'.padStart(6)}  accuracy  log loss   brier  slope`)
for (const p of peers) p.names.forEach((n, j) => console.log(p.scores[j].row(n, width)))

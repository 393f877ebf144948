package ratingsdb

import (
	"cmp"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// apply runs a job's ApplyFunc on the ratings and bias cells as the batch's earlier results
// left them and, if its outcome is sound, makes it part of the batch.
func (b *batch) apply(bj *batchJob, c ratings.Context) {
	p := bj.p
	prior := make(map[ratings.Participant]ratings.Rating, len(p.ps))
	seasons := b.seasons[bj.key]
	for _, q := range p.ps {
		k := rowKey{bj.key, q}
		if r, ok := b.current[k]; ok {
			prior[q] = r
		} else if r, ok := b.locked[k]; ok {
			prior[q] = ratings.CatchUp(r, seasons)
		} // else a newcomer: absent, as the contract says
	}
	var bias ratings.BiasTable
	ck := cellKey{bj.key, p.bias}
	if cell, ok := b.cells[ck]; ok {
		if err := bias.Set(ratings.BiasEntry{Key: p.bias, BiasCell: cell}); err != nil {
			bj.settle(ratings.Recorded{}, db.MapError(err, "record result"))
			return
		}
	}
	if total, ok := b.cells[ck.pair()]; ok {
		if err := bias.SetTotal(p.bias, total); err != nil { // after Set, which adds the cell to the total
			bj.settle(ratings.Recorded{}, db.MapError(err, "record result"))
			return
		}
	}
	o, body, err := safeApply(bj.apply, c, prior, bias)
	if err == nil {
		err = ratings.CheckOutcome(p.req.Result, o)
	}
	if err == nil && bj.ctx.Err() != nil {
		err = db.MapError(bj.ctx.Err(), "record result") // the caller left while it was applied
	}
	if err != nil {
		bj.settle(ratings.Recorded{}, err)
		return
	}
	if body == nil {
		body = []byte{} // a response may be empty, but it is stored (NOT NULL)
	}
	for _, u := range o.Updates {
		b.current[rowKey{bj.key, u.Participant}] = ratings.InSeason(u.After, seasons)
	}
	if bu := o.BiasUpdate; bu.Games > 0 {
		k := cellKey{bj.key, bu.Key}
		for _, k := range []cellKey{k, k.pair()} {
			b.cells[k] = addCell(b.cells[k], bu.BiasCell)
			b.bumps[k] = addCell(b.bumps[k], bu.BiasCell)
		}
	}
	for _, m := range p.mutators {
		b.fresh[m] = true
	}
	bj.state = accepted
	bj.rec = ratings.Recorded{Context: c, Response: body}
}

// safeApply calls apply, turning a panic into an error of this result alone: it runs on a
// committer, where a panic would end the process, not just one request.
func safeApply(apply ratings.ApplyFunc, c ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (o ratings.Outcome, body []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = apperr.New(apperr.Internal, "record result: apply panicked: %v", r)
		}
	}()
	return apply(c, prior, bias)
}

func addCell(a, b ratings.BiasCell) ratings.BiasCell {
	t := a.Terms
	t.Presence += b.Terms.Presence
	t.PresenceWeight += b.Terms.PresenceWeight
	t.Newcomer += b.Terms.Newcomer
	t.NewcomerWeight += b.Terms.NewcomerWeight
	t.Scale += b.Terms.Scale
	t.ScaleWeight += b.Terms.ScaleWeight
	t.AltScale += b.Terms.AltScale
	t.AltScaleWeight += b.Terms.AltScaleWeight
	t.Evidence += b.Terms.Evidence
	return ratings.BiasCell{Wins: a.Wins + b.Wins, Games: a.Games + b.Games, Terms: t}
}

// batchWrites are the arguments of sqlWriteResults, and how many rows it must touch.
type batchWrites struct {
	args           []any
	ratings, bumps int
}

func (b *batch) writes(applied []*batchJob, shards int) batchWrites {
	var existing, created []rowKey
	for k := range b.current {
		if _, ok := b.locked[k]; ok {
			existing = append(existing, k)
		} else {
			created = append(created, k)
		}
	}
	slices.SortFunc(existing, rowKey.compare)
	slices.SortFunc(created, rowKey.compare) // inserted in lock order (see sqlWriteResults)
	m := len(applied)
	var (
		mids, mgame, mctx, mdoc = make([]string, m), make([]string, m), make([]string, m), make([]string, m)
		mhash, mresp            = make([][]byte, m), make([][]byte, m)
	)
	for i, bj := range applied {
		mids[i], mgame[i], mctx[i], mdoc[i] = bj.p.req.Result.MatchID, bj.p.gameType, bj.key, string(bj.p.doc)
		mhash[i], mresp[i] = bj.p.req.BodyHash[:], bj.rec.Response
	}
	bumps := make([]cellKey, 0, len(b.bumps))
	for k := range b.bumps {
		bumps = append(bumps, k)
	}
	bumps = uniqueCells(bumps)
	bctx, bsa, bsb, bmap, bsize := cellArrays(bumps)
	nb := len(bumps)
	bgame, wins, bgames := make([]string, nb), make([]float64, nb), make([]float64, nb)
	var terms [9][]float64
	for j := range terms {
		terms[j] = make([]float64, nb)
	}
	for i, k := range bumps {
		c := b.bumps[k]
		bgame[i], wins[i], bgames[i] = b.gameType[k.ctx], c.Wins, c.Games
		t := c.Terms
		for j, x := range [9]float64{t.Presence, t.PresenceWeight, t.Newcomer, t.NewcomerWeight, t.Scale, t.ScaleWeight, t.AltScale, t.AltScaleWeight, t.Evidence} {
			terms[j][i] = x
		}
	}
	args := b.ratingArrays(existing)
	args = append(args, mids, mgame, mctx, mhash, mdoc, mresp, shards, bctx, bsa, bsb, bmap, bsize, bgame, wins, bgames,
		terms[0], terms[1], terms[2], terms[3], terms[4], terms[5])
	args = append(args, b.ratingArrays(created)...)
	args = append(args, ratingExtras(len(existing), func(i int) ratings.Rating { return b.current[existing[i]] })...)
	args = append(args, ratingExtras(len(created), func(i int) ratings.Rating { return b.current[created[i]] })...)
	args = append(args, terms[6], terms[7], terms[8])
	return batchWrites{args: args, ratings: len(existing) + len(created), bumps: len(bumps)}
}

// ratingArrays are the thirteen arrays of sqlWriteResults that give rows' ratings as the
// batch left them.
func (b *batch) ratingArrays(keys []rowKey) []any {
	n := len(keys)
	var (
		ctxs, games, ids = make([]string, n), make([]string, n), make([]string, n)
		bots             = make([]bool, n)
		skill            = make([]float64, n)
		played           = make([]int64, n)
		// The numbers written as NULL when zero (ratingValue): off, cmdr, skillG, cmdrG,
		// sigma, offSigma, cmdrSigma.
		nullable = [7][]pgtype.Float8{}
	)
	for j := range nullable {
		nullable[j] = make([]pgtype.Float8, n)
	}
	for i, k := range keys {
		a := b.current[k]
		ctxs[i], games[i], bots[i], ids[i] = k.ctx, b.gameType[k.ctx], k.p.Bot, k.p.ID
		skill[i], played[i] = a.Skill, int64(a.Games)
		for j, x := range [7]float64{a.Offset, a.Commander, a.SkillG, a.CommanderG, a.Sigma, a.OffsetSigma, a.CommanderSigma} {
			nullable[j][i] = ratingValue(x)
		}
	}
	return []any{ctxs, games, bots, ids, skill, nullable[0], nullable[1], nullable[2], nullable[3], played, nullable[4], nullable[5], nullable[6]}
}

// rowArrays splits rows into the arrays the SQL unnests.
func rowArrays(rows []rowKey) (ctxs []string, bots []bool, ids []string) {
	ctxs, bots, ids = make([]string, len(rows)), make([]bool, len(rows)), make([]string, len(rows))
	for i, k := range rows {
		ctxs[i], bots[i], ids[i] = k.ctx, k.p.Bot, k.p.ID
	}
	return ctxs, bots, ids
}

// uniqueCells sorts cells and drops repeats.
func uniqueCells(cells []cellKey) []cellKey {
	slices.SortFunc(cells, func(x, y cellKey) int {
		return cmp.Or(cmp.Compare(x.ctx, y.ctx), cmp.Compare(x.k.SideA, y.k.SideA), cmp.Compare(x.k.SideB, y.k.SideB),
			cmp.Compare(x.k.Map, y.k.Map), cmp.Compare(x.k.Size, y.k.Size))
	})
	return slices.Compact(cells)
}

func cellArrays(cells []cellKey) (ctxs, sideA, sideB, maps []string, sizes []int32) {
	n := len(cells)
	ctxs, sideA, sideB, maps, sizes = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int32, n)
	for i, c := range cells {
		ctxs[i], sideA[i], sideB[i], maps[i], sizes[i] = c.ctx, c.k.SideA, c.k.SideB, c.k.Map, int32(c.k.Size)
	}
	return ctxs, sideA, sideB, maps, sizes
}

package lineproto

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strconv"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// handle answers one line.
func (c *conn) handle(line []byte) {
	start := time.Now()
	cmd, err := ParseLine(string(line))
	if err == nil && cmd.Kind != KindNone && c.authed {
		c.idleUntil = start.Add(c.s.cfg.IdleTimeout)
	}
	if !c.authed && (cmd.Kind != KindNone || err != nil) { // any line but an empty one
		c.authenticate(cmd, err)
		return
	}
	var o outcome
	switch {
	case err != nil:
		if cmd.Kind == KindGame {
			c.setGame("") // the client thinks a game started: forget the last one
		}
		c.errorLine(reason(err))
		o = outcomeError
	case cmd.Kind == KindNone:
		return
	case cmd.Kind == KindAuth:
		o = outcomeOK // no secret required, or sent already: nothing to do
	case cmd.Kind == KindGame:
		c.setGame(strings.Clone(cmd.Arg)) // not a slice of the line: kept for the game
	case cmd.Kind == KindMutator:
		o = c.addMutator(cmd.Arg)
	default:
		o = c.query(cmd)
	}
	c.s.metrics.command(cmd.Kind, o, time.Since(start))
}

// authenticate answers the first command of a connection that must authenticate: AUTH with
// the secret (compared as hashes, in constant time) lets the connection in, silently; anything
// else is answered with an ERROR line and the connection is closed.
func (c *conn) authenticate(cmd Command, err error) {
	sum := sha256.Sum256([]byte(cmd.Arg))
	switch {
	case err == nil && cmd.Kind == KindAuth && subtle.ConstantTimeCompare(sum[:], c.s.cfg.SecretHash[:]) == 1:
		c.authed = true
		c.idleUntil = time.Now().Add(c.s.cfg.IdleTimeout)
		c.s.metrics.command(KindAuth, outcomeOK, 0)
		return
	case cmd.Kind == KindAuth:
		c.s.logger.Warn("line protocol: authentication failed; closed the connection", "remote", c.remote)
		c.errorLine("auth failed")
	default:
		c.errorLine("auth required: send AUTH <secret> first")
	}
	c.s.metrics.command(KindAuth, outcomeError, 0)
	c.done = true
}

func (c *conn) setGame(game string) {
	c.game = game
	c.mutators = c.mutators[:0]
	c.rctx, c.rctxOK = ratings.Context{}, false
}

func (c *conn) addMutator(name string) outcome {
	if c.game == "" {
		c.errorLine("no GAME yet")
		return outcomeError
	}
	for _, m := range c.mutators {
		if strings.EqualFold(m, name) { // names are ASCII (ParseLine checked)
			return outcomeOK
		}
	}
	if len(c.mutators) >= c.s.cfg.MaxMutators {
		c.errorLine("too many mutators (at most " + strconv.Itoa(c.s.cfg.MaxMutators) + " a game)")
		return outcomeError
	}
	c.mutators = append(c.mutators, strings.ToLower(strings.Clone(name)))
	c.rctxOK = false
	return outcomeOK
}

// query answers PLAYER, BOT and MEANBOT.
func (c *conn) query(cmd Command) outcome {
	if c.game == "" {
		c.errorLine("no GAME yet")
		return outcomeError
	}
	ctx, cancel := context.WithTimeout(c.s.baseCtx, c.s.cfg.CommandTimeout)
	defer cancel()
	rc, err := c.ratingContext(ctx)
	if err != nil {
		return c.storeFailed(cmd, err)
	}
	switch cmd.Kind {
	case KindPlayer, KindBot:
		p := ratings.Participant{ID: cmd.Arg, Bot: cmd.Kind == KindBot}
		weights, err := c.s.ratings.Weights(ctx, rc, []ratings.Participant{p})
		if err != nil {
			return c.storeFailed(cmd, err)
		}
		w := weights[0]
		if !w.Rated && cmd.Kind == KindPlayer {
			c.replyUnknown(cmd) // "PLAYER id": the client uses its default
			return outcomeUnknown
		}
		// The seed's BOT always answers with a weight: for a bot not rated, the service's
		// rule (the context's mean bot weight), as over HTTP.
		c.reply(cmd, w.Value, -1)
		if !w.Rated {
			return outcomeUnknown
		}
		return outcomeOK
	default: // KindMeanBot
		mean, n, err := c.s.ratings.BotMean(ctx, rc)
		if err != nil {
			return c.storeFailed(cmd, err)
		}
		c.reply(cmd, mean, n)
		return outcomeOK
	}
}

// ratingContext is the connection's rating context under the current mutator policy,
// read once per game (and again after each new MUTATOR).
func (c *conn) ratingContext(ctx context.Context) (ratings.Context, error) {
	if c.rctxOK {
		return c.rctx, nil
	}
	rc, err := c.s.ratings.Context(ctx, c.game, c.mutators)
	if err != nil {
		return ratings.Context{}, err
	}
	c.rctx, c.rctxOK = rc, true
	return rc, nil
}

func (c *conn) storeFailed(cmd Command, err error) outcome {
	c.s.logger.Warn("line protocol: store read failed", "command", cmd.Kind.String(),
		"remote", c.remote, "err", err)
	c.errorLine("store unavailable")
	return outcomeError
}

// reply writes "KEYWORD [arg] weight" and, when count >= 0, " count" (MEANBOT).
func (c *conn) reply(cmd Command, weight float64, count int) {
	c.replyStart(cmd)
	c.num = append(c.num[:0], ' ')
	c.num = strconv.AppendFloat(c.num, weight, 'f', 2, 64)
	if count >= 0 {
		c.num = append(c.num, ' ')
		c.num = strconv.AppendInt(c.num, int64(count), 10)
	}
	c.num = append(c.num, '\n')
	c.w.Write(c.num)
}

// replyUnknown writes "PLAYER id": no weight known.
func (c *conn) replyUnknown(cmd Command) {
	c.replyStart(cmd)
	c.w.WriteByte('\n')
}

func (c *conn) replyStart(cmd Command) {
	c.w.WriteString(cmd.Kind.String())
	if cmd.Arg != "" {
		c.w.WriteByte(' ')
		c.w.WriteString(cmd.Arg)
	}
}

func (c *conn) errorLine(msg string) {
	c.w.WriteString("ERROR ")
	c.w.WriteString(msg)
	c.w.WriteByte('\n')
}

package lineproto

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Config bounds what one client can hold. Zero fields take DefaultConfig's values.
type Config struct {
	// IdleTimeout closes a connection that sends no complete line for this long (after an
	// "ERROR idle timeout" line). It also bounds every write: a client that reads none of
	// its replies for this long is dropped.
	IdleTimeout time.Duration
	// MaxLineBytes is the longest line accepted, not counting its "\n" or "\r\n". A longer
	// line is answered "ERROR line too long" and skipped up to its newline; a client that
	// sends more than maxDiscard (64 KiB) more without a newline is disconnected.
	MaxLineBytes int
	// MaxConns caps the connections open at once; one more is answered
	// "ERROR too many connections" and closed.
	MaxConns int
	// MaxMutators caps the distinct mutators of one game; at most ratings.MaxMutators (the
	// most a rating context can list).
	MaxMutators int
	// CommandTimeout bounds the store reads of one command; past it the command is answered
	// "ERROR store unavailable".
	CommandTimeout time.Duration
	// MaxConnsPerAddr caps the connections open at once from one client address, so that one
	// client cannot take every one of MaxConns; one more is answered
	// "ERROR too many connections from your address" and closed.
	MaxConnsPerAddr int
	// SecretHash, when not zero, is the SHA-256 of the shared secret a client must send first
	// ("AUTH secret") before any other command, within AuthTimeout; see the package doc.
	SecretHash [sha256.Size]byte
	// AuthTimeout bounds the wait for the AUTH line when a secret is set.
	AuthTimeout time.Duration
}

// DefaultConfig returns the defaults: 5 min idle, 512-byte lines, 1024 connections (64 from
// one address), 64 mutators a game, 2 s a command, 10 s for the AUTH line; no secret.
func DefaultConfig() Config {
	return Config{
		IdleTimeout:     5 * time.Minute,
		MaxLineBytes:    512,
		MaxConns:        1024,
		MaxConnsPerAddr: 64,
		MaxMutators:     ratings.MaxMutators,
		CommandTimeout:  2 * time.Second,
		AuthTimeout:     10 * time.Second,
	}
}

// requiresAuth reports whether clients must send AUTH first.
func (c Config) requiresAuth() bool { return c.SecretHash != [sha256.Size]byte{} }

// Limits of the configuration.
const (
	// MinLineBytes leaves room for the longest valid line: "PLAYER " and a
	// ratings.MaxIDLen-byte id.
	MinLineBytes = 7 + ratings.MaxIDLen
	// MaxLineLimit keeps the per-connection read buffer small.
	MaxLineLimit = 64 << 10
)

// Internal bounds that need no configuration.
const (
	// maxDiscard is how much of an over-long line is skipped, past MaxLineBytes, while
	// waiting for its newline before the connection is dropped.
	maxDiscard = 64 << 10
	// lingerTimeout is how long a closing connection drains what the client still sends after
	// our last reply and FIN, so that closing with unread input (which makes the kernel send
	// a RST) cannot destroy that reply before the client reads it. net/http waits as long.
	lingerTimeout = 500 * time.Millisecond
	// maxRejecting bounds the connections being refused (and lingered on) at once; past it a
	// refused connection is closed at once after its ERROR line.
	maxRejecting = 16
)

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxLineBytes == 0 {
		c.MaxLineBytes = d.MaxLineBytes
	}
	if c.MaxConns == 0 {
		c.MaxConns = d.MaxConns
	}
	if c.MaxMutators == 0 {
		c.MaxMutators = d.MaxMutators
	}
	if c.CommandTimeout == 0 {
		c.CommandTimeout = d.CommandTimeout
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = d.MaxConnsPerAddr
	}
	if c.AuthTimeout == 0 {
		c.AuthTimeout = d.AuthTimeout
	}
	return c
}

// Validate reports the first setting out of range (zero fields take their defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.IdleTimeout < 0:
		return errors.New("lineproto: IdleTimeout must be positive")
	case c.MaxLineBytes < MinLineBytes || c.MaxLineBytes > MaxLineLimit:
		return fmt.Errorf("lineproto: MaxLineBytes must be in [%d, %d]", MinLineBytes, MaxLineLimit)
	case c.MaxConns < 0:
		return errors.New("lineproto: MaxConns must be positive")
	case c.MaxMutators < 0 || c.MaxMutators > ratings.MaxMutators:
		return fmt.Errorf("lineproto: MaxMutators must be in [1, %d]", ratings.MaxMutators)
	case c.CommandTimeout < 0:
		return errors.New("lineproto: CommandTimeout must be positive")
	case c.MaxConnsPerAddr < 0:
		return errors.New("lineproto: MaxConnsPerAddr must be positive")
	case c.AuthTimeout < 0:
		return errors.New("lineproto: AuthTimeout must be positive")
	}
	return nil
}

package lineproto

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Kind is a command of the protocol.
type Kind uint8

const (
	KindNone    Kind = iota // an empty (or blank) line: nothing to do, no reply
	KindGame                // GAME type
	KindMutator             // MUTATOR name
	KindPlayer              // PLAYER id
	KindBot                 // BOT name
	KindMeanBot             // MEANBOT
	KindAuth                // AUTH secret
)

// keywords are the commands' keywords, by Kind.
var keywords = [...]string{KindNone: "", KindGame: "GAME", KindMutator: "MUTATOR",
	KindPlayer: "PLAYER", KindBot: "BOT", KindMeanBot: "MEANBOT", KindAuth: "AUTH"}

// argNames name each command's argument in error messages.
var argNames = [...]string{KindGame: "game type", KindMutator: "mutator name",
	KindPlayer: "player id", KindBot: "bot name", KindMeanBot: "", KindAuth: "secret"}

// String is the command's keyword ("GAME", ...); "" for KindNone.
func (k Kind) String() string {
	if int(k) < len(keywords) {
		return keywords[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Command is one parsed line.
type Command struct {
	Kind Kind
	// Arg is the game type, mutator name, player id or bot name exactly as sent (ids are
	// case-sensitive; game types and mutators are folded by the rating context, not here);
	// "" for MEANBOT and for an empty line.
	Arg string
}

// String renders the command as the line a client sends, without the newline. ParseLine
// inverts it for every command it returns without error.
func (c Command) String() string {
	if c.Arg == "" {
		return c.Kind.String()
	}
	return c.Kind.String() + " " + c.Arg
}

// ParseLine parses one line of the protocol, given without its "\n" (a trailing "\r", like any
// white space around or between the words, is ignored). Keywords are case-insensitive (ASCII
// only). The argument of PLAYER and BOT is the rest of the line, so that an id may hold the
// single spaces between words the id rule allows ("PLAYER Boring John"); the other commands'
// arguments are one word. A blank line parses as KindNone.
//
// Errors are apperr.Invalid errors whose Message is the reason to send back ("ERROR " +
// Message): a single line of printable text. When the keyword was recognised but its
// argument was not (missing, extra, too long, not a valid name), the returned Command carries
// the Kind with an empty Arg, so that the caller can count the error against the command.
//
// ParseLine validates what it can without the store: game types and mutators as the rating
// context does (ratings.NewContext: 1..ratings.MaxNameLen bytes of [A-Za-z0-9_.-]), player ids
// and bot names as results do (1..ratings.MaxIDLen bytes of UTF-8 without control characters).
// It does not bound the line's length; the server does that before parsing.
func ParseLine(line string) (Command, error) {
	word, rest := nextField(line)
	if word == "" {
		return Command{}, nil
	}
	kind := lookup(word)
	if kind == KindNone {
		return Command{}, invalid("unknown command %.32q", word)
	}
	if kind == KindPlayer || kind == KindBot {
		// Every line that named an id of one word names the same id; a line that named
		// several words (an error before) names them as one id, which the id rule checks.
		rest = strings.TrimFunc(rest, unicode.IsSpace)
		if rest == "" {
			return Command{Kind: kind}, invalid("%s needs a %s", kind, argNames[kind])
		}
		if msg := checkID(rest); msg != "" {
			return Command{Kind: kind}, invalid("invalid %s: %s", argNames[kind], msg)
		}
		return Command{Kind: kind, Arg: rest}, nil
	}
	arg, rest := nextField(rest)
	if extra, _ := nextField(rest); extra != "" {
		if kind == KindMeanBot {
			return Command{Kind: kind}, invalid("MEANBOT takes no argument")
		}
		return Command{Kind: kind}, invalid("%s takes one argument", kind)
	}
	switch kind {
	case KindMeanBot:
		if arg != "" {
			return Command{Kind: kind}, invalid("MEANBOT takes no argument")
		}
	case KindAuth:
		if arg == "" {
			return Command{Kind: kind}, invalid("AUTH needs a secret")
		}
	case KindGame, KindMutator:
		if arg == "" {
			return Command{Kind: kind}, invalid("%s needs a %s", kind, argNames[kind])
		}
		if msg := checkName(arg); msg != "" {
			return Command{Kind: kind}, invalid("invalid %s: %s", argNames[kind], msg)
		}
	}
	return Command{Kind: kind, Arg: arg}, nil
}

// lookup finds the command whose keyword is word, ignoring ASCII case only (so that no
// Unicode folding, such as the Kelvin sign for K, makes a keyword of something else).
func lookup(word string) Kind {
	for k := KindGame; int(k) < len(keywords); k++ {
		if asciiEqualFold(word, keywords[k]) {
			return k
		}
	}
	return KindNone
}

func asciiEqualFold(s, upper string) bool {
	if len(s) != len(upper) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// nextField returns the first white-space-separated word of s and what follows it. White
// space is what unicode.IsSpace says (as for strings.Fields), so that no argument can hold
// anything ratings' checks would call white space; a byte that is not valid UTF-8 is not
// white space.
func nextField(s string) (word, rest string) {
	start := -1
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		space := unicode.IsSpace(r) // false for a byte that is not valid UTF-8
		switch {
		case space && start >= 0:
			return s[start:i], s[i:]
		case !space && start < 0:
			start = i
		}
		i += size
	}
	if start < 0 {
		return "", ""
	}
	return s[start:], ""
}

// checkID and checkName are the service's rules for ids and names, as field messages.
func checkID(id string) string     { return message(ratings.ValidateID(id)) }
func checkName(name string) string { return message(ratings.ValidateName(name)) }

func message(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func invalid(format string, args ...any) error {
	return apperr.New(apperr.Invalid, format, args...)
}

// reason is the text of an ERROR line for err: the apperr message (never the cause, which
// may name internals).
func reason(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return "internal error"
}

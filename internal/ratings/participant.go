package ratings

import (
	"cmp"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Participant is whoever a rating belongs to: a player by id, or a bot by name. The two
// namespaces are distinct: the bot "Jakob" and the player "Jakob" have separate ratings.
type Participant struct {
	ID  string // player id, or bot name when Bot is set
	Bot bool
}

// String renders the participant for logs and keys: "player:ID" or "bot:NAME".
func (p Participant) String() string {
	if p.Bot {
		return "bot:" + p.ID
	}
	return "player:" + p.ID
}

// Compare orders participants players first, then by id. Every float sum over participants in
// this package runs in this order, so results never depend on input or map order.
func (p Participant) Compare(q Participant) int {
	if p.Bot != q.Bot {
		if !p.Bot {
			return -1
		}
		return 1
	}
	return cmp.Compare(p.ID, q.ID)
}

// Limits on names. Ids and bot names may hold single spaces between words (see ValidateID);
// game types, mutators and sides are plain names.
const (
	MaxIDLen     = 128           // player ids, bot names, match ids, map names (bytes)
	MaxNameLen   = 64            // game types, mutators, sides (bytes)
	MaxMutators  = 64            // mutators listed in one context
	MaxTeamSize  = 256           // participants listed on one team
	MaxDurationS = 7 * 24 * 3600 // longest match accepted, in seconds
)

// ValidateName is the rule for a game type, mutator or side name: 1..MaxNameLen bytes of
// [A-Za-z0-9_.-]. The line protocol and every HTTP endpoint use it.
func ValidateName(s string) error {
	if msg := checkName(s); msg != "" {
		return errors.New(msg)
	}
	return nil
}

func checkName(s string) string {
	if s == "" {
		return "is required"
	}
	if len(s) > MaxNameLen {
		return "must be at most 64 bytes"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return "may contain only letters, digits, '_', '.' and '-'"
		}
	}
	return ""
}

// The faults ValidateID reports, allocated once: a 100,000-player queue checks every id.
var (
	errIDEmpty   = errors.New("is required")
	errIDLong    = errors.New("must be at most 128 bytes")
	errIDControl = errors.New("must not contain control characters")
	errIDSpace   = errors.New("must not contain white space, but single spaces between words")
	errIDUTF8    = errors.New("must be valid UTF-8")
	errIDFormat  = errors.New("must not contain invisible format characters (zero-width, bidirectional controls)")
	errIDNFC     = errors.New("must be in Unicode normalization form C (NFC): compose accents with their letters")
	errIDScripts = errors.New("must not mix letters of the Latin, Greek, Cyrillic, Armenian and Cherokee alphabets, whose look-alikes (Cyrillic 'а', Latin 'a') make two ids read the same")
)

// lookAlikeAlphabets are the scripts whose letters pass for one another's. An id whose
// letters come from two of them ("pаypal" with a Cyrillic 'а') is refused: Unicode's mixed-
// script rule (UTS #39), for the alphabets it matters for. Other scripts mix freely (a
// Japanese id writes Han, kana and Latin together), and a whole id in one alphabet that
// happens to read as another's ("асе", all Cyrillic) is a confusable this rule does not catch.
var lookAlikeAlphabets = []*unicode.RangeTable{unicode.Latin, unicode.Greek, unicode.Cyrillic, unicode.Armenian, unicode.Cherokee}

// alphabetOf is the index in lookAlikeAlphabets of r's script, -1 for any other rune.
func alphabetOf(r rune) int {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return 0
		}
		return -1
	}
	for i, t := range lookAlikeAlphabets {
		if unicode.Is(t, r) {
			return i
		}
	}
	return -1
}

// mixesAlphabets reports whether s has letters of two look-alike alphabets.
func mixesAlphabets(s string) bool {
	seen := -1
	for _, r := range s {
		if a := alphabetOf(r); a >= 0 {
			if seen >= 0 && a != seen {
				return true
			}
			seen = a
		}
	}
	return false
}

// ValidateID is the one rule for a player id, bot name, match id or ticket id, wherever it
// arrives (a JSON body, a path, a query string, the line protocol): 1..MaxIDLen bytes of
// valid UTF-8 in normalization form C, with no white space but single spaces (U+0020) between
// words, no control characters and no format characters. An id may hold a space ("Boring
// John", the UT seed's own example) because the line protocol takes an id as the rest of its
// line; not at either end, nor two in a row, nor any other white space (a tab, a no-break
// space), for the same reason as format characters below: "Boring  John" and "Boring John"
// would look alike. Control characters and invalid UTF-8 are out because Postgres text holds
// neither a NUL nor invalid UTF-8, and logs should not carry escapes; format characters
// (Unicode's Cf: zero-width spaces and joiners, bidirectional overrides, the BOM) because they
// are invisible, so "alice\u200b" stood beside "alice" on a leaderboard and an override could
// reverse how an id reads; a form other than NFC because "e\u0301" and "é" look the same
// but are two ids; and letters of two look-alike alphabets (mixesAlphabets) because "pаypal"
// with a Cyrillic 'а' reads as "paypal". (An id in another form is refused, not rewritten: the id a client sends is
// the id it reads back.) Every transport checks ids with it before any store call. The
// error's text is the message for the field ("must be valid UTF-8").
func ValidateID(s string) error {
	if s == "" {
		return errIDEmpty
	}
	if len(s) > MaxIDLen {
		return errIDLong
	}
	if err := checkText(s, false); err != nil {
		return err
	}
	if mixesAlphabets(s) {
		return errIDScripts
	}
	return nil
}

// innerSpace reports whether the space at s[i] is a single space between two words.
func innerSpace(s string, i int) bool {
	return i > 0 && i < len(s)-1 && s[i-1] != ' ' && s[i+1] != ' '
}

// checkID is ValidateID as a field message ("" when the id is fine).
func checkID(s string) string {
	if err := ValidateID(s); err != nil {
		return err.Error()
	}
	return ""
}

// checkText reports invalid UTF-8, control and format characters, white space (with spaces,
// none; without, any but single inner spaces: innerSpace), and text not in NFC. ASCII, always
// NFC, skips the normalization check.
func checkText(s string, spaces bool) error {
	ascii := true
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return errIDControl
			}
			if c == ' ' && !spaces && !innerSpace(s, i) {
				return errIDSpace
			}
			i++
			continue
		}
		ascii = false
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return errIDUTF8
		}
		if unicode.IsControl(r) {
			return errIDControl
		}
		if unicode.IsSpace(r) && !spaces {
			return errIDSpace
		}
		if unicode.Is(unicode.Cf, r) {
			return errIDFormat
		}
		i += size
	}
	if !ascii && !norm.NFC.IsNormalString(s) {
		return errIDNFC
	}
	return nil
}

// checkMap validates a map name: 1..MaxIDLen bytes of valid UTF-8 without control characters
// (spaces are allowed).
func checkMap(s string) string {
	if s == "" {
		return "is required"
	}
	if len(s) > MaxIDLen {
		return "must be at most 128 bytes"
	}
	if err := checkText(s, true); err != nil {
		return err.Error()
	}
	return ""
}

// fold lower-cases an ASCII name; it does not allocate when s is already lower case.
func fold(s string) string { return strings.ToLower(s) }

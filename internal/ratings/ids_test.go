package ratings

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The id rule refuses invisible format characters and text not in NFC, so that no two
// accepted ids look alike by those means ("alice\u200b" beside "alice" on a leaderboard).
func TestValidateIDRefusesLookAlikes(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]error{
		"alice":               nil,
		"Zoë":                 nil, // NFC: ë is one code point
		"日本語":                 nil,
		"Boring_John":         nil,
		"Boring John":         nil, // the UT seed's example: a single space between words
		"a b c":               nil,
		" Boring":             errIDSpace, // at either end
		"Boring ":             errIDSpace,
		" ":                   errIDSpace,
		"Boring  John":        errIDSpace,  // two in a row: looks like one
		"Boring\u2003John":    errIDSpace,  // any other white space (an em space)
		"Boring\u00a0John":    errIDSpace,  // a no-break space
		"Boring\u3000John":    errIDSpace,  // an ideographic space
		"alice\u200b":         errIDFormat, // zero-width space
		"al\u200dice":         errIDFormat, // zero-width joiner
		"\u202egnp.exe":       errIDFormat, // right-to-left override
		"a\u2066b\u2069":      errIDFormat, // bidi isolates
		"\ufeffalice":         errIDFormat, // byte order mark
		"alice\u00ad":         errIDFormat, // soft hyphen
		"Zoe\u0308":           errIDNFC,    // e and a combining diaeresis
		"\u212b":              errIDNFC,    // the Angstrom sign, which NFC makes Å
		"a\u0301\u0301\u0301": errIDNFC,
		"p\u0430ypal":         errIDScripts, // a Cyrillic а among Latin letters
		"\u0391lice":          errIDScripts, // a Greek capital alpha
		"Ꭺlice":               errIDScripts, // a Cherokee letter A
		"\u0430\u0441\u0435":  nil,          // all Cyrillic: one alphabet
		"Москва":              nil,
		"Ἀθῆναι":              nil,
		"東京tokyo":             nil, // Han beside Latin: not look-alike alphabets
		"ゲーマー_1":              nil,
		"Zoë-9.x":             nil,
	} {
		if got := ValidateID(id); got != want {
			t.Errorf("ValidateID(%q) = %v, want %v", id, got, want)
		}
	}
}

// FuzzValidateID: whatever the rule accepts is valid UTF-8 in NFC, without control or format
// characters, without white space but single spaces between words, and at most MaxIDLen
// bytes.
func FuzzValidateID(f *testing.F) {
	for _, seed := range []string{"alice", "p\u0430ypal", "\u0430\u0441\u0435", "alice\u200b", "\u202eevil", "e\u0301", "\u00e9", "\ufeff", "a b", " a", "a  b", "a\tb", "a\x00", "\xff", "\u212b", "ﬁ"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateID(id) != nil {
			return
		}
		if id == "" || len(id) > MaxIDLen || !utf8.ValidString(id) || !norm.NFC.IsNormalString(id) {
			t.Fatalf("accepted %q", id)
		}
		alphabets := map[string]bool{}
		for _, r := range id {
			if unicode.IsControl(r) || unicode.IsSpace(r) && r != ' ' || unicode.Is(unicode.Cf, r) {
				t.Fatalf("accepted %q with %U", id, r)
			}
			for _, name := range []string{"Latin", "Greek", "Cyrillic", "Armenian", "Cherokee"} {
				if unicode.Is(unicode.Scripts[name], r) {
					alphabets[name] = true
				}
			}
		}
		if len(alphabets) > 1 {
			t.Fatalf("accepted %q, which mixes the alphabets %v", id, alphabets)
		}
		if strings.Join(strings.Fields(id), " ") != id {
			t.Fatalf("accepted %q: spaces at an end or two in a row", id)
		}
	})
}

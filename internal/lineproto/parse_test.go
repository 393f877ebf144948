package lineproto

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func TestParseLine(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		line    string
		want    Command
		wantErr string // the ERROR reason; "" for none
	}{
		// Every command, as the seed writes them.
		{line: "GAME xDeathMatch", want: Command{KindGame, "xDeathMatch"}},
		{line: "MUTATOR MutInstaGib", want: Command{KindMutator, "MutInstaGib"}},
		{line: "PLAYER 0123abcd", want: Command{KindPlayer, "0123abcd"}},
		{line: "BOT Jakob", want: Command{KindBot, "Jakob"}},
		{line: "MEANBOT", want: Command{KindMeanBot, ""}},

		// Keywords in any ASCII case; arguments kept as sent.
		{line: "game TDM", want: Command{KindGame, "TDM"}},
		{line: "Player Alice", want: Command{KindPlayer, "Alice"}},
		{line: "meanBot", want: Command{KindMeanBot, ""}},
		{line: "bOt  b", want: Command{KindBot, "b"}},

		// White space around and between words, and a "\r" left by "\r\n".
		{line: "  PLAYER\talice  ", want: Command{KindPlayer, "alice"}},
		{line: "PLAYER alice\r", want: Command{KindPlayer, "alice"}},
		{line: "MEANBOT\r", want: Command{KindMeanBot, ""}},
		{line: "PLAYER\u00a0alice", want: Command{KindPlayer, "alice"}}, // NBSP is white space

		// Blank lines.
		{line: "", want: Command{}},
		{line: " \t\r", want: Command{}},

		// Ids: any UTF-8 without white space or control characters, up to MaxIDLen bytes.
		{line: "PLAYER Jürgen", want: Command{KindPlayer, "Jürgen"}},
		{line: "PLAYER a+b,c", want: Command{KindPlayer, "a+b,c"}},
		{line: "BOT " + long(ratings.MaxIDLen), want: Command{KindBot, long(ratings.MaxIDLen)}},
		{line: "PLAYER " + long(ratings.MaxIDLen+1), want: Command{KindPlayer, ""}, wantErr: "invalid player id: must be at most 128 bytes"},
		{line: "PLAYER a\x00b", want: Command{KindPlayer, ""}, wantErr: "invalid player id: must not contain control characters"},
		{line: "BOT a\x1bb", want: Command{KindBot, ""}, wantErr: "invalid bot name: must not contain control characters"},
		{line: "PLAYER a\xffb", want: Command{KindPlayer, ""}, wantErr: "invalid player id: must be valid UTF-8"},
		{line: "PLAYER a\u0085b", want: Command{KindPlayer, ""}, wantErr: "invalid player id: must not contain control characters"}, // NEL

		// Ids with single spaces between words: the rest of the line, trimmed.
		{line: "PLAYER John Smith", want: Command{KindPlayer, "John Smith"}},
		{line: "BOT Boring John", want: Command{KindBot, "Boring John"}},
		{line: "player  \tBoring John \r", want: Command{KindPlayer, "Boring John"}},
		{line: "PLAYER a b c", want: Command{KindPlayer, "a b c"}},
		{line: "PLAYER Boring  John", want: Command{KindPlayer, ""}, wantErr: "invalid player id: must not contain white space, but single spaces between words"},
		{line: "PLAYER Boring\u00a0John", want: Command{KindPlayer, ""}, wantErr: "invalid player id: must not contain white space, but single spaces between words"},
		{line: "BOT Boring\tJohn", want: Command{KindBot, ""}, wantErr: "invalid bot name: must not contain control characters"},
		{line: "PLAYER " + long(ratings.MaxIDLen-1) + " b", want: Command{KindPlayer, ""}, wantErr: "invalid player id: must be at most 128 bytes"},

		// Game types and mutators: names as the rating context takes them.
		{line: "GAME " + long(ratings.MaxNameLen), want: Command{KindGame, long(ratings.MaxNameLen)}},
		{line: "GAME " + long(ratings.MaxNameLen+1), want: Command{KindGame, ""}, wantErr: "invalid game type: must be at most 64 bytes"},
		{line: "GAME ctf+instagib", want: Command{KindGame, ""}, wantErr: "invalid game type: may contain only letters, digits, '_', '.' and '-'"},
		{line: "MUTATOR a,b", want: Command{KindMutator, ""}, wantErr: "invalid mutator name: may contain only letters, digits, '_', '.' and '-'"},
		{line: "MUTATOR Mut.Low_Grav-2", want: Command{KindMutator, "Mut.Low_Grav-2"}},

		// Missing and extra arguments.
		{line: "GAME", want: Command{KindGame, ""}, wantErr: "GAME needs a game type"},
		{line: "MUTATOR ", want: Command{KindMutator, ""}, wantErr: "MUTATOR needs a mutator name"},
		{line: "PLAYER", want: Command{KindPlayer, ""}, wantErr: "PLAYER needs a player id"},
		{line: "BOT", want: Command{KindBot, ""}, wantErr: "BOT needs a bot name"},
		{line: "GAME tdm extra", want: Command{KindGame, ""}, wantErr: "GAME takes one argument"},
		{line: "MEANBOT tdm", want: Command{KindMeanBot, ""}, wantErr: "MEANBOT takes no argument"},
		{line: "MEANBOT a b", want: Command{KindMeanBot, ""}, wantErr: "MEANBOT takes no argument"},

		// Unknown commands: quoted, truncated, never a second line.
		{line: "HELLO", want: Command{}, wantErr: `unknown command "HELLO"`},
		{line: "PLAYERS alice", want: Command{}, wantErr: `unknown command "PLAYERS"`},
		{line: "GAMEtdm", want: Command{}, wantErr: `unknown command "GAMEtdm"`},
		{line: "\x00PLAYER", want: Command{}, wantErr: `unknown command "\x00PLAYER"`},
		{line: long(100), want: Command{}, wantErr: `unknown command "` + long(32) + `"`},
		{line: "MEANBO\u212a", want: Command{}, wantErr: "unknown command \"MEANBO\u212a\""}, // no Unicode folding (Kelvin sign)
		{line: "ＰＬＡＹＥＲ x", want: Command{}, wantErr: `unknown command "ＰＬＡＹＥＲ"`},
	}
	for _, tt := range tests {
		t.Run(strings.ToValidUTF8(tt.line, "?"), func(t *testing.T) {
			got, err := ParseLine(tt.line)
			if got != tt.want {
				t.Errorf("ParseLine(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("ParseLine(%q) error %v", tt.line, err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("ParseLine(%q) succeeded, want error %q", tt.line, tt.wantErr)
			case err != nil:
				if apperr.CodeOf(err) != apperr.Invalid {
					t.Errorf("code %s, want invalid", apperr.CodeOf(err))
				}
				if r := reason(err); r != tt.wantErr {
					t.Errorf("reason %q, want %q", r, tt.wantErr)
				}
			}
		})
	}
}

// TestParseLineStringRoundTrips: a command's String parses back to it.
func TestParseLineStringRoundTrips(t *testing.T) {
	t.Parallel()
	for _, c := range []Command{
		{}, {KindGame, "ONS"}, {KindMutator, "instagib"}, {KindPlayer, "Jürgen"}, {KindBot, "Jakob"}, {KindMeanBot, ""},
		{KindPlayer, "Boring John"}, {KindBot, "a b c"},
	} {
		got, err := ParseLine(c.String())
		if err != nil || got != c {
			t.Errorf("ParseLine(%q) = %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
}

// checkParse is the property FuzzParseLine checks: ParseLine never panics; a command it
// returns is well formed and its String parses back to it; an error is an Invalid apperr
// whose reason fits on one printable line.
func checkParse(t *testing.T, line string) {
	t.Helper()
	cmd, err := ParseLine(line)
	if err != nil {
		if apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("ParseLine(%q): error %v is not Invalid", line, err)
		}
		r := reason(err)
		if r == "" || !utf8.ValidString(r) || strings.ContainsAny(r, "\r\n\x00") || len(r) > 400 {
			t.Fatalf("ParseLine(%q): reason %q does not fit an ERROR line", line, r)
		}
		if cmd.Arg != "" || cmd.Kind > KindMeanBot {
			t.Fatalf("ParseLine(%q) failed with command %+v", line, cmd)
		}
		return
	}
	switch cmd.Kind {
	case KindNone:
		if len(strings.Fields(line)) != 0 {
			t.Fatalf("ParseLine(%q): nothing from a line with words", line)
		}
	case KindMeanBot:
		if cmd.Arg != "" {
			t.Fatalf("ParseLine(%q): MEANBOT with %q", line, cmd.Arg)
		}
	case KindGame, KindMutator, KindPlayer, KindBot:
		if cmd.Arg == "" || len(cmd.Arg) > ratings.MaxIDLen || !utf8.ValidString(cmd.Arg) || !strings.Contains(line, cmd.Arg) {
			t.Fatalf("ParseLine(%q): bad argument %q", line, cmd.Arg)
		}
		// An id is the rest of the line: its words, rejoined by single spaces (which the id
		// rule allows), and the line holds nothing after it. A name is one word.
		words := strings.Fields(cmd.Arg)
		if cmd.Kind == KindPlayer || cmd.Kind == KindBot {
			if strings.Join(words, " ") != cmd.Arg || strings.TrimRightFunc(line, unicode.IsSpace)[len(strings.TrimRightFunc(line, unicode.IsSpace))-len(cmd.Arg):] != cmd.Arg {
				t.Fatalf("ParseLine(%q): id %q is not the rest of the line in single-spaced words", line, cmd.Arg)
			}
			if err := ratings.ValidateID(cmd.Arg); err != nil {
				t.Fatalf("ParseLine(%q): id %q breaks the id rule: %v", line, cmd.Arg, err)
			}
		} else if len(words) != 1 {
			t.Fatalf("ParseLine(%q): name %q is not one word", line, cmd.Arg)
		}
		if cmd.Kind == KindGame || cmd.Kind == KindMutator {
			if _, err := ratings.NewContext("g", []string{cmd.Arg}); err != nil {
				t.Fatalf("ParseLine(%q): %q is not a name the rating context takes: %v", line, cmd.Arg, err)
			}
		}
	default:
		t.Fatalf("ParseLine(%q): kind %d", line, cmd.Kind)
	}
	again, err := ParseLine(cmd.String())
	if err != nil || again != cmd {
		t.Fatalf("ParseLine(%q) = %+v, but ParseLine(%q) = %+v, %v", line, cmd, cmd.String(), again, err)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"GAME xDeathMatch", "MUTATOR MutInstaGib", "PLAYER 0123abcd", "BOT Jakob", "MEANBOT",
		"game tdm\r", "  player\talice ", "", "PLAYER John Smith", "MEANBOT x", "HELLO world",
		"PLAYER a\xffb", "PLAYER Jürgen", "BOT a\u0085b", "GAME ctf+instagib", "MEANBO\u212a",
		"PLAYER Boring John", "BOT  a b c \r", "PLAYER a  b", "PLAYER a\u00a0b", "GAME a b",
	} {
		f.Add(s)
	}
	f.Fuzz(checkParse)
}

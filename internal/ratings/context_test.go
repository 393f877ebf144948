package ratings

import (
	"reflect"
	"strings"
	"testing"
)

func TestPolicyContext(t *testing.T) {
	policy, err := NewMutatorPolicy([]string{"InstaGib", "lowgrav", "quadjump"}, []string{"NoCheat", "stats"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		gameType    string
		mutators    []string
		wantKey     string
		wantUnknown []string
	}{
		{"bare game type", "tdm", nil, "tdm", nil},
		{"game type folded to lower case", "xGame.xTeamGame", nil, "xgame.xteamgame", nil},
		{"sorted", "tdm", []string{"quadjump", "lowgrav", "instagib"}, "tdm+instagib,lowgrav,quadjump", nil},
		{"deduplicated, case-insensitively", "tdm", []string{"instagib", "InstaGib", "INSTAGIB", "lowgrav"}, "tdm+instagib,lowgrav", nil},
		{"neutral mutators ignored", "tdm", []string{"nocheat", "instagib", "Stats"}, "tdm+instagib", nil},
		{"unknown mutators ignored and reported", "ctf", []string{"MutNewThing", "instagib", "aaa", "mutnewthing"}, "ctf+instagib", []string{"aaa", "mutnewthing"}},
		{"only unknown", "ctf", []string{"x"}, "ctf", []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, unknown, err := policy.Context(tt.gameType, tt.mutators)
			if err != nil {
				t.Fatal(err)
			}
			if c.Key() != tt.wantKey {
				t.Errorf("key = %q, want %q", c.Key(), tt.wantKey)
			}
			if !reflect.DeepEqual(unknown, tt.wantUnknown) {
				t.Errorf("unknown = %q, want %q", unknown, tt.wantUnknown)
			}
			back, err := ParseContextKey(c.Key())
			if err != nil || !back.Equal(c) {
				t.Errorf("ParseContextKey(%q) = %v, %v; want %v", c.Key(), back, err, c)
			}
		})
	}
}

func TestContextValidation(t *testing.T) {
	tests := []struct {
		name     string
		gameType string
		mutators []string
		want     []string
	}{
		{"empty game type", "", nil, []string{"context.game_type"}},
		{"long game type", strings.Repeat("a", 65), nil, []string{"context.game_type"}},
		{"game type with '+'", "a+b", nil, []string{"context.game_type"}},
		{"mutator with ','", "tdm", []string{"a", "b,c"}, []string{"context.mutators[1]"}},
		{"too many", "tdm", make([]string, 65), []string{"context.mutators"}},
	}
	var nilPolicy *MutatorPolicy
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := nilPolicy.Context(tt.gameType, tt.mutators)
			if got := fields(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("policy: fields = %q, want %q", got, tt.want)
			}
			_, err = NewContext(tt.gameType, tt.mutators)
			if got := fields(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NewContext: fields = %q, want %q", got, tt.want)
			}
		})
	}
	if c, err := NewContext(strings.Repeat("a", 64), []string{"A_b.c-9"}); err != nil || c.Key() != strings.Repeat("a", 64)+"+a_b.c-9" {
		t.Errorf("longest valid names: %v, %v", c, err)
	}
}

func TestNewContextKeepsEveryMutator(t *testing.T) {
	c, err := NewContext("TDM", []string{"lowgrav", "InstaGib", "lowgrav"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Key() != "tdm+instagib,lowgrav" {
		t.Errorf("key = %q", c.Key())
	}
}

func TestParseContextKeyRejectsNonCanonicalKeys(t *testing.T) {
	for _, key := range []string{"", "TDM", "tdm+b,a", "tdm+a,a", "tdm+", "tdm+a,", "+a"} {
		if c, err := ParseContextKey(key); err == nil {
			t.Errorf("ParseContextKey(%q) = %v, want an error", key, c)
		}
	}
}

func TestMutatorRegistry(t *testing.T) {
	var p MutatorPolicy // the zero value knows nothing
	if st := p.Status("instagib"); st != MutatorUnknown {
		t.Errorf("zero policy: %v", st)
	}
	if !p.Observe("AntiCheat") || p.Observe("anticheat") {
		t.Error("Observe should report a new name once")
	}
	if err := p.Set("AntiCheat", false); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("InstaGib", true); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("bad name", true); err == nil || fields(t, err)[0] != "name" {
		t.Errorf("Set(bad name) = %v", err)
	}
	p.Observe("newone")
	want := []MutatorInfo{{"anticheat", MutatorNeutral}, {"instagib", MutatorGameplay}, {"newone", MutatorUnknown}}
	if got := p.Mutators(); !reflect.DeepEqual(got, want) {
		t.Errorf("Mutators() = %v, want %v", got, want)
	}
	c := p.Clone()
	_ = c.Set("newone", true)
	if p.Status("newone") != MutatorUnknown || c.Status("NEWONE") != MutatorGameplay {
		t.Error("Clone shares state with the original")
	}
	// An admin marking an unknown mutator as gameplay splits the context from then on.
	ctx, unknown, _ := c.Context("tdm", []string{"newone", "anticheat"})
	if ctx.Key() != "tdm+newone" || unknown != nil {
		t.Errorf("after Set: %q, unknown %q", ctx.Key(), unknown)
	}
	if _, err := NewMutatorPolicy([]string{"a"}, []string{"A"}); err == nil {
		t.Error("a mutator both gameplay and neutral must be an error")
	}
}

// FuzzParseContextKey: a stored context key is parsed back without panicking, and whatever
// parses is canonical: its Key is the input.
func FuzzParseContextKey(f *testing.F) {
	f.Add("tdm")
	f.Add("ctf+instagib,lowgrav")
	f.Add("ctf+")
	f.Add("+a")
	f.Add("CTF+b,a")
	f.Fuzz(func(t *testing.T, key string) {
		c, err := ParseContextKey(key)
		if err != nil {
			return
		}
		if c.Key() != key {
			t.Fatalf("ParseContextKey(%q).Key() = %q", key, c.Key())
		}
	})
}

package handlers

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

func TestParseAPIKeys(t *testing.T) {
	t.Parallel()
	hash := HashKey("secret")
	tests := []struct {
		name    string
		in      string
		keys    int
		wantErr string
	}{
		{"empty", "", 0, ""},
		{"one key", "ci:read+match:" + hash, 1, ""},
		{"two keys with spaces", " ci:read:" + hash + " , ops:admin:" + HashKey("other"), 2, ""},
		{"unknown scope", "ci:write:" + hash, 0, "unknown scope"},
		{"short hash", "ci:read:abcd", 0, "64 hex digits"},
		{"missing part", "ci:" + hash, 0, "NAME:SCOPES:SHA256HEX"},
		{"duplicate name", "ci:read:" + hash + ",ci:match:" + hash, 0, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := ParseAPIKeys(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(keys) != tt.keys {
				t.Fatalf("got %d keys, err %v; want %d keys", len(keys), err, tt.keys)
			}
		})
	}
}

func TestAuthDecidesByScope(t *testing.T) {
	t.Parallel()
	keys, err := ParseAPIKeys("matcher:match:" + HashKey("m-key") + ",reader:read:" + HashKey("r-key"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"players":[]}`
	tests := []struct {
		name   string
		auth   *Auth
		header string
		want   int
	}{
		{"no keys configured: matchmaking is open", &Auth{}, "", http.StatusOK},
		{"auth off: open", &Auth{Off: true, Keys: keys}, "", http.StatusOK},
		{"keys configured, none given", &Auth{Keys: keys}, "", http.StatusUnauthorized},
		{"wrong key", &Auth{Keys: keys}, "Bearer nope", http.StatusUnauthorized},
		{"not a bearer", &Auth{Keys: keys}, "Basic bTprZXk=", http.StatusUnauthorized},
		{"key without the scope", &Auth{Keys: keys}, "Bearer r-key", http.StatusForbidden},
		{"key with the scope", &Auth{Keys: keys}, "Bearer m-key", http.StatusOK},
		{"scheme is case-insensitive", &Auth{Keys: keys}, "bearer m-key", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewServer(Deps{Auth: tt.auth})
			var headers []string
			if tt.header != "" {
				headers = []string{"Authorization", tt.header}
			}
			resp := exchange(t, h, http.MethodPost, "/v1/matchmake", "application/json", body, headers...)
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatal("a 401 must say how to authenticate")
			}
		})
	}
}

// A ticket is read with the match scope or the read scope (the console's), and with no other.
func TestTicketsAreReadWithMatchOrRead(t *testing.T) {
	t.Parallel()
	keys, err := ParseAPIKeys("matcher:match:" + HashKey("m-key") + ",reader:read:" + HashKey("r-key") + ",poster:results:" + HashKey("p-key"))
	if err != nil {
		t.Fatal(err)
	}
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Matcher: queue.TickPass{}})
	h := NewServer(Deps{Queue: qs, Auth: &Auth{Keys: keys}})
	for key, want := range map[string]int{"m-key": http.StatusNotFound, "r-key": http.StatusNotFound,
		"p-key": http.StatusForbidden, "nope": http.StatusUnauthorized} {
		if resp := exchange(t, h, http.MethodGet, "/v1/tickets/t_missing", "", "", "Authorization", "Bearer "+key); resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", key, resp.StatusCode, want)
		}
	}
	// Deleting one stays the match scope's.
	if resp := exchange(t, h, http.MethodDelete, "/v1/tickets/t_missing", "", "", "Authorization", "Bearer r-key"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("delete with a read key: %d", resp.StatusCode)
	}
}

func TestOperationsEndpointsNeedNoKey(t *testing.T) {
	t.Parallel()
	keys, _ := ParseAPIKeys("ops:admin:" + HashKey("k"))
	h := NewServer(Deps{Auth: &Auth{Keys: keys}})
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
		if resp := exchange(t, h, http.MethodGet, path, "", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%s = %d without a key", path, resp.StatusCode)
		}
	}
}

// FuzzParseAPIKeys feeds the MATCHMAKER_API_KEYS parser arbitrary text: it never panics, and
// whatever it accepts has names, known scopes and full hashes.
func FuzzParseAPIKeys(f *testing.F) {
	f.Add("ci:read+match+results+admin:" + HashKey("k"))
	f.Add("a:read:" + HashKey("x") + ",b:admin:" + HashKey("y"))
	f.Add(" , ,")
	f.Add("x:read+:" + HashKey("z"))
	f.Add("::")
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := ParseAPIKeys(s)
		if err != nil {
			return
		}
		for _, k := range keys {
			if k.Name == "" || len(k.Scopes) == 0 {
				t.Fatalf("accepted a key without a name or scopes from %q: %+v", s, k)
			}
			for _, sc := range k.Scopes {
				if !slices.Contains(allScopes, sc) {
					t.Fatalf("accepted scope %q from %q", sc, s)
				}
			}
		}
	})
}

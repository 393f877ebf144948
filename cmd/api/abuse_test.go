package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/handlers"
)

// With API keys, the line protocol needs its shared secret: a configuration without one is
// refused, naming the variable; a malformed hash too. An allow-list that is not CIDRs is
// refused, naming its variable.
func TestAbuseSettingsAreChecked(t *testing.T) {
	t.Parallel()
	keys := "ops:admin:" + handlers.HashKey("k")
	for name, tc := range map[string]struct {
		env  map[string]string
		want string // "" = valid
	}{
		"keys and the line protocol without a secret": {map[string]string{"MATCHMAKER_API_KEYS": keys, "MATCHMAKER_LEGACY_ADDR": ":7777"}, "MATCHMAKER_LEGACY_SECRET_SHA256"},
		"with its secret": {map[string]string{"MATCHMAKER_API_KEYS": keys, "MATCHMAKER_LEGACY_ADDR": ":7777",
			"MATCHMAKER_LEGACY_SECRET_SHA256": handlers.HashKey("mods")}, ""},
		"no keys, no secret needed":  {map[string]string{"MATCHMAKER_LEGACY_ADDR": ":7777"}, ""},
		"a malformed secret hash":    {map[string]string{"MATCHMAKER_LEGACY_SECRET_SHA256": "mods"}, "MATCHMAKER_LEGACY_SECRET_SHA256"},
		"a bad allow-list":           {map[string]string{"MATCHMAKER_WEBHOOK_ALLOW_CIDRS": "10.0.0.0/8,intranet"}, "MATCHMAKER_WEBHOOK_ALLOW_CIDRS"},
		"an allow-list":              {map[string]string{"MATCHMAKER_WEBHOOK_ALLOW_CIDRS": "10.0.0.0/8, 192.168.4.7"}, ""},
		"no admission slot per key":  {map[string]string{"MATCHMAKER_ADMISSION_PER_KEY": "0"}, "MATCHMAKER_ADMISSION_PER_KEY"},
		"no per-address connections": {map[string]string{"MATCHMAKER_LEGACY_MAX_CONNS_PER_ADDR": "0"}, "MATCHMAKER_LEGACY_MAX_CONNS_PER_ADDR"},
	} {
		_, err := parseConfig(nil, func(k string) string { return tc.env[k] }, io.Discard)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming %s", name, err, tc.want)
		}
	}
}

// The program passes the secret to the line protocol: a mod that does not send it first is
// turned away, one that does is answered.
func TestRunAsksModsForTheSecret(t *testing.T) {
	t.Parallel()
	p := startProgram(t, map[string]string{"MATCHMAKER_LEGACY_ADDR": "127.0.0.1:0",
		"MATCHMAKER_API_KEYS": "ops:admin:" + handlers.HashKey("k"), "MATCHMAKER_LEGACY_SECRET_SHA256": handlers.HashKey("mods")})
	defer p.stop()
	ask := func(lines string) []string {
		conn, err := net.Dial("tcp", p.legacy)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := fmt.Fprint(conn, lines); err != nil {
			t.Fatal(err)
		}
		var got []string
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		return got
	}
	if got := ask("GAME ctf\nMEANBOT\n"); len(got) != 1 || got[0] != "ERROR auth required: send AUTH <secret> first" {
		t.Fatalf("without AUTH: %q", got)
	}
	// The server closes the connection after the client half-closes (EOF), having answered.
	conn, err := net.Dial("tcp", p.legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "AUTH mods\nGAME ctf\nMEANBOT\n")
	conn.(*net.TCPConn).CloseWrite()
	sc := bufio.NewScanner(conn)
	if !sc.Scan() || sc.Text() != "MEANBOT 50.00 0" {
		t.Fatalf("with AUTH: %q", sc.Text())
	}
}

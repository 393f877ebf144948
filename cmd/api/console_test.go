package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The console's screenshot goes to this file when set (the one in docs/ is made with
// MATCHMAKER_CONSOLE_SCREENSHOT=docs/console.png, run from the repository root), else to the
// test's temporary directory.
const screenshotEnv = "MATCHMAKER_CONSOLE_SCREENSHOT"

// chromium finds the browser, or skips the test without one (fails in CI, which installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("MATCHMAKER_REQUIRE_TEST_DB") == "1" {
		t.Fatal("no chromium on PATH, and MATCHMAKER_REQUIRE_TEST_DB=1 (CI) requires the browser test: apt-get install chromium")
	}
	t.Skip("no chromium on PATH: the console's browser test needs it (apt-get install chromium)")
	return ""
}

// consoleQueue has a latency limit and a rule, so that the page has tolerances and rules to
// show: 2v2, the interval 25 -> 60 -> 150, latency 60 -> 120 ms, mode must be equal.
const consoleQueue = `{"context":{"game_type":"ctf"},"team_size":2,"tick_ms":100,"regions":["eu","us"],
 "expansions":{"interval":[{"after_s":0,"value":25},{"after_s":5,"value":60},{"after_s":15,"value":150}],
               "max_latency_ms":[{"after_s":0,"value":60},{"after_s":10,"value":120}]},
 "attributes":{"mode":{"type":"string","default":"ranked"}},
 "rules":[{"name":"mode","type":"equal","attribute":"mode"}]}`

// The console in a real browser against the whole program with tickets flowing: a read key
// typed into the page, the queue's searching count as the API gives it, the last matches with
// the API's match ids and win probabilities, why tickets wait, the expiries by reason, and a
// ticket looked up with its status, tolerances and what it waits on. No script error, no
// content-security-policy violation. The page is saved as a screenshot.
func TestConsoleInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser test starts Chromium")
	}
	browser := chromium(t)
	const adminKey, readKey = "console-admin", "console-read"
	hash := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	fn := httptest.NewServer(http.HandlerFunc(shadowFunction))
	t.Cleanup(fn.Close)
	p := startProgram(t, map[string]string{"MATCHMAKER_API_KEYS": "ops:admin+match+results:" + hash(adminKey) + ",designer:read:" + hash(readKey),
		"MATCHMAKER_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8"})
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("the server's shutdown: %v", err)
		}
	})
	client := &http.Client{Timeout: 10 * time.Second}
	api := func(method, path, key, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, p.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	shadowed := strings.TrimSuffix(consoleQueue, "}") + `,"match_function":{"url":"` + fn.URL + `","secret":"a-console-test-secret","mode":"shadow"}}`
	if status, b := api(http.MethodPut, "/v1/queues/ranked", adminKey, shadowed); status != http.StatusCreated {
		t.Fatalf("the queue: %d %s", status, b)
	}
	// ticket makes a ticket of one player, or of a party when id lists several ("a,b").
	ticket := func(id string, rating float64, latencies, extra string) string {
		var players []string
		for _, p := range strings.Split(id, ",") {
			players = append(players, fmt.Sprintf(`{"id":%q,"rating":%g}`, p, rating))
		}
		status, b := api(http.MethodPost, "/v1/queues/ranked/tickets", adminKey,
			fmt.Sprintf(`{"players":[%s],"latencies_ms":%s%s}`, strings.Join(players, ","), latencies, extra))
		var tk struct{ ID string }
		if err := json.Unmarshal(b, &tk); status != http.StatusCreated || err != nil {
			t.Errorf("ticket %s: %d %s", id, status, b)
		}
		return tk.ID
	}
	const near = `{"eu":30,"us":90}`
	// A season of ctf under way, so that the history below is its games and the page has tiers
	// to show: once the program's season check has reset it.
	season := fmt.Sprintf(`{"starts_at":%q,"ends_at":%q,"placement_games":2}`,
		time.Now().UTC().Add(-time.Minute).Format(time.RFC3339), time.Now().UTC().Add(24*time.Hour).Format(time.RFC3339))
	if status, b := api(http.MethodPut, "/v1/seasons/ctf/s1", adminKey, season); status != http.StatusOK {
		t.Fatalf("the season: %d %s", status, b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, b := api(http.MethodGet, "/v1/seasons/ctf", readKey, ""); strings.Contains(string(b), `"status":"running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the season's reset was not applied within 20 s")
		}
	}
	// Results of earlier games of the players to come, so that the model has ratings to predict
	// the matches from: in each, the team with the lower numbers wins.
	for g := range 30 {
		ids := rand.New(rand.NewPCG(uint64(g), 7)).Perm(60)[:4]
		lo, hi := min(ids[0], ids[1]), min(ids[2], ids[3])
		winner := 0
		if hi < lo {
			winner = 1
		}
		body := fmt.Sprintf(`{"match_id":"history-%d","context":{"game_type":"ctf"},"map":"ctf-face","duration_s":600,"winner":%d,
			"teams":[{"side":"red","players":[{"id":"player-%d"},{"id":"player-%d"}]},{"side":"blue","players":[{"id":"player-%d"},{"id":"player-%d"}]}]}`,
			g, winner, ids[0], ids[1], ids[2], ids[3])
		if status, b := api(http.MethodPost, "/v1/results", adminKey, body); status != http.StatusCreated {
			t.Fatalf("result %d: %d %s", g, status, b)
		}
	}
	// Tickets that wait: too far from everyone for the interval (one a party), a mode nobody else plays,
	// too far from every region; and two that expire.
	outlier := ticket("outlier-low", 320, near, "")
	ticket("outlier-high-1,outlier-high-2", 1780, near, "") // a party: players are not tickets
	ticket("tournament", 1000, near, `,"attributes":{"mode":"tournament"}`)
	ticket("far-away", 1000, `{"eu":400}`, "")
	ticket("brief-1", 60, near, `,"ttl_s":1`)
	ticket("brief-2", 1950, near, `,"ttl_s":1`)

	// The flow: players around 1000 arrive, most are matched within seconds.
	stop := make(chan struct{})
	var flow sync.WaitGroup
	flow.Go(func() {
		rng := rand.New(rand.NewPCG(21, 2))
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(120 * time.Millisecond):
			}
			ticket("player-"+strconv.Itoa(n), 1000+rng.NormFloat64()*70, near, "")
		}
	})
	stopFlow := sync.OnceFunc(func() { close(stop); flow.Wait() })
	t.Cleanup(stopFlow)

	type stats struct {
		SearchingTickets int `json:"searching_tickets"`
		SearchingPlayers int `json:"searching_players"`
		Matches          struct {
			LastHour int `json:"last_hour"`
		} `json:"matches"`
		ExpiredByReason map[string]int `json:"expired_by_reason"`
		WaitingOn       map[string]int `json:"waiting_on"`
		RecentMatches   []struct {
			ID             string    `json:"id"`
			WinProbability []float64 `json:"win_probability"`
		} `json:"recent_matches"`
	}
	readStats := func() stats {
		status, b := api(http.MethodGet, "/v1/queues/ranked/stats", readKey, "")
		var st stats
		if err := json.Unmarshal(b, &st); status != http.StatusOK || err != nil {
			t.Fatalf("stats: %d %s", status, b)
		}
		return st
	}
	deadline := time.Now().Add(30 * time.Second)
	for st := readStats(); st.Matches.LastHour < 3 || st.ExpiredByReason["ttl"] < 2 || len(st.WaitingOn) == 0; st = readStats() {
		if time.Now().After(deadline) {
			t.Fatalf("the queue did not get going: %+v", st)
		}
		time.Sleep(200 * time.Millisecond) // the stats are rebuilt every second
	}

	// The console page itself: no key needed, its policy set.
	resp, err := client.Get(p.base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != http.StatusOK || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("GET /console/: %d, Content-Security-Policy %q", resp.StatusCode, csp)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 1000), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	var problems []string
	var mu sync.Mutex
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// A failed request is the browser's log of an answer the page handles (the queue
			// list is the admin scope's: a read key gets a 403); a policy violation or a script
			// error is a fault.
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !strings.HasPrefix(m.Text, "Failed to load resource") {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(id string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("the text of #%s: %v", id, err)
		}
		return s
	}
	// waitFor polls a predicate in the page until it holds.
	waitFor := func(what, predicate string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingInterval(100*time.Millisecond),
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}

	do("open the console", chromedp.Navigate(p.base+"/console"), chromedp.WaitVisible(chromedp.ID("key")))
	do("enter the read key", chromedp.SendKeys(chromedp.ID("key"), readKey), chromedp.Click(chromedp.ID("connect")))
	do("choose the queue", chromedp.SendKeys(chromedp.ID("queue"), "ranked"), chromedp.Click(chromedp.ID("watch")),
		chromedp.WaitVisible(chromedp.ID("main")))
	waitFor("a match row", `document.querySelector("#matches tr[data-match]") !== null`)
	waitFor("the charts", `document.querySelectorAll(".chart canvas").length >= 3`)

	// The page follows the flow: its newest match is a match the API serves.
	newest := evalString(t, ctx, `document.querySelector("#matches tr[data-match]").dataset.match`)
	if status, b := api(http.MethodGet, "/v1/matches/"+newest, readKey, ""); status != http.StatusOK {
		t.Errorf("the page's newest match %s: %d %s", newest, status, b)
	}

	// Once the flow stops and the queue settles, what the page shows is what the API says:
	// the searching count, the last matches (ids and win probabilities, in order), every rule
	// holding tickets, and the expiries.
	stopFlow()
	type shown struct {
		Searching string
		Players   string
		Matches   []string
		Rows      []string
	}
	read := func() shown {
		var s shown
		js := `JSON.stringify({Searching: document.getElementById("searching-tickets").textContent,
			Players: document.getElementById("searching-players").textContent,
			Matches: [...document.querySelectorAll("#matches tr[data-match]")].map(r => r.dataset.match),
			Rows: [...document.querySelectorAll("#matches tr[data-match]")].map(r => r.textContent)})`
		if err := json.Unmarshal([]byte(evalString(t, ctx, js)), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, page := readStats(), read()
		var want []string
		for _, m := range st.RecentMatches {
			want = append(want, m.ID)
		}
		if page.Searching == strconv.Itoa(st.SearchingTickets) && page.Players == strconv.Itoa(st.SearchingPlayers) &&
			slices.Equal(page.Matches, want) {
			for i, m := range st.RecentMatches {
				if len(m.WinProbability) != 2 {
					t.Fatalf("match %s has no win probabilities: %v", m.ID, m.WinProbability)
				}
				p := fmt.Sprintf("%.1f%% / %.1f%%", 100*m.WinProbability[0], 100*m.WinProbability[1])
				if !strings.Contains(page.Rows[i], p) || !strings.Contains(page.Rows[i], "player-") {
					t.Errorf("the page's row of %s, %q, lacks its players or the API's win probabilities %s", m.ID, page.Rows[i], p)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page shows %+v, the API %d tickets and %d players searching, and the matches %v", page,
				st.SearchingTickets, st.SearchingPlayers, want)
		}
		time.Sleep(200 * time.Millisecond) // the page refreshes every 2 s
	}
	st := readStats()
	for rule := range st.WaitingOn {
		waitFor("why tickets wait: "+rule, `document.querySelector("#waiting-on tbody").textContent.includes(`+strconv.Quote(rule)+`)`)
	}
	for reason, n := range st.ExpiredByReason {
		waitFor("the expiries: "+reason, `[...document.querySelectorAll("#expiries tbody tr")].some(r =>
			r.cells[0].textContent === `+strconv.Quote(reason)+` && r.cells[1].textContent === "`+strconv.Itoa(n)+`")`)
	}

	checkShadowInBrowser(t, waitFor, func() (int, []byte) { return api(http.MethodGet, "/v1/queues/ranked/stats", readKey, "") })

	// A ticket that waits, looked up.
	do("look up a ticket", chromedp.SendKeys(chromedp.ID("ticket-id"), outlier), chromedp.Click(chromedp.ID("lookup")))
	waitFor("the ticket", `document.getElementById("ticket-status").textContent === "searching"`)
	var tk struct {
		WaitingOn struct{ Rule, Detail string } `json:"waiting_on"`
		Players   []struct{ ID string }         `json:"players"`
	}
	if status, b := api(http.MethodGet, "/v1/tickets/"+outlier, readKey, ""); status != http.StatusOK || json.Unmarshal(b, &tk) != nil || tk.WaitingOn.Rule == "" {
		t.Fatalf("the ticket from the API: %d %s", status, b)
	}
	if got, want := text("ticket-waiting-on"), tk.WaitingOn.Rule+": "+tk.WaitingOn.Detail; got != want {
		t.Errorf("waiting on %q, the API says %q", got, want)
	}
	if got := text("ticket-tolerances"); !strings.Contains(got, "interval ±") || !strings.Contains(got, "latency ≤ ") {
		t.Errorf("tolerances %q", got)
	}
	if got := text("ticket-wait"); !strings.HasSuffix(got, "so far") {
		t.Errorf("wait %q", got)
	}
	// Its players' standing, from GET /v1/players/{id}/standing: none has dodged or left.
	var clean []string
	for _, p := range tk.Players {
		clean = append(clean, p.ID+" (clean)")
	}
	waitFor("the ticket's standing", `document.getElementById("ticket-standing").textContent === `+strconv.Quote(strings.Join(clean, ", ")))

	checkTiersInBrowser(t, ctx, do, waitFor, func() (int, []byte) { return api(http.MethodGet, "/v1/seasons/ctf/s1/tiers", readKey, "") })

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "console.png")
	if p := os.Getenv(screenshotEnv); p != "" {
		path = p
		if !filepath.IsAbs(p) {
			path = filepath.Join("..", "..", p) // the test runs in cmd/api; the path is the repository's
		}
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("the page logged an error: %s", p)
	}
}

// shadowFunction is the console queue's match function, in mode shadow: it makes 2v2s of the
// pool's solo tickets in its order (whatever their ratings and modes: the check holds a
// function to the queue's shape, its judgement is its own), and proposes a match of tickets
// not in the pool, so that the page has both sides and a rejection to show.
func shadowFunction(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Pool []struct {
			ID      string            `json:"id"`
			Players []json.RawMessage `json:"players"`
		} `json:"pool"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	matches := []string{`{"teams":[{"tickets":["tk-none","tk-nobody"]},{"tickets":["tk-no","tk-one"]}]}`}
	var solo []string
	for _, t := range req.Pool {
		if len(t.Players) == 1 {
			solo = append(solo, strconv.Quote(t.ID))
		}
	}
	for i := 0; i+3 < len(solo); i += 4 {
		matches = append(matches, `{"teams":[{"tickets":[`+solo[i]+`,`+solo[i+1]+`]},{"tickets":[`+solo[i+2]+`,`+solo[i+3]+`]}]}`)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"matches":[`+strings.Join(matches, ",")+`]}`)
}

// checkShadowInBrowser: the shadow card shows the rules' matches as the API counts them,
// beside the function's side with its rejections by reason.
func checkShadowInBrowser(t *testing.T, waitFor func(string, string), stats func() (int, []byte)) {
	t.Helper()
	var st struct {
		Shadow *struct {
			Rules struct {
				Matches int `json:"matches"`
			} `json:"rules"`
			Function struct {
				Matches  int            `json:"matches"`
				Rejected map[string]int `json:"rejected"`
			} `json:"function"`
		} `json:"shadow"`
	}
	if status, b := stats(); status != http.StatusOK || json.Unmarshal(b, &st) != nil || st.Shadow == nil || st.Shadow.Rules.Matches == 0 ||
		st.Shadow.Function.Matches == 0 || st.Shadow.Function.Rejected["unknown_ticket"] == 0 {
		t.Fatalf("the queue's shadow stats: %d %s", status, b)
	}
	waitFor("the shadow card", `!document.getElementById("shadow-card").hidden`)
	waitFor("the rules' matches in the shadow card", `document.querySelector('#shadow tr[data-side="rules"]').cells[1].textContent === "`+
		strconv.Itoa(st.Shadow.Rules.Matches)+`"`)
	waitFor("the function's rejections in the shadow card", `document.querySelector('#shadow tr[data-side="function"]').cells[5].textContent.includes("unknown_ticket")`)
}

// evalString evaluates a JavaScript expression of string value in the page.
func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// checkTiersInBrowser: the season form shows the season's tier distribution as the API gives
// it: every tier, highest first, with its players.
func checkTiersInBrowser(t *testing.T, ctx context.Context, do func(string, ...chromedp.Action[chromedp.Void]), waitFor func(string, string),
	distribution func() (int, []byte)) {
	t.Helper()
	status, b := distribution()
	var d struct {
		Ranked int
		Tiers  []struct {
			Name    string
			Players int
		}
	}
	if err := json.Unmarshal(b, &d); status != http.StatusOK || err != nil || d.Ranked == 0 || len(d.Tiers) != 5 {
		t.Fatalf("the tier distribution: %d %s", status, b)
	}
	do("show the season's tiers", chromedp.SendKeys(chromedp.ID("season-game"), "ctf"), chromedp.SendKeys(chromedp.ID("season-name"), "s1"),
		chromedp.Click(chromedp.ID("show-tiers")))
	waitFor("the tiers", `document.querySelectorAll("#tiers tr[data-tier]").length === 5`)
	waitFor("the ranked count", `document.getElementById("tiers-ranked").textContent === "`+strconv.Itoa(d.Ranked)+`"`)
	for i, tier := range d.Tiers {
		row := len(d.Tiers) - 1 - i // the highest tier on top
		waitFor("tier "+tier.Name, fmt.Sprintf(`(() => { const r = document.querySelectorAll("#tiers tr[data-tier]")[%d];
			return r.cells[0].textContent === %q && r.cells[1].textContent === "%d"; })()`, row, tier.Name, tier.Players))
	}
}

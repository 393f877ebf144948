package lineproto

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// --- fixtures ------------------------------------------------------------------------------

// newStore returns a memory store in which instagib affects gameplay, with three ctf results:
// alice and bob (with the bot Jakob) beat carol and dave (with the bot Lauren) twice in plain
// ctf, and lose to them in ctf with instagib (reported with the neutral-by-default mutator
// antilag, which must not split the context).
func newStore(t testing.TB) *ratings.MemoryStore {
	t.Helper()
	policy, err := ratings.NewMutatorPolicy([]string{"instagib"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := ratings.NewMemoryStore(policy)
	record(t, st, "m1", nil, []string{"alice", "bob", "bot:Jakob"}, []string{"carol", "dave", "bot:Lauren"})
	record(t, st, "m2", nil, []string{"alice", "bob", "bot:Jakob"}, []string{"carol", "dave", "bot:Lauren"})
	record(t, st, "m3", []string{"InstaGib", "antilag"}, []string{"carol", "dave"}, []string{"alice", "bob"})
	return st
}

// record stores a ctf result that the first team won, applied with the default model (as
// the service does; see ratings/storetest).
func record(t testing.TB, st ratings.Store, id string, mutators []string, winners, losers []string) {
	t.Helper()
	win := 0
	r := ratings.Result{MatchID: id, GameType: "ctf", Mutators: mutators, Map: "Face", DurationS: 1200,
		Teams: []ratings.Team{storetest.Team("red", winners...), storetest.Team("blue", losers...)}, Winner: &win}
	apply := func(c ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
		o, err := ratings.DefaultModel().Apply(prior, bias, r)
		return o, []byte(id), err
	}
	if _, err := st.RecordResult(context.Background(), ratings.RecordRequest{Result: r, BodyHash: sha256.Sum256([]byte(id))}, apply); err != nil {
		t.Fatalf("RecordResult(%s): %v", id, err)
	}
}

// want computes the expected replies from the store itself.
type want struct {
	t  testing.TB
	st ratings.Store
}

func (w want) context(gameType string, mutators ...string) ratings.Context {
	c, err := ratings.NewContext(gameType, mutators)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w want) weight(c ratings.Context, p ratings.Participant) (float64, bool) {
	got, err := w.st.Ratings(context.Background(), c, []ratings.Participant{p})
	if err != nil {
		w.t.Fatal(err)
	}
	rt, ok := got[p]
	return rt.Weight(), ok
}

func (w want) player(c ratings.Context, id string) string {
	if wt, ok := w.weight(c, ratings.Participant{ID: id}); ok {
		return "PLAYER " + id + " " + f2(wt)
	}
	return "PLAYER " + id
}

func (w want) bot(c ratings.Context, name string) string {
	wt, ok := w.weight(c, ratings.Participant{ID: name, Bot: true})
	if !ok {
		wt, _, _ = w.st.BotMean(context.Background(), c)
	}
	return "BOT " + name + " " + f2(wt)
}

func (w want) meanBot(c ratings.Context) string {
	mean, n, err := w.st.BotMean(context.Background(), c)
	if err != nil {
		w.t.Fatal(err)
	}
	return "MEANBOT " + f2(mean) + " " + strconv.Itoa(n)
}

func f2(w float64) string { return strconv.FormatFloat(w, 'f', 2, 64) }

// serviceOf is the ratings service over store with the default model.
func serviceOf(store ratings.Store) *ratings.Service {
	return ratings.NewService(store, ratings.DefaultModel())
}

// start serves store on 127.0.0.1:0 and returns the server and its address; the test's
// cleanup shuts it down and checks that Serve returned nil.
func start(t testing.TB, store ratings.Store, cfg Config, m *Metrics) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(serviceOf(store), testLogger(t), cfg, m)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, ln.Addr().String()
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// client is a test's connection. Its methods return errors so that goroutines can use them;
// the must* helpers fail the test.
type client struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

// connect starts a server with the default configuration on st and dials it; w computes the
// replies expected from st.
func connect(t testing.TB, st ratings.Store) (*client, want) {
	t.Helper()
	_, addr := start(t, st, DefaultConfig(), nil)
	return dial(t, addr), want{t, st}
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *client) send(text string) error {
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := io.WriteString(c.nc, text)
	return err
}

// read returns the next reply without its "\n".
func (c *client) read() (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := c.r.ReadString('\n')
	if err != nil {
		return line, err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

func (c *client) ask(line string) (string, error) {
	if err := c.send(line + "\n"); err != nil {
		return "", err
	}
	return c.read()
}

func (c *client) mustSend(lines ...string) {
	c.t.Helper()
	for _, l := range lines {
		if err := c.send(l + "\n"); err != nil {
			c.t.Fatalf("send %q: %v", l, err)
		}
	}
}

func (c *client) mustRead() string {
	c.t.Helper()
	line, err := c.read()
	if err != nil {
		c.t.Fatalf("read: %q, %v", line, err)
	}
	return line
}

func (c *client) expect(line, want string) {
	c.t.Helper()
	got, err := c.ask(line)
	if err != nil {
		c.t.Fatalf("%q: %v", line, err)
	}
	if got != want {
		c.t.Fatalf("%q -> %q, want %q", line, got, want)
	}
}

// expectClosed checks that the server closes the connection without another reply.
func (c *client) expectClosed() {
	c.t.Helper()
	line, err := c.read()
	if err == nil || line != "" {
		c.t.Fatalf("read %q, %v; want the connection closed", line, err)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatal("the connection is still open")
	}
}

// scrape renders reg as Prometheus serves it.
func scrape(t testing.TB, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// metric is the value of one series in reg, e.g. `matchmaker_lineproto_connections`.
func metric(t testing.TB, reg *prometheus.Registry, series string) float64 {
	t.Helper()
	for line := range strings.Lines(scrape(t, reg)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s", series)
	return 0
}

func commands(command, outcome string) string {
	return `matchmaker_lineproto_commands_total{command="` + command + `",outcome="` + outcome + `"}`
}

const connections = "matchmaker_lineproto_connections"

// --- the protocol --------------------------------------------------------------------------

func TestEveryCommandAndItsReply(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	c, w := connect(t, st)
	ctf := w.context("ctf")

	c.mustSend("GAME ctf") // no reply: the next line read is PLAYER's
	c.expect("PLAYER alice", w.player(ctf, "alice"))
	c.expect("PLAYER carol", w.player(ctf, "carol"))
	c.expect("PLAYER nobody", "PLAYER nobody")
	c.expect("BOT Jakob", w.bot(ctf, "Jakob"))
	c.expect("BOT Lauren", w.bot(ctf, "Lauren"))
	c.expect("MEANBOT", w.meanBot(ctf))

	// The figures are what the results say, not defaults: winners above 50, losers below,
	// two bots rated, and a bot without a rating weighs what the mean bot does.
	if wa, _ := w.weight(ctf, ratings.Participant{ID: "alice"}); wa <= 50 {
		t.Fatalf("alice's ctf weight %v, want > 50", wa)
	}
	if wc, _ := w.weight(ctf, ratings.Participant{ID: "carol"}); wc >= 50 {
		t.Fatalf("carol's ctf weight %v, want < 50", wc)
	}
	if !strings.HasSuffix(w.meanBot(ctf), " 2") {
		t.Fatalf("MEANBOT %q, want 2 bots", w.meanBot(ctf))
	}
	mean, _, _ := st.BotMean(context.Background(), ctf)
	c.expect("BOT Unknown", "BOT Unknown "+f2(mean))
	c.expect("BOT alice", "BOT alice "+f2(mean)) // players and bots are separate namespaces
	c.expect("PLAYER Jakob", "PLAYER Jakob")

	// Keywords in any case, "\r\n", blank lines, tabs; ids echoed as sent.
	c.mustSend("player alice\r", "", "   ", "\r", "Bot\tJakob  ", "meanbot\r")
	for _, wantLine := range []string{w.player(ctf, "alice"), w.bot(ctf, "Jakob"), w.meanBot(ctf)} {
		if got := c.mustRead(); got != wantLine {
			t.Fatalf("got %q, want %q", got, wantLine)
		}
	}
	c.expect("PLAYER Alice", "PLAYER Alice") // ids are case-sensitive

	// A game type with no ratings: unknown players, bots at 50, no mean bot.
	c.mustSend("GAME Onslaught")
	c.expect("PLAYER alice", "PLAYER alice")
	c.expect("BOT Jakob", "BOT Jakob 50.00")
	c.expect("MEANBOT", "MEANBOT 50.00 0")

	// Game types are case-insensitive, like the rating context.
	c.mustSend("GAME CTF")
	c.expect("PLAYER alice", w.player(ctf, "alice"))
}

// An id with spaces between words ("Boring John", the UT seed's example) is the rest of the
// PLAYER or BOT line, and its reply echoes it as sent: the weight, when there is one, is the
// last word. An id of one word reads as before.
func TestIDsWithSpaces(t *testing.T) {
	t.Parallel()
	st := ratings.NewMemoryStore(nil)
	record(t, st, "m1", nil, []string{"Boring John", "bot:Big Bot"}, []string{"Silly Billy", "carol"})
	c, w := connect(t, st)
	ctf := w.context("ctf")
	c.mustSend("GAME ctf")
	if _, ok := w.weight(ctf, ratings.Participant{ID: "Boring John"}); !ok {
		t.Fatal("Boring John has no rating to read")
	}
	c.expect("PLAYER Boring John", w.player(ctf, "Boring John"))
	c.expect("player   Silly Billy \r", w.player(ctf, "Silly Billy"))
	c.expect("BOT Big Bot", w.bot(ctf, "Big Bot"))
	c.expect("PLAYER Boring", "PLAYER Boring") // another id, not rated
	c.expect("PLAYER carol", w.player(ctf, "carol"))
	c.expect("PLAYER Boring  John", "ERROR invalid player id: must not contain white space, but single spaces between words")
	c.expect("PLAYER Boring John", w.player(ctf, "Boring John")) // the connection is still usable
}

func TestMutatorsSplitContextsOnlyWhenTheyAffectGameplay(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	c, w := connect(t, st)
	ctf, insta := w.context("ctf"), w.context("ctf", "instagib")
	if w.player(ctf, "alice") == w.player(insta, "alice") {
		t.Fatal("fixture: alice weighs the same with and without instagib")
	}
	if wa, _ := w.weight(insta, ratings.Participant{ID: "alice"}); wa >= 50 {
		t.Fatalf("alice's instagib weight %v, want < 50 (she lost)", wa)
	}

	c.mustSend("GAME ctf", "MUTATOR antilag", "MUTATOR MutNoAdrenaline") // not gameplay
	c.expect("PLAYER alice", w.player(ctf, "alice"))
	c.expect("MEANBOT", w.meanBot(ctf))

	c.mustSend("MUTATOR InstaGib") // gameplay, whatever the case
	c.expect("PLAYER alice", w.player(insta, "alice"))
	c.expect("PLAYER carol", w.player(insta, "carol"))
	c.expect("MEANBOT", "MEANBOT 50.00 0") // no bot played instagib
	c.expect("BOT Jakob", "BOT Jakob 50.00")
	c.mustSend("MUTATOR instagib", "MUTATOR antilag") // repeats change nothing
	c.expect("PLAYER alice", w.player(insta, "alice"))

	c.mustSend("GAME ctf") // a new game forgets the mutators
	c.expect("PLAYER alice", w.player(ctf, "alice"))

	// An admin's reclassification applies from the next game: the context of a game is
	// read once.
	if _, err := st.SetMutator(context.Background(), "antilag", true); err != nil {
		t.Fatal(err)
	}
	c.mustSend("GAME ctf", "MUTATOR instagib")
	c.expect("PLAYER alice", w.player(insta, "alice"))
	c.mustSend("MUTATOR antilag") // now gameplay: ctf+antilag,instagib, where nobody is rated
	c.expect("PLAYER alice", "PLAYER alice")
}

func TestErrorsLeaveTheConnectionUsable(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	cfg := DefaultConfig()
	cfg.MaxMutators = 2
	_, addr := start(t, st, cfg, nil)
	c := dial(t, addr)
	ctf := w.context("ctf")

	// Before any GAME.
	for _, line := range []string{"PLAYER alice", "BOT Jakob", "MEANBOT", "MUTATOR instagib"} {
		c.expect(line, "ERROR no GAME yet")
	}
	c.mustSend("GAME ctf")
	for _, tt := range []struct{ line, want string }{
		{"HELLO", `ERROR unknown command "HELLO"`},
		{"PLAYER", "ERROR PLAYER needs a player id"},
		{"PLAYER John  Smith", "ERROR invalid player id: must not contain white space, but single spaces between words"},
		{"MUTATOR insta gib", "ERROR MUTATOR takes one argument"},
		{"PLAYER " + strings.Repeat("x", ratings.MaxIDLen+1), "ERROR invalid player id: must be at most 128 bytes"},
		{"BOT a\x01b", "ERROR invalid bot name: must not contain control characters"},
		{"PLAYER \xff", "ERROR invalid player id: must be valid UTF-8"},
		{"MEANBOT now", "ERROR MEANBOT takes no argument"},
		{"MUTATOR insta+gib", "ERROR invalid mutator name: may contain only letters, digits, '_', '.' and '-'"},
		{"MUTATOR " + strings.Repeat("m", ratings.MaxNameLen+1), "ERROR invalid mutator name: must be at most 64 bytes"},
	} {
		c.expect(tt.line, tt.want)
		c.expect("PLAYER alice", w.player(ctf, "alice")) // still usable, same game
	}

	// MaxMutators distinct mutators a game; repeats do not count, one more is refused.
	c.mustSend("MUTATOR a", "MUTATOR A", "MUTATOR b")
	c.expect("MUTATOR c", "ERROR too many mutators (at most 2 a game)")
	c.expect("MEANBOT", w.meanBot(ctf))
	c.mustSend("GAME ctf", "MUTATOR c", "MUTATOR instagib") // a new game starts afresh
	c.expect("PLAYER alice", w.player(w.context("ctf", "instagib"), "alice"))

	// An invalid GAME ends the previous game: no answer in a context the client did not ask.
	c.expect("GAME bad/type", "ERROR invalid game type: may contain only letters, digits, '_', '.' and '-'")
	c.expect("PLAYER alice", "ERROR no GAME yet")
	c.expect("GAME", "ERROR GAME needs a game type")
	c.mustSend("GAME ctf")
	c.expect("PLAYER alice", w.player(ctf, "alice"))
}

func TestPipelinedCommandsAreAnsweredInOrder(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	c, w := connect(t, st)
	ctf := w.context("ctf")

	var batch strings.Builder
	var wantLines []string
	batch.WriteString("GAME ctf\r\n")
	for i := range 300 { // ~5 KiB of replies: more than the server's write buffer
		switch i % 4 {
		case 0:
			batch.WriteString("PLAYER alice\r\n")
			wantLines = append(wantLines, w.player(ctf, "alice"))
		case 1:
			batch.WriteString("PLAYER p" + strconv.Itoa(i) + "\n")
			wantLines = append(wantLines, "PLAYER p"+strconv.Itoa(i))
		case 2:
			batch.WriteString("BAD\n")
			wantLines = append(wantLines, `ERROR unknown command "BAD"`)
		case 3:
			batch.WriteString("MEANBOT\n\n")
			wantLines = append(wantLines, w.meanBot(ctf))
		}
	}
	if err := c.send(batch.String()); err != nil {
		t.Fatal(err)
	}
	for i, wl := range wantLines {
		if got := c.mustRead(); got != wl {
			t.Fatalf("reply %d = %q, want %q", i, got, wl)
		}
	}
}

func TestALastLineWithoutNewlineIsAnswered(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	c, w := connect(t, st)
	if err := c.send("GAME ctf\nPLAYER alice"); err != nil {
		t.Fatal(err)
	}
	if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := c.mustRead(); got != w.player(w.context("ctf"), "alice") {
		t.Fatalf("got %q", got)
	}
	c.expectClosed()
}

// --- limits --------------------------------------------------------------------------------

func TestOverlongLines(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	cfg := DefaultConfig()
	cfg.MaxLineBytes = 200
	_, addr := start(t, st, cfg, nil)
	c := dial(t, addr)
	ctf := w.context("ctf")
	c.mustSend("GAME ctf")

	pad := func(line string, n int) string { return line + strings.Repeat(" ", n-len(line)) }
	c.expect(pad("MEANBOT", 200), w.meanBot(ctf))        // exactly the limit
	c.expect(pad("MEANBOT", 200)+"\r", w.meanBot(ctf))   // "\r\n" does not count
	c.expect(pad("MEANBOT", 201), "ERROR line too long") // one over, newline in the buffer
	c.expect("PLAYER alice", w.player(ctf, "alice"))
	c.expect(pad("MEANBOT", 201)+"\r", "ERROR line too long")
	c.expect(pad("MEANBOT", 5000), "ERROR line too long") // skipped up to its newline
	c.expect("PLAYER alice", w.player(ctf, "alice"))
	c.expect(strings.Repeat("x", 60000), "ERROR line too long") // under 64 KiB to skip
	c.expect("MEANBOT", w.meanBot(ctf))

	// A client that streams without newlines is told once and then dropped.
	go c.send(strings.Repeat("y", 200<<10)) // may fail when the server closes: fine
	if got := c.mustRead(); got != "ERROR line too long" {
		t.Fatalf("got %q", got)
	}
	c.expectClosed()
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	cfg := DefaultConfig()
	// Forty times the busy client's pause: a loaded machine (CI shares two cores) has held the
	// busy client's goroutine back past a 500 ms timeout (docs/performance.md, "Stalls the
	// tests allow for").
	cfg.IdleTimeout = 2 * time.Second
	_, addr := start(t, st, cfg, nil)

	idle := dial(t, addr)
	idle.mustSend("GAME ctf")
	began := time.Now()

	// A client that keeps talking outlives the timeout several times over.
	busy := dial(t, addr)
	busy.mustSend("GAME ctf")
	for time.Since(began) < 2*cfg.IdleTimeout+cfg.IdleTimeout/2 {
		time.Sleep(50 * time.Millisecond)
		busy.expect("MEANBOT", w.meanBot(w.context("ctf")))
	}

	if got := idle.mustRead(); got != "ERROR idle timeout" {
		t.Fatalf("idle client got %q", got)
	}
	idle.expectClosed()

	// A line trickled in parts must still arrive whole within the timeout.
	slow := dial(t, addr)
	for range 20 {
		if err := slow.send("M"); err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := slow.mustRead(); got != "ERROR idle timeout" {
		t.Fatalf("slow client got %q", got)
	}
	slow.expectClosed()
}

func TestManyClientsAtOnce(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	reg := prometheus.NewRegistry()
	_, addr := start(t, st, DefaultConfig(), NewMetrics(reg))
	const clients, perClient = 50, 100

	ctf, insta := w.context("ctf"), w.context("ctf", "instagib")
	type exchange struct{ line, want string }
	scripts := [2][]exchange{}
	for i, c := range []ratings.Context{ctf, insta} {
		for _, id := range []string{"alice", "bob", "carol", "dave", "nobody"} {
			scripts[i] = append(scripts[i], exchange{"PLAYER " + id, w.player(c, id)})
		}
		scripts[i] = append(scripts[i],
			exchange{"BOT Jakob", w.bot(c, "Jakob")}, exchange{"BOT Other", w.bot(c, "Other")},
			exchange{"MEANBOT", w.meanBot(c)}, exchange{"NOPE", `ERROR unknown command "NOPE"`})
	}

	conns := make([]*client, clients)
	for i := range conns {
		conns[i] = dial(t, addr)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i, c := range conns {
		wg.Go(func() {
			script := scripts[i%2]
			first := "GAME ctf\n"
			if i%2 == 1 {
				first += "MUTATOR instagib\n"
			}
			if err := c.send(first); err != nil {
				errs <- err
				return
			}
			for j := range perClient {
				ex := script[(i+j)%len(script)]
				got, err := c.ask(ex.line)
				if err != nil || got != ex.want {
					errs <- fmt.Errorf("client %d command %d %q -> %q, %v; want %q", i, j, ex.line, got, err, ex.want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	answered := 0.0
	for _, k := range []string{"PLAYER", "BOT", "MEANBOT", "invalid"} {
		for _, o := range []string{"ok", "error", "unknown"} {
			answered += metric(t, reg, commands(k, o))
		}
	}
	if answered != clients*perClient {
		t.Errorf("metrics counted %v queries, want %d", answered, clients*perClient)
	}
	if got := metric(t, reg, connections); got != clients {
		t.Errorf("connections gauge %v, want %d", got, clients)
	}
}

func TestTheConnectionCap(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	cfg := DefaultConfig()
	cfg.MaxConns = 2
	reg := prometheus.NewRegistry()
	_, addr := start(t, st, cfg, NewMetrics(reg))
	mean := w.meanBot(w.context("ctf"))

	a, b := dial(t, addr), dial(t, addr)
	a.mustSend("GAME ctf")
	a.expect("MEANBOT", mean)
	b.mustSend("GAME ctf")
	b.expect("MEANBOT", mean)

	// The third is refused, even if it already sent a command (its reply must not be lost
	// to a RST for the unread input).
	c := dial(t, addr)
	c.mustSend("GAME ctf", "MEANBOT")
	if got := c.mustRead(); got != "ERROR too many connections" {
		t.Fatalf("third connection got %q", got)
	}
	c.expectClosed()
	a.expect("MEANBOT", mean) // the others are unaffected
	if got := metric(t, reg, "matchmaker_lineproto_connections_rejected_total"); got != 1 {
		t.Errorf("rejected counter %v, want 1", got)
	}

	// Once one closes, a new client gets its place.
	a.nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := dial(t, addr)
		d.mustSend("GAME ctf", "MEANBOT")
		got := d.mustRead()
		if got == mean {
			break
		}
		if got != "ERROR too many connections" || time.Now().After(deadline) {
			t.Fatalf("after a close, a new connection got %q", got)
		}
		d.nc.Close()
		time.Sleep(10 * time.Millisecond)
	}
}

// --- shutdown ------------------------------------------------------------------------------

// fakeStore is a memory store whose reads a test can replace.
type fakeStore struct {
	ratings.Store
	policy  func(context.Context) (*ratings.MutatorPolicy, error)
	ratings func(context.Context, ratings.Context, []ratings.Participant) (map[ratings.Participant]ratings.Rating, error)
	botMean func(context.Context, ratings.Context) (float64, int, error)
}

func (f *fakeStore) Policy(ctx context.Context) (*ratings.MutatorPolicy, error) {
	if f.policy != nil {
		return f.policy(ctx)
	}
	return f.Store.Policy(ctx)
}

func (f *fakeStore) Ratings(ctx context.Context, c ratings.Context, ps []ratings.Participant) (map[ratings.Participant]ratings.Rating, error) {
	if f.ratings != nil {
		return f.ratings(ctx, c, ps)
	}
	return f.Store.Ratings(ctx, c, ps)
}

func (f *fakeStore) BotMean(ctx context.Context, c ratings.Context) (float64, int, error) {
	if f.botMean != nil {
		return f.botMean(ctx, c)
	}
	return f.Store.BotMean(ctx, c)
}

// blockingRatings makes Ratings wait for release (or its context), saying when it starts.
func blockingRatings(st ratings.Store, entered chan<- struct{}, release <-chan struct{}) func(context.Context, ratings.Context, []ratings.Participant) (map[ratings.Participant]ratings.Rating, error) {
	return func(ctx context.Context, c ratings.Context, ps []ratings.Participant) (map[ratings.Participant]ratings.Rating, error) {
		entered <- struct{}{}
		select {
		case <-release:
			return st.Ratings(ctx, c, ps)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func TestShutdownClosesIdleConnectionsAndLetsInFlightCommandsAnswer(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	fake := &fakeStore{Store: st, ratings: blockingRatings(st, entered, release)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	reg := prometheus.NewRegistry()
	srv := NewServer(serviceOf(fake), testLogger(t), DefaultConfig(), NewMetrics(reg))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()

	idle := dial(t, addr)
	idle.mustSend("GAME ctf")
	idle.expect("MEANBOT", w.meanBot(w.context("ctf")))
	busy := dial(t, addr)
	busy.mustSend("GAME ctf", "PLAYER alice", "PLAYER bob") // bob is never answered
	<-entered

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	idle.expectClosed()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		nc.Close()
		t.Fatal("the server still accepts connections")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a command in flight", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(release)
	if got, want := busy.mustRead(), w.player(w.context("ctf"), "alice"); got != want {
		t.Fatalf("in-flight command answered %q, want %q", got, want)
	}
	busy.expectClosed()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := metric(t, reg, connections); got != 0 {
		t.Errorf("connections gauge %v after shutdown", got)
	}
	if err := srv.Serve(context.Background(), mustListen(t)); err != nil {
		t.Errorf("Serve after Shutdown: %v", err)
	}
}

func mustListen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestShutdownGivesUpWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	entered, cancelled := make(chan struct{}, 1), make(chan struct{})
	fake := &fakeStore{Store: st, ratings: func(ctx context.Context, c ratings.Context, ps []ratings.Participant) (map[ratings.Participant]ratings.Rating, error) {
		entered <- struct{}{}
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	cfg := DefaultConfig()
	cfg.CommandTimeout = time.Minute
	srv, addr := start(t, fake, cfg, nil)
	c := dial(t, addr)
	c.mustSend("GAME ctf", "PLAYER alice")
	<-entered

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the context's deadline", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	c.read() // "ERROR store unavailable" or nothing: either way the connection ends
	c.expectClosed()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Error("the store read was not cancelled")
	}
}

func TestServeStopsWithItsContext(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	srv := NewServer(serviceOf(st), testLogger(t), DefaultConfig(), nil)
	ln := mustListen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	c := dial(t, ln.Addr().String())
	c.mustSend("GAME ctf")
	c.expect("MEANBOT", want{t, st}.meanBot(want{t, st}.context("ctf")))

	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	c.expectClosed() // cancelling starts the graceful shutdown too
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config (defaults): %v", err)
	}
	for name, cfg := range map[string]Config{
		"negative idle":     {IdleTimeout: -1},
		"short lines":       {MaxLineBytes: MinLineBytes - 1},
		"huge lines":        {MaxLineBytes: MaxLineLimit + 1},
		"negative conns":    {MaxConns: -1},
		"too many mutators": {MaxMutators: ratings.MaxMutators + 1},
		"negative timeout":  {CommandTimeout: -time.Second},
		"negative mutators": {MaxMutators: -1},
	} {
		if cfg.Validate() == nil {
			t.Errorf("%s: Validate accepted %+v", name, cfg)
		}
		srv := NewServer(serviceOf(newStore(t)), nil, cfg, nil)
		if err := srv.Serve(context.Background(), mustListen(t)); err == nil {
			t.Errorf("%s: Serve accepted %+v", name, cfg)
		}
	}
}

// --- a failing store -----------------------------------------------------------------------

func TestStoreFailuresAnswerErrors(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	ctf := w.context("ctf")
	down := apperr.Wrap(apperr.Unavailable, errors.New("connection refused"), "database unreachable")
	var failing atomic.Value // "policy", "ratings", "botmean", "hang" or ""
	failing.Store("")
	fake := &fakeStore{Store: st}
	fake.policy = func(ctx context.Context) (*ratings.MutatorPolicy, error) {
		switch failing.Load() {
		case "policy":
			return nil, down
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return st.Policy(ctx)
	}
	fake.ratings = func(ctx context.Context, c ratings.Context, ps []ratings.Participant) (map[ratings.Participant]ratings.Rating, error) {
		if failing.Load() == "ratings" {
			return nil, down
		}
		return st.Ratings(ctx, c, ps)
	}
	fake.botMean = func(ctx context.Context, c ratings.Context) (float64, int, error) {
		if failing.Load() == "botmean" {
			return 0, 0, down
		}
		return st.BotMean(ctx, c)
	}
	cfg := DefaultConfig()
	cfg.CommandTimeout = 100 * time.Millisecond
	reg := prometheus.NewRegistry()
	_, addr := start(t, fake, cfg, NewMetrics(reg))
	c := dial(t, addr)

	for _, tt := range []struct {
		fail  string
		lines []string // each answered "ERROR store unavailable"
	}{
		{"policy", []string{"PLAYER alice", "BOT Jakob", "MEANBOT"}},
		{"hang", []string{"PLAYER alice", "MEANBOT"}},
		{"ratings", []string{"PLAYER alice", "BOT Jakob"}},
		{"botmean", []string{"MEANBOT", "BOT Unknown"}}, // an unrated bot needs the mean
	} {
		failing.Store(tt.fail)
		c.mustSend("GAME ctf") // read the policy afresh
		for _, line := range tt.lines {
			began := time.Now()
			c.expect(line, "ERROR store unavailable")
			if d := time.Since(began); d > 2*time.Second {
				t.Errorf("%s: %q took %v", tt.fail, line, d)
			}
		}
		if tt.fail == "botmean" {
			c.expect("BOT Jakob", w.bot(ctf, "Jakob")) // a rated bot needs no mean
		}
		failing.Store("")
		c.expect("PLAYER alice", w.player(ctf, "alice")) // recovered, same connection
	}
	if got := metric(t, reg, commands("PLAYER", "error")); got != 3 {
		t.Errorf("PLAYER errors counted %v, want 3", got)
	}
}

func TestAPanickingStoreClosesOnlyItsConnection(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	fake := &fakeStore{Store: st, ratings: func(ctx context.Context, c ratings.Context, ps []ratings.Participant) (map[ratings.Participant]ratings.Rating, error) {
		if ps[0].ID == "boom" {
			panic("store bug")
		}
		return st.Ratings(ctx, c, ps)
	}}
	reg := prometheus.NewRegistry()
	_, addr := start(t, fake, DefaultConfig(), NewMetrics(reg))
	a, b := dial(t, addr), dial(t, addr)
	a.mustSend("GAME ctf")
	b.mustSend("GAME ctf")
	a.expect("PLAYER alice", w.player(w.context("ctf"), "alice"))
	if err := b.send("PLAYER boom\n"); err != nil {
		t.Fatal(err)
	}
	b.expectClosed()
	a.expect("PLAYER alice", w.player(w.context("ctf"), "alice"))
	for deadline := time.Now().Add(5 * time.Second); metric(t, reg, connections) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("connections gauge %v, want 1", metric(t, reg, connections))
		}
	}
}

// --- metrics -------------------------------------------------------------------------------

func TestMetricsCountCommandsByOutcome(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	cfg := DefaultConfig()
	cfg.MaxLineBytes = MinLineBytes
	_, addr := start(t, st, cfg, m)
	c := dial(t, addr)

	c.expect("MEANBOT", "ERROR no GAME yet")
	c.mustSend("GAME ctf", "MUTATOR instagib", "GAME ctf", "", "   ")
	for _, line := range []string{"PLAYER alice", "PLAYER nobody", "BOT Jakob", "BOT Other", "MEANBOT",
		"HELLO", "PLAYER", strings.Repeat("z", MinLineBytes+1)} {
		if _, err := c.ask(line); err != nil {
			t.Fatal(err)
		}
	}
	if got := metric(t, reg, connections); got != 1 {
		t.Errorf("connections gauge %v, want 1", got)
	}

	const want = `
matchmaker_lineproto_commands_total{command="AUTH",outcome="error"} 0
matchmaker_lineproto_commands_total{command="AUTH",outcome="ok"} 0
matchmaker_lineproto_commands_total{command="AUTH",outcome="unknown"} 0
matchmaker_lineproto_commands_total{command="BOT",outcome="error"} 0
matchmaker_lineproto_commands_total{command="BOT",outcome="ok"} 1
matchmaker_lineproto_commands_total{command="BOT",outcome="unknown"} 1
matchmaker_lineproto_commands_total{command="GAME",outcome="error"} 0
matchmaker_lineproto_commands_total{command="GAME",outcome="ok"} 2
matchmaker_lineproto_commands_total{command="GAME",outcome="unknown"} 0
matchmaker_lineproto_commands_total{command="MEANBOT",outcome="error"} 1
matchmaker_lineproto_commands_total{command="MEANBOT",outcome="ok"} 1
matchmaker_lineproto_commands_total{command="MEANBOT",outcome="unknown"} 0
matchmaker_lineproto_commands_total{command="MUTATOR",outcome="error"} 0
matchmaker_lineproto_commands_total{command="MUTATOR",outcome="ok"} 1
matchmaker_lineproto_commands_total{command="MUTATOR",outcome="unknown"} 0
matchmaker_lineproto_commands_total{command="PLAYER",outcome="error"} 1
matchmaker_lineproto_commands_total{command="PLAYER",outcome="ok"} 1
matchmaker_lineproto_commands_total{command="PLAYER",outcome="unknown"} 1
matchmaker_lineproto_commands_total{command="invalid",outcome="error"} 2
matchmaker_lineproto_commands_total{command="invalid",outcome="ok"} 0
matchmaker_lineproto_commands_total{command="invalid",outcome="unknown"} 0
`
	text := scrape(t, reg)
	var got []string
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "matchmaker_lineproto_commands_total{") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	if g, w := strings.Join(got, "\n"), strings.TrimSpace(want); g != w {
		t.Errorf("commands:\n%s\nwant\n%s", g, w)
	}
	// Timed: every command but the over-long line (counted, not timed).
	for _, series := range []string{
		`matchmaker_lineproto_command_duration_seconds_count{command="PLAYER"} 3`,
		`matchmaker_lineproto_command_duration_seconds_count{command="invalid"} 1`,
		`matchmaker_lineproto_command_duration_seconds_bucket{command="GAME",le="1e-05"}`,
	} {
		if !strings.Contains(text, series) {
			t.Errorf("metrics lack %s", series)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := promlint.NewWithMetricFamilies(mfs).Lint(); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", problems, err)
	}
}

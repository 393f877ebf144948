package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// The "Done when" for partitions (issue 37): two replicas of the built program, as
// processes, on one Postgres, and a queue partitioned by a 4-valued mode. Each replica leads
// some partitions (its /metrics' matchmaker_queue_leading) while both are up; one is killed
// with SIGKILL mid-run, and the other leads all four within a lease (the default 10 s), says
// so in its metrics and in the stats; every acknowledged ticket ends matched, expired or
// cancelled exactly once (none lost, none in two matches), and no match holds two modes.
func TestPartitionsMoveOnAReplicasDeath(t *testing.T) {
	// Not parallel: two processes and their load.
	const lease = 10 * time.Second // queuedb.DefaultLeaderLease, left unset below
	tickets := 1600
	if testing.Short() {
		tickets = 400
	}
	dbURL := dbtest.URL(t)
	bin := filepath.Join(t.TempDir(), "api")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/api: %v\n%s", err, out)
	}
	var reps [2]*process
	for i := range reps {
		reps[i] = startProcess(t, bin, []string{"DATABASE_URL=" + dbURL, "MATCHMAKER_AUTH=off",
			"MATCHMAKER_RATE_LIMITS=match=off,read=off,admin=off", "MATCHMAKER_DB_MAX_CONNS=6",
			fmt.Sprintf("MATCHMAKER_INSTANCE=replica-%d", i), fmt.Sprintf("MATCHMAKER_MIGRATE=%v", i == 0)})
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	status, body := call(t, client, http.MethodPut, reps[0].base+"/v1/queues/arena", "",
		`{"context":{"game_type":"ctf"},"team_size":2,"max_party_size":2,"tick_ms":100,
		  "attributes":{"mode":{"type":"string"}},"rules":[{"name":"mode","type":"equal","attribute":"mode"}],
		  "partition_by":"mode"}`)
	if status != http.StatusCreated {
		t.Fatalf("put queue: %d %s", status, body)
	}
	modes := []string{"ctf", "tdm", "koth", "duel"}

	var alive atomic.Int32
	alive.Store(0b11)
	acked := make([]ackedTicket, tickets)
	var next, created atomic.Int64
	// A quarter of the tickets, then the rest once each replica leads some partitions (they
	// appear with their first tickets), so that the kill at half falls among them: ungated,
	// the 1,600 were at times all made before the second replica led one (2.7 s in, on a
	// loaded host), and most modes had no tickets left for after the kill.
	bothLead := make(chan struct{})
	var clients sync.WaitGroup
	for w := range 8 {
		clients.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 37))
			for {
				n := int(next.Add(1)) - 1
				if n >= tickets {
					return
				}
				if n >= tickets/4 {
					<-bothLead
				}
				req := fmt.Sprintf(`{"players":[{"id":"p%d","rating":%.1f}],"attributes":{"mode":%q},"ttl_s":8}`,
					n, 1000+100*rng.NormFloat64(), modes[n%len(modes)])
				for attempt := 0; ; attempt++ {
					if attempt > 0 {
						time.Sleep(20 * time.Millisecond)
					}
					r := reps[pickLive(rng, alive.Load())]
					status, body, err := send(client, http.MethodPost, r.base+"/v1/queues/arena/tickets", fmt.Sprintf("key-%d", n), req)
					if err != nil || status >= 500 {
						continue // the replica died with this request: the same key on the other
					}
					var tk struct{ ID string }
					if (status != http.StatusCreated && status != http.StatusOK) || json.Unmarshal(body, &tk) != nil || tk.ID == "" {
						t.Errorf("ticket %d: %d %s", n, status, body)
						return
					}
					acked[n] = ackedTicket{id: tk.ID, attempts: attempt + 1}
					break
				}
				created.Add(1)
				time.Sleep(2 * time.Millisecond) // about 2,000 arrivals a second from the 8
			}
		})
	}

	// Both up: each leads some of the four partitions, none is led twice.
	waitLeading(t, client, reps[:], modes, func(led [2][]string) bool { return len(led[0]) > 0 && len(led[1]) > 0 },
		"each replica leads some partitions")
	close(bothLead)
	for created.Load() < int64(tickets/2) {
		time.Sleep(5 * time.Millisecond)
	}
	victim, survivor := 1, 0
	killAt := time.Now()
	reps[victim].kill()
	if n := created.Load(); n >= int64(tickets) {
		t.Fatalf("the kill came after all %d tickets were made: none left for after it", n)
	}
	alive.Store(1 << survivor)
	took := waitLeading(t, client, reps[survivor:survivor+1], modes, func(led [2][]string) bool { return len(led[0]) == len(modes) },
		"the survivor leads every partition")
	t.Logf("replica-%d SIGKILLed after %d tickets; replica-%d led all %d partitions %v later (lease %v)",
		victim, tickets/2, survivor, len(modes), took.Sub(killAt).Round(time.Millisecond), lease)
	if took.Sub(killAt) > lease {
		t.Errorf("the partitions moved %v after the kill, want within a lease (%v)", took.Sub(killAt), lease)
	}
	clients.Wait()
	if t.Failed() {
		return
	}
	waitStatsLeader(t, client, reps[survivor].base, modes, fmt.Sprintf("replica-%d", survivor))

	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	waitNoneSearching(t, conn)
	checkEveryTicketEndedOnce(t, conn, acked)
	checkNoMatchCrossesModes(t, conn, killAt)
}

// waitLeading polls the replicas' /metrics until ok holds of the partitions each leads (and no
// partition is led by two), and returns when it held.
func waitLeading(t *testing.T, client *http.Client, reps []*process, modes []string, ok func(led [2][]string) bool, what string) time.Time {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var led [2][]string
	for {
		led = [2][]string{}
		for i, r := range reps {
			led[i] = leadingPartitions(t, client, r.base)
		}
		twice := len(reps) == 2 && strings.Contains(","+strings.Join(led[0], ",")+",", ","+strings.Join(led[1], ",")+",") && len(led[1]) > 0
		if twice {
			t.Logf("a partition led by both replicas at once (metrics %v): allowed for a moment as one hands it over", led)
		}
		if ok(led) {
			t.Logf("%s: %v", what, led[:len(reps)])
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30 s; the replicas lead %v of %v", what, led, modes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leadingPartitions reads the partitions a replica leads from its /metrics.
func leadingPartitions(t *testing.T, client *http.Client, base string) []string {
	t.Helper()
	status, body, err := send(client, http.MethodGet, base+"/metrics", "", "")
	if err != nil || status != http.StatusOK {
		t.Fatalf("/metrics of %s: %d %v", base, status, err)
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "matchmaker_queue_leading{") || !strings.HasSuffix(line, "} 1") {
			continue
		}
		if _, rest, found := strings.Cut(line, `partition="`); found {
			if value, _, _ := strings.Cut(rest, `"`); value != "" {
				out = append(out, value)
			}
		}
	}
	return out
}

// waitStatsLeader waits for the stats to give every partition as led by leader.
func waitStatsLeader(t *testing.T, client *http.Client, base string, modes []string, leader string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := call(t, client, http.MethodGet, base+"/v1/queues/arena/stats", "", "")
		var st struct {
			Partitions []struct{ Value, Leader string }
		}
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range st.Partitions {
			if p.Leader == leader {
				n++
			}
		}
		if n == len(modes) && len(st.Partitions) == len(modes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stats' partitions after 20 s: %+v, want all %d led by %s", st.Partitions, len(modes), leader)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitNoneSearching(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var searching int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM queue_tickets WHERE status = 'searching'`).Scan(&searching); err != nil {
			t.Fatal(err)
		}
		if searching == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tickets still searching 30 s after the last was created (TTL 8 s)", searching)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkNoMatchCrossesModes: every match's tickets share one mode, and every mode had matches
// after the kill (its partition ticked again, wherever it was led).
func checkNoMatchCrossesModes(t *testing.T, conn *pgx.Conn, killAt time.Time) {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
SELECT m.id, count(DISTINCT k.attributes->>'mode'), min(k.attributes->>'mode'), m.created_at > $1
FROM queue_matches m, jsonb_array_elements(m.teams) tm, jsonb_array_elements(tm->'players') p, queue_tickets k
WHERE m.queue = 'arena' AND k.id = p->>'ticket_id'
GROUP BY m.id, m.created_at`, killAt)
	if err != nil {
		t.Fatal(err)
	}
	var id, mode string
	var modes int
	var after bool
	afterKill := map[string]int{}
	if _, err := pgx.ForEachRow(rows, []any{&id, &modes, &mode, &after}, func() error {
		if modes != 1 {
			t.Errorf("match %s holds tickets of %d modes", id, modes)
		}
		if after {
			afterKill[mode]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("matches made after the kill, by mode: %v", afterKill)
	if len(afterKill) != 4 {
		t.Errorf("matches after the kill in %d modes (%v), want all 4", len(afterKill), afterKill)
	}
}

// process is a replica run from the built binary, so that it can be killed as a machine
// dies: SIGKILL, no shutdown, its sessions ended by the kernel's closing its sockets.
type process struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
}

func startProcess(t *testing.T, bin string, env []string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), append(env, "MATCHMAKER_ADDR=127.0.0.1:0", "MATCHMAKER_LOG_LEVEL=info")...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	p.cmd.Stderr = &stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" && l.Addr != "" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-p.done:
		t.Fatalf("the replica exited before listening: %s", stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the replica did not listen within 60 s")
	}
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

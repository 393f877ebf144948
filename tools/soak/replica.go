package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildAPI builds cmd/api once, into bin.
func buildAPI(ctx context.Context, repo, bin string, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/api")
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/api in %s: %w", repo, err)
	}
	return nil
}

// migrate applies the migrations once (api migrate), so that the replicas start without.
func migrate(ctx context.Context, bin, dbURL string, extra []string) error {
	cmd := exec.CommandContext(ctx, bin, "migrate")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "MATCHMAKER_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("api migrate: %w: %s", err, tail(out, 2000))
	}
	return nil
}

// replica is one running cmd/api.
type replica struct {
	index int
	cmd   *exec.Cmd
	base  string        // http://127.0.0.1:PORT
	exit  chan struct{} // closed when the process has exited
	err   error         // its exit status, once exit is closed
	http  *http.Client  // for /readyz and /metrics

	mu         sync.Mutex
	logLevels  map[string]int // log lines by level
	warnings   map[string]int // WARN and ERROR lines by message
	stderrTail []byte         // the end of its stderr (a panic's trace)
	rss        []int64        // VmRSS samples, KiB: the first at ready, the last before the stop
	goroutines []int64        // go_goroutines samples
	stopping   bool
}

func startReplica(ctx context.Context, index int, bin string, env []string, logDir string) (*replica, error) {
	r := &replica{index: index, exit: make(chan struct{}), logLevels: map[string]int{}, warnings: map[string]int{},
		http: &http.Client{Timeout: 3 * time.Second}}
	r.cmd = exec.Command(bin)
	r.cmd.Env = env
	// A process group of its own: Ctrl-C reaches the soak, which stops the replicas in order;
	// and a replica is told to stop if the soak dies.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var logFile io.Writer = io.Discard
	if logDir != "" {
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.Create(filepath.Join(logDir, fmt.Sprintf("replica-%d.log", index)))
		if err != nil {
			return nil, err
		}
		logFile = f
		defer func() {
			go func() { <-r.exit; _ = f.Close() }()
		}()
	}
	r.cmd.Stderr = &tailWriter{r: r, also: logFile}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start replica %d: %w", index, err)
	}
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = logFile.Write(line)
			_, _ = logFile.Write([]byte{'\n'})
			var l struct{ Level, Msg, Addr string }
			if json.Unmarshal(line, &l) != nil {
				continue
			}
			if l.Msg == "listening" && l.Addr != "" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
			r.mu.Lock()
			r.logLevels[l.Level]++
			if l.Level == "WARN" || l.Level == "ERROR" {
				r.warnings[l.Level+" "+l.Msg]++
			}
			r.mu.Unlock()
		}
	}()
	go func() {
		<-scanned
		r.err = r.cmd.Wait()
		close(r.exit)
	}()
	select {
	case a := <-addr:
		r.base = "http://" + a
		return r, nil
	case <-r.exit:
		return nil, fmt.Errorf("replica %d exited before listening: %v: %s", index, r.err, r.stderr())
	case <-time.After(60 * time.Second):
		r.kill()
		return nil, fmt.Errorf("replica %d did not log \"listening\" within 60 s", index)
	case <-ctx.Done():
		r.kill()
		return nil, ctx.Err()
	}
}

func (r *replica) pid() int { return r.cmd.Process.Pid }

func (r *replica) kill() {
	_ = r.cmd.Process.Kill()
	<-r.exit
}

// waitReady polls /readyz until it answers 200, then takes the first RSS sample.
func (r *replica) waitReady(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := r.http.Get(r.base + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				r.sample()
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %d not ready within %v (last: %v)", r.index, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.exit:
			return fmt.Errorf("replica %d exited: %v: %s", r.index, r.err, r.stderr())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// replicaSample is what one sample read from a replica; -1 where it could not be read.
type replicaSample struct {
	RSSKiB     int64   `json:"rss_kib"`
	CPUSeconds float64 `json:"cpu_s"` // user + system, since the start
	Goroutines int64   `json:"goroutines"`
	Ticks      float64 `json:"ticks"`     // the queue's ticks this replica has led, total
	Leader     bool    `json:"leader"`    // it leads the queue
	Searching  float64 `json:"searching"` // the leader's searching tickets
}

// sample reads the replica's RSS from /proc and its metrics from /metrics, and keeps the RSS
// and goroutines for the summary.
func (r *replica) sample() replicaSample { return r.sampleQueue("") }

func (r *replica) sampleQueue(queue string) replicaSample {
	s := replicaSample{RSSKiB: -1, CPUSeconds: -1, Goroutines: -1, Searching: -1, Ticks: -1}
	select {
	case <-r.exit:
		return s
	default:
	}
	s.RSSKiB = readRSS(r.pid())
	s.CPUSeconds = readCPU(r.pid())
	if m, err := r.metrics(); err == nil {
		s.Goroutines = int64(m.value("go_goroutines", ""))
		if queue != "" {
			label := `queue="` + queue + `"`
			s.Ticks = max(0, m.value("matchmaker_queue_tick_duration_seconds_count", label)) // none yet: 0
			s.Leader = m.value("matchmaker_queue_leader", label) == 1
			s.Searching = m.value("matchmaker_queue_searching_tickets", label)
		}
	}
	r.mu.Lock()
	if s.RSSKiB >= 0 {
		r.rss = append(r.rss, s.RSSKiB)
	}
	if s.Goroutines >= 0 {
		r.goroutines = append(r.goroutines, s.Goroutines)
	}
	r.mu.Unlock()
	return s
}

// sampleEnd takes the last sample, before the replicas stop.
func (r *replica) sampleEnd() { r.sample() }

// readRSS is VmRSS of /proc/PID/status in KiB, or -1.
func readRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// readCPU is the user and system time of a process in seconds (/proc/PID/stat, in clock
// ticks of 1/100 s, as on every Linux this runs on), or -1.
func readCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command's name, in parentheses, may hold spaces: the fields count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (u + s) / 100
}

// promText is a scraped /metrics page.
type promText []byte

// value is the sum of the samples of metric whose labels contain label (all of them when
// label is ""), or -1 when there is none.
func (p promText) value(metric, label string) float64 {
	total, found := 0.0, false
	for line := range bytes.SplitSeq(p, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte(metric))
		if !ok || len(rest) == 0 || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if label != "" && !bytes.Contains(rest, []byte(label)) {
			continue
		}
		i := bytes.LastIndexByte(rest, ' ')
		v, err := strconv.ParseFloat(string(rest[i+1:]), 64)
		if err != nil {
			continue
		}
		total, found = total+v, true
	}
	if !found {
		return -1
	}
	return total
}

func (r *replica) metrics() (promText, error) {
	resp, err := r.http.Get(r.base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return promText(b), err
}

// stop sends SIGTERM and waits for the graceful shutdown (MATCHMAKER_SHUTDOWN_TIMEOUT=5s),
// then kills the process after 20 s.
func (r *replica) stop(logf func(string, ...any)) {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	select {
	case <-r.exit:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exit:
		if r.err != nil {
			logf("replica %d exited: %v", r.index, r.err)
		}
	case <-time.After(20 * time.Second):
		logf("replica %d did not stop within 20 s of SIGTERM: killed", r.index)
		r.kill()
	}
}

// exitedEarly is the replica's exit status if it exited before the soak stopped it.
func (r *replica) exitedEarly() (bool, string) {
	select {
	case <-r.exit:
	default:
		return false, ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return false, ""
	}
	return true, fmt.Sprintf("%v: %s", r.err, tail(r.stderrTail, 500))
}

func (r *replica) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return tail(r.stderrTail, 2000)
}

// tailWriter keeps the last 8 KiB of a replica's stderr and copies it to also.
type tailWriter struct {
	r    *replica
	also io.Writer
}

func (w *tailWriter) Write(p []byte) (int, error) {
	_, _ = w.also.Write(p)
	w.r.mu.Lock()
	w.r.stderrTail = append(w.r.stderrTail, p...)
	if n := len(w.r.stderrTail); n > 8<<10 {
		w.r.stderrTail = slices.Clone(w.r.stderrTail[n-8<<10:])
	}
	w.r.mu.Unlock()
	return len(p), nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// replicaSummary is a replica's part of the summary.
type replicaSummary struct {
	Index           int            `json:"index"`
	RSSStartMiB     float64        `json:"rss_start_mib"`
	RSSPeakMiB      float64        `json:"rss_peak_mib"`
	RSSEndMiB       float64        `json:"rss_end_mib"`
	GoroutinesStart int64          `json:"goroutines_start"`
	GoroutinesPeak  int64          `json:"goroutines_peak"`
	GoroutinesEnd   int64          `json:"goroutines_end"`
	LogLines        map[string]int `json:"log_lines"`              // by level
	Warnings        map[string]int `json:"warnings"`               // WARN and ERROR lines by message
	ExitedEarly     string         `json:"exited_early,omitempty"` // its exit, if it died during the run
}

func (r *replica) summary() replicaSummary {
	early, why := r.exitedEarly()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := replicaSummary{Index: r.index, LogLines: maps.Clone(r.logLevels), Warnings: maps.Clone(r.warnings)}
	if early {
		s.ExitedEarly = why
	}
	mib := func(kib int64) float64 { return float64(kib) / 1024 }
	if n := len(r.rss); n > 0 {
		s.RSSStartMiB, s.RSSPeakMiB, s.RSSEndMiB = mib(r.rss[0]), mib(slices.Max(r.rss)), mib(r.rss[n-1])
	}
	if n := len(r.goroutines); n > 0 {
		s.GoroutinesStart, s.GoroutinesPeak, s.GoroutinesEnd = r.goroutines[0], slices.Max(r.goroutines), r.goroutines[n-1]
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

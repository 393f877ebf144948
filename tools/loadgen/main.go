// Command loadgen sends one request body to one URL over loopback and reports throughput and
// latency. With -rate 0 it is closed-loop (each connection sends as fast as answers come
// back: the maximum throughput); with -rate N it is open-loop at N requests/s, and latency
// is measured from when each request was due, so a stalled server cannot hide its queue
// (no coordinated omission).
package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	target := flag.String("url", "http://127.0.0.1:8080/v1/matchmake", "URL to POST to (loopback only)")
	bodyFile := flag.String("body", "", "file holding the JSON body")
	conns := flag.Int("conns", 32, "connections")
	rate := flag.Float64("rate", 0, "requests per second; 0 = as fast as possible")
	duration := flag.Duration("duration", 10*time.Second, "how long to measure")
	warmup := flag.Duration("warmup", 2*time.Second, "load before measuring")
	resultsPool := flag.Int("results-pool", 0, "instead of -body, send a fresh 5v5 /v1/results body per request, players drawn from a pool of this many")
	overlap := flag.Bool("overlap", false, "with -results-pool, let concurrent results share players (a lock-contention stress test); by default each connection draws from its own part of the pool, as a player plays one match at a time")
	tickets := flag.Bool("tickets", false, "instead of -body, send a fresh ticket per request (POST /v1/queues/{name}/tickets): new players each, 80% solo and 20% parties of 2-5, ratings normal around 1000 (sd 200)")
	auth := flag.String("auth", "", "Authorization header value, e.g. \"Bearer dev-key\"")
	slowest := flag.Int("slowest", 0, "also print the due times (UTC) and latencies of the N slowest requests, to line them up with the server's logs")
	flag.Parse()
	var bodies func(worker int) []byte
	if *resultsPool > 0 {
		if *resultsPool < 10 || (!*overlap && *resultsPool < 10**conns) {
			fmt.Fprintln(os.Stderr, "loadgen: -results-pool must give every connection at least 10 players")
			os.Exit(2)
		}
		bodies = resultBodies(*resultsPool, *conns, *overlap)
	}
	if *tickets {
		bodies = ticketBodies()
	}
	if err := run(*target, *bodyFile, bodies, *auth, *conns, *rate, *duration, *warmup, *slowest); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// resultBodies returns a generator of distinct 5v5 results: a unique match id each, ten
// distinct players, a random winner. Without overlap, connection w draws its players from
// its own slice of the pool, so no player is in two results at once (as in real play, where
// a player finishes one match before the next); with overlap, from the whole pool.
func resultBodies(pool, conns int, overlap bool) func(worker int) []byte {
	var seq atomic.Int64
	run := time.Now().UnixNano()
	part := pool / conns
	return func(worker int) []byte {
		n := seq.Add(1)
		rng := rand.New(rand.NewPCG(uint64(run), uint64(n)))
		base, size := worker*part, part
		if overlap {
			base, size = 0, pool
		}
		var picked [10]int // distinct, by rejection: the pool is far larger than ten
		for i := 0; i < len(picked); {
			c := base + rng.IntN(size)
			if !slices.Contains(picked[:i], c) {
				picked[i] = c
				i++
			}
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"match_id":"load-%d-%d","context":{"game_type":"ctf"},"map":"face","duration_s":600,"teams":[`, run, n)
		for t := range 2 {
			if t > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"side":%q,"players":[`, []string{"red", "blue"}[t])
			for k := range 5 {
				if k > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"id":"player-%d"}`, picked[t*5+k])
			}
			b.WriteString("]}")
		}
		fmt.Fprintf(&b, `],"winner":%d}`, rng.IntN(2))
		return b.Bytes()
	}
}

// ticketBodies returns a generator of tickets of players never seen before (a player searches
// in one ticket at a time), as the tick benchmarks' queue has them: 80% solo, 20% parties of
// 2-5 around their own level.
func ticketBodies() func(worker int) []byte {
	var seq atomic.Int64
	run := time.Now().UnixNano()
	return func(int) []byte {
		n := seq.Add(1)
		rng := rand.New(rand.NewPCG(uint64(run), uint64(n)))
		size := 1
		if rng.IntN(5) == 0 {
			size = 2 + rng.IntN(4)
		}
		level := 1000 + 200*rng.NormFloat64()
		var b bytes.Buffer
		b.WriteString(`{"players":[`)
		for k := range size {
			if k > 0 {
				b.WriteString(",")
			}
			r := level
			if size > 1 {
				r += 50 * rng.NormFloat64()
			}
			fmt.Fprintf(&b, `{"id":"t%d-%d-%d","rating":%.1f}`, run%1000000, n, k, r)
		}
		b.WriteString(`],"ttl_s":120}`)
		return b.Bytes()
	}
}

func run(target, bodyFile string, bodies func(worker int) []byte, auth string, conns int, rate float64, duration, warmup time.Duration, slowest int) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s is not a loopback address: loadgen only loads this machine", u.Hostname())
	}
	if bodies == nil {
		body, err := os.ReadFile(bodyFile)
		if err != nil {
			return err
		}
		bodies = func(int) []byte { return body }
	}
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		DisableCompression: true,
	}, Timeout: 10 * time.Second}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		samples   []sample // with slowest: every request's due time and latency
		errs      atomic.Int64
		measuring atomic.Bool
	)
	send := func(worker int, due time.Time) {
		req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(bodies(worker)))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if !measuring.Load() {
			return
		}
		if err != nil || resp.StatusCode >= 300 {
			errs.Add(1)
			return
		}
		d := time.Since(due)
		mu.Lock()
		latencies = append(latencies, d)
		if slowest > 0 {
			samples = append(samples, sample{due, d})
		}
		mu.Unlock()
	}

	ctx, cancel := context.WithTimeout(context.Background(), warmup+duration)
	defer cancel()
	go func() {
		time.Sleep(warmup)
		measuring.Store(true)
	}()
	var wg sync.WaitGroup
	if rate <= 0 {
		for w := range conns {
			wg.Go(func() {
				for ctx.Err() == nil {
					send(w, time.Now())
				}
			})
		}
	} else {
		due := make(chan time.Time, conns*64)
		for w := range conns {
			wg.Go(func() {
				for t := range due {
					send(w, t)
				}
			})
		}
		interval := time.Duration(float64(time.Second) / rate)
		next := time.Now()
	schedule:
		for {
			select {
			case <-ctx.Done():
				break schedule
			case <-time.After(time.Until(next)):
			}
			for !next.After(time.Now()) {
				select {
				case due <- next:
				default:
					if measuring.Load() {
						errs.Add(1) // the workers are all stuck: count the request as failed
					}
				}
				next = next.Add(interval)
			}
		}
		close(due)
	}
	wg.Wait()

	slices.Sort(latencies)
	q := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	fmt.Printf("requests %d errors %d throughput %.0f req/s p50 %v p90 %v p99 %v p99.9 %v max %v\n",
		len(latencies), errs.Load(), float64(len(latencies))/duration.Seconds(),
		q(0.50).Round(time.Microsecond), q(0.90).Round(time.Microsecond), q(0.99).Round(time.Microsecond),
		q(0.999).Round(time.Microsecond), q(1).Round(time.Microsecond))
	if slowest > 0 {
		printSlowest(os.Stdout, samples, slowest)
	}
	return nil
}

// sample is one answered request: when it was due and how long its answer took from then.
type sample struct {
	due     time.Time
	latency time.Duration
}

// printSlowest prints the n slowest requests in the order they were due, one line each.
func printSlowest(w io.Writer, samples []sample, n int) {
	slices.SortFunc(samples, func(a, b sample) int { return cmp.Compare(b.latency, a.latency) })
	samples = samples[:min(n, len(samples))]
	slices.SortFunc(samples, func(a, b sample) int { return a.due.Compare(b.due) })
	for _, s := range samples {
		fmt.Fprintf(w, "slow %s %v\n", s.due.UTC().Format("15:04:05.000"), s.latency.Round(time.Microsecond))
	}
}

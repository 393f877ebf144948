// Command loadgen sends one request body to one URL over loopback and reports throughput and
// latency. With -rate 0 it is closed-loop (each connection sends as fast as answers come
// back: the maximum throughput); with -rate N it is open-loop at N requests/s, and latency
// is measured from when each request was due, so a stalled server cannot hide its queue
// (no coordinated omission).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
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
	flag.Parse()
	if err := run(*target, *bodyFile, *conns, *rate, *duration, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(target, bodyFile string, conns int, rate float64, duration, warmup time.Duration) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s is not a loopback address: loadgen only loads this machine", u.Hostname())
	}
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		DisableCompression: true,
	}, Timeout: 10 * time.Second}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      atomic.Int64
		measuring atomic.Bool
	)
	send := func(due time.Time) {
		req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if !measuring.Load() {
			return
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			errs.Add(1)
			return
		}
		d := time.Since(due)
		mu.Lock()
		latencies = append(latencies, d)
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
		for range conns {
			wg.Go(func() {
				for ctx.Err() == nil {
					send(time.Now())
				}
			})
		}
	} else {
		due := make(chan time.Time, conns*64)
		for range conns {
			wg.Go(func() {
				for t := range due {
					send(t)
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
	return nil
}

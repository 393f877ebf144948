package lineproto

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// benchServer serves the test store on loopback without logging (a benchmark measures the
// protocol, not the test's log sink).
func benchServer(b *testing.B) (string, want) {
	b.Helper()
	st := newStore(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := NewServer(serviceOf(st), nil, DefaultConfig(), nil)
	go srv.Serve(context.Background(), ln)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return ln.Addr().String(), want{b, st}
}

// roundTrips sends "PLAYER alice" and waits for each reply before the next, as a mod does
// when a player joins.
func roundTrips(addr, wantReply string, next func() bool) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := io.WriteString(nc, "GAME ctf\n"); err != nil {
		return err
	}
	r := bufio.NewReader(nc)
	cmd := []byte("PLAYER alice\n")
	for next() {
		if _, err := nc.Write(cmd); err != nil {
			return err
		}
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if string(line) != wantReply {
			return fmt.Errorf("reply %q, want %q", line, wantReply)
		}
	}
	return nil
}

// BenchmarkPlayerRoundTrip: one connection, one PLAYER at a time over loopback, against the
// in-memory store. Reports round trips per second.
func BenchmarkPlayerRoundTrip(b *testing.B) {
	addr, w := benchServer(b)
	reply := w.player(w.context("ctf"), "alice") + "\n"
	if err := roundTrips(addr, reply, b.Loop); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
}

// BenchmarkPlayerRoundTripParallel: 8 x GOMAXPROCS connections (b.RunParallel's goroutines,
// one connection each), each doing PLAYER round trips. Reports the total rate.
func BenchmarkPlayerRoundTripParallel(b *testing.B) {
	addr, w := benchServer(b)
	reply := w.player(w.context("ctf"), "alice") + "\n"
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		if err := roundTrips(addr, reply, pb.Next); err != nil {
			b.Error(err)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
}

// BenchmarkParseLine is the parser alone.
func BenchmarkParseLine(b *testing.B) {
	for b.Loop() {
		if _, err := ParseLine("PLAYER 0123456789abcdef"); err != nil {
			b.Fatal(err)
		}
	}
}

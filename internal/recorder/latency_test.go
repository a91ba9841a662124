package recorder

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/tap"
)

// echoMain is a child that writes back whatever it reads.
func echoMain() int {
	buf := make([]byte, 64<<10)
	for {
		n, err := os.Stdin.Read(buf)
		if n > 0 {
			if _, err := os.Stdout.Write(buf[:n]); err != nil {
				return 1
			}
		}
		if err != nil {
			return 0
		}
	}
}

// relay forwards src to dst like the tap's pumps: read, stamp, forward,
// then Observe.
func relay(src io.Reader, dst io.WriteCloser, st tap.Stream, seq *atomic.Uint64, start time.Time, o tap.Observer) {
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s := seq.Add(1)
			t := int64(time.Since(start))
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
			if o != nil {
				o.Observe(tap.Chunk{Stream: st, Seq: s, T: t, Data: buf[:n]})
			}
		}
		if err != nil {
			return
		}
	}
}

// BenchmarkRoundTrip measures what observing costs a 200-byte round trip
// through a tap-like relay and an echo child: no observer, the in-process
// Recorder, and the PipeObserver with the sink at nice 0 and at nice 10,
// with and without gathering (see sinkReader).
// It reports p50 and p99 in µs. (The whole-process comparison with a cat
// relay is bench/'s job; this isolates the observer.)
func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range []string{"none", "inprocess", "sink-nice0", "sink-nice10-nogather", "sink-nice10"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			var o tap.Observer
			switch mode {
			case "inprocess":
				w, err := cassette.Create(filepath.Join(dir, "r.cassette"), cassette.Header{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				o = New(w, WithWarn(func(m string) { b.Error(m) }))
			case "sink-nice0", "sink-nice10", "sink-nice10-nogather":
				cfg := sinkConfig(filepath.Join(dir, "s.cassette"))
				cfg.Nice = -1
				if mode != "sink-nice0" {
					cfg.Nice = 10
				}
				if mode == "sink-nice10-nogather" {
					cfg.Env = append(cfg.Env, "RPCTAP_TEST_NOGATHER=1")
				}
				cfg.Warn = func(m string) { b.Error(m) }
				po, err := StartSink(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				o = po
			}
			child := exec.Command(os.Args[0])
			child.Env = append(os.Environ(), "RPCTAP_RECORDER_HELPER=echo")
			childIn, tapToChild, _ := os.Pipe()
			childToTap, childOut, _ := os.Pipe()
			child.Stdin, child.Stdout = childIn, childOut
			if err := child.Start(); err != nil {
				b.Fatal(err)
			}
			childIn.Close()
			childOut.Close()
			parentToTap, parentW, _ := os.Pipe()
			parentR, tapToParent, _ := os.Pipe()
			var seq atomic.Uint64
			start := time.Now()
			go relay(parentToTap, tapToChild, tap.Stdin, &seq, start, o)
			go relay(childToTap, tapToParent, tap.Stdout, &seq, start, o)

			frame := make([]byte, 200)
			copy(frame, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`)
			for i := 58; i < 197; i++ {
				frame[i] = 'x'
			}
			copy(frame[197:], "\"}}")
			frame[199] = '\n'
			back := make([]byte, 200)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				parentW.Write(frame)
				if _, err := io.ReadFull(parentR, back); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			parentW.Close() // the relays close the child's stdin, then ours
			child.Wait()
			io.Copy(io.Discard, parentR)
			if o != nil {
				o.Close()
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

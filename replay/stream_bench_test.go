package replay

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
)

// The session the memory benchmarks replay: turns of an ACP-like agent, each
// a session/prompt request (~200 bytes), two session/update notifications
// (~600 bytes each) and the response (~1 KB), all distinct (a counter in
// every frame) so that zstd compresses them as it would real traffic.
const turnBytes = 200 + 2*600 + 1000

func turnRequest(i int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"turn %08d %s"}]}}`, i, i, benchPad(4*i, 120))
}

func turnFrames(i int) []string {
	return []string{
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk %08d a %s"}}}}`, i, benchPad(4*i+1, 500)),
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk %08d b %s"}}}}`, i, benchPad(4*i+2, 500)),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn","_meta":{"turn":"%08d","pad":"%s"}}}`, i, i, benchPad(4*i+3, 920)),
	}
}

// benchPad returns n letters drawn from a generator seeded with seed: the
// same text for the same seed (the parent must resend what was recorded),
// different text for different seeds.
func benchPad(seed, n int) string {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alpha[r.IntN(len(alpha))]
	}
	return string(b)
}

// writeSessionCassette writes a cassette of about size bytes of frames
// (turns as above, then stdin-eof and exit 0) through cassette.Writer,
// flushing every 16 records as a busy recorder would. It returns the
// number of turns.
func writeSessionCassette(tb testing.TB, path string, size int) int {
	tb.Helper()
	w, err := cassette.Create(path, cassette.Header{Format: cassette.FormatName, Version: "1.0", Protocol: "acp",
		Created: "2026-01-01T00:00:00Z", Mode: "stdio"}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	var t int64
	n := 0
	add := func(d cassette.Dir, line string) {
		t += 50_000
		r := cassette.NewLineRecord(cassette.KindFrame, d, []byte(line), "\n")
		r.T = t
		if err := w.Append(&r); err != nil {
			tb.Fatal(err)
		}
		if n++; n%16 == 0 {
			if err := w.Flush(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	turns := size / turnBytes
	for i := 1; i <= turns; i++ {
		add(cassette.DirIn, turnRequest(i))
		for _, f := range turnFrames(i) {
			add(cassette.DirOut, f)
		}
	}
	for _, r := range []cassette.Record{{K: cassette.KindEvent, Ev: cassette.EventStdinEOF}, {K: cassette.KindEvent, Ev: cassette.EventExit, Exit: new(int)}} {
		t += 50_000
		r.T = t
		if err := w.Append(&r); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return turns
}

// heapSampler records the peak of live heap objects, sampled every
// millisecond through runtime/metrics (no stop-the-world).
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	s := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64() + sample[1].Value.Uint64(); v > s.peak.Load() {
			s.peak.Store(v)
		}
	}
	read()
	go func() {
		defer close(s.done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				read()
			case <-s.stop:
				read()
				return
			}
		}
	}()
	return s
}

func (s *heapSampler) end() uint64 {
	close(s.stop)
	<-s.done
	return s.peak.Load()
}

// BenchmarkReplaySession replays a generated 10 MB and 100 MB session
// through NewChild (the path `rpctap replay` takes) with speed 0, a parent
// sending each request and reading up to its response. It reports the peak
// heap in use (sampled), the start-up (NewChild to the first response) and
// the reply latency (request written to response read) p50 and p99.
// Run with -benchtime=1x: one iteration is one whole session.
func BenchmarkReplaySession(b *testing.B) {
	dir := b.TempDir()
	turnsOf := map[int]int{}
	for _, size := range []int{10 << 20, 100 << 20} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			path := filepath.Join(dir, fmt.Sprintf("session-%d.cassette", size))
			if _, ok := turnsOf[size]; !ok {
				turnsOf[size] = writeSessionCassette(b, path, size)
			}
			turns := turnsOf[size]
			var lat []time.Duration
			var peak uint64
			var startup time.Duration
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				hs := startHeapSampler()
				t0 := time.Now()
				c, err := NewChild(path, WithSpeed(0))
				if err != nil {
					b.Fatal(err)
				}
				br := bufio.NewReaderSize(c.Stdout, 64<<10)
				lat = lat[:0]
				for i := 1; i <= turns; i++ {
					req := turnRequest(i) + "\n"
					t1 := time.Now()
					if _, err := c.Stdin.Write([]byte(req)); err != nil {
						b.Fatal(err)
					}
					for k := 0; k < 3; k++ {
						if _, err := br.ReadSlice('\n'); err != nil {
							b.Fatal(err)
						}
						if k == 2 {
							lat = append(lat, time.Since(t1))
						}
					}
					if i == 1 {
						startup = time.Since(t0)
					}
				}
				c.Stdin.Close()
				res, err := c.Wait()
				if err != nil || res.Diverged() || res.Exit == nil || res.Exit.Code != 0 {
					b.Fatalf("replay: %v, %+v", err, res)
				}
				peak = max(peak, hs.end())
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(startup.Microseconds()), "startup-µs")
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

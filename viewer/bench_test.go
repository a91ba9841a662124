package viewer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rpctap/rpctap/cassette"
)

// benchSize is the compressed size of the generated cassette, from
// RPCTAP_BENCH_SIZE (e.g. 64MiB, 1GiB); default 32MiB.
func benchSize(tb testing.TB) int64 {
	s := os.Getenv("RPCTAP_BENCH_SIZE")
	if s == "" {
		return 32 << 20
	}
	mult := int64(1)
	for suf, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if strings.HasSuffix(s, suf) && mult == 1 {
			s, mult = strings.TrimSuffix(s, suf), m
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		tb.Fatalf("RPCTAP_BENCH_SIZE=%q: want a size like 64MiB or 1GiB", os.Getenv("RPCTAP_BENCH_SIZE"))
	}
	return n * mult
}

var words = strings.Fields(`the a an agent client session prompt tool call file read write edit main go test
function return error value type struct interface package import module build run check fix bug line
code change diff patch result output input stream chunk message text thought plan step next done ok
because when then while before after with without into from over under about against between through`)

// genText makes distinct text, so that zstd does not see one short
// workload repeated inside its window (which flatters compression).
func genText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if rng.IntN(6) == 0 {
			b.WriteString(strconv.Itoa(rng.IntN(1 << 20)))
		} else {
			b.WriteString(words[rng.IntN(len(words))])
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// writeBenchCassette writes an agent-like session mix of about size
// compressed bytes: prompts, streamed message and thought chunks, tool
// calls, permission requests and their answers, stderr lines.
func writeBenchCassette(tb testing.TB, path string, size int64) {
	tmp := path + ".tmp"
	os.Remove(tmp)
	w, err := cassette.Create(tmp, cassette.Header{Protocol: "acp", Argv: []string{"bench-agent"}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var t int64
	id := 0
	add := func(d cassette.Dir, k cassette.Kind, js string) {
		t += int64(rng.IntN(2_000_000))
		r := cassette.Record{K: k, T: t, D: d, EOL: "\n"}
		if k == cassette.KindStderr {
			r.Text, r.HasText = js, true
		} else {
			r.JSON = []byte(js)
		}
		if err := w.Append(&r); err != nil {
			tb.Fatal(err)
		}
	}
	check := 0
	for {
		check++
		if check%64 == 0 {
			if fi, err := os.Stat(tmp); err == nil && fi.Size() >= size {
				break
			}
		}
		id++
		add(cassette.DirIn, cassette.KindFrame, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":%s}]}}`,
			id, strconv.Quote(genText(rng, 40+rng.IntN(200)))))
		prompt := id
		for range 20 + rng.IntN(60) {
			kind := "agent_message_chunk"
			if rng.IntN(4) == 0 {
				kind = "agent_thought_chunk"
			}
			add(cassette.DirOut, cassette.KindFrame, fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":%q,"content":{"type":"text","text":%s}}}}`,
				kind, strconv.Quote(genText(rng, 10+rng.IntN(120)))))
			if rng.IntN(30) == 0 {
				add(cassette.DirErr, cassette.KindStderr, "agent: "+genText(rng, 30))
			}
			if rng.IntN(25) == 0 {
				id++
				add(cassette.DirOut, cassette.KindFrame, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"sess_1","toolCall":{"toolCallId":"call_%d","title":%s},"options":[{"kind":"allow_once","name":"Allow","optionId":"allow"}]}}`,
					id, id, strconv.Quote(genText(rng, 20))))
				add(cassette.DirIn, cassette.KindFrame, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, id))
			}
		}
		add(cassette.DirOut, cassette.KindFrame, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`, prompt))
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

// benchCassette returns a generated cassette of benchSize, kept in the
// temporary directory between runs (generating 1 GiB takes minutes).
func benchCassette(tb testing.TB) string {
	size := benchSize(tb)
	path := filepath.Join(os.TempDir(), fmt.Sprintf("rpctap-viewer-bench-%d.cassette", size))
	if fi, err := os.Stat(path); err == nil && fi.Size() >= size {
		return path
	}
	start := time.Now()
	writeBenchCassette(tb, path, size)
	tb.Logf("generated %s (%d MiB) in %s", path, size>>20, time.Since(start).Round(time.Millisecond))
	return path
}

// heapPeak samples HeapInuse until stop is closed.
func heapPeak(stop <-chan struct{}, peak *atomic.Uint64, wg *sync.WaitGroup) {
	defer wg.Done()
	var ms runtime.MemStats
	for {
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peak.Load() {
			peak.Store(ms.HeapInuse)
		}
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// BenchmarkViewLarge measures, on a generated cassette of
// RPCTAP_BENCH_SIZE: the time from opening the file to the first drawn
// screen, the time from pressing G to a drawn screen showing the last
// record, and the peak heap in use meanwhile (the background analysis
// runs concurrently, as it does for a user). With RPCTAP_BENCH_SCAN=1 it
// also waits for the analysis to read the whole cassette and reports that
// time and the peak heap of the whole run; with RPCTAP_BENCH_FLOWS=1 it
// opens the flows view (o) and reports its time, flow count and peak heap.
//
//	RPCTAP_BENCH_SIZE=1GiB go test ./viewer -run '^$' -bench ViewLarge -benchtime 1x
func BenchmarkViewLarge(b *testing.B) {
	path := benchCassette(b)
	fi, _ := os.Stat(path)
	for b.Loop() {
		runtime.GC()
		var peak atomic.Uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go heapPeak(stop, &peak, &wg)

		start := time.Now()
		src, err := OpenCassette(path)
		if err != nil {
			b.Fatal(err)
		}
		scr := tcell.NewSimulationScreen("UTF-8")
		app := New(NewStore(src), Options{Name: path, Screen: scr})
		scr.SetSize(160, 50)
		app.Draw()
		first := time.Since(start)
		if !strings.Contains(ScreenText(scr), "session/prompt") {
			b.Fatal("first screen does not show the first prompt")
		}

		start = time.Now()
		app.Key(tcell.NewEventKey(tcell.KeyRune, 'G', tcell.ModNone))
		app.Draw()
		end := time.Since(start)
		last := src.Len() - 1
		if app.SelectedRecord() != last || !strings.Contains(ScreenText(scr), "end of cassette") {
			b.Fatalf("G selected #%d, want the last #%d", app.SelectedRecord(), last)
		}
		peakView := peak.Load()

		b.ReportMetric(float64(first.Microseconds())/1000, "first-screen-ms")
		b.ReportMetric(float64(end.Microseconds())/1000, "jump-end-ms")
		b.ReportMetric(float64(peakView)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
		b.ReportMetric(float64(src.Len()), "records")

		if os.Getenv("RPCTAP_BENCH_SCAN") == "1" {
			start = time.Now()
			if err := app.Settle(time.Hour); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "analysis-s")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-scan-MiB")
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			b.ReportMetric(float64(m.HeapInuse)/(1<<20), "live-heap-after-scan-MiB")
			if st := app.store.Stats(); st.Records != src.Len() {
				b.Fatalf("analysis saw %d of %d records", st.Records, src.Len())
			}
		}
		if os.Getenv("RPCTAP_BENCH_FLOWS") == "1" {
			// The flows view folds the whole cassette (o).
			runtime.GC()
			peak.Store(0)
			start = time.Now()
			app.Key(tcell.NewEventKey(tcell.KeyRune, 'o', tcell.ModNone))
			if err := app.Settle(time.Hour); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "flows-s")
			b.ReportMetric(float64(len(app.flows)), "flows")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-flows-MiB")
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			b.ReportMetric(float64(m.HeapInuse)/(1<<20), "live-heap-flows-MiB")
		}
		close(stop)
		wg.Wait()
		app.Close()
		// Let the background scan stop before the next iteration.
		_ = app.Settle(time.Hour)
		src.Close()
	}
}

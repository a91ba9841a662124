package recorder

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/tap"
)

// benchChunks cuts the agent mix into one chunk per line (how an agent's
// writes arrive), alternating parent and child, at most 64 KiB each.
func benchChunks(b testing.TB, size int) ([]tap.Chunk, int64) {
	mix := agentMix(b, size)
	var chunks []tap.Chunk
	var seq uint64
	var total int64
	for i, l := range bytes.SplitAfter(mix, []byte("\n")) {
		st := tap.Stdout
		if i%4 == 0 {
			st = tap.Stdin
		}
		for len(l) > 0 {
			n := min(len(l), 64<<10)
			seq++
			chunks = append(chunks, tap.Chunk{Stream: st, Seq: seq, T: int64(seq), Data: l[:n]})
			total += int64(n)
			l = l[n:]
		}
	}
	return chunks, total
}

// BenchmarkRecorder: chunks -> Recorder -> cassette.Writer (zstd) -> discard,
// on distinct agent-like frames, with and without validation.
func BenchmarkRecorder(b *testing.B) {
	chunks, total := benchChunks(b, 32<<20)
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"validate", []Option{WithProtocol("acp", true)}},
		{"novalidate", []Option{WithProtocol("acp", true), WithoutValidation()}},
		{"detect", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(total)
			b.ReportAllocs()
			var frames uint64
			stopped := 0
			for i := 0; i < b.N; i++ {
				w, err := cassette.NewWriter(io.Discard, cassette.Header{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				r := New(w, append([]Option{WithWarn(func(m string) { b.Error(m) })}, bc.opts...)...)
				for _, c := range chunks {
					r.Observe(c)
				}
				r.Close()
				frames += r.Stats().Frames
				if r.valStopped {
					stopped++
				}
			}
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
			// Runs in which the validator fell maxValidateBytes behind and
			// validation stopped (then "validate" measures less than it says).
			b.ReportMetric(float64(stopped)/float64(b.N), "val-stopped/op")
		})
	}
}

// BenchmarkZstdFastest is the recording limit the issue measures against:
// single-core zstd at its fastest level on the same bytes.
func BenchmarkZstdFastest(b *testing.B) {
	mix := agentMix(b, 32<<20)
	b.SetBytes(int64(len(mix)))
	b.ResetTimer() // generating the mix is not zstd's time
	var out int64
	for i := 0; i < b.N; i++ {
		cw := &countWriter{}
		enc, _ := zstd.NewWriter(cw, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		for off := 0; off < len(mix); off += 64 << 10 {
			enc.Write(mix[off:min(off+64<<10, len(mix))])
			enc.Flush()
		}
		enc.Close()
		out = cw.n
	}
	b.ReportMetric(float64(out)/float64(len(mix)), "ratio")
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkSink: the whole crash-safe path, PipeObserver -> pipes -> sink
// process (this test binary) -> cassette file; Close waits for the end.
func BenchmarkSink(b *testing.B) {
	chunks, total := benchChunks(b, 32<<20)
	b.SetBytes(total)
	dir := b.TempDir()
	var size, rss int64
	for i := 0; i < b.N; i++ {
		cfg := sinkConfig(filepath.Join(dir, filepathSafe(i)))
		cfg.Warn = func(m string) { b.Error(m) }
		o, err := StartSink(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range chunks {
			o.Observe(c)
		}
		o.Close()
		size = fileSize(cfg.Path)
		rss = max(rss, o.Result().PeakRSS)
	}
	b.ReportMetric(float64(size)/float64(total), "ratio")
	b.ReportMetric(float64(rss)/(1<<20), "sink-peak-MiB")
}

// BenchmarkRecorderCapture runs BenchmarkRecorder's pipeline on a session
// that bench/wire saved (go run ./bench/wire --save-capture DIR; then
// RPCTAP_BENCH_CAPTURE=DIR/mixstream.ndjson): one chunk per line, the
// parent's frames (initialize, session/new, session/prompt) on stdin.
// Skipped when the variable is not set. For CPU rather than wall time on a
// shared machine, run it under perf stat -e task-clock.
func BenchmarkRecorderCapture(b *testing.B) {
	path := os.Getenv("RPCTAP_BENCH_CAPTURE")
	if path == "" {
		b.Skip("set RPCTAP_BENCH_CAPTURE to a bench/wire capture (--save-capture)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var chunks []tap.Chunk
	var total int64
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		st := tap.Stdout
		head := l[:min(len(l), 80)]
		for _, m := range []string{`"method":"initialize"`, `"method":"session/new"`, `"method":"session/prompt"`} {
			if bytes.Contains(head, []byte(m)) {
				st = tap.Stdin
			}
		}
		chunks = append(chunks, tap.Chunk{Stream: st, Seq: uint64(i + 1), T: int64(i), Data: l})
		total += int64(len(l))
	}
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"validate", []Option{WithProtocol("acp", true)}},
		{"novalidate-noredact", []Option{WithProtocol("acp", true), WithoutValidation(), WithRedact(RedactOptions{Off: true})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(total)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w, err := cassette.NewWriter(io.Discard, cassette.Header{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				r := New(w, append([]Option{WithWarn(func(string) {})}, bc.opts...)...)
				for _, c := range chunks {
					r.Observe(c)
				}
				r.Close()
			}
		})
	}
}

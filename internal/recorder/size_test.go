package recorder

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/tap"
)

// zstdSize compresses lines the way the cassette Writer does (one stream per
// data frame, Flush after every flushEvery lines, a new frame once frameSize
// bytes went in) and returns the compressed size.
func zstdSize(t testing.TB, lines [][]byte, level zstd.EncoderLevel, window, frameSize, flushEvery int) int64 {
	cw := &countWriter{}
	enc, err := zstd.NewWriter(cw, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(window))
	if err != nil {
		t.Fatal(err)
	}
	in := 0
	for i, l := range lines {
		enc.Write(l)
		in += len(l)
		if (i+1)%flushEvery == 0 {
			enc.Flush()
			if in >= frameSize {
				enc.Close()
				enc.Reset(cw)
				in = 0
			}
		}
	}
	enc.Close()
	return cw.n
}

// recordMix records chunks through a Recorder into an in-memory cassette
// and returns the cassette and its content (the JSON lines).
func recordMix(t testing.TB, chunks []tap.Chunk, opts ...Option) ([]byte, [][]byte) {
	var file bytes.Buffer
	w, err := cassette.NewWriter(&file, cassette.Header{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := New(w, append([]Option{WithWarn(func(m string) { t.Error(m) })}, opts...)...)
	for _, c := range chunks {
		r.Observe(c)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	cr, err := cassette.NewReader(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	var lines [][]byte
	for {
		rec, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, append(rec.AppendJSON(nil), '\n'))
	}
	return file.Bytes(), lines
}

// TestCassetteSizeBreakdown says where a cassette's bytes go on the agent
// mix (../shared/traffic captures plus generated ACP/synaps/pi-like frames,
// all distinct) recorded with realistic times: payload, per-record fields,
// container, zstd level, window and frame size. Each variant is compressed
// as the Writer does with one record per batch (agent sessions: the queue
// goes idle after nearly every frame). It logs the table; it checks that
// the cassette holds every wire byte and that the variants stay JSON lines.
func TestCassetteSizeBreakdown(t *testing.T) {
	mb := envInt("RPCTAP_SIZE_MB", 8)
	if testing.Short() || raceEnabled {
		mb = 1 // the completeness checks on less data: -race makes this 10-20x slower
	}
	chunks, total := benchChunks(t, mb<<20)
	t.Run("agent-mix", func(t *testing.T) { sizeBreakdown(t, chunks, total) })
	if path := os.Getenv("RPCTAP_SIZE_CAPTURE"); path != "" {
		// A session's bytes saved by bench/wire --save-capture DIR (both
		// directions in the order the parent saw them; all recorded here
		// as one direction).
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cap []tap.Chunk
		var n int64
		for _, l := range bytes.SplitAfter(data, []byte("\n")) {
			for len(l) > 0 {
				k := min(len(l), 64<<10)
				cap = append(cap, tap.Chunk{Stream: tap.Stdout, Seq: uint64(len(cap) + 1), Data: l[:k]})
				n += int64(k)
				l = l[k:]
			}
		}
		t.Run("capture", func(t *testing.T) { sizeBreakdown(t, cap, n) })
	}
	var traffic []byte
	for _, f := range testpeers.CaptureFiles() {
		if !strings.Contains(f, "lsp-") {
			b, _ := os.ReadFile(f)
			traffic = append(traffic, b...)
		}
	}
	if len(traffic) == 0 {
		return
	}
	chunks, total = nil, 0
	for i, l := range bytes.SplitAfter(traffic, []byte("\n")) {
		if len(l) > 0 {
			chunks = append(chunks, tap.Chunk{Stream: tap.Stdout, Seq: uint64(i + 1), Data: l})
			total += int64(len(l))
		}
	}
	t.Run("traffic", func(t *testing.T) { sizeBreakdown(t, chunks, total) })
}

func sizeBreakdown(t *testing.T, chunks []tap.Chunk, total int64) {
	// Realistic times: ns since start, 20 µs to 5 ms between chunks.
	rng := rand.New(rand.NewSource(7))
	now := int64(3_000_000)
	for i := range chunks {
		now += 20_000 + rng.Int63n(5_000_000)
		chunks[i].T = now
	}
	file, lines := recordMix(t, chunks, WithProtocol("acp", true))

	var wire [][]byte
	var content int64
	for _, l := range lines {
		content += int64(len(l))
		var rec cassette.Record
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.K == cassette.KindFrame {
			wire = append(wire, rec.Line())
		}
	}
	var wireBytes int64
	for _, l := range wire {
		wireBytes += int64(len(l))
	}
	if wireBytes != total {
		t.Fatalf("cassette holds %d wire bytes, sent %d", wireBytes, total)
	}
	strip := func(re string) [][]byte {
		rx := regexp.MustCompile(re)
		out := make([][]byte, len(lines))
		for i, l := range lines {
			// Only the record's own fields: they come before the payload
			// or after it at the end of the line, never inside it.
			j := bytes.Index(l, []byte(`,"json":`))
			if j < 0 {
				out[i] = rx.ReplaceAll(l, nil)
				continue
			}
			k := bytes.LastIndex(l, []byte(`,"kind":`))
			if k < j {
				k = len(l) - 2
			}
			head := rx.ReplaceAll(l[:j], nil)
			tail := rx.ReplaceAll(l[k:], nil)
			out[i] = append(append(append([]byte{}, head...), l[j:k]...), tail...)
			if !json.Valid(out[i]) {
				t.Fatalf("stripping %s left %q", re, out[i])
			}
		}
		return out
	}
	fastest, def, better := zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression
	const mib = 1 << 20
	frac := func(n int64) float64 { return float64(n) / float64(total) }
	t.Logf("%d wire bytes in %d frames, content %d B of JSON lines (%.3f of wire), cassette %d B = %.4f of wire",
		total, len(wire), content, float64(content)/float64(total), len(file), frac(int64(len(file))))
	rows := []struct {
		name  string
		lines [][]byte
		level zstd.EncoderLevel
		win   int
		frame int
		flush int
	}{
		{"wire bytes, one stream, 64 KiB flushes (bench limit)", wire, fastest, 8 * mib, 1 << 40, 1 << 30},
		{"wire bytes as the Writer does it (1 MiB window+frame, flush per line)", wire, fastest, mib, mib, 1},
		{"records as written", lines, fastest, mib, mib, 1},
		{"records without n", strip(`"n":\d+,`), fastest, mib, mib, 1},
		{"records without t", strip(`,"t":\d+`), fastest, mib, mib, 1},
		{"records without kind, method, id", strip(`,"(kind|method)":"[^"]*"|,"id":("[^"]*"|-?\d+)`), fastest, mib, mib, 1},
		{"records without n, d, kind, method, id", strip(`"n":\d+,|,"d":"[^"]*"|,"(kind|method)":"[^"]*"|,"id":("[^"]*"|-?\d+)`), fastest, mib, mib, 1},
		{"records, flush every 16 records", lines, fastest, mib, mib, 16},
		{"records, 4 MiB window and frames", lines, fastest, 4 * mib, 4 * mib, 1},
		{"records, SpeedDefault", lines, def, mib, mib, 1},
		{"records, SpeedDefault, 4 MiB window and frames", lines, def, 4 * mib, 4 * mib, 1},
		{"records, SpeedBetterCompression", lines, better, mib, mib, 1},
		{"wire bytes, SpeedBetterCompression, one stream", wire, better, 8 * mib, 1 << 40, 1 << 30},
	}
	t.Logf("| variant | bytes | fraction of wire |")
	t.Logf("|---|---|---|")
	var asWritten int64
	for _, r := range rows {
		n := zstdSize(t, r.lines, r.level, r.win, r.frame, r.flush)
		if r.name == "records as written" {
			asWritten = n
		}
		t.Logf("| %s | %d | %.4f |", r.name, n, frac(n))
	}
	// The levels, windows and frame sizes the format allows (any zstd
	// frame; readers refuse frames over 256 MiB of content), for the
	// records as written, one per batch: size against zstd -1 of the wire
	// bytes as one stream (the reference of issue 23) and the encoder's CPU
	// per MiB of content, on this thread.
	ref := zstdSize(t, wire, fastest, 8*mib, 1<<40, 1<<30)
	var base float64
	t.Logf("| level | window and frame | fraction of wire | ÷ zstd -1 of the wire | encoder CPU ms/MiB of content | ÷ SpeedFastest 1 MiB |")
	t.Logf("|---|---|---|---|---|---|")
	for _, lv := range []zstd.EncoderLevel{fastest, def, better, zstd.SpeedBestCompression} {
		for _, wf := range []int{mib, 4 * mib, 8 * mib} {
			// Repeated up to 8 MiB of content: the thread's CPU time
			// is counted in clock ticks.
			var n int64
			reps := max(1, int(8*mib/content))
			if raceEnabled || testing.Short() {
				reps = 1 // the CPU figures mean nothing under -race; the sizes are the same
			}
			cpu := threadCPU(func() {
				for range reps {
					n = zstdSize(t, lines, lv, wf, wf, 1)
				}
			})
			per := float64(cpu) / 1e6 / (float64(content) * float64(reps) / mib)
			if base == 0 {
				base = per
			}
			t.Logf("| %s | %d MiB | %.4f | %.3f | %.1f | %.2f |", lv, wf/mib, frac(n), float64(n)/float64(ref), per, per/base)
		}
	}
	if wireAsWriter := zstdSize(t, wire, fastest, mib, mib, 1); asWritten <= wireAsWriter {
		t.Errorf("records compress to %d B, not more than their wire bytes alone (%d B): the emulation is off", asWritten, wireAsWriter)
	}
}

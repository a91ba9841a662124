package recorder

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

type testLine struct {
	payload string
	eol     string
	part    bool
}

// splitAll feeds data to a splitter in the given chunk sizes (cycled) and
// returns the records it produced, as the recorder would build them.
func splitAll(t testing.TB, data []byte, sizes []int, max int) []cassette.Record {
	var s splitter
	s.max = max
	var recs []cassette.Record
	emit := func(p []byte, eol string, part bool) {
		if len(p) > max {
			t.Fatalf("payload of %d bytes is over the %d byte cap", len(p), max)
		}
		if bytes.IndexByte(p, '\n') >= 0 {
			t.Fatalf("payload %q contains a newline", p)
		}
		if part && eol != "" {
			t.Fatalf("part with line ending %q", eol)
		}
		r := cassette.Record{K: cassette.KindFrame, EOL: eol, Part: part}
		r.SetPayload(bytes.Clone(p))
		recs = append(recs, r)
	}
	for i := 0; len(data) > 0; i++ {
		n := 1
		if len(sizes) > 0 {
			n = sizes[i%len(sizes)]
		}
		if n <= 0 || n > len(data) {
			n = len(data)
		}
		s.feed(data[:n], emit)
		if s.pending() > max {
			t.Fatalf("splitter holds %d bytes, over the %d byte cap", s.pending(), max)
		}
		data = data[n:]
	}
	s.end(emit)
	return recs
}

func joinLines(recs []cassette.Record) []byte {
	var out []byte
	for i := range recs {
		out = recs[i].AppendLine(out)
	}
	return out
}

func TestSplitterLineEndings(t *testing.T) {
	in := "a\n\r\nb\r\n\n{\"x\":1}\r\nlast\r"
	recs := splitAll(t, []byte(in), []int{1, 2, 3}, MaxLine)
	want := []testLine{{"a", "\n", false}, {"", "\r\n", false}, {"b", "\r\n", false}, {"", "\n", false},
		{`{"x":1}`, "\r\n", false}, {"last\r", "", false}}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		r := recs[i]
		if string(r.Payload()) != w.payload || r.EOL != w.eol || r.Part != w.part {
			t.Errorf("record %d: payload %q eol %q part %v; want %q %q %v", i, r.Payload(), r.EOL, r.Part, w.payload, w.eol, w.part)
		}
	}
	if recs[4].JSON == nil {
		t.Errorf("a JSON line with CRLF was not kept as JSON: %+v", recs[4])
	}
	if got := joinLines(recs); string(got) != in {
		t.Errorf("joined %q, want %q", got, in)
	}
}

func TestSplitterLongLineParts(t *testing.T) {
	const max = 16
	line := strings.Repeat("x", 50)
	in := "short\n" + line + "\r\nend"
	for _, sizes := range [][]int{{1}, {7}, {100}, {5, 33}} {
		recs := splitAll(t, []byte(in), sizes, max)
		if got := joinLines(recs); string(got) != in {
			t.Fatalf("sizes %v: joined %q, want %q", sizes, got, in)
		}
		parts := 0
		for _, r := range recs {
			if r.Part {
				parts++
			}
		}
		if parts != 3 { // 50 bytes with a cap of 16: 16+16+16 as parts, 2 in the last record
			t.Errorf("sizes %v: %d parts, want 3: %+v", sizes, parts, recs)
		}
		last := recs[len(recs)-2]
		if last.Part || last.EOL != "\r\n" {
			t.Errorf("sizes %v: the long line's last record is %+v, want eol \\r\\n and no part", sizes, last)
		}
	}
}

func TestSplitterPartKeepsRunesAndCR(t *testing.T) {
	const max = 8
	// "é" is 2 bytes; a cut at 8 bytes would tear the 4th one.
	in := "abcdeé\xc3\xa9é\r\n"
	recs := splitAll(t, []byte(in), []int{100}, max)
	if got := joinLines(recs); string(got) != in {
		t.Fatalf("joined %q, want %q", got, in)
	}
	for _, r := range recs {
		if r.B64 != nil {
			t.Errorf("a part was cut inside a rune and became base64: %+v", r)
		}
	}
	// A "\r" at the cut stays with the newline.
	in = "1234567\r\n"
	recs = splitAll(t, []byte(in), []int{100}, max)
	if got := joinLines(recs); string(got) != in {
		t.Fatalf("joined %q, want %q", got, in)
	}
	if l := recs[len(recs)-1]; l.EOL != "\r\n" {
		t.Errorf("last record %+v: the CR was cut away from its LF", l)
	}
}

func TestSplitterPayloadForms(t *testing.T) {
	in := "{\"a\":1}\n {\"a\":1}\n\xff\xfe\n\n\"s\"\n"
	recs := splitAll(t, []byte(in), nil, MaxLine)
	if len(recs) != 5 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if recs[0].JSON == nil || recs[1].JSON != nil || !recs[1].HasText || recs[2].B64 == nil || !recs[3].HasText || recs[4].JSON == nil {
		t.Errorf("payload forms: %+v", recs)
	}
}

// FuzzFraming: for any byte stream cut into any chunks, with any line cap,
// the records' lines concatenate back to the stream, and no record or held
// line is over the cap.
func FuzzFraming(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1}\n"), []byte{3}, uint16(0))
	f.Add([]byte("a\r\nb\n\nc"), []byte{1, 2}, uint16(2))
	f.Add([]byte("\xef\xbb\xbf{\"a\":\"\xff\"}\r\n\r\n"), []byte{5}, uint16(4))
	f.Add([]byte("éééééééé\r\n"), []byte{1}, uint16(5))
	f.Add(bytes.Repeat([]byte("0123456789\r"), 40), []byte{7, 0, 200}, uint16(16))
	f.Fuzz(func(t *testing.T, data, cuts []byte, capSel uint16) {
		max := MaxLine
		if capSel != 0 {
			max = int(capSel%64) + 1
		}
		sizes := make([]int, len(cuts))
		for i, c := range cuts {
			sizes[i] = int(c) + 1
		}
		recs := splitAll(t, data, sizes, max)
		if got := joinLines(recs); !bytes.Equal(got, data) {
			t.Fatalf("joined %q\nwant %q", got, data)
		}
		for i, r := range recs {
			if r.EOL == "" && !r.Part && i != len(recs)-1 {
				t.Fatalf("record %d has no line ending but is not the last: %+v", i, r)
			}
		}
	})
}

func BenchmarkFraming(b *testing.B) {
	data := agentMix(b, 8<<20)
	var s splitter
	s.max = MaxLine
	lines := 0
	emit := func(p []byte, eol string, part bool) { lines++ }
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(data); off += 64 << 10 {
			end := min(off+64<<10, len(data))
			s.feed(data[off:end], emit)
		}
		s.end(emit)
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

// TestHoldHeap: the reorder hold pops chunks in Seq order whatever order
// they were pushed in.
func TestHoldHeap(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var h holdHeap
	want := uint64(1)
	pushed := uint64(0)
	for round := 0; round < 50; round++ {
		perm := rng.Perm(1 + rng.Intn(40))
		for _, p := range perm {
			h.push(item{seq: pushed + uint64(p) + 1})
		}
		pushed += uint64(len(perm))
		for n := rng.Intn(len(h) + 1); n > 0; n-- {
			if got := h.pop().seq; got != want {
				t.Fatalf("popped seq %d, want %d", got, want)
			}
			want++
		}
	}
	for len(h) > 0 {
		if got := h.pop().seq; got != want {
			t.Fatalf("popped seq %d, want %d", got, want)
		}
		want++
	}
	if want != pushed+1 {
		t.Fatalf("popped %d of %d", want-1, pushed)
	}
}

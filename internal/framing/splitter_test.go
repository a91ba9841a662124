package framing

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// msg is one emitted record, copied.
type msg struct {
	hdr, payload string
	eol          string
	part         bool
}

func (m msg) String() string {
	return fmt.Sprintf("{%q %q %q part=%v}", m.hdr, m.payload, m.eol, m.part)
}

// splitAll feeds data to a splitter in the given chunk sizes (cycled) and
// returns what it emitted, checking the invariants every caller relies on:
// no payload over the cap, nothing held over the cap plus a header block and
// a chunk, no newline inside a line's payload.
func splitAll(t testing.TB, mode Mode, data []byte, sizes []int, max int) ([]msg, Mode) {
	t.Helper()
	s := NewSplitter(mode, max)
	var out []msg
	emit := func(hdr, p []byte, eol string, part bool) {
		if len(p) > max {
			t.Fatalf("payload of %d bytes is over the %d byte cap", len(p), max)
		}
		if s.Mode() == Lines && bytes.IndexByte(p, '\n') >= 0 {
			t.Fatalf("line payload %q contains a newline", p)
		}
		if part && eol != "" {
			t.Fatalf("part with line ending %q", eol)
		}
		out = append(out, msg{string(hdr), string(p), eol, part})
	}
	for i := 0; len(data) > 0; i++ {
		n := 1
		if len(sizes) > 0 {
			n = sizes[i%len(sizes)]
		}
		if n <= 0 || n > len(data) {
			n = len(data)
		}
		s.Feed(data[:n], emit)
		if s.Pending() > max+MaxHeader+n+64 {
			t.Fatalf("splitter holds %d bytes, over the %d byte cap", s.Pending(), max)
		}
		data = data[n:]
	}
	m := s.Mode()
	s.End(emit)
	return out, m
}

func join(ms []msg) []byte {
	var b []byte
	for _, m := range ms {
		b = append(append(append(b, m.hdr...), m.payload...), m.eol...)
	}
	return b
}

func TestLineEndings(t *testing.T) {
	in := "a\n\r\nb\r\n\n{\"x\":1}\r\nlast\r"
	got, _ := splitAll(t, Lines, []byte(in), []int{1, 2, 3}, MaxMessage)
	want := []msg{{"", "a", "\n", false}, {"", "", "\r\n", false}, {"", "b", "\r\n", false}, {"", "", "\n", false},
		{"", `{"x":1}`, "\r\n", false}, {"", "last\r", "", false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

func TestLongLineParts(t *testing.T) {
	const max = 16
	line := strings.Repeat("x", 50)
	in := "short\n" + line + "\r\nend"
	for _, sizes := range [][]int{{1}, {7}, {100}, {5, 33}} {
		got, _ := splitAll(t, Lines, []byte(in), sizes, max)
		if string(join(got)) != in {
			t.Fatalf("sizes %v: joined %q, want %q", sizes, join(got), in)
		}
		parts := 0
		for _, m := range got {
			if m.part {
				parts++
			}
		}
		if parts != 3 { // 50 bytes with a cap of 16: 16+16+16 as parts, 2 in the last record
			t.Errorf("sizes %v: %d parts, want 3: %v", sizes, parts, got)
		}
		if last := got[len(got)-2]; last.part || last.eol != "\r\n" {
			t.Errorf("sizes %v: the long line's last record is %v, want eol \\r\\n and no part", sizes, last)
		}
	}
}

func TestPartKeepsRunesAndCR(t *testing.T) {
	const max = 8
	// "é" is 2 bytes; a cut at 8 bytes would tear the 4th one.
	in := "abcdeé\xc3\xa9é\r\n"
	got, _ := splitAll(t, Lines, []byte(in), []int{100}, max)
	if string(join(got)) != in {
		t.Fatalf("joined %q, want %q", join(got), in)
	}
	for _, m := range got {
		if !strings.HasPrefix(in, "") || !validRunes(m.payload) {
			t.Errorf("a part was cut inside a rune: %v", m)
		}
	}
	in = "1234567\r\n"
	got, _ = splitAll(t, Lines, []byte(in), []int{100}, max)
	if l := got[len(got)-1]; l.eol != "\r\n" || string(join(got)) != in {
		t.Errorf("last record %v: the CR was cut away from its LF", l)
	}
}

func validRunes(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func lsp(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

func TestContentLengthMessages(t *testing.T) {
	a := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	b := `{"jsonrpc":"2.0","method":"initialized","params":{}}`
	c := "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"é\\n\"}"
	typed := "Content-Length: " + fmt.Sprint(len(c)) + "\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + c
	in := lsp(a) + lsp(b) + typed + lsp("")
	for _, sizes := range [][]int{{1}, {2, 3}, {17}, {len(in)}} {
		got, mode := splitAll(t, Auto, []byte(in), sizes, MaxMessage)
		if mode != ContentLength {
			t.Fatalf("sizes %v: detected %v", sizes, mode)
		}
		want := []msg{
			{fmt.Sprintf("Content-Length: %d\r\n\r\n", len(a)), a, "", false},
			{fmt.Sprintf("Content-Length: %d\r\n\r\n", len(b)), b, "", false},
			{typed[:len(typed)-len(c)], c, "", false},
			{"Content-Length: 0\r\n\r\n", "", "", false},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("sizes %v:\ngot  %v\nwant %v", sizes, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		in   string
		mode Mode
		ok   bool
	}{
		{"", Auto, false},
		{"Cont", Auto, false},
		{"content-length: 3\r\n", ContentLength, true},
		{"CONTENT-TYPE: x\r\n", ContentLength, true},
		{"{\"jsonrpc\"", Lines, true},
		{"Content-Lengthy: 3", Lines, true},
		{"hello world\n", Lines, true},
		{"X-Foo: 1\r\n", Lines, true},
		{" Content-Length: 3", Lines, true},
	} {
		m, ok := Detect([]byte(c.in))
		if m != c.mode || ok != c.ok {
			t.Errorf("Detect(%q) = %v, %v; want %v, %v", c.in, m, ok, c.mode, c.ok)
		}
	}
}

// TestContentLengthOutOfSync: bytes where a header should be (a stray print,
// the tail of a body whose Content-Length was too short, a header without a
// length) come out as records without a header, a line at a time, and the
// next message is found again.
func TestContentLengthOutOfSync(t *testing.T) {
	good := `{"jsonrpc":"2.0","id":1,"result":null}`
	short := `{"jsonrpc":"2.0","id":2,"result":"abc"}`
	in := "Content-Length: 3\r\n\r\nabcdef\n" + lsp(good) + "debug: hello\n" + "Content-Length: 10\r\n\r\n" + short + lsp(good) +
		"Content-Type: x\r\n\r\n" + lsp(good) + "Content-Length: 99999999999999999999\r\n\r\n" + lsp(good)
	for _, sizes := range [][]int{{1}, {5, 9}, {len(in)}} {
		got, _ := splitAll(t, ContentLength, []byte(in), sizes, MaxMessage)
		if string(join(got)) != in {
			t.Fatalf("sizes %v: joined %q\nwant %q", sizes, join(got), in)
		}
		var bodies []string
		for _, m := range got {
			if m.hdr != "" && m.payload == good {
				bodies = append(bodies, m.payload)
			}
		}
		if len(bodies) != 4 {
			t.Errorf("sizes %v: %d of 4 good messages found again: %v", sizes, len(bodies), got)
		}
		for _, m := range got {
			if m.hdr == "" && strings.Contains(m.payload, "Content-Length: 3") {
				t.Errorf("sizes %v: a valid header was taken as junk: %v", sizes, m)
			}
		}
	}
}

// TestContentLengthParts: a body longer than the cap comes out as parts,
// the header on the first only, and joins back.
func TestContentLengthParts(t *testing.T) {
	const max = 16
	body := `{"a":"` + strings.Repeat("é", 30) + `"}`
	in := lsp(body) + lsp(`{}`)
	for _, sizes := range [][]int{{1}, {7}, {1000}} {
		got, _ := splitAll(t, ContentLength, []byte(in), sizes, max)
		if string(join(got)) != in {
			t.Fatalf("sizes %v: joined %q", sizes, join(got))
		}
		if got[0].hdr == "" || !got[0].part {
			t.Fatalf("sizes %v: first record %v", sizes, got[0])
		}
		for i, m := range got[1:] {
			if m.hdr != "" && m.payload != "{}" {
				t.Errorf("sizes %v: record %d repeats the header: %v", sizes, i+1, m)
			}
			if !validRunes(m.payload) {
				t.Errorf("sizes %v: record %d torn inside a rune: %v", sizes, i+1, m)
			}
		}
		if last := got[len(got)-1]; last.payload != "{}" || last.part {
			t.Errorf("sizes %v: last %v", sizes, last)
		}
	}
}

// TestContentLengthEndAndLost: a body cut short by the end of the stream
// keeps its header. Lost bytes inside a body: the held start is dropped (and
// counted), and the body's rest after the lost bytes is skipped by its
// length, so no message is joined across the loss.
func TestContentLengthEndAndLost(t *testing.T) {
	s := NewSplitter(ContentLength, 0)
	var got []msg
	emit := func(h, p []byte, eol string, part bool) { got = append(got, msg{string(h), string(p), eol, part}) }
	s.Feed([]byte("Content-Length: 10\r\n\r\n{\"a\":"), emit)
	if d := s.Lost(3, false, emit); d != 27 {
		t.Errorf("Lost dropped %d bytes, want the 27 held", d)
	}
	if n := s.Skip([]byte("1}" + lsp("{}"))); n != 2 {
		t.Errorf("Skip passed %d bytes, want the body's last 2", n)
	}
	s.Feed([]byte(lsp("{}")+"Content-Length: 5\r\n\r\nab"), emit)
	s.End(emit)
	want := []msg{{"Content-Length: 2\r\n\r\n", "{}", "", false}, {"Content-Length: 5\r\n\r\n", "ab", "", false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

// Issue 20 item 7: the splitter never joins bytes across lost bytes into a
// message. Each case feeds before, loses n bytes, feeds after; every byte
// fed is either emitted or counted as dropped or skipped.
func TestLostNeverJoins(t *testing.T) {
	for _, c := range []struct {
		name          string
		mode          Mode
		max           int
		before, after string
		n             int64
		boundary      bool
		want          []msg
		dropped       int
		skipped       int
	}{
		{name: "line cut on both sides", mode: Lines, before: "{\"a\":1}\n{\"b\"", n: 40,
			after: ":2}\n{\"c\":3}\n", want: []msg{{"", `{"a":1}`, "\n", false}, {"", `{"c":3}`, "\n", false}},
			dropped: 4, skipped: 4},
		{name: "loss ends at a newline", mode: Lines, before: "{\"a\":1}\n{\"b\"", n: 40, boundary: true,
			after: "{\"c\":3}\n", want: []msg{{"", `{"a":1}`, "\n", false}, {"", `{"c":3}`, "\n", false}}, dropped: 4},
		{name: "loss after a whole line", mode: Lines, before: "{\"a\":1}\n", n: 40,
			after: "2}\n{\"c\":3}\n", want: []msg{{"", `{"a":1}`, "\n", false}, {"", `{"c":3}`, "\n", false}}, skipped: 3},
		{name: "rest spans chunks", mode: Lines, before: "{\"b\"", n: 1, after: "xxxxxxxxxx",
			want: nil, dropped: 4, skipped: 10},
		{name: "over-long line cut", mode: Lines, max: 8, before: "0123456789ab", n: 5, after: "cd\n{}\n",
			want: []msg{{"", "01234567", "", true}, {"", "89ab", "", false}, {"", "{}", "\n", false}}, skipped: 3},
		{name: "body cut, rest unknown", mode: ContentLength, before: "Content-Length: 10\r\n\r\n{\"a\":", n: 50,
			after: "zz" + lsp("{}"), want: []msg{{"Content-Length: 2\r\n\r\n", "{}", "", false}}, dropped: 27, skipped: 2},
		{name: "header cut", mode: ContentLength, before: lsp("{}") + "Content-Len", n: 9,
			after: "\r\n{}" + lsp("[]"), want: []msg{{"Content-Length: 2\r\n\r\n", "{}", "", false}, {"Content-Length: 2\r\n\r\n", "[]", "", false}},
			dropped: 11, skipped: 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSplitter(c.mode, c.max)
			var got []msg
			emit := func(h, p []byte, eol string, part bool) { got = append(got, msg{string(h), string(p), eol, part}) }
			s.Feed([]byte(c.before), emit)
			dropped := s.Lost(c.n, c.boundary, emit)
			after := []byte(c.after)
			skipped := 0
			for len(after) > 0 { // one byte at a time: the rest may span reads
				k := s.Skip(after[:1])
				skipped += k
				if k == 0 {
					break
				}
				after = after[1:]
			}
			s.Feed(after, emit)
			s.End(emit)
			if fmt.Sprint(got) != fmt.Sprint(c.want) || dropped != c.dropped || skipped != c.skipped {
				t.Fatalf("got  %v dropped %d skipped %d\nwant %v dropped %d skipped %d", got, dropped, skipped, c.want, c.dropped, c.skipped)
			}
			var out int
			for _, m := range got {
				out += len(m.hdr) + len(m.payload) + len(m.eol)
			}
			if in := len(c.before) + len(c.after); out+dropped+skipped != in {
				t.Errorf("%d emitted + %d dropped + %d skipped bytes, %d fed", out, dropped, skipped, in)
			}
		})
	}
}

func TestWithLength(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Content-Length: 5\r\n\r\n", "Content-Length: 123\r\n\r\n"},
		{"content-length:5\r\nContent-Type: a\r\n\r\n", "content-length:123\r\nContent-Type: a\r\n\r\n"},
		{"Content-Type: a\r\nContent-Length:  77 \r\n\r\n", "Content-Type: a\r\nContent-Length:  123 \r\n\r\n"},
		{"", "Content-Length: 123\r\n\r\n"},
	} {
		if got := string(WithLength([]byte(c.in), 123)); got != c.want {
			t.Errorf("WithLength(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"auto": Auto, "ndjson": Lines, "content-length": ContentLength, "LSP": ContentLength} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, m, err)
		}
	}
	if _, err := ParseMode("xml"); err == nil || !strings.Contains(err.Error(), "known: auto, ndjson, content-length") {
		t.Errorf("ParseMode(xml) error %v", err)
	}
}

// FuzzSplitter: for any byte stream cut into any chunks, with any cap and
// any mode, what comes out concatenates back to the stream; every header
// block emitted parses with a Content-Length; only the last record may end a
// stream without ending itself.
func FuzzSplitter(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1}\n"), []byte{3}, uint16(0), uint8(0))
	f.Add([]byte("a\r\nb\n\nc"), []byte{1, 2}, uint16(2), uint8(1))
	f.Add([]byte("\xef\xbb\xbf{\"a\":\"\xff\"}\r\n\r\n"), []byte{5}, uint16(4), uint8(0))
	f.Add([]byte(lsp(`{"jsonrpc":"2.0","id":1,"result":{}}`)+lsp("{}")), []byte{1}, uint16(0), uint8(0))
	f.Add([]byte("Content-Length: 4\r\n\r\n{}"), []byte{2}, uint16(3), uint8(2))
	f.Add([]byte("Content-Length: 999999999999\r\n\r\n{}"), []byte{7}, uint16(0), uint8(2))
	f.Add([]byte("Content-Length: -1\r\n\r\n{}Content-Length: 2\r\n\r\n{}"), []byte{3}, uint16(0), uint8(2))
	f.Add([]byte("Content-Type: x\n\nContent-Length: 2\n\n{}junk\r\n"), []byte{1, 4}, uint16(5), uint8(0))
	f.Fuzz(func(t *testing.T, data, cuts []byte, capSel uint16, modeSel uint8) {
		max := MaxMessage
		if capSel != 0 {
			max = int(capSel%64) + 1
		}
		sizes := make([]int, len(cuts))
		for i, c := range cuts {
			sizes[i] = int(c) + 1
		}
		mode := Mode(modeSel % 3)
		got, _ := splitAll(t, mode, data, sizes, max)
		if j := join(got); !bytes.Equal(j, data) {
			t.Fatalf("joined %q\nwant   %q", j, data)
		}
		for i, m := range got {
			if m.hdr != "" {
				if _, ok := ContentLengthOf([]byte(m.hdr)); !ok {
					t.Fatalf("record %d: header %q has no Content-Length", i, m.hdr)
				}
			}
			if m.eol == "" && !m.part && m.hdr == "" && i != len(got)-1 && len(m.payload) > 0 && mode == Lines {
				t.Fatalf("record %d has no line ending but is not the last: %v", i, m)
			}
		}
	})
}

func BenchmarkContentLength(b *testing.B) {
	var buf bytes.Buffer
	for buf.Len() < 8<<20 {
		buf.WriteString(lsp(`{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///a.go","diagnostics":[]}}`))
	}
	data := buf.Bytes()
	s := NewSplitter(ContentLength, 0)
	n := 0
	emit := func(h, p []byte, eol string, part bool) { n++ }
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(data); off += 64 << 10 {
			s.Feed(data[off:min(off+64<<10, len(data))], emit)
		}
		s.End(emit)
	}
}

// TestContentLengthEveryOffset: a stream split in two at every offset gives
// the same messages as the stream fed whole.
func TestContentLengthEveryOffset(t *testing.T) {
	in := []byte(lsp(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`) +
		"Content-Length: 12\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + `{"é":"ü"}  ` +
		"junk\r\n" + lsp("{}"))
	whole, _ := splitAll(t, ContentLength, in, nil, MaxMessage)
	for cut := 0; cut <= len(in); cut++ {
		for _, mode := range []Mode{Auto, ContentLength} {
			got, _ := splitAll(t, mode, in, []int{cut, len(in)}, MaxMessage)
			if fmt.Sprint(got) != fmt.Sprint(whole) {
				t.Fatalf("mode %v, cut at %d:\ngot  %v\nwant %v", mode, cut, got, whole)
			}
		}
	}
}

// FuzzSplitterLost: chunks of a stream are lost at random (Lost, never
// fed). Every byte is emitted, dropped, skipped or lost exactly once, and
// every whole line emitted is a line of the stream: none joins bytes from
// both sides of a loss.
func FuzzSplitterLost(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"), []byte{5, 9, 3}, uint16(0b010), uint8(1))
	f.Add([]byte("aaaa\nbbbb\ncccc\ndddd\n"), []byte{3, 3, 3, 3, 3, 3}, uint16(0b1010), uint8(0))
	f.Add([]byte("x\r\ny\r\nz"), []byte{2}, uint16(0b01), uint8(1))
	f.Add([]byte(lsp(`{"id":1}`)+lsp(`{"id":2}`)+lsp(`{"id":3}`)), []byte{7, 11}, uint16(0b0100), uint8(2))
	f.Add([]byte("Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]"), []byte{10, 14}, uint16(0b10), uint8(2))
	f.Fuzz(func(t *testing.T, data, cuts []byte, lostMask uint16, modeSel uint8) {
		mode := Mode(modeSel % 3)
		s := NewSplitter(mode, 0)
		var out int
		whole := []byte("\n" + string(data))
		emit := func(hdr, p []byte, eol string, part bool) {
			out += len(hdr) + len(p) + len(eol)
			if s.Mode() == Lines && (eol == "\n" || eol == "\r\n") && hdr == nil {
				line := append(append([]byte{'\n'}, p...), eol...)
				if !bytes.Contains(whole, line) {
					t.Fatalf("emitted %q, which is no line of the stream", line[1:])
				}
			}
		}
		var dropped, skipped, lost int
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(int(cuts[i%len(cuts)])+1, len(rest))
			}
			chunk := rest[:n]
			rest = rest[n:]
			if i < 16 && lostMask&(1<<i) != 0 {
				lost += n
				dropped += s.Lost(int64(n), chunk[n-1] == '\n', emit)
				continue
			}
			k := s.Skip(chunk)
			skipped += k
			s.Feed(chunk[k:], emit)
		}
		s.End(emit)
		if out+dropped+skipped+lost != len(data) {
			t.Fatalf("%d emitted + %d dropped + %d skipped + %d lost, %d fed", out, dropped, skipped, lost, len(data))
		}
	})
}

// TestDetachOffer: a line assembled from several chunks can be taken out of
// the splitter (the recorder hands it to its validator without a copy); the
// lines after it come out intact, whether the splitter got a buffer back
// through Offer or grew a new one, and a line that lies in one chunk is
// never detached (it is the caller's chunk, not the splitter's buffer).
func TestDetachOffer(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	data := []byte("a\n" + long + "\nb\n" + long + "y\n" + "c\n")
	for _, offer := range []bool{false, true} {
		s := NewSplitter(Lines, 0)
		var got []string
		var kept [][]byte
		var spare []byte
		for len(data) > 0 {
			n := min(len(data), 7<<10)
			chunk := data[:n]
			data = data[n:]
			if offer && spare != nil && s.Offer(spare) {
				spare = nil
			}
			s.Feed(chunk, func(_, p []byte, eol string, part bool) {
				if part || eol != "\n" {
					t.Fatalf("unexpected part or ending %q", eol)
				}
				got = append(got, string(p))
				b := s.Detach(p)
				if len(p) < 7<<10 {
					if b != nil {
						t.Fatalf("line %q in one chunk was detached", p)
					}
					return
				}
				if b == nil || &b[0] != &p[0] {
					t.Fatalf("line of %d bytes assembled by the splitter was not detached", len(p))
				}
				kept = append(kept, b[:len(p)])
				spare = b[:0]
			})
		}
		data = []byte("a\n" + long + "\nb\n" + long + "y\n" + "c\n")
		want := []string{"a", long, "b", long + "y", "c"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("offer=%v: lines %d, want %d (or contents differ)", offer, len(got), len(want))
		}
		if len(kept) != 2 {
			t.Fatalf("offer=%v: %d lines detached, want 2", offer, len(kept))
		}
		if !offer && string(kept[0]) != long {
			t.Fatalf("a detached line was overwritten by the lines after it")
		}
		if s.Offer(nil) {
			t.Fatal("Offer took an empty buffer")
		}
	}
}

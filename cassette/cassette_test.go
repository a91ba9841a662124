package cassette

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// lineCases are lines the tap must keep byte for byte.
var lineCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
	`{"a": 1,  "b" : [1, 2]}`, // inner white space kept verbatim
	"\ufeff{\"bom\":true}",    // a BOM makes it text
	` {"lead":1}`, `{"trail":1} `, "{\"cr\":1}\r",
	"", "plain text", "tab\there", "ctl\x00\x01\x1f\x7f",
	"bad utf8 \xff\xfe", "\xc3\x28", "\xed\xa0\x80", // invalid sequences, a surrogate
	`null`, `true`, `123`, `"str"`, `[]`, `{}`, `1e400`,
	`{"x":"\u2028 line sep","y":"é"}`,
	"{\"raw\":\"a\tb\"}", // a raw tab in a string is invalid JSON: text
	"[1,\r2]",            // CR as JSON white space inside: still verbatim
	"two\nlines",         // a newline inside a payload can only be text
	"\"\\",
}

func TestLineRoundTripCases(t *testing.T) {
	for _, p := range lineCases {
		for _, eol := range []string{"\n", "\r\n", ""} {
			checkLineRoundTrip(t, []byte(p), eol)
		}
	}
}

// checkLineRoundTrip encodes a line record, checks the encoding is one valid
// JSON line, decodes it and checks Line() gives back the exact bytes.
func checkLineRoundTrip(t *testing.T, p []byte, eol string) {
	t.Helper()
	r := NewLineRecord(KindFrame, DirOut, p, eol)
	r.N, r.T = 7, 99
	enc := r.AppendJSON(nil)
	if bytes.IndexByte(enc, '\n') >= 0 || !json.Valid(enc) {
		t.Fatalf("payload %q: encoding is not one JSON line: %q", p, enc)
	}
	var got Record
	if err := json.Unmarshal(enc, &got); err != nil {
		t.Fatalf("payload %q: decode %s: %v", p, enc, err)
	}
	want := append(append([]byte{}, p...), eol...)
	if line := got.Line(); !bytes.Equal(line, want) {
		t.Fatalf("payload %q eol %q: round trip gave %q (encoded %s)", p, eol, line, enc)
	}
	if !bytes.Equal(got.Payload(), p) || got.EOL != eol {
		t.Fatalf("payload %q: Payload %q EOL %q", p, got.Payload(), got.EOL)
	}
	if got.N != 7 || got.T != 99 || got.K != KindFrame || got.D != DirOut {
		t.Fatalf("envelope changed: %+v", got)
	}
	// The form chosen: JSON only for embeddable JSON, text for other UTF-8.
	if (got.JSON != nil) != verbatimJSON(p) {
		t.Fatalf("payload %q: JSON form %v, want %v", p, got.JSON != nil, verbatimJSON(p))
	}
	if eol == "\n" && bytes.Contains(enc, []byte(`"eol"`)) {
		t.Fatalf("eol \\n must be omitted: %s", enc)
	}
	if again := got.AppendJSON(nil); !bytes.Equal(again, enc) {
		t.Fatalf("re-encoding differs:\n%s\n%s", enc, again)
	}
}

// TestLineRoundTripProperty: for any bytes, encode -> decode -> Line() is
// exact. Random lines are built from pieces that stress the rules.
func TestLineRoundTripProperty(t *testing.T) {
	pieces := []string{`{"a":1}`, "\r", "\n", "\ufeff", "\xff", "\x00", " ", `"`, `\`, "é", "\u2028", `[`, `]`, `{}`, "x", "\t", "\xe2\x82"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var b []byte
		if rng.IntN(3) == 0 { // random bytes
			b = make([]byte, rng.IntN(40))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		} else {
			for j := rng.IntN(8); j > 0; j-- {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			}
		}
		checkLineRoundTrip(t, b, []string{"\n", "\r\n", ""}[rng.IntN(3)])
	}
}

func TestSplitEOL(t *testing.T) {
	for _, c := range []struct{ in, p, eol string }{
		{"a\n", "a", "\n"}, {"a\r\n", "a", "\r\n"}, {"a", "a", ""}, {"\n", "", "\n"},
		{"\r\n", "", "\r\n"}, {"a\r", "a\r", ""}, {"", "", ""},
	} {
		p, eol := SplitEOL([]byte(c.in))
		if string(p) != c.p || eol != c.eol {
			t.Errorf("SplitEOL(%q) = %q, %q", c.in, p, eol)
		}
	}
}

func TestRecordJSONForms(t *testing.T) {
	exit := 3
	recs := []Record{
		{N: 0, K: KindHeader, Header: &Header{Format: FormatName, Version: "1.0", Created: "2026-01-01T00:00:00Z", Argv: []string{"a", "b c"}, Protocol: "acp", Redacted: true}},
		{N: 1, T: 5, K: KindEvent, Ev: EventStart, Argv: []string{"agent"}, Cwd: "/x", PID: 42},
		{N: 2, T: 6, K: KindEvent, Ev: EventExit, Exit: &exit},
		{N: 3, T: 7, K: KindViolation, Ref: 2, Code: "acp.missing-field", Severity: "error", Pointer: "/params", Msg: "missing \"x\""},
		{N: 4, T: 8, K: KindMeta, Protocol: "acp"},
		{N: 5, T: 9, K: KindEvent, Ev: EventGap, D: DirOut, Bytes: 1 << 40, Conn: 2},
		{N: 6, T: 10, K: KindEnd, Records: 6},
	}
	cl := NewLineRecord(KindFrame, DirOut, []byte(`{"id":1}`), "")
	cl.N, cl.T, cl.Hdr = 7, 11, "Content-Length: 8\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
	recs = append(recs, cl)
	red := NewLineRecord(KindFrame, DirOut, []byte(`{"id":1,"params":{"a/b":"[REDACTED]"}}`), "")
	red.N, red.T, red.Redacted, red.RedactedAt = 8, 12, true, []string{"/params/a~1b", ""}
	recs = append(recs, red)
	for _, r := range recs {
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got Record
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if again := got.AppendJSON(nil); !bytes.Equal(again, enc) {
			t.Errorf("round trip differs:\n%s\n%s", enc, again)
		}
		if !reflect.DeepEqual(got.RedactedAt, r.RedactedAt) {
			t.Errorf("redactedAt %q came back as %q", r.RedactedAt, got.RedactedAt)
		}
		if r.Hdr != "" && string(got.Line()) != r.Hdr+`{"id":1}` {
			t.Errorf("a Content-Length record's line is %q, want header and body", got.Line())
		}
	}
	h := recs[0].AppendJSON(nil)
	want := `{"n":0,"t":0,"k":"header","format":"rpctap-cassette","version":"1.0","created":"2026-01-01T00:00:00Z","protocol":"acp","argv":["a","b c"],"redacted":true}`
	if string(h) != want {
		t.Errorf("header form:\n got %s\nwant %s", h, want)
	}
	// A frame with an id and a classification, exact form.
	r := NewLineRecord(KindFrame, DirIn, []byte(`{"id":1}`), "\r\n")
	r.N, r.T, r.Kind, r.Method, r.ID = 9, 10, "request", "initialize", json.RawMessage(`1`)
	if got, want := string(r.AppendJSON(nil)), `{"n":9,"t":10,"k":"frame","d":"in","json":{"id":1},"eol":"\r\n","kind":"request","method":"initialize","id":1}`; got != want {
		t.Errorf("frame form:\n got %s\nwant %s", got, want)
	}
	// A JSON payload set by hand that cannot be embedded is demoted, never
	// producing a broken line.
	bad := Record{K: KindFrame, D: DirOut, JSON: json.RawMessage("{\"a\":\n1}"), EOL: "\n"}
	if enc := bad.AppendJSON(nil); !json.Valid(enc) || bytes.IndexByte(enc, '\n') >= 0 {
		t.Errorf("hand-set invalid JSON payload broke the line: %q", enc)
	}
}

func readAll(t *testing.T, r *Reader) ([]*Record, error) {
	t.Helper()
	var out []*Record
	for {
		rec, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "dir", "x.cassette")
	const n = 3000
	writeMix(t, path, n, 7, &Options{FrameSize: 32 << 10})

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("cassette mode %v, want 0600", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode().Perm() != 0o700 {
		t.Errorf("created dir mode %v, want 0700", st.Mode().Perm())
	}
	if _, err := Create(path, Header{}, nil); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create over an existing file: %v, want ErrExist", err)
	}

	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := r.Header()
	if h.Format != FormatName || h.Version != "1.2" || h.Argv[0] != "agent" || h.Created == "" {
		t.Errorf("header %+v", h)
	}
	recs, err := readAll(t, r)
	if err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if len(recs) != n+2 {
		t.Fatalf("%d records, want %d", len(recs), n+2)
	}
	g := newAgentMix(n)
	for i, rec := range recs {
		if rec.N != uint64(i) {
			t.Fatalf("record %d has n %d", i, rec.N)
		}
		if i == 0 || i == n+1 {
			continue
		}
		want := g.record()
		if !bytes.Equal(rec.Line(), want.Line()) || rec.T != want.T || rec.D != want.D {
			t.Fatalf("record %d: %q, want %q", i, rec.Line(), want.Line())
		}
	}
	if end := recs[n+1]; end.K != KindEnd || end.Records != n+1 {
		t.Errorf("end record %+v", end)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after EOF: %v", err)
	}
}

// TestZstdCompatible: the file is a standard zstd stream whose content is
// JSON lines, as `zstdcat x | jq` expects.
func TestZstdCompatible(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.cassette")
	writeMix(t, path, 500, 3, &Options{FrameSize: 4 << 10})
	if b := readFile(t, path); readFooter(bytesReaderAt(b), int64(len(b))) == nil {
		t.Fatal("the cassette has no footer: zstd's handling of it is not tested")
	}
	check := func(content []byte) {
		t.Helper()
		lines := bytes.Split(bytes.TrimSuffix(content, []byte("\n")), []byte("\n"))
		if len(lines) != 502 {
			t.Fatalf("%d lines, want 502", len(lines))
		}
		for i, l := range lines {
			if !json.Valid(l) {
				t.Fatalf("line %d is not JSON: %q", i, l)
			}
		}
		if !bytes.HasPrefix(lines[0], []byte(`{"n":0,"t":0,"k":"header","format":"rpctap-cassette","version":"1.2"`)) {
			t.Fatalf("first line %s", lines[0])
		}
	}
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	content, err := d.DecodeAll(readFile(t, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	check(content)
	if zstdBin, err := exec.LookPath("zstd"); err == nil {
		out, err := exec.Command(zstdBin, "-dc", path).Output()
		if err != nil {
			t.Fatalf("zstd -dc: %v", err)
		}
		check(out)
	} else {
		t.Log("zstd binary not installed; checked with klauspost only")
	}
}

// countingWriter counts Write calls and can fail after a byte budget.
type countingWriter struct {
	buf    bytes.Buffer
	writes int
	limit  int // fail writes once this many bytes were taken (0: never)
}

var errDiskFull = errors.New("no space left on device")

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	if c.limit > 0 && c.buf.Len()+len(p) > c.limit {
		n := c.limit - c.buf.Len()
		c.buf.Write(p[:n])
		return n, errDiskFull
	}
	return c.buf.Write(p)
}

// TestOneWritePerBatch: each Flush reaches the file in exactly one write
// call, whether it only flushes the stream or also closes the frame.
func TestOneWritePerBatch(t *testing.T) {
	cw := &countingWriter{}
	w, err := NewWriter(cw, Header{}, &Options{FrameSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if cw.writes != 1 {
		t.Fatalf("signature and header took %d writes, want 1", cw.writes)
	}
	g := newAgentMix(3)
	for i := 0; i < 200; i++ {
		for j := 0; j < 5; j++ {
			r := g.record()
			if err := w.Append(&r); err != nil {
				t.Fatal(err)
			}
		}
		before := cw.writes
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if cw.writes != before+1 {
			t.Fatalf("flush %d made %d writes", i, cw.writes-before)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(cw.buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(t, r)
	if err != io.EOF || len(recs) != 1002 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
}

// TestStickyError: after a failed write nothing more is written and every
// call returns the first error; what reached the file reads back.
func TestStickyError(t *testing.T) {
	cw := &countingWriter{limit: 20000}
	w, err := NewWriter(cw, Header{}, &Options{FrameSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	g := newAgentMix(4)
	var first error
	for i := 0; i < 2000 && first == nil; i++ {
		r := g.record()
		if err := w.Append(&r); err != nil {
			first = err
		} else if i%4 == 3 {
			first = w.Flush()
		}
	}
	if !errors.Is(first, errDiskFull) {
		t.Fatalf("first error %v", first)
	}
	writes := cw.writes
	r := g.record()
	if err := w.Append(&r); err != first {
		t.Errorf("Append after failure: %v", err)
	}
	if err := w.Flush(); err != first {
		t.Errorf("Flush after failure: %v", err)
	}
	if err := w.Close(); err != first {
		t.Errorf("Close after failure: %v", err)
	}
	if cw.writes != writes {
		t.Errorf("%d writes after the failure", cw.writes-writes)
	}
	rd, err := NewReader(bytes.NewReader(cw.buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(t, rd)
	var te *TruncatedError
	if !errors.As(err, &te) || te.Records != uint64(len(recs)) || len(recs) < 10 {
		t.Fatalf("read back %d records, %v", len(recs), err)
	}
}

// TestFrameAge: a frame closes at the first flush after FrameAge, even when
// small; never on a timer (no flush, no new frame).
func TestFrameAge(t *testing.T) {
	now := time.Unix(0, 0)
	cw := &countingWriter{}
	w, err := NewWriter(cw, Header{}, &Options{now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	g := newAgentMix(5)
	for i := 0; i < 10; i++ {
		r := g.record()
		w.Append(&r)
		w.Flush()
		now = now.Add(300 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	x, err := BuildIndex(bytes.NewReader(cw.buf.Bytes()), int64(cw.buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	// Header frame; the frame opened at the flush at 0 s closes at the flush
	// at 1.2 s (5 records), the next opens at 1.5 s and closes at 2.7 s;
	// the end record gets a frame of its own.
	var counts []uint64
	for _, f := range x.Frames() {
		counts = append(counts, f.Count)
	}
	if want := []uint64{1, 5, 5, 1}; !equalU64(counts, want) {
		t.Errorf("frame record counts %v, want %v", counts, want)
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := filepath.Join(dir, "good.cassette")
	writeMix(t, good, 50, 5, nil)
	goodBytes := readFile(t, good)

	var plainZstd bytes.Buffer
	zw, _ := zstd.NewWriter(&plainZstd)
	zw.Write([]byte(`{"n":0,"t":0,"k":"header","format":"rpctap-cassette","version":"1.0"}` + "\n"))
	zw.Close()

	newer := append([]byte{}, goodBytes...)
	binary.LittleEndian.PutUint16(newer[8+len(sigTag):], 2)
	binary.LittleEndian.PutUint16(newer[10+len(sigTag):], 3)

	badSigSize := append([]byte{}, goodBytes...)
	badSigSize[4] = 21

	newerHeader := filepath.Join(dir, "newer-header.cassette")
	w, err := Create(newerHeader, Header{Version: "2.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()

	cases := []struct {
		path string
		want func(error) bool
		msg  string
	}{
		{write("empty", nil), func(err error) bool { return err == ErrEmpty }, "empty file"},
		{write("text", []byte("hello world\n")), func(err error) bool { return err == ErrNotCassette }, "not an rpctap cassette"},
		{write("short", []byte("hi")), func(err error) bool { return err == ErrNotCassette }, "not an rpctap cassette"},
		{write("zstd", plainZstd.Bytes()), func(err error) bool { return err == ErrNotCassette }, "not an rpctap cassette"},
		{write("newer", newer), func(err error) bool { var v *VersionError; return errors.As(err, &v) },
			"cassette format 2.3 is newer than this rpctap understands (1.x)"},
		{newerHeader, func(err error) bool { var v *VersionError; return errors.As(err, &v) },
			"cassette format 2.1 is newer than this rpctap understands (1.x)"},
		{write("sig-size", badSigSize), func(err error) bool { return err == ErrNotCassette }, "not an rpctap cassette"},
		{write("sig-only", goodBytes[:sigFrameSize]), func(err error) bool { var v *TruncatedError; return errors.As(err, &v) }, "truncated before the header record"},
		{write("half-sig", goodBytes[:10]), func(err error) bool { var v *TruncatedError; return errors.As(err, &v) }, "truncated before the header record"},
		{filepath.Join(dir, "missing"), func(err error) bool { return errors.Is(err, os.ErrNotExist) }, "no such file"},
	}
	for _, c := range cases {
		r, err := Open(c.path)
		if err == nil {
			r.Close()
			t.Errorf("%s: opened", filepath.Base(c.path))
			continue
		}
		if !c.want(err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %T %v, want %q", filepath.Base(c.path), err, err, c.msg)
		}
	}
}

// TestCorruptByte: a flipped byte anywhere gives a typed error or, where the
// byte cannot matter (inside an index frame's unused bits there are none),
// correct data; it never panics and never returns a wrong record.
func TestCorruptByte(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.cassette")
	writeMix(t, path, 60, 3, &Options{FrameSize: 2 << 10})
	good := readFile(t, path)
	r, _ := NewReader(bytes.NewReader(good))
	want, _ := readAll(t, r)
	for off := 0; off < len(good); off += 3 {
		bad := append([]byte{}, good...)
		bad[off] ^= 0x41
		r, err := NewReader(bytes.NewReader(bad))
		if err != nil {
			checkTyped(t, off, err)
			continue
		}
		recs, err := readAll(t, r)
		if err != io.EOF {
			checkTyped(t, off, err)
		}
		for i, rec := range recs {
			if !bytes.Equal(rec.AppendJSON(nil), want[i].AppendJSON(nil)) {
				t.Fatalf("flip at %d: record %d differs: %s", off, i, rec.AppendJSON(nil))
			}
		}
	}
}

func checkTyped(t *testing.T, off int, err error) {
	t.Helper()
	var c *CorruptError
	var tr *TruncatedError
	var v *VersionError
	if errors.As(err, &c) || errors.As(err, &tr) || errors.As(err, &v) || err == ErrNotCassette || err == ErrEmpty {
		return
	}
	t.Fatalf("offset %d: untyped error %T %v", off, err, err)
}

// TestRecordTooLarge: a record over MaxRecord is refused without making the
// error sticky; the cassette goes on and reads back.
func TestRecordTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a 64 MiB record")
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := NewLineRecord(KindFrame, DirOut, bytes.Repeat([]byte("x"), MaxRecord), "\n")
	if err := w.Append(&big); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("oversized record: %v", err)
	}
	// The same for a JSON payload, which the Writer hands to the
	// compressor directly (directPayload): refused before any of it went in.
	bigJSON := NewLineRecord(KindFrame, DirOut, []byte(`"`+strings.Repeat("x", MaxRecord)+`"`), "\n")
	if err := w.Append(&bigJSON); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("oversized JSON record: %v", err)
	}
	small := NewLineRecord(KindFrame, DirOut, []byte(`{"ok":true}`), "\n")
	if err := w.Append(&small); err != nil || small.N != 1 {
		t.Fatalf("append after refusal: %v, n %d", err, small.N)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(t, r)
	if err != io.EOF || len(recs) != 3 || string(recs[1].Payload()) != `{"ok":true}` {
		t.Fatalf("%d records, %v", len(recs), err)
	}
}

// TestHeaderLinkRoundTrip: the deep-tap link fields (format 1.2, section
// 4.2) are written and read back, and an id that is not JSON is written as
// null rather than breaking the header line.
func TestHeaderLinkRoundTrip(t *testing.T) {
	cases := []struct {
		in  Parent
		req string
	}{
		{Parent{Cassette: "a.cassette", Request: json.RawMessage(`2`), Method: "session/new", Server: "files"}, `2`},
		{Parent{Cassette: "b c.cassette", Request: json.RawMessage(`"x\"y"`), Method: "session/load"}, `"x\"y"`},
		{Parent{Cassette: "c.cassette", Request: json.RawMessage(`{bad`)}, `null`},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "x.cassette")
		p := c.in
		w, err := Create(path, Header{Protocol: "mcp", Deep: true, Parent: &p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		h := r.Header()
		r.Close()
		if !h.Deep || h.Parent == nil {
			t.Fatalf("header %+v: deep and parent lost", h)
		}
		got := *h.Parent
		if got.Cassette != p.Cassette || string(got.Request) != c.req || got.Method != p.Method || got.Server != p.Server {
			t.Errorf("parent %+v (request %s), want %+v (request %s)", got, got.Request, p, c.req)
		}
	}
}

// TestLargePayloadsEachFlush: records whose JSON payload goes to the
// compressor without a copy (directPayload and more), mixed with small ones
// in one batch, are in the file after each Flush exactly as appended (what
// survives kill -9 of the writer), and read back byte for byte after Close.
func TestLargePayloadsEachFlush(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{}, &Options{FrameSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	sizes := []int{10, directPayload - 1, directPayload, 200 << 10, 30, 1 << 20, 5, directPayload + 7}
	for i, n := range sizes {
		p := []byte(`{"i":` + strconv.Itoa(i) + `,"s":"` + strings.Repeat(string(rune('a'+i)), n) + `"}`)
		r := NewLineRecord(KindFrame, DirOut, p, "\n")
		r.T = int64(i)
		r.Method = "m"
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
		if i%3 == 2 {
			continue // several records in one batch
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		r2, err := NewReader(bytes.NewReader(bytes.Clone(buf.Bytes())))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readAll(t, r2)
		var te *TruncatedError
		if !errors.As(err, &te) {
			t.Fatalf("open cassette after flush %d: %v, want a truncation", i, err)
		}
		if len(recs) != len(want)+1 {
			t.Fatalf("after flush %d: %d records in the file, want %d", i, len(recs)-1, len(want))
		}
		for j, rec := range recs[1:] {
			if !bytes.Equal(rec.Payload(), want[j]) || rec.Method != "m" || rec.T != int64(j) {
				t.Fatalf("after flush %d: record %d differs", i, j+1)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(t, r)
	if err != io.EOF || len(recs) != len(want)+2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for j, p := range want {
		if !bytes.Equal(recs[j+1].Payload(), p) {
			t.Fatalf("record %d differs after Close", j+1)
		}
	}
}

package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/protocol"
)

// runMain runs rpctap in-process and returns stdout, stderr and the status.
func catMain(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

// exoticLines are frames that only an exact recorder keeps.
var exoticIn = []string{
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\"}\r\n", // CRLF
	"\ufeff{\"bom\":true}\n",                              // BOM
	"\n",                                                  // empty line
	"bad utf8 \xff\xfe\n",
	"{\"a\": 1,   \"spaces\" : [ 1 , 2 ]}\n",
	"no final newline",
}

var exoticOut = []string{
	"\x1b[32mANSI junk\x1b[0m{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":null}\r\n",
	"\r\n",
	strings.Repeat("long line ", 300) + "\n", // recorded as parts
}

var exoticErr = []string{"warning: something\n", "\xc3\x28 invalid\n", "last"}

// writeExotic writes a cassette holding the exotic lines, interleaved, with
// the long out line split into parts, flushing as a recorder would. With
// closeIt false the file is left as a killed recorder leaves it.
func writeExotic(t *testing.T, path string, closeIt bool) {
	t.Helper()
	w, err := cassette.Create(path, cassette.Header{Argv: []string{"agent"}, Protocol: "jsonrpc"}, &cassette.Options{FrameSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	var tm int64
	add := func(k cassette.Kind, d cassette.Dir, line string) {
		p, eol := cassette.SplitEOL([]byte(line))
		// Split long lines into parts of 1000 bytes, as the recorder does
		// for lines longer than it holds whole.
		for len(p) > 1000 {
			r := cassette.NewLineRecord(k, d, p[:1000], "")
			r.Part = true
			tm += 1000
			r.T = tm
			if err := w.Append(&r); err != nil {
				t.Fatal(err)
			}
			p = p[1000:]
		}
		r := cassette.NewLineRecord(k, d, p, eol)
		tm += 1000
		r.T = tm
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	exit := 0
	start := cassette.Record{K: cassette.KindEvent, Ev: cassette.EventStart, Argv: []string{"agent"}, PID: 4242}
	w.Append(&start)
	for i := 0; i < 7; i++ {
		if i < len(exoticIn) {
			add(cassette.KindFrame, cassette.DirIn, exoticIn[i])
		}
		if i < len(exoticOut) {
			add(cassette.KindFrame, cassette.DirOut, exoticOut[i])
		}
		if i < len(exoticErr) {
			add(cassette.KindStderr, cassette.DirErr, exoticErr[i])
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if !closeIt {
		return // the file stays open and unfinished, as after kill -9
	}
	ex := cassette.Record{K: cassette.KindEvent, Ev: cassette.EventExit, T: tm + 1, Exit: &exit}
	w.Append(&ex)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCatRawExact: --raw --direction reproduces each direction byte for byte.
func TestCatRawExact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exotic.cassette")
	writeExotic(t, path, true)
	for dir, lines := range map[string][]string{"in": exoticIn, "out": exoticOut, "err": exoticErr} {
		out, errs, code := catMain("cat", "--raw", "--direction", dir, path)
		if code != 0 || errs != "" {
			t.Fatalf("--dir %s: code %d, stderr %q", dir, code, errs)
		}
		if want := strings.Join(lines, ""); out != want {
			t.Errorf("--dir %s:\n got %q\nwant %q", dir, out, want)
		}
	}
}

// TestCatJSONExact: the default output is the cassette's decompressed
// content, byte for byte (what zstdcat prints).
func TestCatJSONExact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exotic.cassette")
	writeExotic(t, path, true)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := zstd.NewReader(nil)
	defer d.Close()
	want, err := d.DecodeAll(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := catMain("cat", path)
	if code != 0 || errs != "" || out != string(want) {
		t.Fatalf("code %d stderr %q\n got %q\nwant %q", code, errs, out, want)
	}
	// --dir filters the JSON lines too.
	out, _, _ = catMain("cat", "--direction", "err", path)
	if n := strings.Count(out, "\n"); n != len(exoticErr) || strings.Contains(out, `"d":"in"`) {
		t.Errorf("--direction err printed %d lines: %s", n, out)
	}
}

func TestCatTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exotic.cassette")
	writeExotic(t, path, true)
	out, errs, code := catMain("cat", "--format", "table", path)
	if code != 0 || errs != "" {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[0]), "# ") || !strings.Contains(lines[0], "DELTA") {
		t.Errorf("no table heading: %q", lines[0])
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`^\s+0\s+0\.000000\s+\+0\.000000\s+header .*rpctap-cassette 1\.2`),
		regexp.MustCompile(`^\s+1 .*event\s+start .*pid 4242 argv agent`),
		regexp.MustCompile(`→ frame .* 47  \{"jsonrpc":"2\.0","id":1,"method":"initialize"\}$`),
		regexp.MustCompile(`← frame .*\\x1b\[32mANSI junk`),
		regexp.MustCompile(`! stderr .*\\xc3\( invalid`),
		regexp.MustCompile(`\+0\.000001 ← frame .*long line long line.*…\(part\)$`),
		regexp.MustCompile(`→ frame .* \\ufeff\{"bom":true\}$`),
		regexp.MustCompile(`event\s+exit .*exit 0$`),
		regexp.MustCompile(`end .* records$`),
	} {
		found := false
		for _, l := range lines {
			if want.MatchString(l) {
				found = true
			}
		}
		if !found {
			t.Errorf("no row matches %s in\n%s", want, out)
		}
	}
}

// TestCatKilled: a cassette left unfinished (kill -9, or still being
// written) prints every complete record, warns on stderr, exits 0; a cut in
// the middle of a frame too.
func TestCatKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "killed.cassette")
	writeExotic(t, path, false)
	out, errs, code := catMain("cat", "--raw", "--direction", "in", path)
	if code != 0 || out != strings.Join(exoticIn, "") {
		t.Fatalf("code %d, out %q", code, out)
	}
	if !regexp.MustCompile(`^rpctap: warning: .*killed.cassette: truncated after record \d+\n$`).MatchString(errs) {
		t.Errorf("stderr %q", errs)
	}
	b, _ := os.ReadFile(path)
	cut := filepath.Join(t.TempDir(), "cut.cassette")
	os.WriteFile(cut, b[:len(b)-5], 0o600)
	out, errs, code = catMain("cat", cut)
	if code != 0 || !strings.Contains(errs, "truncated after record") || !strings.HasPrefix(out, `{"n":0,"t":0,"k":"header"`) {
		t.Errorf("cut mid-frame: code %d stderr %q", code, errs)
	}
	if n := strings.Count(out, "\n"); !strings.Contains(errs, "after record "+itoa(n-1)+"\n") {
		t.Errorf("printed %d records but stderr says %q", n, errs)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func jsonNum(n int) string { return strconv.Itoa(n) }

func TestCatBadInput(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.cassette")
	writeExotic(t, good, true)
	b, _ := os.ReadFile(good)
	newer := append([]byte{}, b...)
	binary.LittleEndian.PutUint16(newer[24:], 2) // signature major version
	os.WriteFile(filepath.Join(dir, "newer.cassette"), newer, 0o600)
	corrupt := append([]byte{}, b...)
	corrupt[len(b)/2] ^= 0xff
	os.WriteFile(filepath.Join(dir, "corrupt.cassette"), corrupt, 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "empty.cassette"), nil, 0o600)
	os.WriteFile(filepath.Join(dir, "unreadable.cassette"), b, 0o000)

	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"missing.cassette"}, ExitInput, `^rpctap: .*missing.cassette: no such file or directory$`},
		{[]string{"notes.txt"}, ExitInput, `^rpctap: .*notes.txt: not an rpctap cassette$`},
		{[]string{"empty.cassette"}, ExitInput, `^rpctap: .*empty.cassette: empty file, not an rpctap cassette$`},
		{[]string{"newer.cassette"}, ExitInput, `^rpctap: .*newer.cassette: cassette format 2.2 is newer than this rpctap understands \(1.x\)$`},
		{[]string{"corrupt.cassette"}, ExitInput, `^rpctap: .*corrupt.cassette: damaged cassette: bytes \d+-\d+ unreadable \(.*\): \d+ records lost \(\d+-\d+\)$`},
		{[]string{"."}, ExitInput, `^rpctap: .*: is a directory$`},
		{[]string{}, ExitUsage, `^rpctap: cat needs a cassette$`},
		{[]string{"--format", "xml", "good.cassette"}, ExitUsage, `--format must be json or table`},
		{[]string{"--raw", "good.cassette"}, ExitUsage, `--raw needs --dir`},
		{[]string{"--direction", "sideways", "good.cassette"}, ExitUsage, `--direction must be in, out or err`},
		{[]string{"--dir", "sideways", "good.cassette"}, ExitUsage, `--direction must be in, out or err`}, // the old name, hidden
		{[]string{"--raw", "--direction", "in", "--format", "table", "good.cassette"}, ExitUsage, `cannot be used together`},
	} {
		args := append([]string{"cat"}, c.args...)
		for i := range args[1:] {
			if strings.HasSuffix(args[i+1], ".cassette") || args[i+1] == "notes.txt" || args[i+1] == "." {
				args[i+1] = filepath.Join(dir, args[i+1])
			}
		}
		_, errs, code := catMain(args...)
		first := strings.SplitN(errs, "\n", 2)[0]
		if code != c.code || !regexp.MustCompile(c.err).MatchString(first) || strings.Contains(errs, "goroutine") {
			t.Errorf("cat %v: code %d, stderr %q; want %d and %s", c.args, code, errs, c.code, c.err)
		}
		if c.code == ExitInput && strings.Count(errs, "\n") != 1 {
			t.Errorf("cat %v: want one line, got %q", c.args, errs)
		}
	}
	if os.Geteuid() != 0 { // root reads anything
		_, errs, code := catMain("cat", filepath.Join(dir, "unreadable.cassette"))
		if code != ExitInput || !strings.Contains(errs, "permission denied") {
			t.Errorf("unreadable: %d %q", code, errs)
		}
	}
}

// TestCatLive reads a cassette while it is being written.
func TestCatLive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cassette")
	w, err := cassette.Create(path, cassette.Header{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirOut, []byte(`{"i":`+jsonNum(i)+`}`), "\n")
		w.Append(&r)
		w.Flush()
		out, errs, code := catMain("cat", "--raw", "--direction", "out", path)
		if code != 0 || strings.Count(out, "\n") != i+1 || !strings.Contains(errs, "truncated after record "+jsonNum(i+1)) {
			t.Fatalf("step %d: code %d out %q err %q", i, code, out, errs)
		}
	}
	w.Close()
	_, errs, code := catMain("cat", path)
	if code != 0 || errs != "" {
		t.Errorf("after close: %d %q", code, errs)
	}
}

// Sample cassettes for the testscripts. They live in testdata/cassettes
// (used by other tests and by people trying rpctap) and are embedded in the
// scripts as base64, because a script cannot reach files outside its work
// directory. TestSampleCassettes checks the copies agree; set
// RPCTAP_WRITE_SAMPLES=1 to regenerate the cassettes and the embedded copies.
var samples = map[string]string{ // sample -> script embedding it
	"acp-go.cassette":        "cat_traffic.txtar",
	"acp-go-killed.cassette": "cat_truncated.txtar",
}

func samplePath(name string) string { return filepath.Join("..", "..", "testdata", "cassettes", name) }

func TestSampleCassettes(t *testing.T) {
	if os.Getenv("RPCTAP_WRITE_SAMPLES") == "1" {
		writeSamples(t)
	}
	for name, script := range samples {
		want, err := os.ReadFile(samplePath(name))
		if err != nil {
			t.Fatal(err)
		}
		ar, err := txtar.ParseFile(filepath.Join("testdata", "script", script))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range ar.Files {
			if f.Name == name+".b64" {
				found = true
				got, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(f.Data), "\n", ""))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: embedded %s differs from %s (%v)", script, f.Name, samplePath(name), err)
				}
			}
		}
		if !found {
			t.Errorf("%s does not embed %s.b64", script, name)
		}
		for _, f := range ar.Files {
			fixture := filepath.Join(testpeers.TestdataTraffic(), f.Name)
			if want, err := os.ReadFile(fixture); err == nil && !bytes.Equal(f.Data, want) {
				t.Errorf("%s: embedded %s differs from %s", script, f.Name, fixture)
			}
		}
	}
}

// writeSamples builds the sample cassettes from testdata/traffic/acp-go
// (an ACP Go SDK example client driving its example agent), interleaving
// the two directions causally (each request before its response, an agent
// request before the client's answer), classified by the protocol package.
func writeSamples(t *testing.T) {
	fixtures := testpeers.TestdataTraffic()
	in, err1 := os.ReadFile(filepath.Join(fixtures, "acp-go.in"))
	out, err2 := os.ReadFile(filepath.Join(fixtures, "acp-go.out"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	acp, err := protocol.Lookup("acp")
	if err != nil {
		t.Fatal(err)
	}
	path := samplePath("acp-go.cassette")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.Remove(path)
	w, err := cassette.Create(path, cassette.Header{Rpctap: Version, Created: "2026-11-21T08:00:00Z", Protocol: "acp",
		Argv: []string{"go", "run", "github.com/coder/acp-go-sdk/example/agent"}, Cwd: "/home/dev1/demo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tm int64
	var flushAt []int64 // file sizes after each flush, to cut the killed copy
	appendRec := func(r cassette.Record) {
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	appendRec(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventStart, Argv: []string{"go", "run", "github.com/coder/acp-go-sdk/example/agent"}, Cwd: "/home/dev1/demo", PID: 31337})
	lines := func(b []byte) [][]byte { return bytes.SplitAfter(b, []byte("\n")) }
	ins, outs := lines(in), lines(out)
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	parse := func(l []byte) msg { var m msg; json.Unmarshal(l, &m); return m }
	frame := func(d cassette.Dir, l []byte, step int64) {
		if len(l) == 0 {
			return
		}
		p, eol := cassette.SplitEOL(l)
		pd := protocol.FromParent
		if d == cassette.DirOut {
			pd = protocol.FromChild
		}
		info := acp.Classify(pd, p)
		r := cassette.NewLineRecord(cassette.KindFrame, d, p, eol)
		tm += step
		r.T, r.Kind, r.Method = tm, string(info.Kind), info.Method
		if info.ID != "" {
			r.ID = json.RawMessage(info.ID)
		}
		appendRec(r)
	}
	i, j := 0, 0
	pending := map[string]bool{}
	answerNext := false
	for i < len(ins) || j < len(outs) {
		if i < len(ins) && (answerNext || len(pending) == 0 || j >= len(outs)) {
			m := parse(ins[i])
			if m.Method != "" && m.ID != nil {
				pending[string(m.ID)] = true
			}
			frame(cassette.DirIn, ins[i], 900_000)
			i++
			answerNext = false
			w.Flush()
			continue
		}
		m := parse(outs[j])
		frame(cassette.DirOut, outs[j], 150_000)
		j++
		if m.Method == "" && m.ID != nil {
			delete(pending, string(m.ID))
		}
		if m.Method != "" && m.ID != nil {
			answerNext = true
			w.Flush()
		}
		if len(pending) == 0 || answerNext {
			w.Flush()
			st, _ := os.Stat(path)
			flushAt = append(flushAt, st.Size())
		}
	}
	tm += 2_000_000
	appendRec(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventStdinEOF, T: tm})
	exit := 0
	tm += 3_000_000
	appendRec(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventExit, T: tm, Exit: &exit})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The killed copy: what the file held after a flush in the middle of
	// the session, plus half of the next batch (a write cut by kill -9).
	full, _ := os.ReadFile(path)
	k := flushAt[len(flushAt)/2]
	next := flushAt[len(flushAt)/2+1]
	if err := os.WriteFile(samplePath("acp-go-killed.cassette"), full[:k+(next-k)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	embed := map[string][]byte{"acp-go.in": in, "acp-go.out": out}
	for name, script := range samples {
		b, _ := os.ReadFile(samplePath(name))
		sp := filepath.Join("testdata", "script", script)
		ar, err := txtar.ParseFile(sp)
		if err != nil {
			t.Fatal(err)
		}
		enc := base64.StdEncoding.EncodeToString(b)
		var wrapped strings.Builder
		for len(enc) > 76 {
			wrapped.WriteString(enc[:76] + "\n")
			enc = enc[76:]
		}
		wrapped.WriteString(enc + "\n")
		for i := range ar.Files {
			if ar.Files[i].Name == name+".b64" {
				ar.Files[i].Data = []byte(wrapped.String())
			}
			if b, ok := embed[ar.Files[i].Name]; ok {
				ar.Files[i].Data = b
			}
		}
		if err := os.WriteFile(sp, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCatSocketConn: in socket mode --raw needs --conn and gives that
// connection's bytes only.
func TestCatSocketConn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "socket.cassette")
	w, err := cassette.Create(path, cassette.Header{Mode: "socket", Listen: "/tmp/a.sock", Upstream: "/tmp/b.sock"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []int{1, 2, 1, 2} {
		r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirIn, []byte(`{"conn":`+strconv.Itoa(c)+`,"i":`+strconv.Itoa(i)+`}`), "\n")
		r.Conn = c
		w.Append(&r)
	}
	w.Close()
	if _, errs, code := catMain("cat", "--raw", "--direction", "in", path); code != ExitUsage || !strings.Contains(errs, "choose one with --conn N") {
		t.Errorf("no --conn: %d %q", code, errs)
	}
	out, errs, code := catMain("cat", "--raw", "--direction", "in", "--conn", "2", path)
	if code != 0 || errs != "" || out != "{\"conn\":2,\"i\":1}\n{\"conn\":2,\"i\":3}\n" {
		t.Errorf("--conn 2: %d %q %q", code, out, errs)
	}
	out, _, _ = catMain("cat", "--format", "table", "--conn", "1", path)
	if strings.Count(out, "frame#1") != 2 || strings.Contains(out, "frame#2") {
		t.Errorf("table --conn 1:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCatFollow: --follow prints records while they are recorded and ends
// at the end record; its JSON output equals the finished file's content.
func TestCatFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cassette")
	w, err := cassette.Create(path, cassette.Header{}, &cassette.Options{FrameSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		o := &catOptions{Format: "json", Conn: -1, Width: 60, Follow: true, poll: 2 * time.Millisecond}
		done <- runCat(o, []string{path}, Stdio{Out: &out, Err: &errb})
	}()
	for i := 0; i < 200; i++ {
		r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirOut, []byte(`{"i":`+strconv.Itoa(i)+`,"pad":"`+strings.Repeat("x", i%50)+`"}`), "\n")
		r.T = int64(i) * 1000
		w.Append(&r)
		w.Flush()
		if i == 100 { // records show up before the recording ends
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(out.String(), `{"i":100,`) {
				if time.Now().After(deadline) {
					t.Fatalf("record 100 not printed while recording; got %d lines", strings.Count(out.String(), "\n"))
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	select {
	case <-done:
		t.Fatal("follow ended before the end record")
	case <-time.After(20 * time.Millisecond):
	}
	w.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end at the end record")
	}
	raw, _ := os.ReadFile(path)
	d, _ := zstd.NewReader(nil)
	defer d.Close()
	want, _ := d.DecodeAll(raw, nil)
	if out.String() != string(want) || errb.String() != "" {
		t.Errorf("follow output differs from the file's content (%d vs %d bytes), stderr %q", len(out.String()), len(want), errb.String())
	}
}

package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// writeCassette writes recs (header first) to a cassette file, one batch
// per record; with end false the file is left without its end record, as
// after a SIGKILL.
func writeCassette(t testing.TB, path string, recs []cassette.Record, end bool) {
	t.Helper()
	if err := replaytest.WriteFile(path, recs, end); err != nil {
		t.Fatal(err)
	}
}

func TestDiffSameSessionDifferentIDsAndSessionIDs(t *testing.T) {
	a := FromRecords("a", acpRecording(t))
	// B: the same session with other ids and another session id.
	var recs []cassette.Record
	for _, r := range acpRecording(t) {
		if r.JSON != nil {
			s := strings.ReplaceAll(string(r.JSON), sess, "sess_other")
			s = strings.Replace(s, `"id":3`, `"id":33`, 1)
			r.JSON = []byte(s)
		}
		recs = append(recs, r)
	}
	d, err := Diff(a, FromRecords("b", recs))
	if err != nil {
		t.Fatal(err)
	}
	if d.Different() || d.Same != 16 {
		t.Fatalf("want no differences over 16 frames, got %+v", d)
	}
}

func TestDiffFindsChangedRemovedAdded(t *testing.T) {
	a := FromRecords("a", acpRecording(t))
	var recs []cassette.Record
	dropped := false
	for _, r := range acpRecording(t) {
		if r.JSON != nil {
			s := string(r.JSON)
			if strings.Contains(s, "Now I understand") && !dropped {
				dropped = true
				continue // one notification less
			}
			s = strings.Replace(s, `"stopReason":"end_turn"`, `"stopReason":"cancelled"`, 1)
			r.JSON = []byte(s)
		}
		if r.K == cassette.KindEvent && r.Ev == cassette.EventExit {
			r.Exit = intp(1)
		}
		recs = append(recs, r)
	}
	b := newBuilder("acp")
	b.Records = recs
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"plan","entries":[]}}}`))
	d, err := Diff(a, FromRecords("b", b.Records))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, f := range d.Frames {
		ops = append(ops, f.Op+" "+f.Method)
	}
	want := "removed session/update|changed session/prompt|added session/update"
	if strings.Join(ops, "|") != want {
		t.Fatalf("ops %q, want %q", strings.Join(ops, "|"), want)
	}
	if p := d.Frames[1].Diff; len(p) != 1 || p[0].Path != "/result/stopReason" || p[0].Recorded != `"end_turn"` || p[0].Live != `"cancelled"` {
		t.Fatalf("changed: %+v", p)
	}
	if !d.ExitDiff || d.ExitA.Code != 3 || d.ExitB.Code != 1 {
		t.Fatalf("exit: %+v", d)
	}
}

func TestDiffOtherProtocol(t *testing.T) {
	if _, err := Diff(FromRecords("a", acpRecording(t)), FromRecords("b", synapsRecording())); err == nil ||
		!strings.Contains(err.Error(), "not acp") {
		t.Fatalf("want a protocol error, got %v", err)
	}
}

func TestAlign(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"abc", "abc", "=a=b=c"},
		{"abc", "", "-a-b-c"},
		{"", "xy", "+x+y"},
		{"abcabba", "cbabac", ""}, // only checked for consistency
		{"axc", "ayc", "=a-x+y=c"},
	} {
		a, b := strings.Split(c.a, ""), strings.Split(c.b, "")
		if c.a == "" {
			a = nil
		}
		if c.b == "" {
			b = nil
		}
		ops := align(a, b)
		var got strings.Builder
		ia, ib, same := 0, 0, 0
		for _, op := range ops {
			switch {
			case op.i >= 0 && op.j >= 0:
				if a[op.i] != b[op.j] || op.i != ia || op.j != ib {
					t.Fatalf("%v: bad pair %v", c, op)
				}
				got.WriteString("=" + a[op.i])
				ia, ib, same = ia+1, ib+1, same+1
			case op.i >= 0:
				got.WriteString("-" + a[op.i])
				ia++
			default:
				got.WriteString("+" + b[op.j])
				ib++
			}
		}
		if ia != len(a) || ib != len(b) {
			t.Fatalf("%v: script does not cover both inputs: %v", c, ops)
		}
		if c.want != "" && got.String() != c.want {
			t.Fatalf("%v: got %s", c, got.String())
		}
		if c.a == "abcabba" && same != 4 { // LCS of the Myers paper's example is 4
			t.Fatalf("LCS %d, want 4", same)
		}
	}
}

func TestOpenBadInput(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	os.WriteFile(p("empty"), nil, 0o600)
	os.WriteFile(p("text"), []byte("{\"jsonrpc\":\"2.0\"}\n"), 0o600)
	writeCassette(t, p("good"), acpRecording(t), true)
	good, _ := os.ReadFile(p("good"))
	os.WriteFile(p("torn"), good[:len(good)*2/3], 0o600)
	bad := append([]byte(nil), good...)
	for i := len(bad) / 2; i < len(bad)/2+16; i++ {
		bad[i] ^= 0x5a
	}
	os.WriteFile(p("corrupt"), bad, 0o600)
	writeCassette(t, p("noframes"), newBuilder("acp").end(), true)
	writeCassette(t, p("cut"), acpRecording(t)[:8], false)

	for name, want := range map[string]string{
		"missing": "no such file", "empty": "empty file", "text": "not an rpctap cassette",
		"corrupt": "corrupt", "noframes": "holds no frames",
	} {
		_, err := Open(p(name))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q", name, err, want)
		}
	}
	r, err := Open(p("good"))
	if err != nil || !r.Complete || r.Truncated != "" || r.Protocol != "acp" {
		t.Fatalf("good: %v", err)
	}
	for _, name := range []string{"cut", "torn"} {
		r, err := Open(p(name))
		if err != nil || r.Complete || r.Truncated == "" {
			t.Fatalf("%s: want a replayable partial recording, got %v", name, err)
		}
	}
}

// TestDiffTrimsIdenticalEnds: a recording against itself is all same
// (no frame normalized: the ends are byte-identical), and one whose only
// change is an id in the middle (a request's and its response's) is still the same under the rules, with the
// byte-identical frames around it counted as same.
func TestDiffTrimsIdenticalEnds(t *testing.T) {
	d, err := Diff(FromRecords("a", acpRecording(t)), FromRecords("a", acpRecording(t)))
	if err != nil || d.Different() || d.Same != 16 {
		t.Fatalf("itself: %+v %v", d, err)
	}
	var recs []cassette.Record
	changed := 0
	for _, r := range acpRecording(t) {
		if r.JSON != nil && strings.Contains(string(r.JSON), `"id":3,`) {
			r.JSON = []byte(strings.Replace(string(r.JSON), `"id":3,`, `"id":33,`, 1))
			changed++
		}
		recs = append(recs, r)
	}
	if changed != 2 {
		t.Fatalf("%d frames with id 3 in the sample, want the request and its response", changed)
	}
	d, err = Diff(FromRecords("a", acpRecording(t)), FromRecords("b", recs))
	if err != nil || d.Different() || d.Same != 16 {
		t.Fatalf("one id changed: %+v %v", d, err)
	}
	// A real change in the same place is found.
	recs[len(recs)/2].JSON = []byte(strings.Replace(string(recs[len(recs)/2].JSON), `"jsonrpc":"2.0"`, `"jsonrpc":"2.0","extra":1`, 1))
	if d, err = Diff(FromRecords("a", acpRecording(t)), FromRecords("b", recs)); err != nil || !d.Different() {
		t.Fatalf("an added member: %+v %v", d, err)
	}
}

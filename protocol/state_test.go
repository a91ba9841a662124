package protocol

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// codes returns the violation codes in vs.
func codes(vs []Violation) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.Code)
	}
	return out
}

func hasCode(vs []Violation, code string) bool {
	for _, v := range vs {
		if v.Code == code {
			return true
		}
	}
	return false
}

// step is one frame fed to a Session in a table test.
type step struct {
	dir   Dir
	frame string
}

func in(s string) step  { return step{FromParent, s} }
func out(s string) step { return step{FromChild, s} }

// runSession feeds steps to a fresh Session of protocol name and returns all
// violations (frames, then End) and the infos.
func runSession(t *testing.T, name string, steps []step) ([]Violation, []Info) {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(p)
	var all []Violation
	var infos []Info
	for i, st := range steps {
		info, vs := s.Frame(uint64(i+1), st.dir, []byte(st.frame))
		for _, v := range vs {
			if v.Record != uint64(i+1) {
				t.Errorf("violation %s has record %d, want %d", v.Code, v.Record, i+1)
			}
		}
		all = append(all, vs...)
		infos = append(infos, info)
	}
	all = append(all, s.End()...)
	return all, infos
}

func TestJSONRPCSessionRules(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
		want  string // a code that must be reported; "" = no violation at all
	}{
		{"clean, same id both directions", []step{
			in(`{"jsonrpc":"2.0","id":1,"method":"a"}`),
			out(`{"jsonrpc":"2.0","id":1,"method":"b"}`),
			in(`{"jsonrpc":"2.0","id":1,"result":{}}`),
			out(`{"jsonrpc":"2.0","id":1,"result":null}`),
		}, ""},
		{"unknown response id", []step{
			in(`{"jsonrpc":"2.0","id":1,"method":"a"}`),
			out(`{"jsonrpc":"2.0","id":2,"result":{}}`),
			out(`{"jsonrpc":"2.0","id":1,"result":{}}`),
		}, CodeUnknownResponseID},
		{"response from the wrong side", []step{
			in(`{"jsonrpc":"2.0","id":7,"method":"a"}`),
			in(`{"jsonrpc":"2.0","id":7,"result":{}}`),
			out(`{"jsonrpc":"2.0","id":7,"result":{}}`),
		}, CodeUnknownResponseID},
		{"duplicate in-flight id", []step{
			in(`{"jsonrpc":"2.0","id":"x","method":"a"}`),
			in(`{"jsonrpc":"2.0","id":"x","method":"b"}`),
			out(`{"jsonrpc":"2.0","id":"x","result":{}}`),
		}, CodeDuplicateID},
		{"unanswered at end", []step{
			in(`{"jsonrpc":"2.0","id":1,"method":"a"}`),
		}, CodeUnanswered},
		{"not JSON on stdout", []step{
			out(`hello world`),
		}, CodeNonJSONStdout},
		{"ANSI junk before JSON", []step{
			in(`{"jsonrpc":"2.0","id":1,"method":"a"}`),
			out("\x1b[32m\x1b[0m{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"),
		}, CodeANSIBeforeJSON},
		{"not JSON on stdin is a warning", []step{
			in(`oops`),
		}, CodeNonJSONStdin},
		{"result and error", []step{
			in(`{"jsonrpc":"2.0","id":1,"method":"a"}`),
			out(`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`),
		}, "jsonrpc.result-and-error"},
		{"bad version", []step{
			in(`{"jsonrpc":"1.0","method":"a"}`),
		}, "jsonrpc.bad-version"},
		{"bad error object", []step{
			in(`{"jsonrpc":"2.0","id":1,"method":"a"}`),
			out(`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`),
		}, "jsonrpc.bad-error"},
		{"bad id type", []step{
			in(`{"jsonrpc":"2.0","id":{},"method":"a"}`),
		}, "jsonrpc.bad-id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, _ := runSession(t, "jsonrpc", c.steps)
			if c.want == "" {
				if len(vs) != 0 {
					t.Fatalf("want no violations, got %v", vs)
				}
				return
			}
			if !hasCode(vs, c.want) {
				t.Fatalf("want %s, got %v", c.want, codes(vs))
			}
			for _, v := range vs {
				if v.Message == "" || v.Severity == "" {
					t.Errorf("violation without message or severity: %+v", v)
				}
			}
		})
	}
}

func TestSessionSeverities(t *testing.T) {
	vs, _ := runSession(t, "jsonrpc", []step{out(`junk`), in(`junk`), in(`{"jsonrpc":"2.0","id":1,"method":"a"}`)})
	want := map[string]Severity{CodeNonJSONStdout: SevError, CodeNonJSONStdin: SevWarning, CodeUnanswered: SevWarning}
	for _, v := range vs {
		if w, ok := want[v.Code]; ok && v.Severity != w {
			t.Errorf("%s: severity %s, want %s", v.Code, v.Severity, w)
		}
		delete(want, v.Code)
	}
	if len(want) != 0 {
		t.Errorf("codes not reported: %v (got %v)", want, codes(vs))
	}
}

func TestResponseGetsRequestMethod(t *testing.T) {
	_, infos := runSession(t, "jsonrpc", []step{
		in(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		out(`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`),
		out(`{"jsonrpc":"2.0","id":1,"result":{}}`),
		in(`{"jsonrpc":"2.0","id":1,"result":{}}`),
	})
	if infos[2].Kind != Response || infos[2].Method != "tools/list" || infos[2].ID != "1" {
		t.Errorf("child's response: %+v, want response to tools/list id 1", infos[2])
	}
	if infos[3].Method != "roots/list" {
		t.Errorf("parent's response: %+v, want method roots/list", infos[3])
	}
}

func TestRawAcceptsAnything(t *testing.T) {
	vs, _ := runSession(t, "raw", []step{out("not json"), in("\x1b[31mred"), in(`{"id":1,"method":"x"}`)})
	if len(vs) != 0 {
		t.Fatalf("raw reported %v", vs)
	}
}

// sizeProto is jsonrpc with a small frame limit, to test the size rule
// without 16 MiB frames.
type sizeProto struct{ jsonrpcProto }

func (sizeProto) MaxFrame() int { return 64 }

func TestFrameTooLarge(t *testing.T) {
	s := NewSession(sizeProto{})
	_, vs := s.Frame(1, FromParent, []byte(`{"jsonrpc":"2.0","method":"a"}`))
	if len(vs) != 0 {
		t.Fatalf("small frame: %v", vs)
	}
	big := `{"jsonrpc":"2.0","method":"a","params":{"x":"` + strings.Repeat("y", 100) + `"}}`
	_, vs = s.Frame(2, FromChild, []byte(big))
	if !hasCode(vs, CodeFrameTooLarge) {
		t.Fatalf("oversized frame not caught: %v", codes(vs))
	}
}

func TestStripANSI(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[0m{}":            "{}",
		"\x1b[1;32m \x1b[0m{}": "{}",
		"\x1b]0;title\x07{}":   "{}",
		"\x1b]0;title\x1b\\{}": "{}",
		"\x1b(B{}":             "{}",
		"\x1b[":                "",
	} {
		got, ok := stripANSI([]byte(in))
		if !ok || string(got) != want {
			t.Errorf("stripANSI(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := stripANSI([]byte("{}")); ok {
		t.Error("stripANSI claims escapes in plain JSON")
	}
}

func TestScanner(t *testing.T) {
	f := scanRPC([]byte(` { "a" : [1,{"id":9,"s":"}\""}], "id" : "x\"y" , "method":"m", "jsonrpc":"2.0","result":null}`))
	if !f.object || string(f.id) != `"x\"y"` || string(f.method) != `"m"` || !f.is20() || string(f.result) != "null" {
		t.Fatalf("scan: %+v", f)
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":"x`, `{"a":[1,2}`, `"x"`} {
		if f := scanRPC([]byte(bad)); f.object {
			t.Errorf("scanRPC(%q) claims an object", bad)
		}
	}
}

func TestInterning(t *testing.T) {
	for raw, want := range map[string]string{"0": "0", "7": "7", "1023": "1023", "1024": "1024", "007": "007", `"a"`: `"a"`, "-1": "-1", "1.5": "1.5"} {
		if got := idString([]byte(raw)); got != want {
			t.Errorf("idString(%s) = %q", raw, got)
		}
	}
	for raw, want := range map[string]string{`"session/prompt"`: "session/prompt", `"x\/y"`: "x/y", `"brand/new"`: "brand/new"} {
		if got, ok := methodString([]byte(raw)); !ok || got != want {
			t.Errorf("methodString(%s) = %q, %v", raw, got, ok)
		}
	}
	f := []byte(`{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{}}`)
	if n := testing.AllocsPerRun(100, func() { classifyRPC(f) }); n != 0 {
		t.Errorf("classifying a known method with a small id allocates %v times", n)
	}
}

// TestFrameValidJSON: a Session told that a frame is valid JSON (and, every
// other frame, given its classification) gives the same verdicts as one that
// checks the syntax and classifies itself, for every protocol on
// every captured frame that is valid JSON (non-JSON frames go to Frame, as
// the recorder does).
func TestFrameValidJSON(t *testing.T) {
	files := captureIns("*.in")
	if len(files) == 0 {
		t.Fatal("no captures in testdata/traffic")
	}
	compared := 0
	for _, name := range Names() {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range files {
			out := strings.TrimSuffix(in, ".in") + ".out"
			if _, err := os.Stat(out); err != nil {
				continue
			}
			frames := interleave(p, readLines(t, in), readLines(t, out))
			frames = append(frames, DirFrame{FromChild, []byte("\x1b[32m{\"a\":1}")}, DirFrame{FromParent, []byte("not json")})
			a, b := NewSession(p), NewSession(p)
			for i, f := range frames {
				ia, va := a.Frame(uint64(i+1), f.Dir, f.Frame)
				var ib Info
				var vb []Violation
				if json.Valid(f.Frame) {
					if i%2 == 0 {
						ib, vb = b.FrameValidJSON(uint64(i+1), f.Dir, f.Frame)
					} else {
						ib, vb = b.FrameClassified(uint64(i+1), f.Dir, f.Frame, p.Classify(f.Dir, f.Frame))
					}
					compared++
				} else {
					ib, vb = b.Frame(uint64(i+1), f.Dir, f.Frame)
				}
				if ia != ib || !reflect.DeepEqual(va, vb) {
					t.Fatalf("%s %s frame %d: Frame %v %v, FrameValidJSON %v %v", name, in, i, ia, va, ib, vb)
				}
			}
			if va, vb := a.End(), b.End(); !reflect.DeepEqual(va, vb) {
				t.Fatalf("%s %s: End %v vs %v", name, in, va, vb)
			}
		}
	}
	if compared == 0 {
		t.Fatal("no frame compared")
	}
}

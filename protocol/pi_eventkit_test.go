package protocol

// Test helpers shared by the synaps, brainwires, opi and pi tests.
//
// Sessions written from the catalogues live in testdata/<protocol>/*.session:
// one ordered file per session, one frame per line, each line "in " + frame
// (parent -> child; for brainwires viewer -> agent) or "out " + frame
// (child -> parent); lines starting with # and blank lines are ignored.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type evStep struct {
	dir   Dir
	frame []byte
	line  int
}

// parseStep reads one "in …" / "out …" line.
func parseStep(s string) (evStep, error) {
	switch {
	case strings.HasPrefix(s, "in "):
		return evStep{dir: FromParent, frame: []byte(s[3:])}, nil
	case strings.HasPrefix(s, "out "):
		return evStep{dir: FromChild, frame: []byte(s[4:])}, nil
	}
	return evStep{}, fmt.Errorf("line does not start with \"in \" or \"out \": %q", excerpt([]byte(s), 40))
}

func loadSession(t testing.TB, path string) []evStep {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []evStep
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		st, err := parseStep(l)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		st.line = n
		steps = append(steps, st)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		t.Fatalf("%s: no frames", path)
	}
	return steps
}

func mustSteps(t testing.TB, lines ...string) []evStep {
	t.Helper()
	out := make([]evStep, len(lines))
	for i, l := range lines {
		st, err := parseStep(l)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = st
	}
	return out
}

// runSteps feeds steps through a Session (records numbered from 1) and
// returns every violation, End's included, and the infos.
func runSteps(p Protocol, steps []evStep) ([]Violation, []Info) {
	s := NewSession(p)
	var all []Violation
	var infos []Info
	_, framed := p.(Framer)
	for i, st := range steps {
		if framed {
			// A Content-Length protocol's sessions are written as
			// bodies; each gets the header its sender would write.
			s.Framed(st.dir, []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(st.frame))), true)
		}
		info, vs := s.Frame(uint64(i+1), st.dir, st.frame)
		all = append(all, vs...)
		infos = append(infos, info)
	}
	return append(all, s.End()...), infos
}

func fmtViolations(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  rec %d %s %s %s: %s", v.Record, v.Severity, v.Code, v.Pointer, v.Message)
	}
	return b.String()
}

// testValidSessions runs every testdata/<name>/*.session through a Session
// and wants no error and no warning (a valid session by the protocol's own
// documents; infos are style notes and are logged), and each frame
// classified (not Invalid).
func testValidSessions(t *testing.T, name string) {
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", name, "*.session"))
	if len(files) == 0 {
		t.Fatalf("no sessions in testdata/%s", name)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			steps := loadSession(t, f)
			vs, infos := runSteps(p, steps)
			var bad []Violation
			for _, v := range vs {
				if v.Severity == SevInfo {
					t.Logf("info: record %d %s: %s", v.Record, v.Code, v.Message)
				} else {
					bad = append(bad, v)
				}
			}
			if len(bad) != 0 {
				t.Errorf("%d errors or warnings in a valid session:%s", len(bad), fmtViolations(bad))
			}
			for i, in := range infos {
				if in.Kind == Invalid || in.Kind == "" || in.Method == "" {
					t.Errorf("%s:%d: classified as %+v", f, steps[i].line, in)
				}
			}
			var frames []DirFrame
			for _, st := range steps {
				frames = append(frames, DirFrame{st.dir, st.frame})
			}
			if got := Detect(frames); got != name {
				t.Errorf("detected as %q, want %q", got, name)
			}
		})
	}
}

// brokenCase is one broken frame (or session) and the code it must raise.
type brokenCase struct {
	name    string
	prefix  []string // valid frames before the broken one ("in …"/"out …")
	frame   string   // the broken frame ("in …"/"out …")
	suffix  []string // valid frames after the broken one (the other side's answer)
	code    string   // expected code, raised at the broken frame's record
	sev     Severity // expected severity ("" = error)
	earlier bool     // violations before the broken frame are expected too
}

func testBroken(t *testing.T, p Protocol, cases []brokenCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps := append(mustSteps(t, c.prefix...), mustSteps(t, c.frame)...)
			rec := uint64(len(steps))
			steps = append(steps, mustSteps(t, c.suffix...)...)
			vs, _ := runSteps(p, steps)
			want := c.sev
			if want == "" {
				want = SevError
			}
			found := false
			for _, v := range vs {
				if v.Record < rec && !c.earlier {
					t.Errorf("violation before the broken frame: rec %d %s: %s", v.Record, v.Code, v.Message)
				}
				if v.Code == c.code && v.Record == rec {
					found = true
					if v.Severity != want {
						t.Errorf("%s has severity %s, want %s", v.Code, v.Severity, want)
					}
					if v.Message == "" {
						t.Errorf("%s has no message", v.Code)
					}
				}
			}
			if !found {
				t.Errorf("want %s at record %d; got:%s", c.code, rec, fmtViolations(vs))
			}
		})
	}
}

// sniffMax is the best score each protocol's sniffer gives a session's
// first frames (the Detector looks at DetectFrames of them).
func sniffMax(steps []evStep) map[string]int {
	out := map[string]int{}
	for i, st := range steps {
		if i == DetectFrames {
			break
		}
		for n, e := range registry {
			if e.sniff == nil {
				continue
			}
			if s := e.sniff(st.dir, st.frame); s > out[n] {
				out[n] = s
			}
		}
	}
	return out
}

// TestPiFamilyDetection: every session of the four event-style protocols is
// detected as its own protocol and its sniffer beats the other three, also
// when only the first few frames are seen.
func TestPiFamilyDetection(t *testing.T) {
	names := []string{"synaps", "brainwires", "opi", "pi"}
	for _, name := range names {
		files, _ := filepath.Glob(filepath.Join("testdata", name, "*.session"))
		for _, f := range files {
			steps := loadSession(t, f)
			for _, n := range []int{1, 2, 3, len(steps)} {
				if n > len(steps) {
					continue
				}
				var frames []DirFrame
				for _, st := range steps[:n] {
					frames = append(frames, DirFrame{st.dir, st.frame})
				}
				d := NewDetector()
				var got string
				for _, fr := range frames {
					var done bool
					if got, done = d.Add(fr.Dir, fr.Frame); done {
						break
					}
				}
				if got != name {
					t.Errorf("%s, first %d frames: detected %q (scores %v)", f, n, got, sniffMax(steps[:n]))
				}
			}
			sc := sniffMax(steps)
			for _, other := range names {
				if other != name && sc[other] >= sc[name] {
					t.Errorf("%s: %s's sniffer scores %d, not below %s's %d", f, other, sc[other], name, sc[name])
				}
			}
		}
	}
}

// TestPiFamilyScanner checks the cheap top-level scan against decoding.
func TestPiFamilyScanner(t *testing.T) {
	cases := []struct {
		in      string
		ok      bool
		typ, id string
		command string
	}{
		{`{"type":"prompt","id":"a","message":"x"}`, true, "prompt", `"a"`, ""},
		{` { "id" : 7 , "type" : "response", "command":"get_state" } `, true, "response", "7", "get_state"},
		{`{"type":"t\u0065xt","nested":{"type":"inner","id":"no"}}`, true, "text", "", ""},
		{`{"a":[1,{"type":"x"}],"type":"y"}`, true, "y", "", ""},
		{`{"type":"x"`, false, "x", "", ""},
		{`[{"type":"x"}]`, false, "", "", ""},
		{`not json`, false, "", "", ""},
		{`{"type":"a\"b"}`, true, `a"b`, "", ""},
	}
	for _, c := range cases {
		got, ok := evScanTop([]byte(c.in))
		if ok != c.ok || got.typ != c.typ || string(got.id) != c.id || got.command != c.command {
			t.Errorf("%s: got ok=%v type=%q id=%q command=%q", c.in, ok, got.typ, got.id, got.command)
		}
	}
	if v := evTopValue([]byte(`{"a":{"b":1},"b":[2]}`), "b"); !bytes.Equal(v, []byte("[2]")) {
		t.Errorf("evTopValue: %q", v)
	}
}

// TestPiFamilyShapeChecker exercises the shape checker's kinds directly.
func TestPiFamilyShapeChecker(t *testing.T) {
	shape := tObj(req("s", tString), req("u", tUint), req("i", tInt), opt("n", tNumber),
		optNull("o", tBool), reqNull("a", tAny), opt("e", tEnum("x", "y")),
		opt("arr", tArr(tUint)), opt("one", tOneOf("x-or-object", tEnum("x"), tObj(req("k", tString)))))
	cases := []struct {
		in, code, ptr string
	}{
		{`{"s":"a","u":1,"i":-1,"a":null}`, "", ""},
		{`{"u":1,"i":1,"a":1}`, "t.missing-field", "/s"},
		{`{"s":1,"u":1,"i":1,"a":1}`, "t.wrong-type", "/s"},
		{`{"s":"a","u":-1,"i":1,"a":1}`, "t.invalid-value", "/u"},
		{`{"s":"a","u":1.0,"i":1,"a":1}`, "t.wrong-type", "/u"},
		{`{"s":"a","u":1,"i":1e3,"a":1}`, "t.wrong-type", "/i"},
		{`{"s":"a","u":1,"i":1,"a":1,"o":null,"n":1.5}`, "", ""},
		{`{"s":"a","u":1,"i":1,"a":1,"n":null}`, "t.wrong-type", "/n"},
		{`{"s":"a","u":1,"i":1}`, "t.missing-field", "/a"},
		{`{"s":"a","u":1,"i":1,"a":1,"e":"z"}`, "t.invalid-value", "/e"},
		{`{"s":"a","u":1,"i":1,"a":1,"arr":[1,"2"]}`, "t.wrong-type", "/arr/1"},
		{`{"s":"a","u":1,"i":1,"a":1,"arr":[1,null]}`, "t.wrong-type", "/arr/1"},
		{`{"s":"a","u":1,"i":1,"a":1,"one":"x"}`, "", ""},
		{`{"s":"a","u":1,"i":1,"a":1,"one":{"k":"v"}}`, "", ""},
		{`{"s":"a","u":1,"i":1,"a":1,"one":"q"}`, "t.invalid-value", "/one"},
		{`{"s":"a","u":1,"i":1,"a":1,"one":3}`, "t.wrong-type", "/one"},
	}
	for _, c := range cases {
		ch := checker{p: "t"}
		if _, ok := ch.object([]byte(c.in)); !ok {
			t.Fatalf("%s: not an object", c.in)
		}
		ch.value([]byte(c.in), shape, "", "test")
		if c.code == "" {
			if len(ch.out) != 0 {
				t.Errorf("%s: unexpected%s", c.in, fmtViolations(ch.out))
			}
			continue
		}
		if len(ch.out) != 1 || ch.out[0].Code != c.code || ch.out[0].Pointer != c.ptr {
			t.Errorf("%s: want %s at %s, got%s", c.in, c.code, c.ptr, fmtViolations(ch.out))
		}
	}
	for _, bad := range []string{`{"a":1} x`, `{"a":}`, `{`} {
		ch := checker{p: "t"}
		if _, ok := ch.object([]byte(bad)); ok || len(ch.out) != 1 || ch.out[0].Code != "t.invalid-json" {
			t.Errorf("%s: want t.invalid-json, got%s", bad, fmtViolations(ch.out))
		}
	}
}

// TestPiFamilySniffersQuietOnJSONRPC: the four event-style sniffers claim
// nothing of the JSON-RPC captures (ACP, MCP) in testdata/traffic and
// ../shared/traffic.
func TestPiFamilySniffersQuietOnJSONRPC(t *testing.T) {
	ins := captureIns("*.in")
	checked := 0
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in")
		if name == "lsp-gopls" || !strings.HasPrefix(name, "acp-") && !strings.HasPrefix(name, "mcp-") {
			continue
		}
		for _, d := range []Dir{FromParent, FromChild} {
			path := in
			if d == FromChild {
				path = strings.TrimSuffix(in, ".in") + ".out"
			}
			for _, f := range readLines(t, path) {
				checked++
				for _, n := range []string{"synaps", "brainwires", "opi", "pi"} {
					if s := registry[n].sniff(d, f); s > 0 {
						t.Errorf("%s (%s): %s sniffer scores %d on %s", name, d, n, s, excerpt(f, 80))
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no JSON-RPC frames found in the captures")
	}
}

// FuzzPiFamily: Classify and Validate of the four protocols never panic on
// any input, and every violation carries the protocol's code prefix, a known
// severity, a JSON pointer and a message. The seed corpus (the catalogue
// sessions plus truncations) runs with every `go test`.
func FuzzPiFamily(f *testing.F) {
	for _, name := range []string{"synaps", "brainwires", "opi", "pi"} {
		files, _ := filepath.Glob(filepath.Join("testdata", name, "*.session"))
		for _, file := range files {
			for i, st := range loadSession(f, file) {
				f.Add(st.frame)
				if i%5 == 0 {
					f.Add(st.frame[:len(st.frame)/2])
				}
			}
		}
	}
	f.Add([]byte(`{"type":"x","a":[{"b":"\"}"}]}`))
	f.Add([]byte(`{"version":2,"is_reattach":true}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, p := range []Protocol{synapsProto{}, brainwiresProto{}, opiProto{}, piProto{}} {
			for _, d := range []Dir{FromParent, FromChild} {
				info := p.Classify(d, frame)
				for _, v := range p.Validate(d, frame, info) {
					if !strings.HasPrefix(v.Code, p.Name()+".") || v.Message == "" ||
						(v.Severity != SevError && v.Severity != SevWarning && v.Severity != SevInfo) ||
						(v.Pointer != "" && v.Pointer[0] != '/') {
						t.Errorf("%s: bad violation %+v for %q", p.Name(), v, frame)
					}
				}
			}
		}
	})
}

// TestPiFamilyDetectionOrder: parent frames recorded before the child's
// handshake do not mislead detection, and frames of one protocol that look
// like another's (shared command names) resolve by the distinguishing ones.
func TestPiFamilyDetectionOrder(t *testing.T) {
	cases := []struct {
		want  string
		steps []string
	}{
		{"synaps", []string{`in {"type":"get_state","id":"1"}`, `in {"type":"get_messages","id":"2"}`,
			`out {"type":"ready","session_id":"s","model":"m","protocol_version":1}`}},
		{"opi", []string{`in {"type":"prompt","message":"hi"}`, `in {"type":"abort"}`,
			`out {"type":"rpc_ready","schema_version":2,"mode":"rpc","version":"0.5.0"}`}},
		{"opi", []string{`out {"type":"AgentStart"}`}},                                                   // recording started late
		{"synaps", []string{`out {"type":"response","id":"1","command":"get_state","streaming":false}`}}, // no "success"
		{"pi", []string{`out {"type":"response","command":"get_state","success":true,"data":{}}`}},
		{"pi", []string{`in {"type":"prompt","message":"hi"}`, `out {"type":"agent_start"}`}},
		{"pi", []string{`in {"type":"set_model","provider":"a","modelId":"b"}`}},
		{"synaps", []string{`out {"type":"message_update","event":{"type":"text_delta","delta":"x"}}`}},
		{"pi", []string{`out {"type":"message_update","message":{"role":"assistant"},"assistantMessageEvent":{"type":"start","partial":{}}}`}},
		{"brainwires", []string{`out {"accepted":true,"session_id":"abc","session_token":"t","error":null}`}},
		{"brainwires", []string{`in {"type":"set_tool_mode","mode":"Smart"}`}},
	}
	for _, c := range cases {
		var frames []DirFrame
		for _, st := range mustSteps(t, c.steps...) {
			frames = append(frames, DirFrame{st.dir, st.frame})
		}
		if got := Detect(frames); got != c.want {
			t.Errorf("%v: detected %q, want %q", c.steps, got, c.want)
		}
	}
}

// TestValidJSONVariant: the Session calls validateValidJSON (no second
// syntax check) on frames it found to be JSON; for those frames the verdict
// is exactly Validate's, and Validate called directly still rejects bytes
// that are not JSON.
func TestValidJSONVariant(t *testing.T) {
	extra := []string{`"x"`, `[1]`, `{}`, `{"type":1}`, `{"type":"nope"}`, `{"type":"response"}`,
		`{"version":"2","is_reattach":1}`, `{"accepted":"yes"}`}
	for _, name := range []string{"synaps", "brainwires", "opi", "pi"} {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		vj, ok := p.(validJSONValidator)
		if !ok {
			t.Fatalf("%s does not implement validJSONValidator", name)
		}
		files, _ := filepath.Glob(filepath.Join("testdata", name, "*.session"))
		var steps []evStep
		for _, f := range files {
			steps = append(steps, loadSession(t, f)...)
		}
		for _, e := range extra {
			steps = append(steps, evStep{dir: FromParent, frame: []byte(e)}, evStep{dir: FromChild, frame: []byte(e)})
		}
		compared := 0
		for _, st := range steps {
			info := p.Classify(st.dir, st.frame)
			want := fmtViolations(p.Validate(st.dir, st.frame, info))
			if got := fmtViolations(vj.validateValidJSON(st.dir, st.frame, info)); got != want {
				t.Errorf("%s %s %s: validateValidJSON:%s\nValidate:%s", name, st.dir, st.frame, got, want)
			}
			compared++
		}
		if compared < 20 {
			t.Errorf("%s: only %d frames compared", name, compared)
		}
		for _, bad := range []string{`{"type":"x"`, `not json`, `{"type":"x"} trailing`} {
			vs := p.Validate(FromParent, []byte(bad), Info{})
			if len(vs) != 1 || vs[0].Code != name+".invalid-json" {
				t.Errorf("%s: Validate(%q) = %s, want %s.invalid-json", name, bad, fmtViolations(vs), name)
			}
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
)

var importFixtures = []struct{ format, file, proto string }{
	{"zed-acp", "zed-acp.json", "acp"},
	{"vscode-lsp", "vscode-text.log", "lsp"},
	{"vscode-lsp", "vscode-json.log", "lsp"},
	{"vscode-lsp", "vscode-logchannel.log", "lsp"},
	{"lsp-devtools", "lsp-devtools.jsonl", "lsp"},
	{"lsp-devtools", "lsp-devtools-records.jsonl", "lsp"},
	{"jsonl", "generic.jsonl", "mcp"},
}

func importCheck(t *testing.T, cas string) checkReport {
	t.Helper()
	_, rep, errs := runMain("check", "--format", "json", cas)
	var doc struct {
		Files []checkReport `json:"files"`
	}
	if err := json.Unmarshal([]byte(rep), &doc); err != nil || len(doc.Files) != 1 {
		t.Fatalf("check %s: %v\n%s%s", cas, err, rep, errs)
	}
	return doc.Files[0]
}

// Each fixture imports into a cassette that check judges as its protocol
// with no error, whose header says it was imported, and whose raw bytes
// cat gives with a warning that they were rebuilt.
func TestImportFixtures(t *testing.T) {
	dir := t.TempDir()
	for _, f := range importFixtures {
		t.Run(f.file, func(t *testing.T) {
			out := filepath.Join(dir, f.file+".cassette")
			code, stdout, errs := runMain("import", f.format, filepath.Join("..", "..", "internal", "logimport", "testdata", f.file), "-o", out)
			if code != 0 || !strings.Contains(stdout, "imported ") {
				t.Fatalf("import: exit %d\n%s%s", code, stdout, errs)
			}
			rep := importCheck(t, out)
			if rep.Protocol != f.proto || rep.Errors != 0 || rep.Frames == 0 {
				t.Errorf("check: protocol %s, %d errors, %d frames", rep.Protocol, rep.Errors, rep.Frames)
			}
			rd, err := cassette.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			h := rd.Header()
			rd.Close()
			if h.Imported == nil || h.Imported.Format != f.format || h.Imported.From != f.file {
				t.Errorf("header imported mark: %+v", h.Imported)
			}
			code, raw, errs := runMain("cat", "--raw", "--direction", "in", out)
			if code != 0 || !strings.Contains(errs, "imported from a "+f.format+" log, not recorded") || len(raw) == 0 {
				t.Errorf("cat --raw: exit %d, %d bytes, stderr %q", code, len(raw), errs)
			}
			if f.proto == "lsp" && !strings.HasPrefix(raw, "Content-Length: ") {
				t.Errorf("cat --raw of an LSP import does not frame its messages: %.40q", raw)
			}
			// The other commands work on it: replay plays the child to the
			// recorded parent (strict: no divergence), export, diff.
			var rout, rerr bytes.Buffer
			if code := Main([]string{"replay", "--speed", "0", "--strict", out}, Stdio{In: strings.NewReader(raw), Out: &rout, Err: &rerr}); code != 0 {
				t.Errorf("replay: exit %d: %s", code, rerr.String())
			}
			if code, har, errs := runMain("export", "--format", "har", out); code != 0 || !json.Valid([]byte(har)) {
				t.Errorf("export har: exit %d: %s", code, errs)
			}
			if code, _, errs := runMain("diff", out, out); code != 0 {
				t.Errorf("diff with itself: exit %d: %s", code, errs)
			}
		})
	}
}

// A malformed log: one line naming the line, exit 4, and every message
// that could be read is in the cassette.
func TestImportMalformed(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "trace.log")
	os.WriteFile(log, []byte("[Trace - 10:15:02 AM] Sending request 'shutdown - (1)'.\n\n\n"+
		"[Trace - 10:15:02 AM] Received response 'shutdown - (1)' in 1ms.\nResult: {\"a\": \n\n\n"+
		"[Trace - 10:15:03 AM] Sending notification 'exit'.\nNo parameters provided.\n"), 0o644)
	out := filepath.Join(dir, "x.cassette")
	code, _, errs := runMain("import", "vscode-lsp", log, "-o", out)
	if code != ExitInput || !strings.Contains(errs, "trace.log line 4: Result is not JSON") || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if rep := importCheck(t, out); rep.Frames != 2 {
		t.Errorf("%d frames kept, want 2", rep.Frames)
	}
}

// Bad flags and files: one line, the right exit status, no cassette.
func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	fix := filepath.Join("..", "..", "internal", "logimport", "testdata", "generic.jsonl")
	exists := filepath.Join(dir, "exists.cassette")
	os.WriteFile(exists, []byte("x"), 0o644)
	empty := filepath.Join(dir, "empty.log")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"import", "jsonl"}, ExitUsage, "needs FORMAT and FILE"},
		{[]string{"import", "har", fix, "-o", filepath.Join(dir, "a.cassette")}, ExitUsage, `unknown format "har"`},
		{[]string{"import", "jsonl", fix}, ExitUsage, "needs -o"},
		{[]string{"import", "jsonl", fix, "-o", exists}, ExitUsage, "exists"},
		{[]string{"import", "jsonl", fix, "-o", dir}, ExitUsage, "is a directory"},
		{[]string{"import", "jsonl", filepath.Join(dir, "none.log"), "-o", filepath.Join(dir, "b.cassette")}, ExitInput, "none.log: no such file"},
		{[]string{"import", "jsonl", empty, "-o", filepath.Join(dir, "c.cassette")}, ExitInput, "no messages in the log"},
		{[]string{"import", "zed-acp", fix, "-o", filepath.Join(dir, "d.cassette")}, ExitInput, "line 1"},
	} {
		code, _, errs := runMain(c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%q: exit %d, want %d with %q: %s", c.args, code, c.code, c.msg, errs)
		}
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if _, err := os.Stat(filepath.Join(dir, n+".cassette")); err == nil {
			t.Errorf("%s.cassette was written", n)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// A missing directory is made (as for record --dir and every -o).
	deep := filepath.Join(dir, "new", "dir", "a.cassette")
	if code, _, errs := runMain("import", "jsonl", fix, "-o", deep); code != 0 {
		t.Errorf("import into a new directory: exit %d: %s", code, errs)
	} else if rep := importCheck(t, deep); rep.Frames != 5 {
		t.Errorf("%d frames", rep.Frames)
	}
}

// vscodeTrace writes the frames of a cassette as VS Code's language client
// (vscode-languageclient 9, "trace.server": "verbose", text form) traces
// them, VS Code being the parent: the header line, then Params/Result as
// JSON.stringify(value, null, 4), with its rules for what it leaves out.
func vscodeTrace(t *testing.T, cas string) []byte {
	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	start := time.Date(2026, 11, 26, 10, 15, 2, 0, time.Local)
	methods := map[string]string{} // dir+id -> method
	js := func(v json.RawMessage) string {
		var out bytes.Buffer
		json.Indent(&out, v, "", "    ")
		return out.String()
	}
	truthy := func(v json.RawMessage) bool {
		s := string(v)
		return v != nil && s != "null" && s != "false" && s != "0" && s != `""`
	}
	for _, r := range recs {
		if r.K != cassette.KindFrame || r.JSON == nil {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.JSON, &m); err != nil {
			t.Fatal(err)
		}
		verb := "Sending"
		if r.D == cassette.DirOut {
			verb = "Received"
		}
		id := strings.Trim(string(m.ID), `"`)
		fmt.Fprintf(&b, "[Trace - %s] ", start.Add(time.Duration(r.T)).Format("3:04:05 PM"))
		var data string
		switch {
		case m.Method != "" && m.ID != nil:
			methods[string(r.D)+id] = m.Method
			fmt.Fprintf(&b, "%s request '%s - (%s)'.\n", verb, m.Method, id)
			if truthy(m.Params) {
				data = "Params: " + js(m.Params)
			}
		case m.Method != "":
			if m.Method == "$/logTrace" {
				b.Truncate(b.Len() - len("[Trace - 10:15:02 AM] "))
				continue
			}
			fmt.Fprintf(&b, "%s notification '%s'.\n", verb, m.Method)
			data = "No parameters provided."
			if truthy(m.Params) {
				data = "Params: " + js(m.Params)
			}
		default:
			other := cassette.DirOut
			if r.D == cassette.DirOut {
				other = cassette.DirIn
			}
			meth := methods[string(other)+id]
			failed := ""
			if m.Error != nil {
				failed = fmt.Sprintf(" Request failed: %s (%d).", m.Error.Message, m.Error.Code)
			}
			if r.D == cassette.DirIn {
				fmt.Fprintf(&b, "Sending response '%s - (%s)'. Processing request took 0ms\n", meth, id)
			} else {
				fmt.Fprintf(&b, "Received response '%s - (%s)' in 0ms.%s\n", meth, id, failed)
			}
			switch {
			case m.Error != nil && m.Error.Data != nil:
				data = "Error data: " + js(m.Error.Data)
			case truthy(m.Result):
				data = "Result: " + js(m.Result)
			case m.Error == nil:
				data = "No result returned."
			}
		}
		if data != "" {
			b.WriteString(data + "\n")
		}
		b.WriteString("\n\n")
	}
	return b.Bytes()
}

// A VS Code trace of a gopls session, imported, gets the same findings from
// check as the recording of that session through rpctap record, except
// for the rules that need what a trace does not keep:
var importBlind = map[string]string{
	"framing.":                "the bytes on the wire: the import frames each message itself",
	"session.wrong-framing":   "the bytes on the wire",
	"jsonrpc.null-params":     "an absent member versus a null one: the trace prints neither",
	"cassette.no-exit":        "the process events: a log has none, and the cassette claims no child",
	"session.unanswered-exit": "the process events",
}

func importBlindTo(code string) bool {
	for k := range importBlind {
		if code == k || strings.HasSuffix(k, ".") && strings.HasPrefix(code, k) {
			return true
		}
	}
	return false
}

// Two sessions: a well-behaved editor (testpeer's lsp-parent: initialize,
// open, hover, definition, shutdown, exit), and an editor that breaks the
// rules, so that there are findings to compare: it sends everything at once
// without waiting for answers, a hover before initialize, a method gopls
// does not know, a position of the wrong type, an id used twice and a
// request after shutdown.
func TestImportVSCodeGopls(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	gopls := testpeers.Gopls(t)
	peer := testpeers.Tool(t, "testpeer")
	ws := goModule(t)
	root := "file://" + ws
	var rude bytes.Buffer
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"textDocument":{"uri":"` + root + `/main.go"},"position":{"line":7,"character":27}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"processId":null,"rootUri":"` + root + `","capabilities":{}}}`,
		`{"jsonrpc":"2.0","method":"initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"custom/frobnicate","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"textDocument/hover","params":{"textDocument":{"uri":"` + root + `/main.go"},"position":"line 7"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"workspace/symbol","params":{"query":"Greet"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"shutdown"}`,
		`{"jsonrpc":"2.0","id":6,"method":"workspace/symbol","params":{"query":"main"}}`,
		`{"jsonrpc":"2.0","method":"exit"}`,
	} {
		fmt.Fprintf(&rude, "Content-Length: %d\r\n\r\n%s", len(m), m)
	}
	for _, c := range []struct {
		name   string
		stdin  string
		parent []string
	}{
		{"editor", "", []string{peer, "lsp-parent"}},
		{"rude editor", rude.String(), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			compareImportedGopls(t, rp, ws, c.stdin, c.parent, gopls)
		})
	}
}

func compareImportedGopls(t *testing.T, rp, ws, stdin string, parent []string, gopls string) {
	dir := t.TempDir()
	recorded := filepath.Join(dir, "gopls.cassette")
	testpeers.Record(t, rp, ws, recorded, stdin, 90*time.Second, parent, gopls)
	trace := filepath.Join(dir, "gopls (server).log")
	if err := os.WriteFile(trace, vscodeTrace(t, recorded), 0o644); err != nil {
		t.Fatal(err)
	}
	imported := filepath.Join(dir, "imported.cassette")
	if code, out, errs := runMain("import", "vscode-lsp", trace, "-o", imported); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	findings := func(cas string) ([]string, uint64) {
		rep := importCheck(t, cas)
		recs, err := readCassette(cas)
		if err != nil {
			t.Fatal(err)
		}
		// A finding is placed by the frame it is about (its number among
		// the frames), since the recording also holds stderr and events.
		frameNo := map[uint64]int{}
		n := 0
		for _, r := range recs {
			if r.K == cassette.KindFrame {
				n++
				frameNo[r.N] = n
			}
		}
		var out []string
		for _, f := range rep.Findings {
			if importBlindTo(f.Code) {
				continue
			}
			out = append(out, fmt.Sprintf("%s %s frame %d %s", f.Severity, f.Code, frameNo[f.Record], f.Pointer))
		}
		sort.Strings(out)
		return out, rep.Frames
	}
	want, wantFrames := findings(recorded)
	got, gotFrames := findings(imported)
	if gotFrames != wantFrames {
		t.Errorf("imported %d frames, recorded %d", gotFrames, wantFrames)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("check on the import:\n%s\non the recording:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("%d frames; findings compared: %q", gotFrames, want)
	if stdin != "" && len(want) < 4 {
		t.Errorf("the rude editor's session has %d findings to compare; it was meant to break rules", len(want))
	}
}

// A log on standard input ("-": Zed's Copy All Messages is on the
// clipboard), and --protocol naming the messages' protocol.
func TestImportStdin(t *testing.T) {
	log, err := os.ReadFile(filepath.Join("..", "..", "internal", "logimport", "testdata", "zed-acp.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "z.cassette")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"import", "zed-acp", "-", "-o", out, "--protocol", "jsonrpc"}, Stdio{In: bytes.NewReader(log), Out: &stdout, Err: &stderr})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rd, err := cassette.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if h := rd.Header(); h.Protocol != "jsonrpc" || h.Imported == nil || h.Imported.From != "" {
		t.Errorf("header: protocol %q, imported %+v", h.Protocol, h.Imported)
	}
	if rep := importCheck(t, out); rep.Frames != 11 {
		t.Errorf("%d frames, want 11", rep.Frames)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/protocol"
)

// line is one frame of a test cassette.
type line struct {
	dir  cassette.Dir
	text string
}

// writeCassette records frames (and optionally extra records) into a fresh
// cassette with the real cassette Writer.
func writeCassette(t *testing.T, dir, name string, proto string, frames []line, extra ...cassette.Record) string {
	t.Helper()
	path := filepath.Join(dir, name)
	w, err := cassette.Create(path, cassette.Header{Protocol: proto}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		r := cassette.NewLineRecord(cassette.KindFrame, f.dir, []byte(f.text), "\n")
		r.T = int64(i) * 1000
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range extra {
		if err := w.Append(&extra[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

var cleanACP = []line{
	{cassette.DirIn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`},
	{cassette.DirOut, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`},
	{cassette.DirIn, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`},
	{cassette.DirOut, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}`},
	{cassette.DirIn, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`},
	{cassette.DirOut, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}`},
	{cassette.DirOut, `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s1","options":[],"toolCall":{"toolCallId":"c1"}}}`},
	{cassette.DirIn, `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}`},
	{cassette.DirOut, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`},
}

var brokenACP = []line{
	cleanACP[0], cleanACP[1], cleanACP[2], cleanACP[3],
	{cassette.DirOut, "\x1b[32mINFO\x1b[0m agent ready"},
	{cassette.DirIn, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1"}}`},
	{cassette.DirOut, `{"jsonrpc":"2.0","id":9,"result":{"stopReason":"end_turn"}}`},
}

func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestCheckClean(t *testing.T) {
	p := writeCassette(t, t.TempDir(), "clean.cassette", "acp", cleanACP)
	code, out, errs := runMain("check", p)
	if code != ExitOK {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "protocol acp (detected)") || !strings.Contains(out, "0 errors") {
		t.Errorf("report:\n%s", out)
	}
}

func TestCheckFindings(t *testing.T) {
	dir := t.TempDir()
	// A stored violation record must be ignored: check uses today's rules.
	stored := cassette.Record{K: cassette.KindViolation, Ref: 1, Code: "acp.made-up", Severity: "error", Msg: "old rule"}
	p := writeCassette(t, dir, "broken.cassette", "acp", brokenACP, stored)
	code, out, errs := runMain("check", p)
	if code != ExitFindings {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"error acp.missing-field (1)",
		"record 6 in /params/prompt:",
		"error session.non-json-stdout (1)",
		`\x1b[32mINFO`,
		"error session.unknown-response-id (1)",
		"record 7 out:",
		"warning session.unanswered (1)",
		"1 violations stored at record time were ignored",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "acp.made-up") {
		t.Errorf("stored violation reported:\n%s", out)
	}
	if lines := strings.Split(strings.TrimSpace(errs), "\n"); len(lines) != 1 || !strings.Contains(errs, "error-level violation") {
		t.Errorf("stderr should be one summary line, got %q", errs)
	}
	// Errors first, then warnings.
	if strings.Index(out, "warning session.unanswered") < strings.Index(out, "error session.unknown-response-id") {
		t.Errorf("warnings listed before errors:\n%s", out)
	}
}

func TestCheckJSON(t *testing.T) {
	dir := t.TempDir()
	a := writeCassette(t, dir, "a.cassette", "", cleanACP)
	b := writeCassette(t, dir, "b.cassette", "", brokenACP)
	code, out, _ := runMain("check", "--format", "json", a, b)
	if code != ExitFindings {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Files []checkReport `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(doc.Files) != 2 || doc.Files[0].Errors != 0 || doc.Files[1].Errors != 3 || doc.Files[0].Protocol != "acp" {
		t.Fatalf("unexpected: %+v", doc.Files)
	}
	f := doc.Files[1].Findings
	if len(f) == 0 || f[0].Record == 0 || f[0].Code == "" || f[0].Excerpt == "" {
		t.Errorf("finding lacks record/code/excerpt: %+v", f)
	}
}

func TestCheckProtocolOverride(t *testing.T) {
	p := writeCassette(t, t.TempDir(), "x.cassette", "", brokenACP)
	// As plain JSON-RPC the method shapes are not judged: no acp.* codes.
	code, out, _ := runMain("check", "--protocol", "jsonrpc", p)
	if code != ExitFindings || strings.Contains(out, "acp.") || !strings.Contains(out, "protocol jsonrpc (flag)") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = runMain("check", "--protocol", "raw", p)
	if code != ExitOK || !strings.Contains(out, "0 errors") {
		t.Errorf("raw: exit %d:\n%s", code, out)
	}
	code, _, errs := runMain("check", "--protocol", "nope", p)
	if code != ExitUsage || !strings.Contains(errs, `unknown protocol "nope"`) {
		t.Errorf("unknown protocol: exit %d %q", code, errs)
	}
}

func TestCheckSchema(t *testing.T) {
	dir := t.TempDir()
	schema := filepath.Join(dir, "s.json")
	os.WriteFile(schema, []byte(`{"type":"object","required":["type"],"properties":{"type":{"enum":["ping","pong"]}}}`), 0o600)
	p := writeCassette(t, dir, "x.cassette", "", []line{{cassette.DirIn, `{"type":"ping"}`}, {cassette.DirOut, `{"type":"pang"}`}})
	code, out, _ := runMain("check", "--schema", schema, p)
	if code != ExitFindings || !strings.Contains(out, "schema.invalid") || !strings.Contains(out, "record 2 out /type") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestCheckTruncated(t *testing.T) {
	dir := t.TempDir()
	p := writeCassette(t, dir, "full.cassette", "acp", cleanACP)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the file at every length from just after the header to the end:
	// never a panic, never exit 4 once the header is there; a report that
	// names the cut.
	sawCut := false
	for n := len(data) - 1; n > len(data)/2; n-- {
		cut := filepath.Join(dir, "cut.cassette")
		if err := os.WriteFile(cut, data[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runMain("check", cut)
		if code != ExitOK && code != ExitFindings {
			t.Fatalf("cut at %d of %d: exit %d %s", n, len(data), code, errs)
		}
		if strings.Contains(out, "cassette.truncated") && strings.Contains(out, "truncated after record") {
			sawCut = true
		}
	}
	if !sawCut {
		t.Error("no cut was reported")
	}
}

func TestCheckBadInput(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello\n"), 0o600)
	for _, args := range [][]string{
		{"check", text},
		{"check", filepath.Join(dir, "missing.cassette")},
	} {
		code, _, errs := runMain(args...)
		if code != ExitInput {
			t.Errorf("%v: exit %d, want 4", args, code)
		}
		if n := strings.Count(strings.TrimSpace(errs), "\n"); n != 0 || !strings.HasPrefix(errs, "rpctap: ") || strings.Contains(errs, "goroutine") {
			t.Errorf("%v: want one error line, got %q", args, errs)
		}
	}
	if code, _, _ := runMain("check"); code != ExitUsage {
		t.Errorf("no file: exit %d, want 2", code)
	}
	if code, _, _ := runMain("check", "--format", "xml", text); code != ExitUsage {
		t.Errorf("bad format: exit %d, want 2", code)
	}
}

// Records with Part set are pieces of one over-long line; check joins them
// and judges the whole frame once, under the first piece's record number.
func TestCheckJoinsParts(t *testing.T) {
	prompt := `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"` +
		strings.Repeat("long ", 50) + `"}]}}`
	part := func(d cassette.Dir, s string, more bool) cassette.Record {
		eol := "\n"
		if more {
			eol = ""
		}
		r := cassette.NewLineRecord(cassette.KindFrame, d, []byte(s), eol)
		r.Part = more
		return r
	}
	recs := []cassette.Record{
		part(cassette.DirIn, cleanACP[0].text, false),
		part(cassette.DirOut, cleanACP[1].text, false),
		part(cassette.DirIn, prompt[:40], true),
		part(cassette.DirIn, prompt[40:200], true),
		part(cassette.DirIn, prompt[200:], false),
		part(cassette.DirOut, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, false),
	}
	p := writeCassette(t, t.TempDir(), "parts.cassette", "acp", nil, recs...)
	code, out, _ := runMain("check", p)
	if code != ExitOK || !strings.Contains(out, "4 frames: 0 errors, 0 warnings") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	// The same pieces with the middle one lost: the joined frame is not
	// JSON and is reported at the first piece's record; the answer to it
	// then names an unknown id.
	recs = append(recs[:3], recs[4:]...)
	p = writeCassette(t, t.TempDir(), "parts.cassette", "acp", nil, recs...)
	code, out, _ = runMain("check", p)
	if code != ExitFindings || !strings.Contains(out, "warning session.non-json-stdin") || !strings.Contains(out, "record 3 in:") ||
		!strings.Contains(out, "error session.unknown-response-id") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// Socket mode: each connection is its own session with its own ids.
func TestCheckConnections(t *testing.T) {
	var recs []cassette.Record
	for _, conn := range []int{1, 2} {
		recs = append(recs, cassette.Record{K: cassette.KindEvent, Ev: cassette.EventConnOpen, Conn: conn})
	}
	for i, l := range cleanACP[:4] {
		for _, conn := range []int{1, 2} {
			if conn == 2 && i == 3 {
				continue // connection 2 never gets its session/new answered
			}
			r := cassette.NewLineRecord(cassette.KindFrame, l.dir, []byte(l.text), "\n")
			r.Conn = conn
			recs = append(recs, r)
		}
	}
	recs = append(recs, cassette.Record{K: cassette.KindEvent, Ev: cassette.EventConnClose, Conn: 1})
	p := writeCassette(t, t.TempDir(), "socket.cassette", "acp", nil, recs...)
	code, out, _ := runMain("check", "--format", "json", p)
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var doc struct {
		Files []checkReport `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	f := doc.Files[0].Findings
	if len(f) != 1 || f[0].Code != "session.unanswered" || f[0].Conn != 2 {
		t.Errorf("want one unanswered request on connection 2 (ids repeat across connections legally), got %+v", f)
	}
}

// TestCheckRealPeers records the ACP Go SDK example client with its example
// agent, and the MCP Go SDK listfeatures client with the everything server,
// through `rpctap record` (rpctap is in PATH as this test binary, see
// TestMain), then checks the cassettes: the right protocol is detected and
// no error-level violation is found.
func TestCheckRealPeers(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	cases := []struct {
		proto         string
		parent, child []string
		stdin         string // the ACP example client asks which permission option to pick
	}{
		{"acp", []string{testpeers.Tool(t, "acpclient")}, []string{testpeers.Tool(t, "acpagent")}, "1\n"},
		{"mcp", []string{testpeers.Tool(t, "mcpclient")}, []string{testpeers.Tool(t, "mcpserver")}, ""},
		// An older server: it answers the 2026-07-28 server/discover probe
		// with -32601 and the SDK client falls back to initialize.
		{"mcp", []string{testpeers.Tool(t, "mcpclient")}, []string{"sh", "-c",
			`read -r probe; printf '%s\n' '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'; exec "$0"`,
			testpeers.Tool(t, "mcpserver")}, ""},
		// The SDK-based testpeer makes the server send roots/list, sampling
		// and ping, then closes the server's stdin.
		{"mcp", []string{testpeers.Tool(t, "testpeer"), "mcp-parent"}, []string{testpeers.Tool(t, "mcpserver")}, ""},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(c.proto, i), func(t *testing.T) {
			dir := t.TempDir()
			cas := filepath.Join(dir, c.proto+".cassette")
			out := testpeers.Record(t, rp, dir, cas, c.stdin, 60*time.Second, c.parent, c.child...)
			if _, err := os.Stat(cas); err != nil {
				t.Fatalf("no cassette after the run (%v):\n%s", err, out)
			}
			// A valid session by the protocol's own spec: no error and no
			// warning (infos are fine).
			f := checkClean(t, cas, c.proto)
			if f.ProtocolSource != "detected" {
				t.Errorf("the protocol came from %s, want detected", f.ProtocolSource)
			}
			if f.Frames < 4 {
				t.Errorf("only %d frames recorded", f.Frames)
			}
			if strings.Contains(c.child[0], "sh") && f.Frames < 6 {
				t.Errorf("the fallback session is too short:\n%s", out)
			}
		})
	}
}

// panicProto is a protocol with a bug: check must turn it into one line.
type panicProto struct{ protocol.Protocol }

func (panicProto) Validate(protocol.Dir, []byte, protocol.Info) []protocol.Violation {
	panic("validator bug")
}

func TestCheckValidatorPanic(t *testing.T) {
	jr, _ := protocol.Lookup("jsonrpc")
	p := writeCassette(t, t.TempDir(), "x.cassette", "", cleanACP)
	_, err := checkFileSafe(p, panicProto{jr})
	var ie *internalError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "validator bug") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v", err)
	}
	if exitCode(err) != ExitInternal {
		t.Errorf("exit %d, want %d", exitCode(err), ExitInternal)
	}
}

func TestCheckCapsFindings(t *testing.T) {
	var frames []line
	for i := 0; i < maxFindingsPerCode+50; i++ {
		frames = append(frames, line{cassette.DirOut, "log line"})
	}
	p := writeCassette(t, t.TempDir(), "noisy.cassette", "", frames)
	jr, _ := protocol.Lookup("jsonrpc") // detection would call a session of log lines raw
	rep, err := checkFile(p, jr)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts["session.non-json-stdout"] != maxFindingsPerCode+50 || len(rep.Findings) != maxFindingsPerCode || rep.Errors != maxFindingsPerCode+50 {
		t.Errorf("counts %v, kept %d, errors %d", rep.Counts, len(rep.Findings), rep.Errors)
	}
	var out bytes.Buffer
	writeCheckText(&out, rep, 3)
	if !strings.Contains(out.String(), "error session.non-json-stdout (10050)") || !strings.Contains(out.String(), "… 10047 more") {
		t.Errorf("text report:\n%s", out.String())
	}
}

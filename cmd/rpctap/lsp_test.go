package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/viewer"
)

// goModule writes a small Go module for gopls to work on: a call to Greet
// in main, Greet defined above it.
func goModule(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/sample\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"fmt\"\n\n// Greet returns a greeting.\nfunc Greet(name string) string { return \"hello \" + name }\n\nfunc main() { fmt.Println(Greet(\"rpctap\")) }\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// answers keeps the lines a test peer prints about what it was told (its
// transcript), without anything else the run wrote.
func answers(out string, prefixes ...string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				keep = append(keep, l)
				break
			}
		}
	}
	return strings.Join(keep, "\n")
}

// checkClean runs check on cas and fails t on any error or warning; it
// returns the report.
func checkClean(t *testing.T, cas, wantProto string) checkReport {
	t.Helper()
	code, rep, errs := runMain("check", "--format", "json", cas)
	var doc struct {
		Files []checkReport `json:"files"`
	}
	if err := json.Unmarshal([]byte(rep), &doc); err != nil || len(doc.Files) != 1 {
		t.Fatalf("check: exit %d, %v\n%s%s", code, err, rep, errs)
	}
	f := doc.Files[0]
	if f.Protocol != wantProto {
		t.Errorf("check judged the session as %q, want %q", f.Protocol, wantProto)
	}
	if code != ExitOK {
		t.Errorf("check: exit %d", code)
	}
	for _, v := range f.Findings {
		if v.Severity != string(protocol.SevInfo) {
			t.Errorf("check: %s %s record %d: %s", v.Severity, v.Code, v.Record, v.Message)
		}
	}
	return f
}

// TestLSPGopls records an editor session with a real gopls (open a file,
// hover, definition, shutdown, exit), and shows that check passes it, that
// the same editor gets the same answers from `rpctap replay --speed 0`,
// that verify holds gopls to the recording with the default ignores, and
// that view shows one row per message with the response latency.
func TestLSPGopls(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	gopls := testpeers.Gopls(t)
	peer := testpeers.Tool(t, "testpeer")
	ws := goModule(t)
	tmp := t.TempDir()
	cas, wrote := filepath.Join(tmp, "gopls.cassette"), filepath.Join(tmp, "gopls.out")
	// tee keeps the bytes gopls wrote, to hold the cassette to them.
	out := testpeers.Record(t, rp, ws, cas, "", 90*time.Second, []string{peer, "lsp-parent"}, "sh", "-c", `"$0" | tee "$1"`, gopls, wrote)
	live := answers(out, "initialize:", "hover:", "definition:", "shutdown:")
	if !strings.Contains(live, `hover: "func Greet(name string) string`) || !strings.Contains(live, "definition: main.go:5:5") {
		t.Fatalf("the editor did not get gopls's answers through rpctap record:\n%s", out)
	}

	f := checkClean(t, cas, "lsp")
	// Recorded with the default flags, the cassette gives back every byte
	// gopls wrote: its progress tokens are correlation ids, not secrets
	// (failed before LSP declared them: 28 bytes short, "token":"[REDACTED]").
	raw, err := os.ReadFile(wrote)
	if err != nil {
		t.Fatal(err)
	}
	if code, got, errs := runMain("cat", "--raw", "-d", "out", cas); code != 0 || got != string(raw) {
		t.Errorf("cat --raw -d out: exit %d, %d bytes, gopls wrote %d %s", code, len(got), len(raw), errs)
	}
	if !bytes.Contains(raw, []byte(`"method":"$/progress","params":{"token":`)) {
		t.Errorf("gopls sent no $/progress with a token: the test shows nothing")
	}
	if f.Counts[CodeRedacted] != 0 {
		t.Errorf("check lists %d redacted frames in a session without secrets", f.Counts[CodeRedacted])
	}
	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	var reqT, respT int64
	for _, r := range recs {
		if r.K != cassette.KindFrame {
			continue
		}
		frames++
		if !strings.HasPrefix(r.Hdr, "Content-Length: ") || r.EOL != "" || r.JSON == nil {
			t.Errorf("record %d is not one Content-Length message: hdr %q eol %q", r.N, r.Hdr, r.EOL)
		}
		if r.Method == "textDocument/hover" && r.Kind == "request" {
			reqT = r.T
		}
		if r.Method == "textDocument/hover" && r.Kind == "response" {
			respT = r.T
		}
	}
	if uint64(frames) != f.Frames || frames < 12 {
		t.Errorf("%d frame records, check counted %d", frames, f.Frames)
	}

	rep := run(t, ws, "", peer, "lsp-parent", rp, "replay", "--speed", "0", cas)
	if rep.code != 0 {
		t.Fatalf("the editor against replay: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
	if got := answers(rep.stdout, "initialize:", "hover:", "definition:", "shutdown:"); got != live {
		t.Errorf("replay answered\n%s\ngopls answered\n%s", got, live)
	}

	v := run(t, ws, "", rp, "verify", cas, "--", gopls)
	if v.code != 0 || !strings.Contains(v.stderr+v.stdout, "ok:") {
		t.Errorf("verify against gopls: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	// The gate fails on a server that says nothing, or dies early.
	for _, dead := range [][]string{{"true"}, {"sh", "-c", "head -c 300 >/dev/null; exit 2"}} {
		if d := run(t, ws, "", append([]string{rp, "verify", "--timeout", "500ms", cas, "--"}, dead...)...); d.code != ExitFindings {
			t.Errorf("verify against %v: exit %d, want %d\n%s", dead, d.code, ExitFindings, d.stdout)
		}
	}

	code, screen, errs := viewMain("view", "--dump", "150x40", cas)
	if code != 0 {
		t.Fatalf("view --dump: exit %d: %s", code, errs)
	}
	rows := regexp.MustCompile(`(?m)^.\s*\d+ \S+\s+\S+ [→←] `).FindAllString(screen, -1)
	if len(rows) != frames {
		t.Errorf("view shows %d message rows for %d messages:\n%s", len(rows), frames, screen)
	}
	if strings.Contains(screen, "Content-Length") {
		t.Errorf("view shows header lines as frames:\n%s", screen)
	}
	hover := regexp.MustCompile(`← resp\s+textDocument/hover\s+\d+\s+\S+\s+(\S+)`).FindStringSubmatch(screen)
	if hover == nil {
		t.Fatalf("no hover response row with a latency:\n%s", screen)
	}
	if want := viewer.FormatDuration(respT - reqT); hover[1] != want {
		t.Errorf("hover latency shown %s, recorded %s", hover[1], want)
	}
}

// TestDAPScripted records a DAP session (the scripted adapter in testpeer
// and its client), checks it, replays the adapter to the same client and
// verifies the adapter against the recording.
func TestDAPScripted(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	peer := testpeers.Tool(t, "testpeer")
	dir := t.TempDir()
	cas := filepath.Join(dir, "dap.cassette")
	out := testpeers.Record(t, rp, dir, cas, "", 60*time.Second, []string{peer, "dap-parent"}, peer, "dap-child")
	live := answers(out, "event ", "reverse ", "initialize:", "launch:", "setBreakpoints:", "configurationDone:", "stackTrace:", "evaluate:", "continue:", "disconnect:")
	if !strings.Contains(live, "evaluate: success=false") || !strings.Contains(live, "reverse request runInTerminal") {
		t.Fatalf("the DAP session did not run through rpctap record:\n%s", out)
	}
	f := checkClean(t, cas, "dap")
	if f.Frames != 23 {
		t.Errorf("%d frames, want 23 (9 requests and responses each way, 5 events)", f.Frames)
	}
	rep := run(t, dir, "", peer, "dap-parent", rp, "replay", "--speed", "0", cas)
	if got := answers(rep.stdout, "event ", "reverse ", "initialize:", "launch:", "setBreakpoints:", "configurationDone:", "stackTrace:", "evaluate:", "continue:", "disconnect:"); rep.code != 0 || got != live {
		t.Errorf("the client against replay (exit %d):\n%s\nagainst the adapter:\n%s\n%s", rep.code, got, live, rep.stderr)
	}
	v := run(t, dir, "", rp, "verify", cas, "--", peer, "dap-child")
	if v.code != 0 {
		t.Errorf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	// Two recordings of the same session diff clean (sequence numbers
	// and process ids are DAP's volatile fields); a changed answer does not.
	cas2 := filepath.Join(dir, "dap2.cassette")
	testpeers.Record(t, rp, dir, cas2, "", 60*time.Second, []string{peer, "dap-parent"}, peer, "dap-child")
	if d := run(t, dir, "", rp, "diff", cas, cas2); d.code != 0 {
		t.Errorf("diff of two recordings of one DAP session: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
	// A broken adapter is caught: verify against one whose output is cut
	// off after 300 bytes.
	bad := run(t, dir, "", rp, "verify", "--timeout", "500ms", cas, "--", "sh", "-c", `exec "$0" dap-child | head -c 300`, peer)
	if bad.code == 0 {
		t.Errorf("verify passed an adapter whose output was cut short:\n%s", bad.stderr)
	}
}

// lspStream builds Content-Length traffic with every shape the base
// protocol allows or peers send: Content-Type headers (utf-8 and the utf8
// alias), a large body, UTF-8 text, an empty object, a header in lower case
// and a bare-\n header from a lenient peer, plus a stray line of junk.
func lspStream() []byte {
	var b bytes.Buffer
	msg := func(hdrFmt, body string) { fmt.Fprintf(&b, hdrFmt, len(body)); b.WriteString(body) }
	msg("Content-Length: %d\r\n\r\n", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":1,"capabilities":{}}}`)
	msg("Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n", `{"jsonrpc":"2.0","method":"initialized","params":{}}`)
	msg("content-length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf8\r\n\r\n", `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///é.go","languageId":"go","version":1,"text":"`+strings.Repeat("x := \"ü\"\\n", 20000)+`"}}}`)
	b.WriteString("a stray print\n")
	msg("Content-Length: %d\n\n", `{}`)
	msg("Content-Length: %d\r\n\r\n", `{"jsonrpc":"2.0","method":"exit"}`)
	return b.Bytes()
}

// TestLSPForwardingByteExact: whatever the framing, rpctap record forwards
// every byte as it came, in both directions, in chunks of any size, and
// `cat --raw` gives the recorded stream back byte for byte.
func TestLSPForwardingByteExact(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	stream := lspStream()
	for _, framing := range []string{"auto", "content-length", "ndjson"} {
		t.Run(framing, func(t *testing.T) {
			cas := filepath.Join(dir, framing+".cassette")
			// The child echoes its stdin to stdout (in 4 KiB writes).
			r := run(t, dir, string(stream), rp, "record", "--no-redact", "--framing", framing, "-o", cas, "--", "cat")
			if r.code != 0 {
				t.Fatalf("record: exit %d: %s", r.code, r.stderr)
			}
			if r.stdout != string(stream) {
				t.Fatalf("the parent got %d bytes, not the %d the child wrote", len(r.stdout), len(stream))
			}
			waitEnded(t, cas)
			for _, d := range []string{"in", "out"} {
				code, raw, errs := runMain("cat", "--raw", "-d", d, cas)
				if code != 0 || raw != string(stream) {
					t.Errorf("cat --raw -d %s: exit %d, %d bytes (want %d) %s", d, code, len(raw), len(stream), errs)
				}
			}
			recs, _ := readCassette(cas)
			var hdrs, frames int
			for _, rec := range recs {
				if rec.K == cassette.KindFrame && rec.D == cassette.DirIn && !rec.Part {
					frames++
					if rec.Hdr != "" {
						hdrs++
					}
				}
			}
			switch framing {
			case "ndjson":
				if hdrs != 0 {
					t.Errorf("--framing ndjson kept %d header blocks", hdrs)
				}
			default:
				if hdrs != 5 || frames != 6 { // 5 messages and the stray line
					t.Errorf("stdin: %d records with a header of %d, want 5 of 6", hdrs, frames)
				}
			}
		})
	}
}

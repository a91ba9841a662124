package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// shrinkReport parses the figures of shrink's report line.
var shrinkReport = regexp.MustCompile(`rpctap shrink: (\d+) -> (\d+) frames, (\d+) -> (\d+) payload bytes .* in (\d+) runs, (\S+); wrote (\S+)`)

func frameLines(t *testing.T, path string) []string {
	t.Helper()
	recs, _, err := readAllRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range recs {
		if recs[i].K == cassette.KindFrame {
			out = append(out, string(recs[i].D)+" "+string(recs[i].Payload()))
		}
	}
	return out
}

// TestShrinkMCPServer500: a 500-frame session with the MCP Go SDK's
// everything server, in which one recorded answer differs from what the
// server says, shrinks to the handshake and that one call.
func TestShrinkMCPServer500(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	server := testpeers.Tool(t, "mcpserver")
	dir := t.TempDir()

	// The parent side: the SDK client's real opening (server/discover, the
	// 2026-07-28 handshake) and its next frame, then 248 greet calls.
	in, out := testpeers.FixtureStrings(t, "mcp-go-everything")
	b := replaytest.New("mcp").Event("start")
	b.In(in[0]).Out(out[0]).In(in[1])
	const calls = 248
	for i := range calls {
		id := 100 + i
		b.In(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"greet","arguments":{"name":"user%d"}}}`, id, i))
		b.Out(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"placeholder"}]}}`, id))
	}
	b.Event("stdin-eof").Exit(0)
	draft := filepath.Join(dir, "draft.cassette")
	if err := replaytest.WriteFile(draft, b.End(), true); err != nil {
		t.Fatal(err)
	}
	// The child side comes from the real server: verify --update records it.
	if r := run(t, dir, "", rp, "verify", "--update", draft, "--", server); r.code != 0 {
		t.Fatalf("verify --update: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	good := frameLines(t, draft)
	if len(good) < 3+2*calls {
		t.Fatalf("the recorded session has %d frames, want at least %d", len(good), 3+2*calls)
	}
	if r := run(t, dir, "", rp, "verify", draft, "--", server); r.code != 0 {
		t.Fatalf("the recorded session does not verify: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Break one recorded answer: call 137 says another name.
	recs, _, err := readAllRecords(draft)
	if err != nil {
		t.Fatal(err)
	}
	broken := 0
	for i := range recs {
		r := &recs[i]
		if r.K == cassette.KindFrame && r.D == cassette.DirOut && strings.Contains(string(r.JSON), `"id":237,`) {
			r.SetPayload([]byte(strings.Replace(string(r.JSON), "user137", "someone-else", 1)))
			broken++
		}
	}
	if broken != 1 {
		t.Fatalf("found %d answers to id 237", broken)
	}
	failing := filepath.Join(dir, "failing.cassette")
	if err := writeCassetteFile(failing, recs); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "", rp, "shrink", "--match", "someone-else", failing, "--", server)
	if r.code != 0 {
		t.Fatalf("shrink: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	m := shrinkReport.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no report line:\n%s", r.stderr)
	}
	t.Logf("%s", strings.TrimSpace(r.stderr))
	if before, _ := strconv.Atoi(m[1]); before != len(good) {
		t.Errorf("before: %s frames", m[1])
	}
	small := filepath.Join(dir, "failing.min.cassette")
	if m[7] != small {
		t.Errorf("wrote %s, want %s", m[7], small)
	}
	got := frameLines(t, small)
	if len(got) > 5 {
		t.Errorf("%d frames left, want at most 5 (the handshake and its answer, the call and its answer, perhaps the frame after the handshake):\n%s", len(got), strings.Join(got, "\n"))
	}
	if !strings.Contains(strings.Join(got, "\n"), "someone-else") || got[0] != "in "+in[0] {
		t.Errorf("the shrunk cassette lost the handshake or the broken answer:\n%s", strings.Join(got, "\n"))
	}
	// It still fails the same way, and the input is untouched.
	if r := run(t, dir, "", rp, "verify", small, "--", server); r.code != ExitFindings || !strings.Contains(r.stdout+r.stderr, "someone-else") {
		t.Errorf("verify of the shrunk cassette: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := len(frameLines(t, failing)); n != len(good) {
		t.Errorf("the input changed: %d frames", n)
	}
}

// TestShrinkCheckCode keeps a violation code: of 300 frames, the response to
// an id nobody asked for is what check reports. Then the same cassette with a
// real parent (a shell script) that fails on that response.
func TestShrinkCheckCode(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	b := replaytest.New("jsonrpc").Event("start")
	for i := range 150 {
		b.In(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"work","params":{"n":%d}}`, i+1, i))
		if i == 77 {
			b.Out(`{"jsonrpc":"2.0","id":9999,"result":"stray"}`)
			continue
		}
		b.Out(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, i+1, i))
	}
	b.Event("stdin-eof").Exit(0)
	p := filepath.Join(dir, "s.cassette")
	if err := replaytest.WriteFile(p, b.End(), true); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "small.cassette")
	r := run(t, dir, "", rp, "shrink", "-o", out, "--check", "session.unknown-response-id", p)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := frameLines(t, out)
	joined := strings.Join(got, "\n")
	if !strings.Contains(joined, `"id":9999`) || len(got) > 2 {
		t.Errorf("want the stray response (and at most the pinned first request), got:\n%s", joined)
	}
	if !shrinkReport.MatchString(r.stderr) {
		t.Errorf("report: %s", r.stderr)
	}

	// The same failure seen by a real parent: it sends the 150 requests to
	// "rpctap replay CANDIDATE" (appended to its command line) and fails
	// when the stray answer reaches it.
	script := filepath.Join(dir, "parent.sh")
	os.WriteFile(script, []byte(`i=1
while [ $i -le 150 ]; do printf '{"jsonrpc":"2.0","id":%d,"method":"work","params":{"n":%d}}\n' $i $((i-1)); i=$((i+1)); done | "$@" | grep -q 9999 && exit 1
exit 0
`), 0o755)
	out2 := filepath.Join(dir, "parent.cassette")
	r = run(t, dir, "", rp, "shrink", "-o", out2, "--parent", "sh "+script, p)
	if r.code != 0 {
		t.Fatalf("--parent: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("%s", strings.TrimSpace(r.stderr))
	if got := frameLines(t, out2); len(got) > 2 || !strings.Contains(strings.Join(got, "\n"), `"id":9999`) {
		t.Errorf("--parent: want the stray response (and at most the pinned first request), got:\n%s", strings.Join(got, "\n"))
	}
}

// TestShrinkTestCommandAndRefusals: a user command as the predicate, and
// the one-line refusals (nothing fails, bad flags, overwriting the input).
func TestShrinkTestCommandAndRefusals(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	b := replaytest.New("jsonrpc").Event("start")
	for i := range 8 {
		b.In(fmt.Sprintf(`{"jsonrpc":"2.0","method":"note","params":{"n":%d}}`, i))
	}
	b.Event("stdin-eof").Exit(0)
	p := filepath.Join(dir, "n.cassette")
	if err := replaytest.WriteFile(p, b.End(), true); err != nil {
		t.Fatal(err)
	}
	// A user command that fails whenever it is given a cassette: only the
	// pinned first frame needs to stay, and $RPCTAP_CASSETTE is set.
	r := run(t, dir, "", rp, "shrink", "--test", `test -s "$RPCTAP_CASSETTE" && exit 3`, p)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("%s", strings.TrimSpace(r.stderr))
	got := frameLines(t, filepath.Join(dir, "n.min.cassette"))
	if len(got) != 1 || !strings.Contains(got[0], `"n":0}`) {
		t.Errorf("want the pinned first note alone, got:\n%s", strings.Join(got, "\n"))
	}

	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"shrink", "--test", "true", p}, ExitFindings, "does not fail that way"},
		{[]string{"shrink", p}, ExitUsage, "exactly one failure"},
		{[]string{"shrink", "--check", "x", "--test", "false", p}, ExitUsage, "exactly one failure"},
		{[]string{"shrink", "-o", p, "--test", "false", p}, ExitUsage, "would overwrite"},
		{[]string{"shrink", "--test", "false", filepath.Join(dir, "missing.cassette")}, ExitInput, "no such file"},
		{[]string{"shrink", "--match", "(", "--test", "false", p}, ExitUsage, "--match"},
	} {
		r := run(t, dir, "", append([]string{rp}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", c.args, r.code, r.stderr, c.code, c.msg)
		}
	}
	if _, err := os.Stat(p); err != nil {
		t.Error(err)
	}
}

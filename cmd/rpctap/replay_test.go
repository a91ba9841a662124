package main

// End-to-end tests of replay, verify and diff with real processes: the
// ACP and MCP Go SDK examples (go.mod tool entries), the testpeer programs
// (replay/internal/testpeer), and rpctap itself, which TestMain puts in
// PATH as this test binary (testscript.Main).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/replay"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// rpctapPath is the rpctap in PATH (this test binary, via testscript.Main).
func rpctapPath(t *testing.T) string {
	p, err := exec.LookPath("rpctap")
	if err != nil {
		t.Fatal("rpctap is not in PATH: ", err)
	}
	return p
}

// realPeersRpctap skips a test that records real SDK peers with -short,
// and returns the rpctap in PATH.
func realPeersRpctap(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the SDK example programs; skipped with -short")
	}
	return rpctapPath(t)
}

type runResult struct {
	stdout, stderr string
	code           int
}

// run runs argv with stdin and a deadline, in dir.
func run(t *testing.T, dir, stdin string, argv ...string) runResult {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if finished, err := testpeers.RunFor(cmd, 60*time.Second); err != nil {
		t.Fatal(err)
	} else if !finished {
		t.Fatalf("%v did not finish in 60s; stdout:\n%s\nstderr:\n%s", argv, out.String(), errb.String())
	}
	return runResult{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

func trafficCassette(t *testing.T, dir string) string {
	in, out := testpeers.FixtureStrings(t, "acp-go")
	b := replaytest.New("acp").Event("start").Stderr("example agent: ready").Interleave(in, out)
	b.Stderr("example agent: done").Event("stdin-eof").Exit(0)
	p := filepath.Join(dir, "acp-go.cassette")
	if err := replaytest.WriteFile(p, b.End(), true); err != nil {
		t.Fatal(err)
	}
	return p
}

// pointers masks the pointer values the ACP example client prints with %v.
var pointers = regexp.MustCompile(`0x[0-9a-f]{6,}`)

func TestReplayACPExampleClientFromCapture(t *testing.T) {
	t.Parallel()
	bin := testpeers.Dir(t)
	dir := t.TempDir()
	cas := trafficCassette(t, dir)
	r := run(t, dir, "1\n", filepath.Join(bin, "acpclient"), rpctapPath(t), "replay", "--strict", "--speed", "0", cas)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"Connected to agent (protocol v1)", "Created session: sess_d19697b4d00049da84f8ab34",
		"Permission requested: Modifying critical configuration file", "Perfect! I've successfully updated", "Agent completed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("client output lacks %q:\n%s", want, r.stdout)
		}
	}
	// The recorded stderr line before the session is replayed; the one
	// after stdin-eof need not be: the client kills its agent without
	// closing stdin.
	if !strings.Contains(r.stderr, "example agent: ready") || strings.Contains(r.stderr, "divergence") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestReplayRecordedSessions records each parent with its real child through
// `rpctap record`, then runs the same parent against `rpctap replay` of the
// cassette: the parent's output must be the same.
func TestReplayRecordedSessions(t *testing.T) {
	t.Parallel()
	bin := testpeers.Dir(t)
	rp := rpctapPath(t)
	for _, c := range []struct {
		name   string
		parent []string
		child  []string
		stdin  string
		// what the cassette must hold: "out request session/request_permission",
		// "in response session/request_permission" (an answer to the child)
		holds []string
		// what the parent must have printed
		prints []string
		// lines whose place the parent itself does not fix (it handles
		// frames that arrive together on concurrent goroutines): compared
		// as part of the set of lines, left out of the order
		racy []string
	}{
		{"acp", []string{filepath.Join(bin, "acpclient")}, []string{filepath.Join(bin, "acpagent")}, "1\n",
			[]string{"out request session/request_permission", "in response session/request_permission", "out notification session/update"},
			[]string{"Permission requested: Modifying critical configuration file", "Agent completed"},
			// The agent sends this tool_call update and its permission
			// request back to back; the SDK client prints them from two
			// goroutines, in either order, live as well as under replay.
			[]string{"🔧 Modifying critical configuration file (pending)"}},
		{"mcp-listfeatures", []string{filepath.Join(bin, "mcpclient")}, []string{filepath.Join(bin, "mcpserver")}, "",
			[]string{"in request tools/list", "out response tools/list"},
			[]string{"tools:", "greet (structured)", "prompts:"}, nil},
		{"mcp-server-requests", []string{filepath.Join(bin, "testpeer"), "mcp-parent"}, []string{filepath.Join(bin, "mcpserver")}, "",
			[]string{"out request roots/list", "in response roots/list", "out request sampling/createMessage",
				"in response sampling/createMessage", "out request ping", "out notification notifications/message"},
			[]string{"roots: error=false project:file:///project", "sampling request from the server", "sample: error=false sampled text", "log error: something happened!"}, nil},
		{"synaps", []string{filepath.Join(bin, "testpeer"), "synaps-parent"}, []string{filepath.Join(bin, "testpeer"), "synaps-child"}, "",
			[]string{"out handshake ready", "in request prompt", "out event message_update", "out response prompt", "in notification shutdown"},
			[]string{`"delta":"there "`, `"command":"get_state","id":"g1"`}, nil},
		{"opi", []string{filepath.Join(bin, "testpeer"), "opi-parent"}, []string{filepath.Join(bin, "testpeer"), "opi-child"}, "",
			[]string{"out handshake rpc_ready", "in request set_model", "out response set_model", "out event AgentEnd"},
			[]string{`"command":"session_info"`, `"type":"run_summary"`}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cas := filepath.Join(dir, c.name+".cassette")
			argv := append(append(append([]string{}, c.parent...), rp, "record", "-o", cas, "--"), c.child...)
			live := run(t, dir, c.stdin, argv...)
			if live.code != 0 {
				t.Fatalf("recording run: exit %d\n%s\n%s", live.code, live.stdout, live.stderr)
			}
			// The ACP client SIGKILLs rpctap after its last reply; the
			// recorder process finishes the cassette a moment later.
			waitEnded(t, cas)
			argv = append(append([]string{}, c.parent...), rp, "replay", "--strict", cas)
			rep := run(t, dir, c.stdin, argv...)
			if rep.code != 0 {
				t.Fatalf("replay run: exit %d\nstdout:\n%s\nstderr:\n%s", rep.code, rep.stdout, rep.stderr)
			}
			a, b := pointers.ReplaceAllString(live.stdout, "0xPTR"), pointers.ReplaceAllString(rep.stdout, "0xPTR")
			if a != b && (len(c.racy) == 0 || !sameUpToRaces(a, b, c.racy)) {
				t.Fatalf("output differs\n--- recorded run:\n%s\n--- replay:\n%s", a, b)
			}
			if strings.Contains(rep.stderr, "divergence") {
				t.Fatalf("replay diverged:\n%s", rep.stderr)
			}
			for _, w := range c.prints {
				if !strings.Contains(b, w) {
					t.Errorf("the parent did not print %q:\n%s", w, b)
				}
			}
			// The cassette holds the child's own requests and the parent's
			// answers (matched by id in the strict replay above).
			rec, err := replay.Open(cas)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, r := range rec.Records {
				if r.K == cassette.KindFrame {
					kinds = append(kinds, string(r.D)+" "+r.Kind+" "+r.Method)
				}
			}
			all := strings.Join(kinds, "\n")
			for _, w := range c.holds {
				if !strings.Contains(all, w) {
					t.Errorf("cassette lacks %q; it has:\n%s", w, all)
				}
			}
			// Recorded stderr is replayed: the child's session id (random
			// per run) appears the same in both runs' stderr.
			if c.name == "synaps" && !strings.Contains(rep.stderr, firstLine(live.stderr, "starting session")) {
				t.Errorf("recorded stderr not replayed:\nlive:\n%s\nreplay:\n%s", live.stderr, rep.stderr)
			}
		})
	}
}

// sameUpToRaces: a and b have the same lines, and the same order once
// blank lines and lines containing one of racy are left out.
func sameUpToRaces(a, b string, racy []string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	sa, sb := append([]string(nil), la...), append([]string(nil), lb...)
	sort.Strings(sa)
	sort.Strings(sb)
	if strings.Join(sa, "\n") != strings.Join(sb, "\n") {
		return false
	}
	keep := func(ls []string) string {
		var out []string
	next:
		for _, l := range ls {
			if strings.TrimSpace(l) == "" {
				continue
			}
			for _, r := range racy {
				if strings.Contains(l, r) {
					continue next
				}
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
	return keep(la) == keep(lb)
}

func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return "\x00 no line with " + sub
}

func TestVerifyACPAgent(t *testing.T) {
	t.Parallel()
	bin := testpeers.Dir(t)
	dir := t.TempDir()
	cas := trafficCassette(t, dir)
	rp := rpctapPath(t)
	// The capture was taken from this very agent: verify passes although
	// the agent makes up another session id (it is carried into the
	// parent's later frames).
	r := run(t, dir, "", rp, "verify", cas, "--", filepath.Join(bin, "acpagent"))
	if r.code != 0 || !strings.Contains(r.stdout, "rpctap verify: ok: 12 child frames matched, 4 parent frames sent") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The same with a cassette recorded from the example client and agent
	// through rpctap record.
	rec := filepath.Join(dir, "recorded.cassette")
	live := run(t, dir, "1\n", filepath.Join(bin, "acpclient"), rp, "record", "-q", "-o", rec, "--", filepath.Join(bin, "acpagent"))
	if live.code != 0 {
		t.Fatalf("recording: exit %d\n%s", live.code, live.stderr)
	}
	waitEnded(t, rec) // the recorder process finishes it after the client's SIGKILL
	r = run(t, dir, "", rp, "verify", rec, "--", filepath.Join(bin, "acpagent"))
	if r.code != 0 || !strings.Contains(r.stdout, "rpctap verify: ok: 12 child frames matched, 4 parent frames sent") {
		t.Fatalf("verify of the recorded cassette: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// Another agent answers differently: a clear report and exit 1.
	r = run(t, dir, "", rp, "verify", "--timeout", "2s", cas, "--", rp, "demo-agent")
	if r.code != ExitFindings {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"rpctap verify: first divergence from " + cas, "child sent:", "recorded frame: record #",
		"differences (recorded -> live", "difference(s) between"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("report lacks %q\nstdout:\n%s\nstderr:\n%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, "goroutine") {
		t.Errorf("stderr must be one line:\n%s", r.stderr)
	}
}

func TestVerifyUpdateRewritesCassette(t *testing.T) {
	t.Parallel()
	bin := testpeers.Dir(t)
	dir := t.TempDir()
	cas := trafficCassette(t, dir)
	rp := rpctapPath(t)
	r := run(t, dir, "", rp, "verify", "--update", cas, "--", filepath.Join(bin, "acpagent"))
	if r.code != 0 || !strings.Contains(r.stdout, "wrote "+cas) {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The fresh cassette verifies against the same agent, and differs from
	// the capture only in what the new run really changed (nothing under
	// the default rules).
	r = run(t, dir, "", rp, "verify", cas, "--", filepath.Join(bin, "acpagent"))
	if r.code != 0 {
		t.Fatalf("verify of the updated cassette: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestReplayUnexpectedFrameCLI(t *testing.T) {
	testpeers.Dir(t) // real processes; skipped with -short like the others
	dir := t.TempDir()
	b := replaytest.New("acp").
		In(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`).
		Out(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`).
		In(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/rec","mcpServers":[]}}`).
		Out(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"S"}}`).
		Event("stdin-eof").Exit(0)
	cas := filepath.Join(dir, "s.cassette")
	if err := replaytest.WriteFile(cas, b.End(), true); err != nil {
		t.Fatal(err)
	}
	stdin := `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":1}}
{"jsonrpc":"2.0","id":"b","method":"session/new","params":{"cwd":"/live","mcpServers":[{"name":"x"}]}}
{"jsonrpc":"2.0","id":"c","method":"session/new","params":{"cwd":"/live","mcpServers":[]}}
`
	rp := rpctapPath(t)
	for _, strict := range []bool{false, true} {
		argv := []string{rp, "replay", "--speed", "0", cas}
		if strict {
			argv = []string{rp, "replay", "--speed", "0", "--strict", cas}
		}
		r := run(t, dir, stdin, argv...)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 3 {
			t.Fatalf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
		var e struct {
			ID    string
			Error struct{ Code int }
		}
		json.Unmarshal([]byte(lines[1]), &e)
		if lines[0] != `{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":1}}` || e.ID != "b" || e.Error.Code != -32602 ||
			lines[2] != `{"jsonrpc":"2.0","id":"c","result":{"sessionId":"S"}}` {
			t.Fatalf("stdout:\n%s", r.stdout)
		}
		if !strings.Contains(r.stderr, "first divergence from "+cas) || !strings.Contains(r.stderr, "/params/mcpServers/0: (absent) -> {\"name\":\"x\"}") {
			t.Fatalf("stderr:\n%s", r.stderr)
		}
		want := 0
		if strict {
			want = ExitFindings
		}
		if r.code != want {
			t.Fatalf("strict=%v: exit %d, want %d", strict, r.code, want)
		}
	}
}

func TestReplayBadInputCLI(t *testing.T) {
	t.Parallel()
	testpeers.Dir(t)
	dir := t.TempDir()
	good := trafficCassette(t, dir)
	gb, _ := os.ReadFile(good)
	files := map[string][]byte{
		"empty.cassette":   nil,
		"foreign.cassette": []byte("{\"jsonrpc\":\"2.0\",\"id\":1}\n"),
		"torn.cassette":    gb[:40],
	}
	corrupt := append([]byte(nil), gb...)
	for i := len(corrupt) / 2; i < len(corrupt)/2+32; i++ {
		corrupt[i] ^= 0xa5
	}
	files["corrupt.cassette"] = corrupt
	for n, b := range files {
		os.WriteFile(filepath.Join(dir, n), b, 0o600)
	}
	rp := rpctapPath(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "missing.cassette"}, "missing.cassette: no such file"},
		{[]string{"replay", "empty.cassette"}, "empty file, not a cassette"},
		{[]string{"replay", "foreign.cassette"}, "not an rpctap cassette"},
		{[]string{"replay", "torn.cassette"}, "truncated"},
		// Every frame after the header is in the damaged range: the range
		// is reported (a warning line), then that nothing is left to replay.
		{[]string{"replay", "corrupt.cassette"}, "cassette holds no frames (1 damaged range, "},
		{[]string{"replay", "--protocol", "synaps", good}, "records a acp session, not synaps"},
		{[]string{"verify", "empty.cassette", "--", "true"}, "empty file"},
		{[]string{"diff", good, "foreign.cassette"}, "not an rpctap cassette"},
	} {
		r := run(t, dir, "", append([]string{rp}, c.args...)...)
		if strings.Contains(c.want, "damaged range") {
			// The damage report comes first, once.
			first, rest, _ := strings.Cut(r.stderr, "\n")
			if !strings.HasPrefix(first, "rpctap replay: warning: corrupt.cassette: damaged cassette: bytes ") {
				t.Errorf("%v: stderr %q; want the damaged range reported first", c.args, r.stderr)
			}
			r.stderr = rest
		}
		if r.code != ExitInput || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) ||
			!strings.HasPrefix(r.stderr, "rpctap: ") {
			t.Errorf("%v: exit %d, stderr %q; want exit 4 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

func TestDiffCLI(t *testing.T) {
	t.Parallel()
	testpeers.Dir(t)
	dir := t.TempDir()
	a := trafficCassette(t, dir)
	in, out := testpeers.FixtureStrings(t, "acp-go")
	out2 := append([]string(nil), out...)
	out2[len(out2)-1] = strings.Replace(out2[len(out2)-1], "end_turn", "cancelled", 1)
	b := filepath.Join(dir, "b.cassette")
	rb := replaytest.New("acp").Event("start").Interleave(in, out2)
	rb.Stderr("example agent: done").Event("stdin-eof").Exit(0)
	if err := replaytest.WriteFile(b, rb.End(), true); err != nil {
		t.Fatal(err)
	}
	rp := rpctapPath(t)
	if r := run(t, dir, "", rp, "diff", a, a); r.code != 0 || !strings.Contains(r.stdout, "no differences (16 frames, protocol acp)") {
		t.Fatalf("same: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := run(t, dir, "", rp, "diff", a, b)
	if r.code != ExitFindings || !strings.Contains(r.stdout, `/result/stopReason: "end_turn" -> "cancelled"`) {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, dir, "", rp, "diff", "--format", "json", a, b)
	var d struct {
		Same   int
		Frames []struct{ Op, Method string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != ExitFindings || d.Same != 15 ||
		len(d.Frames) != 1 || d.Frames[0].Op != "changed" || d.Frames[0].Method != "session/prompt" {
		t.Fatalf("json: %v exit %d %+v\n%s", err, r.code, d, r.stdout)
	}
	if r := run(t, dir, "", rp, "diff", "--ignore", "/result/stopReason", a, b); r.code != 0 {
		t.Fatalf("--ignore: exit %d\n%s", r.code, r.stdout)
	}
}

func TestReplaySocketModeConn(t *testing.T) {
	testpeers.Dir(t)
	dir := t.TempDir()
	b := replaytest.New("brainwires")
	b.Records[0].Header.Mode = "socket"
	frame := func(conn int, d cassette.Dir, line string) {
		r := cassette.NewLineRecord(cassette.KindFrame, d, []byte(line), "\n")
		r.Conn = conn
		b.Add(r)
	}
	frame(1, cassette.DirIn, `{"version":2,"is_reattach":false,"session_id":null,"session_token":null}`)
	frame(1, cassette.DirOut, `{"accepted":true,"session_id":"one","session_token":"[REDACTED]","error":null}`)
	frame(2, cassette.DirIn, `{"version":2,"is_reattach":true,"session_id":"one","session_token":"[REDACTED]"}`)
	frame(2, cassette.DirOut, `{"accepted":true,"session_id":"one","session_token":null,"error":null}`)
	frame(2, cassette.DirOut, `{"type":"status_update","status":"idle"}`)
	cas := filepath.Join(dir, "sock.cassette")
	if err := replaytest.WriteFile(cas, b.End(), true); err != nil {
		t.Fatal(err)
	}
	rp := rpctapPath(t)
	r := run(t, dir, "", rp, "replay", cas)
	// Which connection to play is the user's choice: a usage error naming
	// the connections (issue 20; it was exit 4).
	if r.code != ExitUsage || !strings.Contains(r.stderr, "2 connections (1, 2): choose one with --conn N") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Connection 2 is a reattach: the live token (a secret the recording
	// redacted) matches the placeholder.
	r = run(t, dir, `{"version":2,"is_reattach":true,"session_id":"one","session_token":"live-secret"}`+"\n", rp, "replay", "--conn", "2", "--speed", "0", "--strict", cas)
	if r.code != 0 || r.stdout != `{"accepted":true,"session_id":"one","session_token":null,"error":null}`+"\n"+`{"type":"status_update","status":"idle"}`+"\n" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestReplayDiesOfRecordedSignal(t *testing.T) {
	testpeers.Dir(t)
	dir := t.TempDir()
	rp := rpctapPath(t)
	cas := filepath.Join(dir, "sig.cassette")
	r := run(t, dir, "", rp, "record", "-q", "-o", cas, "--", "sh", "-c", `echo '{"type":"bye"}'; kill -TERM $$`)
	if r.stdout != `{"type":"bye"}`+"\n" {
		t.Fatalf("recording: %q %q", r.stdout, r.stderr)
	}
	cmd := exec.Command(rp, "replay", "--speed", "0", cas)
	out, err := cmd.Output()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if string(out) != `{"type":"bye"}`+"\n" || err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("want the frame, then death by SIGTERM; got %q, %v", out, err)
	}
}

// BenchmarkReplayProcessReply: the whole process, as a parent in another
// language sees it: `rpctap replay --speed 0` of a cassette of small
// request/response pairs (about 200 bytes each way) over OS pipes; the
// parent writes one request and reads its answer, b.N times. Reports the
// reply latency p50 and p99 in µs (start-up excluded).
func BenchmarkReplayProcessReply(b *testing.B) {
	benchProcessReply(b, 200)
}

// BenchmarkReplayProcessReply1MiB: the same with 1 MiB answers.
func BenchmarkReplayProcessReply1MiB(b *testing.B) {
	benchProcessReply(b, 1<<20)
}

func benchProcessReply(b *testing.B, size int) {
	rp, err := exec.LookPath("rpctap")
	if err != nil {
		b.Skip("rpctap not in PATH")
	}
	dir := b.TempDir()
	pad := strings.Repeat("p", 80)
	big := strings.Repeat("r", max(size-120, 80))
	rb := replaytest.New("acp")
	// Pair 0 is a warm-up (process start-up and loading the cassette), not measured.
	for i := 0; i <= b.N; i++ {
		rb.In(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"%s"}]}}`, i, pad))
		rb.Out(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn","_meta":{"pad":"%s"}}}`, i, big))
	}
	cas := filepath.Join(dir, "ping.cassette")
	if err := replaytest.WriteFile(cas, rb.End(), true); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(rp, "replay", "--speed", "0", cas)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	br := bufio.NewReaderSize(out, 2<<20)
	lat := make([]time.Duration, 0, b.N)
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":"warm","method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"%s"}]}}`+"\n", pad)
	if _, err := br.ReadBytes('\n'); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"%s"}]}}`+"\n", 500000+i, pad)
		t0 := time.Now()
		if _, err := io.WriteString(in, req); err != nil {
			b.Fatal(err)
		}
		if _, err := br.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	in.Close()
	cmd.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// Damage that `rpctap replay` reaches only after it started (the cassette
// is streamed) is reported once where it is reached; the replay goes on
// with the frames after it (the parent's requests whose recorded answers
// were lost get the protocol's error reply), and exits 4.
func TestReplayDamageMidStreamCLI(t *testing.T) {
	dir := t.TempDir()
	b := replaytest.New("acp")
	var stdin strings.Builder
	pad := strings.Repeat("0123456789abcdef", 64)
	for i := 1; i <= 3000; i++ {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"n":%d,"pad":"%s"}}`, i, i, pad)
		b.In(req).Out(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"n":%d,"pad":"%s"}}`, i, i, pad))
		stdin.WriteString(req + "\n")
	}
	b.Event("stdin-eof").Exit(0)
	p := filepath.Join(dir, "long.cassette")
	if err := replaytest.WriteFile(p, b.End(), true); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(p)
	for i := len(raw) * 3 / 4; i < len(raw)*3/4+64; i++ {
		raw[i] ^= 0xa5
	}
	os.WriteFile(p, raw, 0o600)
	r := run(t, dir, stdin.String(), rpctapPath(t), "replay", "--speed", "0", p)
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if r.code != ExitInput || strings.Count(r.stderr, "damaged cassette: bytes") != 1 ||
		!regexp.MustCompile(`^rpctap: replay: .*long.cassette: 1 damaged range, \d+ records lost; replayed every readable record$`).MatchString(lines[len(lines)-1]) {
		t.Errorf("exit %d, stderr %q; want exit 4, the damaged range once and the summary last", r.code, r.stderr)
	}
	if n := strings.Count(r.stdout, "\n"); n != 3000 {
		t.Errorf("%d answers to 3000 requests; want every one answered (recorded, or the error reply where the record was lost)", n)
	}
}

// TestVerifyDeadChildAlwaysFails runs verify against children that die at
// once, 20 times each: the result must not depend on whether the child
// exited before or after verify's first write (a race that passed verify in
// most runs before).
func TestVerifyDeadChildAlwaysFails(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "d.cassette")
	if r := run(t, dir, "", rp, "demo", "-q", "-o", cas); r.code != 0 {
		t.Fatalf("demo: %d %s", r.code, r.stderr)
	}
	for _, child := range [][]string{{"true"}, {"sh", "-c", "exit 3"}, {"sh", "-c", "read line; exit 0"}} {
		passed := 0
		for range 20 {
			r := run(t, dir, "", append([]string{rp, "verify", "--timeout", "2s", cas, "--"}, child...)...)
			if r.code != ExitFindings || !strings.Contains(r.stdout, "never sent") {
				passed++
				t.Logf("%v: exit %d\n%s%s", child, r.code, r.stdout, r.stderr)
			}
		}
		if passed > 0 {
			t.Errorf("verify -- %v: %d of 20 runs did not fail with the missing frames", child, passed)
		}
	}
}

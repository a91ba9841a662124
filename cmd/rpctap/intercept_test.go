package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/intercept"
	"github.com/rpctap/rpctap/internal/testpeers"
)

// liveRun is a parent program running `rpctap record --intercept` as its
// child: the test reads the control socket's path from rpctap's stderr
// (which the parent passes through) and steers the session with ctl.
type liveRun struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	mu     sync.Mutex
	errs   bytes.Buffer
	socket chan string
	done   chan error
}

// startLive starts argv with stdin; rpctap's stderr must reach the
// parent's stderr.
func startLive(t *testing.T, dir, stdin string, env []string, argv ...string) *liveRun {
	t.Helper()
	l := &liveRun{socket: make(chan string, 1), done: make(chan error, 1)}
	l.cmd = exec.Command(argv[0], argv[1:]...)
	l.cmd.Dir = dir
	l.cmd.Env = append(rpctapEnv(), env...)
	l.cmd.Stdin = strings.NewReader(stdin)
	l.cmd.Stdout = &syncWriter{mu: &l.mu, b: &l.out}
	pr, pw := io.Pipe()
	l.cmd.Stderr = pw
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			l.mu.Lock()
			l.errs.WriteString(line + "\n")
			l.mu.Unlock()
			if p, ok := strings.CutPrefix(line, "rpctap: control socket: "); ok {
				l.socket <- p
			}
		}
	}()
	go func() { err := l.cmd.Wait(); pw.Close(); l.done <- err }()
	t.Cleanup(func() { l.cmd.Process.Kill() })
	return l
}

type syncWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (l *liveRun) stdout() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.String()
}

func (l *liveRun) stderr() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs.String()
}

// sock is the control socket's path: from rpctap's stderr, or (for a
// parent that does not pass its child's stderr on, as the MCP SDK's
// CommandTransport) from the header of the cassette being recorded.
func (l *liveRun) sock(t *testing.T, cas string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case p := <-l.socket:
			return p
		case <-time.After(20 * time.Millisecond):
		}
		if r, err := cassette.Open(cas); err == nil {
			h := r.Header()
			r.Close()
			if h.Control != "" {
				return h.Control
			}
		}
	}
	t.Fatalf("no control socket on stderr or in the cassette header:\n%s", l.stderr())
	return ""
}

func (l *liveRun) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(d):
		t.Fatalf("the session did not finish in %v:\nstdout:\n%s\nstderr:\n%s", d, l.stdout(), l.stderr())
	}
}

// ctl runs `rpctap ctl SOCKET args...` as a user would.
func ctl(t *testing.T, rp, sock string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(rp, append([]string{"ctl", sock}, args...)...)
	cmd.Env = rpctapEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return out.String() + errb.String(), code
}

// heldNumber waits for a held frame with `ctl wait` and returns its number
// and the frame.
func heldNumber(t *testing.T, rp, sock string) (string, string) {
	t.Helper()
	out, code := ctl(t, rp, sock, "wait", "--timeout", "60s")
	if code != 0 {
		t.Fatalf("ctl wait: exit %d: %s", code, out)
	}
	f := strings.Fields(out)
	if len(f) < 8 || f[3] != "held" {
		t.Fatalf("ctl list line: %q", out)
	}
	return f[0], out[strings.Index(out, "{") : strings.LastIndex(out, "}")+1]
}

// TestInterceptACPPermissionRejected: the ACP Go SDK example client talks
// to its example agent through `rpctap record --intercept`; a breakpoint
// holds the client's answer to session/request_permission ("allow", the
// client's stdin says 1), ctl edits it to the rejection, and the agent's
// next session/update is the refusal. The cassette keeps both: the in
// stream has what the agent got (reject), the intercept event the
// original (allow); replay gives the client what it saw, and verify drives
// the agent with what it saw.
func TestInterceptACPPermissionRejected(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	client, agent := testpeers.Tool(t, "acpclient"), testpeers.Tool(t, "acpagent")
	dir := t.TempDir()
	cas := filepath.Join(dir, "acp.cassette")
	l := startLive(t, dir, "1\n", nil, client, rp, "record", "--intercept", "-o", cas,
		"--break", "kind:response & m=session/request_permission", "--", agent)
	sock := l.sock(t, cas)
	n, frame := heldNumber(t, rp, sock)
	if !strings.Contains(frame, `"optionId":"allow"`) {
		t.Fatalf("held frame %s is not the client's permission answer", frame)
	}
	edited := strings.Replace(frame, `"optionId":"allow"`, `"optionId":"reject"`, 1)
	ef := filepath.Join(dir, "edit.json")
	os.WriteFile(ef, []byte(edited), 0o600)
	if out, code := ctl(t, rp, sock, "edit", n, ef); code != 0 {
		t.Fatalf("ctl edit: exit %d: %s", code, out)
	}
	l.wait(t, 60*time.Second)
	out := l.stdout()
	if !strings.Contains(out, "I'll skip the configuration update") || strings.Contains(out, "successfully updated") {
		t.Fatalf("the agent did not see the rejection:\n%s\n%s", out, l.stderr())
	}
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)

	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	var sawEdit bool
	for _, r := range recs {
		if r.K == cassette.KindFrame && r.D == cassette.DirIn && bytes.Contains(r.JSON, []byte(`"optionId":"allow"`)) {
			t.Errorf("record %d: the agent's record holds the original answer", r.N)
		}
		if r.K == cassette.KindEvent && r.Ev == cassette.EventIntercept {
			sawEdit = r.Act == "edit" && bytes.Contains(r.Orig, []byte(`"optionId":"allow"`)) && r.Held > 0 && r.Ref > 0 &&
				bytes.Contains(recs[r.Ref].JSON, []byte(`"optionId":"reject"`)) && recs[r.Ref].Icpt == "edit" && strings.Contains(r.BP, "session/request_permission")
		}
	}
	if !sawEdit || recs[0].Header.Control != sock {
		t.Errorf("no edit event with the original, or no control path (%q) in the header", recs[0].Header.Control)
	}
	// check: an edited session is still a valid one.
	checkClean(t, cas, "acp")
	// view and export mark the rows.
	if code, screen, errs := viewMain("view", "--dump", "200x40", "--keys", "fm=session/request_permission<enter>", cas); code != 0 {
		t.Errorf("view --dump: exit %d: %s", code, errs)
	} else if !strings.Contains(screen, "[edited]") {
		t.Errorf("view does not mark the edited frame:\n%s", screen)
	}
	if code, har, errs := runMain("export", "--format", "har", cas); code != 0 || !strings.Contains(har, `"X-Rpctap-Intercept"`) {
		t.Errorf("export har: exit %d, no X-Rpctap-Intercept header: %s", code, errs)
	}

	// Each side gets what it saw: the client, answering allow as it did,
	// matches the recording (its own answer is kept as the original) and
	// gets the refusal from replay --strict; the agent, driven by verify,
	// gets the rejection.
	rep := run(t, dir, "1\n", client, rp, "replay", "--speed", "0", "--strict", cas)
	if !strings.Contains(rep.stdout, "I'll skip the configuration update") {
		t.Errorf("replay to the client: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
	v := run(t, dir, "", rp, "verify", cas, "--", agent)
	if v.code != 0 {
		t.Errorf("verify against the agent: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}

// TestInterceptGoAPI drives the Go API against a live session (cat as the
// child): a breakpoint from one client, held frames listed, forwarded and
// dropped, an injected notification; the breakpoints of an attached client
// go when it closes, and the frame they held is forwarded.
func TestInterceptGoAPI(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "cat.cassette")
	cmd := exec.Command(rp, "record", "--intercept", "-o", cas, "--", "cat")
	cmd.Env = rpctapEnv()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var sock string
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "rpctap: control socket: "); ok {
			sock = p
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	lines := bufio.NewReader(stdout)
	next := func() string {
		t.Helper()
		done := make(chan string, 1)
		go func() { s, _ := lines.ReadString('\n'); done <- s }()
		select {
		case s := <-done:
			return strings.TrimSpace(s)
		case <-time.After(10 * time.Second):
			t.Fatal("no line from the child")
		}
		return ""
	}
	c, err := intercept.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Break("slow>1s"); err == nil || !strings.Contains(err.Error(), "cannot be a breakpoint") {
		t.Errorf("slow> as a breakpoint: %v", err)
	}
	bp, err := c.Break("dir:in & m:hold")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"hold/one"}`+"\n"+`{"jsonrpc":"2.0","method":"after"}`+"\n")
	var st intercept.State
	for deadline := time.Now().Add(10 * time.Second); len(st.Held) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, _ = c.List()
	}
	if len(st.Held) != 1 || st.Held[0].Method != "hold/one" || st.Held[0].Breakpoint != bp {
		t.Fatalf("held: %+v", st.Held)
	}
	// view on the live cassette attaches by itself (the header names the
	// socket); view --attach SOCKET finds the cassette from the session.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r, err := cassette.Open(cas); err == nil {
			r.Close()
			break
		}
	}
	for _, args := range [][]string{{"view", "--dump", "160x30", cas}, {"view", "--dump", "160x30", "--attach", sock}} {
		code, screen, errs := viewMain(args...)
		if code != 0 || !strings.Contains(screen, "1 held, oldest") {
			t.Errorf("%v: exit %d %s\n%s", args, code, errs, screen)
		}
		if args[len(args)-1] == sock && !strings.Contains(screen, "hold/one") {
			t.Errorf("the held frames pane does not show the frame:\n%s", screen)
		}
	}
	if _, _, err := c.Inject(cassette.DirIn, []byte(`{"jsonrpc":"2.0","method":"injected"}`), 0); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != `{"jsonrpc":"2.0","method":"injected"}` {
		t.Errorf("first line through: %s (the injection goes while the other is held)", got)
	}
	if err := c.Cancel(st.Held[0].N); err == nil || !strings.Contains(err.Error(), "notification") && !strings.Contains(err.Error(), "not a request") && !strings.Contains(err.Error(), "no cancel message") {
		t.Errorf("cancel of a notification: %v", err)
	}
	if err := c.Drop(st.Held[0].N); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != `{"jsonrpc":"2.0","method":"after"}` {
		t.Errorf("after the drop: %s", got)
	}
	if err := c.Drop(st.Held[0].N); err == nil {
		t.Errorf("dropping a frame twice: no error")
	}
	// An attached client's breakpoints are its own.
	v, err := intercept.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	v.Attach()
	c.Unbreak(bp)
	v.Break("m:viewer")
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"viewer/x"}`+"\n")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, _ = c.List(); len(st.Held) == 1 {
			break
		}
	}
	v.Close()
	if got := next(); got != `{"jsonrpc":"2.0","method":"viewer/x"}` {
		t.Errorf("after the viewer went: %s", got)
	}
	if st, _ := c.List(); len(st.Breakpoints) != 0 {
		t.Errorf("breakpoints left: %+v", st.Breakpoints)
	}
	stdin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); cmd.Process.Kill() }()
	cmd.Wait()
	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	var acts []string
	for _, r := range recs {
		if r.Ev == cassette.EventIntercept {
			b, _ := json.Marshal(r)
			acts = append(acts, r.Act+" "+string(r.D))
			if r.Act == "drop" && !bytes.Contains(r.Orig, []byte("hold/one")) {
				t.Errorf("drop without its original: %s", b)
			}
		}
	}
	if got := strings.Join(acts, ","); got != "inject in,drop in,release in" {
		t.Errorf("intercept events %s", got)
	}
}

// mcpDirect is the MCP client's output against the everything server
// without rpctap.
func mcpDirect(t *testing.T, dir, peer, server string) string {
	t.Helper()
	d := run(t, dir, "", peer, "mcp-parent", server)
	if d.code != 0 || !strings.Contains(d.stdout, "greet: error=false Hi replay") {
		t.Fatalf("the MCP client against the everything server: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
	return d.stdout
}

// TestInterceptMCPDropAnswer: an MCP Go SDK client calls tools against the
// MCP Go SDK everything server through `rpctap record --intercept`; the
// answer to its first tools/call is held and dropped. The client gives up
// on that call as on a lost answer (its per-call deadline) and the rest of
// the session goes on as without rpctap. The cassette marks the drop with
// the original, and the parent's record has no answer to that call.
func TestInterceptMCPDropAnswer(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	peer, server := testpeers.Tool(t, "testpeer"), testpeers.Tool(t, "mcpserver")
	dir := t.TempDir()
	direct := mcpDirect(t, dir, peer, server)
	cas := filepath.Join(dir, "mcp.cassette")
	l := startLive(t, dir, "", []string{"RPCTAP_TESTPEER_CALL_TIMEOUT=2s"}, peer, "mcp-parent", rp, "record", "--intercept", "-o", cas,
		"--break", "dir:out & kind:response & m=tools/call", "--", server)
	sock := l.sock(t, cas)
	n, frame := heldNumber(t, rp, sock)
	if !strings.Contains(frame, "Hi replay") {
		t.Fatalf("held %s, want greet's answer", frame)
	}
	if out, code := ctl(t, rp, sock, "unbreak", "1"); code != 0 {
		t.Fatalf("ctl unbreak: %s", out)
	}
	if out, code := ctl(t, rp, sock, "drop", n); code != 0 {
		t.Fatalf("ctl drop: %s", out)
	}
	l.wait(t, 60*time.Second)
	out := l.stdout()
	if !strings.Contains(out, "greet: error") || !strings.Contains(out, "deadline exceeded") {
		t.Errorf("the client did not give up on the lost answer:\n%s", out)
	}
	rest := func(s string) string { return s[strings.Index(s, "roots:"):] }
	if !strings.Contains(out, "roots:") || rest(out) != rest(direct) {
		t.Errorf("after the lost answer the session differs from one without rpctap:\n%s\nwant\n%s", out, direct)
	}
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)
	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	dropped := false
	for _, r := range recs {
		if r.K == cassette.KindFrame && r.D == cassette.DirOut && bytes.Contains(r.JSON, []byte("Hi replay")) {
			t.Errorf("record %d: the parent's record has the answer it never got", r.N)
		}
		if r.Ev == cassette.EventIntercept && r.Act == "drop" && bytes.Contains(r.Orig, []byte("Hi replay")) && r.D == cassette.DirOut {
			dropped = true
		}
	}
	if !dropped {
		t.Error("no drop event with the original answer")
	}
	// A dropped answer is not the server's bug: check passes the session.
	checkClean(t, cas, "mcp")
	// The client, against replay, gets what it got then: no answer to greet.
	cmd := exec.Command(peer, "mcp-parent", rp, "replay", "--speed", "0", cas)
	cmd.Env = append(rpctapEnv(), "RPCTAP_TESTPEER_CALL_TIMEOUT=2s")
	rep, _ := cmd.Output()
	if !strings.Contains(string(rep), "greet: error") || !strings.Contains(string(rep), "roots: error=false") {
		t.Errorf("replay to the client:\n%s", rep)
	}
	// The server, driven by verify, answers greet as it did: the dropped
	// answer is one verify expects.
	if v := run(t, dir, "", rp, "verify", cas, "--", server); v.code != 0 {
		t.Errorf("verify against the server: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}

// TestInterceptMCPInject: while the client's first tools/call is held,
// ctl injects a tools/call of its own toward the server; ctl prints the
// server's answer to it (taken off the wire), and the client's output is
// byte for byte the same as without rpctap.
func TestInterceptMCPInject(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	peer, server := testpeers.Tool(t, "testpeer"), testpeers.Tool(t, "mcpserver")
	dir := t.TempDir()
	direct := mcpDirect(t, dir, peer, server)
	cas := filepath.Join(dir, "inject.cassette")
	l := startLive(t, dir, "", nil, peer, "mcp-parent", rp, "record", "--intercept", "-o", cas,
		"--break", "dir:in & m=tools/call", "--", server)
	sock := l.sock(t, cas)
	n, _ := heldNumber(t, rp, sock)
	ctl(t, rp, sock, "unbreak", "1")
	call := filepath.Join(dir, "call.json")
	os.WriteFile(call, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"injected"}}}`), 0o600)
	out, code := ctl(t, rp, sock, "inject", "--to", "child", call)
	if code != 0 || !strings.Contains(out, `injected 1 id "rpctap-1"`) || !strings.Contains(out, "Hi injected") {
		t.Fatalf("ctl inject: exit %d: %s", code, out)
	}
	// The answer appears in the viewer attached to the session.
	if code, screen, errs := viewMain("view", "--dump", "200x40", "--attach", sock); code != 0 ||
		!strings.Contains(screen, "answer to inject 1:") || !strings.Contains(screen, "Hi injected") {
		t.Errorf("view --attach: exit %d %s\n%s", code, errs, screen)
	}
	if out, code := ctl(t, rp, sock, "forward", n); code != 0 {
		t.Fatalf("ctl forward: %s", out)
	}
	l.wait(t, 60*time.Second)
	if got := l.stdout(); got != direct {
		t.Errorf("the client's output with an injection:\n%s\nwithout rpctap:\n%s", got, direct)
	}
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)
	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	var marks []string
	for _, r := range recs {
		if r.K == cassette.KindFrame && r.D == cassette.DirOut && bytes.Contains(r.JSON, []byte("Hi injected")) {
			t.Errorf("record %d: the parent's record has the answer to the injection", r.N)
		}
		if r.Ev == cassette.EventIntercept {
			marks = append(marks, r.Act)
			if r.Act == "inject" && !bytes.Contains(recs[r.Ref].JSON, []byte(`"rpctap-1"`)) {
				t.Errorf("inject event's ref %d is not the injected frame", r.Ref)
			}
			if r.Act == "take" && !bytes.Contains(r.Orig, []byte("Hi injected")) {
				t.Errorf("take event without the answer: %s", r.Orig)
			}
		}
	}
	if got := strings.Join(marks, ","); got != "inject,take,forward" {
		t.Errorf("intercept events %s, want inject,take,forward", got)
	}
	checkClean(t, cas, "mcp")
}

// TestInterceptGoplsHoverEdit: an LSP driver talks to gopls through
// `rpctap record --intercept`; gopls's hover answer is held and edited.
// The driver shows the edited text (it reads the message by its
// Content-Length, which rpctap recounted), and the cassette's record of
// the message carries the recounted header.
func TestInterceptGoplsHoverEdit(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	gopls := testpeers.Gopls(t)
	peer := testpeers.Tool(t, "testpeer")
	ws := goModule(t)
	cas := filepath.Join(t.TempDir(), "gopls.cassette")
	l := startLive(t, ws, "", nil, peer, "lsp-parent", rp, "record", "--intercept", "-o", cas,
		"--break", "dir:out & kind:response & m=textDocument/hover", "--", gopls)
	sock := l.sock(t, cas)
	n, frame := heldNumber(t, rp, sock)
	var msg map[string]any
	if err := json.Unmarshal([]byte(frame), &msg); err != nil {
		t.Fatalf("held frame %s: %v", frame, err)
	}
	res := msg["result"].(map[string]any)
	res["contents"] = map[string]any{"kind": "plaintext", "value": "edited by rpctap: ünïcödé counts in bytes"}
	edited, _ := json.Marshal(msg)
	ef := filepath.Join(t.TempDir(), "hover.json")
	os.WriteFile(ef, edited, 0o600)
	if out, code := ctl(t, rp, sock, "edit", n, ef); code != 0 {
		t.Fatalf("ctl edit: %s", out)
	}
	l.wait(t, 90*time.Second)
	if out := l.stdout(); !strings.Contains(out, `hover: "edited by rpctap: ünïcödé counts in bytes"`) || !strings.Contains(out, "definition: main.go:5:5") {
		t.Fatalf("the driver did not get the edited hover:\n%s\n%s", out, l.stderr())
	}
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)
	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		if r.K == cassette.KindFrame && r.Icpt == "edit" {
			found = true
			if want := "Content-Length: " + itoa(len(r.JSON)) + "\r\n\r\n"; r.Hdr != want || !bytes.Contains(r.JSON, []byte("edited by rpctap")) {
				t.Errorf("edited message recorded with header %q, body %d bytes", r.Hdr, len(r.JSON))
			}
		}
	}
	if !found {
		t.Error("no frame marked edit")
	}
	checkClean(t, cas, "lsp")
	rep := run(t, ws, "", peer, "lsp-parent", rp, "replay", "--speed", "0", cas)
	if !strings.Contains(rep.stdout, `hover: "edited by rpctap`) {
		t.Errorf("replay to the driver: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
	// gopls, driven by verify, is held to what it sent (the original
	// hover), not to what the driver got.
	if v := run(t, ws, "", rp, "verify", cas, "--", gopls); v.code != 0 {
		t.Errorf("verify against gopls: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}

// TestRewriteBothDirectionsBothFramings: --rewrite rules run in one place
// on both directions and both framings: with cat as the child, a rule on
// the parent's frame and one on the echo come out rewritten, a
// Content-Length message with its length recounted, and the cassette marks
// each changed frame with its original.
func TestRewriteBothDirectionsBothFramings(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	for _, c := range []struct {
		name, in, want string
	}{
		{"ndjson", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"b":"keep"}}` + "\n" + `{"jsonrpc":"2.0","method":"y"}` + "\n",
			`{"jsonrpc":"2.0","id":1,"method":"x"}` + "\n" + `{"jsonrpc":"2.0","method":"y"}` + "\n"},
		{"content-length", "Content-Length: 62\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"b":"k"}}`,
			"Content-Length: 37\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"x"}`},
	} {
		cas := filepath.Join(t.TempDir(), c.name+".cassette")
		cmd := exec.Command(rp, "record", "-q", "-o", cas,
			"--rewrite", `dir:in & m=x => set params.a 2`, "--rewrite", `dir:out & m=x => delete params`, "--", "cat")
		cmd.Env = rpctapEnv()
		cmd.Stdin = strings.NewReader(c.in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(out) != c.want {
			t.Errorf("%s: the parent got %q, want %q", c.name, out, c.want)
		}
		recs, err := readCassette(cas)
		if err != nil {
			t.Fatal(err)
		}
		var marks []string
		for _, r := range recs {
			if r.K == cassette.KindFrame && r.Icpt != "" {
				marks = append(marks, string(r.D)+" "+r.Icpt+" "+string(r.JSON))
			}
			if r.Ev == cassette.EventIntercept && (r.Act != "rewrite" || r.Ref == 0 || r.Orig == nil || !strings.Contains(r.BP, "=>")) {
				t.Errorf("%s: intercept event %+v", c.name, r)
			}
		}
		want := []string{`in rewrite {"jsonrpc":"2.0","id":1,"method":"x","params":{"a":2,"b":`, `out rewrite {"jsonrpc":"2.0","id":1,"method":"x"}`}
		if len(marks) != 2 || !strings.HasPrefix(marks[0], want[0]) || marks[1] != want[1] {
			t.Errorf("%s: marked frames %q", c.name, marks)
		}
	}
	// A bad rule is a usage error.
	if code, _, errs := runMain("record", "--rewrite", "m:x => frob", "--", "cat"); code != ExitUsage || !strings.Contains(errs, "unknown action") {
		t.Errorf("bad rule: exit %d: %s", code, errs)
	}
}

// TestRewriteMCPError: a rule replaces the everything server's answer to
// tools/call greet with a JSON-RPC error; the MCP SDK client reports the
// error for that call and the others as without rpctap.
func TestRewriteMCPError(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	peer, server := testpeers.Tool(t, "testpeer"), testpeers.Tool(t, "mcpserver")
	dir := t.TempDir()
	cas := filepath.Join(dir, "rw.cassette")
	res := run(t, dir, "", peer, "mcp-parent", rp, "record", "-o", cas, "--rewrite",
		"dir:out & m=tools/call & /Hi.replay/ => error -32603 rewritten by rpctap", "--", server)
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)
	out := res.stdout + res.stderr
	if !strings.Contains(out, "greet: error") || !strings.Contains(out, "rewritten by rpctap") || !strings.Contains(out, "roots: error=false") {
		t.Errorf("the client's output:\n%s", out)
	}
	checkClean(t, cas, "mcp")
}

// TestInterceptParentDiesWhileHeld: a parent that goes away while one of
// its frames is held (no one ever forwards it) does not leave rpctap and
// the child waiting: the hangup of its stdin releases what is held, the
// child gets the frame and the end of its input, and rpctap exits with it.
func TestInterceptParentDiesWhileHeld(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	cas := filepath.Join(t.TempDir(), "dies.cassette")
	cmd := exec.Command(rp, "record", "-q", "--intercept", "--break", "m:hold", "-o", cas, "--", "cat")
	cmd.Env = rpctapEnv()
	stdin, _ := cmd.StdinPipe()
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"hold/me"}`+"\n")
	time.Sleep(300 * time.Millisecond)
	stdin.Close() // the parent is gone
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("rpctap: %v", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("rpctap still waits for a user after its parent went away")
	}
	if got := out.String(); got != `{"jsonrpc":"2.0","method":"hold/me"}`+"\n" {
		t.Errorf("the child echoed %q", got)
	}
}

// TestInterceptDAPInjectRenumbers: DAP numbers requests by seq. A request
// injected toward the adapter (while the parent's stackTrace is held) gets
// a seq above every seq the parent used; the parent's later requests are
// renumbered above it on their way, and the adapter's responses come back
// with the parent's own request_seq, so the parent's run is the same as
// without rpctap. The injected request's answer is matched by request_seq
// and taken off the wire. The cassette marks every renumbered frame with
// its original, and verify drives the adapter with what it got.
func TestInterceptDAPInjectRenumbers(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	peer := testpeers.Tool(t, "testpeer")
	dir := t.TempDir()
	direct := run(t, dir, "", peer, "dap-parent", peer, "dap-child")
	if direct.code != 0 || !strings.Contains(direct.stdout, "stackTrace: success=true") {
		t.Fatalf("the DAP pair without rpctap: exit %d\n%s%s", direct.code, direct.stdout, direct.stderr)
	}
	cas := filepath.Join(dir, "dap.cassette")
	l := startLive(t, dir, "", nil, peer, "dap-parent", rp, "record", "--intercept", "--protocol", "dap", "-o", cas,
		"--break", "dir:in & m=stackTrace", "--", peer, "dap-child")
	sock := l.sock(t, cas)
	n, _ := heldNumber(t, rp, sock)
	ctl(t, rp, sock, "unbreak", "1")
	req := filepath.Join(dir, "threads.json")
	os.WriteFile(req, []byte(`{"seq":1,"type":"request","command":"threads"}`), 0o600)
	out, code := ctl(t, rp, sock, "inject", "--to", "child", req)
	// The adapter got seqs 1-5 (stackTrace, 6, is held): the injection is 6.
	if code != 0 || !strings.Contains(out, `injected 1 id 6`) || !strings.Contains(out, `"request_seq":6`) || !strings.Contains(out, `"command":"threads"`) {
		t.Fatalf("ctl inject: exit %d: %s", code, out)
	}
	if out, code := ctl(t, rp, sock, "forward", n); code != 0 {
		t.Fatalf("ctl forward: %s", out)
	}
	l.wait(t, 60*time.Second)
	if got := l.stdout(); got != direct.stdout {
		t.Errorf("the parent's run with an injected request:\n%s\nwithout rpctap:\n%s", got, direct.stdout)
	}
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)
	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	renumbered := 0
	for _, r := range recs {
		if r.Ev == cassette.EventIntercept && strings.Contains(r.BP, "dap seq renumbering") && r.Orig != nil && recs[r.Ref].Icpt != "" {
			renumbered++
		}
	}
	// stackTrace (held when the injection went), evaluate, continue and
	// disconnect, and their four responses.
	if renumbered != 8 {
		t.Errorf("%d renumbered frames marked, want 8", renumbered)
	}
	// check judges the adapter by what it got (the renumbered seqs, the
	// injected request) and what it sent (its own request_seq, the taken
	// answer): no error and no warning.
	checkClean(t, cas, "dap")
	if v := run(t, dir, "", rp, "verify", cas, "--", peer, "dap-child"); v.code != 0 {
		t.Errorf("verify against the adapter: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	if rep := run(t, dir, "", peer, "dap-parent", rp, "replay", "--speed", "0", cas); rep.stdout != direct.stdout {
		t.Errorf("replay to the parent: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
}

// heldWhere polls `ctl list` until a held frame's line contains want and
// returns its number and frame.
func heldWhere(t *testing.T, rp, sock, want string) (string, string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out, code := ctl(t, rp, sock, "list")
		if code != 0 {
			t.Fatalf("ctl list: exit %d: %s", code, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, want) && strings.Contains(line, "{") {
				return strings.Fields(line)[0], line[strings.Index(line, "{") : strings.LastIndex(line, "}")+1]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _ := ctl(t, rp, sock, "list")
	t.Fatalf("no held frame with %q; held:\n%s", want, out)
	return "", ""
}

// interceptMarks lists the acts of a cassette's intercept events.
func interceptMarks(t *testing.T, cas string) []string {
	t.Helper()
	recs, err := readCassette(cas)
	if err != nil {
		t.Fatal(err)
	}
	var marks []string
	for _, r := range recs {
		if r.Ev == cassette.EventIntercept {
			marks = append(marks, string(r.D)+" "+r.Act)
		}
	}
	return marks
}

// TestInterceptACPInjectDropCheck: in an ACP session of the ACP Go SDK
// example client and agent, one of the agent's session/update
// notifications is dropped, a session/update of the user's is injected
// toward the client, and a session/new toward the agent (its answer taken
// off the wire) while the client's permission answer is held. check
// passes the cassette with no warning: the taken answer answers the
// injected request, the dropped notification is the agent's.
func TestInterceptACPInjectDropCheck(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	client, agent := testpeers.Tool(t, "acpclient"), testpeers.Tool(t, "acpagent")
	dir := t.TempDir()
	cas := filepath.Join(dir, "acp.cassette")
	l := startLive(t, dir, "1\n", nil, client, rp, "record", "--intercept", "-o", cas,
		"--break", "dir:out & m=session/update", "--break", "dir:in & kind:response & m=session/request_permission", "--", agent)
	sock := l.sock(t, cas)
	n, frame := heldWhere(t, rp, sock, " out session/update ")
	var upd struct {
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(frame), &upd); err != nil || upd.Params.SessionID == "" {
		t.Fatalf("held %s: no sessionId (%v)", frame, err)
	}
	ctl(t, rp, sock, "unbreak", "1")
	if out, code := ctl(t, rp, sock, "drop", n); code != 0 {
		t.Fatalf("ctl drop: %s", out)
	}
	perm, _ := heldWhere(t, rp, sock, " in session/request_permission")
	ctl(t, rp, sock, "unbreak", "2")
	note := filepath.Join(dir, "note.json")
	os.WriteFile(note, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`+upd.Params.SessionID+
		`","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"injected by rpctap"}}}}`), 0o600)
	if out, code := ctl(t, rp, sock, "inject", "--to", "parent", note); code != 0 {
		t.Fatalf("ctl inject --to parent: exit %d: %s", code, out)
	}
	req := filepath.Join(dir, "new.json")
	os.WriteFile(req, []byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"`+dir+`","mcpServers":[]}}`), 0o600)
	if out, code := ctl(t, rp, sock, "inject", "--to", "child", req); code != 0 || !strings.Contains(out, `"sessionId"`) {
		t.Fatalf("ctl inject --to child: exit %d: %s", code, out)
	}
	if out, code := ctl(t, rp, sock, "forward", perm); code != 0 {
		t.Fatalf("ctl forward: %s", out)
	}
	l.wait(t, 60*time.Second)
	if out := l.stdout(); !strings.Contains(out, "injected by rpctap") {
		t.Errorf("the client did not show the injected update:\n%s\n%s", out, l.stderr())
	}
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)
	marks := strings.Join(interceptMarks(t, cas), ",")
	for _, want := range []string{"out drop", "out inject", "in inject", "out take", "in forward"} {
		if !strings.Contains(marks, want) {
			t.Errorf("intercept events %s: no %q", marks, want)
		}
	}
	checkClean(t, cas, "acp")
}

// TestInterceptLSPInjectCheck: gopls through the LSP driver; while the
// driver's shutdown request is held, a textDocument/documentSymbol
// request is injected toward gopls (its answer taken off the wire) and a
// window/logMessage toward the driver, each in Content-Length framing. The
// driver gets its answers, and check passes the cassette with no warning:
// the taken answer answers the injected request.
func TestInterceptLSPInjectCheck(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	gopls := testpeers.Gopls(t)
	peer := testpeers.Tool(t, "testpeer")
	ws := goModule(t)
	cas := filepath.Join(t.TempDir(), "gopls.cassette")
	l := startLive(t, ws, "", nil, peer, "lsp-parent", rp, "record", "--intercept", "-o", cas,
		"--break", "dir:in & m=shutdown", "--", gopls)
	sock := l.sock(t, cas)
	hover, _ := heldWhere(t, rp, sock, " in shutdown ")
	ctl(t, rp, sock, "unbreak", "1")
	dir := t.TempDir()
	req := filepath.Join(dir, "symbol.json")
	os.WriteFile(req, []byte(`{"jsonrpc":"2.0","id":1,"method":"textDocument/documentSymbol","params":{"textDocument":{"uri":"file://`+ws+`/main.go"}}}`), 0o600)
	if out, code := ctl(t, rp, sock, "inject", "--wait", "60s", "--to", "child", req); code != 0 || !strings.Contains(out, `"Greet"`) {
		t.Fatalf("ctl inject --to child: exit %d: %s", code, out)
	}
	conf := filepath.Join(dir, "conf.json")
	os.WriteFile(conf, []byte(`{"jsonrpc":"2.0","method":"window/logMessage","params":{"type":3,"message":"injected by rpctap"}}`), 0o600)
	if out, code := ctl(t, rp, sock, "inject", "--to", "parent", conf); code != 0 {
		t.Fatalf("ctl inject --to parent: exit %d: %s", code, out)
	}
	if out, code := ctl(t, rp, sock, "forward", hover); code != 0 {
		t.Fatalf("ctl forward: %s", out)
	}
	l.wait(t, 90*time.Second)
	if out := l.stdout(); !strings.Contains(out, "hover:") || !strings.Contains(out, "definition: main.go:5:5") {
		t.Fatalf("the driver's run:\n%s\n%s", out, l.stderr())
	}
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)
	marks := strings.Join(interceptMarks(t, cas), ",")
	for _, want := range []string{"in inject", "out take", "out inject", "in forward"} {
		if !strings.Contains(marks, want) {
			t.Errorf("intercept events %s: no %q", marks, want)
		}
	}
	checkClean(t, cas, "lsp")
}

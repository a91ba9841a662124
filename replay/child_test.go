package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
)

// peer drives a fake child the way a parent would.
type peer struct {
	t   *testing.T
	c   *Child
	out *bufio.Reader
}

func startPeer(t *testing.T, recs []cassette.Record, opts ...Option) *peer {
	t.Helper()
	c, err := StartChild(FromRecords(t.Name(), recs), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &peer{t: t, c: c, out: bufio.NewReader(c.Stdout)}
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.c.Stdin, line+"\n"); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

// recvPast reads frames until one whose method is not method, and returns
// it with the number of frames read past.
func (p *peer) recvPast(method string) (r map[string]any, n int) {
	p.t.Helper()
	for r = p.recv(); r["method"] == method; r = p.recv() {
		n++
	}
	return r, n
}

// recv reads one line (with a generous deadline so a bug fails instead of hanging).
func (p *peer) recv() map[string]any {
	p.t.Helper()
	type res struct {
		line []byte
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := p.out.ReadBytes('\n')
		ch <- res{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			p.t.Fatalf("read: %v (got %q)", r.err, r.line)
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(r.line))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			p.t.Fatalf("not JSON from the fake child: %q", r.line)
		}
		return m
	case <-time.After(10 * time.Second):
		p.t.Fatalf("no frame from the fake child within 10s")
		return nil
	}
}

func jsonOf(v any) string { return string(mustJSON(v)) }

func acpRecording(t *testing.T) []cassette.Record {
	b := fromTrafficSequential(t, "acp-go", "acp")
	b.stderr("agent: bye")
	b.event(cassette.EventStdinEOF, nil)
	b.event(cassette.EventExit, intp(3))
	return b.end()
}

const sess = "sess_d19697b4d00049da84f8ab34"

func TestChildACPRemapsIDsBothWays(t *testing.T) {
	p := startPeer(t, acpRecording(t), WithSpeed(0))
	// Live ids differ from the recorded 1, 2, 3, and the cwd differs too.
	p.send(`{"jsonrpc":"2.0","id":100,"method":"initialize","params":{"clientCapabilities":{"auth":{},"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"protocolVersion":1}}`)
	r := p.recv()
	if jsonOf(r["id"]) != "100" || r["result"] == nil {
		t.Fatalf("initialize answer: %v", r)
	}
	p.send(`{"jsonrpc":"2.0","id":"two","method":"session/new","params":{"cwd":"/elsewhere","mcpServers":[]}}`)
	r = p.recv()
	if jsonOf(r["id"]) != `"two"` || jsonOf(r["result"]) != `{"sessionId":"`+sess+`"}` {
		t.Fatalf("session/new answer: %v", r)
	}
	p.send(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"prompt":[{"text":"Hello, agent!","type":"text"}],"sessionId":"` + sess + `"}}`)
	r, updates := p.recvPast("session/update")
	if updates != 6 || r["method"] != "session/request_permission" || jsonOf(r["id"]) != "1" {
		t.Fatalf("after %d updates want the recorded permission request with the recorded id 1, got %v", updates, r)
	}
	// The answer is matched by the id the fake child issued.
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"optionId":"allow","outcome":"selected"}}}`)
	r, n := p.recvPast("session/update")
	updates += n
	if updates != 8 || jsonOf(r["id"]) != "7" || jsonOf(r["result"]) != `{"stopReason":"end_turn"}` {
		t.Fatalf("prompt answer: %v (updates %d)", r, updates)
	}
	p.c.Stdin.Close()
	errb, _ := io.ReadAll(p.c.Stderr)
	res, err := p.c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Divergences) != 0 {
		t.Fatalf("divergences: %v", res.Divergences)
	}
	if res.Exit == nil || res.Exit.Code != 3 {
		t.Fatalf("exit: %+v", res.Exit)
	}
	if string(errb) != "agent: bye\n" {
		t.Fatalf("stderr %q", errb)
	}
	if res.Matched != 4 || res.Sent != 12 {
		t.Fatalf("matched %d sent %d", res.Matched, res.Sent)
	}
}

func TestChildUnexpectedRequestGetsJSONRPCErrorAndReport(t *testing.T) {
	var report bytes.Buffer
	p := startPeer(t, acpRecording(t), WithSpeed(0), WithStrict(true), WithReport(&report), WithName("rpctap replay"))
	p.send(`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"auth":{}},"apiKey":"sk-123"}}`)
	r := p.recv()
	e, _ := r["error"].(map[string]any)
	if jsonOf(r["id"]) != "5" || e == nil || jsonOf(e["code"]) != "-32602" {
		t.Fatalf("want a -32602 error with the live id, got %v", r)
	}
	// A method the cassette never saw: method not found.
	p.send(`{"jsonrpc":"2.0","id":6,"method":"session/fly","params":{}}`)
	r = p.recv()
	e, _ = r["error"].(map[string]any)
	if jsonOf(r["id"]) != "6" || e == nil || jsonOf(e["code"]) != "-32601" {
		t.Fatalf("want -32601, got %v", r)
	}
	// The recording is still where it was: the right initialize works.
	p.send(`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"clientCapabilities":{"auth":{},"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"protocolVersion":1}}`)
	if r = p.recv(); jsonOf(r["id"]) != "8" || r["result"] == nil {
		t.Fatalf("initialize after a miss: %v", r)
	}
	p.c.Stdin.Close()
	res, err := p.c.Wait()
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("strict: want ErrDiverged, got %v", err)
	}
	// 2 misses + 3 recorded parent frames never sent.
	kinds := map[DivergenceKind]int{}
	for _, d := range res.Divergences {
		kinds[d.Kind]++
	}
	if kinds[Unexpected] != 2 || kinds[Missing] != 3 {
		t.Fatalf("divergences %v", res.Divergences)
	}
	d := res.Divergences[0]
	if d.Record != 2 || d.Method != "initialize" || len(d.Diff) != 2 {
		t.Fatalf("first divergence %+v", d)
	}
	if d.Diff[0].Path != "/params/apiKey" || d.Diff[1].Path != "/params/protocolVersion" {
		t.Fatalf("diff %v", d.Diff)
	}
	rep := report.String()
	for _, want := range []string{"rpctap replay: first divergence from TestChildUnexpected", "nearest recorded candidate: record #2 request initialize",
		"/params/protocolVersion: 1 -> 2", "answered with:", "never sent: #4 session/new, #6 session/prompt, #14 session/request_permission"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	if strings.Contains(rep, "sk-123") {
		t.Errorf("report shows a secret:\n%s", rep)
	}
}

func TestChildNotStrictStillReports(t *testing.T) {
	p := startPeer(t, acpRecording(t), WithSpeed(0))
	p.send(`{"jsonrpc":"2.0","id":5,"method":"session/load","params":{"cwd":"/x","mcpServers":[],"sessionId":"s"}}`)
	r := p.recv()
	if r["error"] == nil {
		t.Fatalf("want a refusal, got %v", r)
	}
	p.c.Stdin.Close()
	res, err := p.c.Wait()
	if err != nil || !res.Diverged() {
		t.Fatalf("err %v, diverged %v", err, res.Diverged())
	}
}

func TestChildWindowAllowsOutOfOrderRequests(t *testing.T) {
	b := fromTrafficSequential(t, "mcp-go-everything", "mcp")
	p := startPeer(t, b.end(), WithSpeed(0))
	in, _ := testpeers.Fixture(t, "mcp-go-everything")
	p.send(string(in[0]))
	if r := p.recv(); jsonOf(r["id"]) != "1" {
		t.Fatal(r)
	}
	// resources/list (recorded third, id 3) sent before tools/list (id 2),
	// with ids swapped around.
	p.send(strings.Replace(string(in[2]), `"id":3`, `"id":20`, 1))
	p.send(strings.Replace(string(in[1]), `"id":2`, `"id":30`, 1))
	r1, r2 := p.recv(), p.recv()
	// The recorded order of answers is kept (tools first), each with the id
	// its live request used.
	if jsonOf(r1["id"]) != "30" || jsonOf(r2["id"]) != "20" {
		t.Fatalf("ids %v %v", r1["id"], r2["id"])
	}
	if !strings.Contains(jsonOf(r1["result"]), `"tools"`) || !strings.Contains(jsonOf(r2["result"]), `"resources"`) {
		t.Fatalf("answers swapped")
	}
}

func TestChildWindowOneForcesRecordedOrder(t *testing.T) {
	b := fromTrafficSequential(t, "mcp-go-everything", "mcp")
	p := startPeer(t, b.end(), WithSpeed(0), WithWindow(1))
	in, _ := testpeers.Fixture(t, "mcp-go-everything")
	p.send(string(in[0]))
	p.recv()
	p.send(string(in[2]))
	if r := p.recv(); r["error"] == nil {
		t.Fatalf("window 1: want a refusal, got %v", r)
	}
}

func TestChildPiIDsAndTextLines(t *testing.T) {
	b := fromTrafficBatch(t, "pi-session", "pi")
	p := startPeer(t, b.end(), WithSpeed(0))
	in, _ := testpeers.Fixture(t, "pi-session")
	for _, l := range in {
		p.send(strings.Replace(string(l), `"id":"`, `"id":"live-`, 1))
	}
	got := map[string]string{}
	events := 0
	for len(got) < 7 {
		r := p.recv()
		if r["type"] != "response" {
			events++
			continue
		}
		id, _ := r["id"].(string)
		got[r["command"].(string)] = id
	}
	want := map[string]string{"parse": "", "get_state": "live-st", "set_thinking_level": "live-lv", "get_session_stats": "live-ss",
		"prompt": "live-p1", "get_messages": "", "no_such_command": ""}
	if jsonOf(got) != jsonOf(want) {
		t.Fatalf("got %v", got)
	}
	if events != 12 {
		t.Errorf("%d events replayed between the responses, the session has 12", events)
	}
	p.c.Stdin.Close()
	if res, err := p.c.Wait(); err != nil || res.Diverged() {
		t.Fatalf("%v %v", err, res.Divergences)
	}
}

func synapsRecording() []cassette.Record {
	b := newBuilder("synaps")
	b.frame(cassette.DirOut, []byte(`{"type":"ready","session_id":"s-rec-1","model":"m","protocol_version":1}`))
	b.frame(cassette.DirIn, []byte(`{"type":"prompt","id":"abc","message":"hello"}`))
	b.frame(cassette.DirOut, []byte(`{"type":"message_update","event":{"type":"text_delta","delta":"hi"}}`))
	b.frame(cassette.DirOut, []byte(`{"type":"agent_end","usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`))
	b.frame(cassette.DirOut, []byte(`{"type":"response","id":"abc","command":"prompt","ok":true}`))
	b.frame(cassette.DirIn, []byte(`{"type":"get_state","id":"q1"}`))
	b.frame(cassette.DirOut, []byte(`{"type":"response","id":"q1","command":"get_state","streaming":false,"model":"m","session_id":"s-rec-1","message_count":2}`))
	b.frame(cassette.DirIn, []byte(`{"type":"shutdown"}`))
	b.event(cassette.EventExit, intp(0))
	return b.end()
}

func TestChildSynapsRefusalAndIDs(t *testing.T) {
	p := startPeer(t, synapsRecording(), WithSpeed(0))
	if r := p.recv(); r["type"] != "ready" {
		t.Fatal(r)
	}
	p.send(`{"type":"prompt","id":"zz","message":"goodbye"}`)
	r := p.recv()
	if r["type"] != "error" || r["id"] != "zz" || !strings.Contains(r["message"].(string), "record #2") {
		t.Fatalf("synaps refusal: %v", r)
	}
	p.send(`{"type":"prompt","id":"L1","message":"hello"}`)
	p.recv()
	p.recv()
	if r = p.recv(); r["id"] != "L1" || r["type"] != "response" {
		t.Fatalf("%v", r)
	}
	p.send(`{"type":"get_state","id":"L2"}`)
	if r = p.recv(); r["id"] != "L2" {
		t.Fatalf("%v", r)
	}
	p.send(`{"type":"shutdown"}`)
	res, err := p.c.Wait() // the recorded exit follows the shutdown: no EOF needed
	if err != nil || res.Exit == nil || res.Exit.Code != 0 || len(res.Divergences) != 1 {
		t.Fatalf("%v %+v %v", err, res.Exit, res.Divergences)
	}
	if _, err := p.c.Stdin.Write([]byte("{}\n")); err == nil {
		t.Fatal("writing to an ended fake child should fail")
	}
}

func TestChildOPIRefusal(t *testing.T) {
	b := newBuilder("opi")
	b.frame(cassette.DirOut, []byte(`{"type":"rpc_ready","schema_version":3,"mode":"rpc","version":"0.6.3"}`))
	b.frame(cassette.DirIn, []byte(`{"type":"set_model","id":"r1","model":"a:b"}`))
	b.frame(cassette.DirOut, []byte(`{"type":"response","command":"set_model","success":true,"id":"r1","data":{"model":"a:b"}}`))
	p := startPeer(t, b.end(), WithSpeed(0))
	p.recv()
	p.send(`{"type":"set_model","id":"x9","model":"c:d"}`)
	r := p.recv()
	if r["type"] != "response" || r["success"] != false || r["id"] != "x9" || r["command"] != "set_model" || r["error"] == nil {
		t.Fatalf("opi refusal: %v", r)
	}
	p.send(`{"type":"set_model","id":"x10","model":"a:b"}`)
	if r = p.recv(); r["success"] != true || r["id"] != "x10" {
		t.Fatalf("%v", r)
	}
}

func TestChildSpeedKeepsRecordedDelays(t *testing.T) {
	b := newBuilder("synaps")
	b.frame(cassette.DirIn, []byte(`{"type":"get_state","id":"a"}`))
	b.Wait(80e6) // the answer came 80 ms later
	b.frame(cassette.DirOut, []byte(`{"type":"response","id":"a","command":"get_state"}`))
	p := startPeer(t, b.end(), WithSpeed(1))
	start := time.Now()
	p.send(`{"type":"get_state","id":"a"}`)
	p.recv()
	// A lower bound only: the replay may be late on a busy machine, never early.
	if el := time.Since(start); el < 80*time.Millisecond {
		t.Fatalf("answered after %v, recorded delay was 81ms", el)
	}
	p2 := startPeer(t, b.Records, WithSpeed(4))
	start = time.Now()
	p2.send(`{"type":"get_state","id":"a"}`)
	p2.recv()
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Fatalf("speed 4: answered after %v, want at least 20ms", el)
	}
}

func TestChildCutOffRecordingWaitsForEOF(t *testing.T) {
	b := newBuilder("synaps")
	b.frame(cassette.DirOut, []byte(`{"type":"ready","session_id":"s","model":"m","protocol_version":1}`))
	c, err := StartChild(FromRecords("cut", b.Records), WithSpeed(0)) // no exit, no end record
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c.Stdout).ReadString('\n')
	if !strings.Contains(line, "ready") {
		t.Fatal(line)
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatal("a cut-off recording must keep the fake child alive until stdin closes")
	case <-time.After(50 * time.Millisecond):
	}
	c.Stdin.Close()
	res, err := c.Wait()
	if err != nil || res.Exit != nil {
		t.Fatalf("%v %+v", err, res.Exit)
	}
}

func TestChildBindsIgnoredValues(t *testing.T) {
	// The parent's cwd is ignored when matching; the live value replaces
	// the recorded one in what the fake child says afterwards.
	b := newBuilder("acp")
	b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/rec/proj","mcpServers":[]}}`))
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"S1","_meta":{"cwd":"/home/rec/proj"}}}`))
	p := startPeer(t, b.end(), WithSpeed(0))
	p.send(`{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"/tmp/live","mcpServers":[]}}`)
	r := p.recv()
	if jsonOf(r["result"]) != `{"_meta":{"cwd":"/tmp/live"},"sessionId":"S1"}` {
		t.Fatalf("%v", r)
	}
}

func TestStartChildErrors(t *testing.T) {
	if _, err := StartChild(FromRecords("empty", newBuilder("acp").end())); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := StartChild(FromRecords("x", synapsRecording()), WithProtocol("acp")); err == nil || !strings.Contains(err.Error(), "records a synaps session, not acp") {
		t.Fatalf("other protocol: %v", err)
	}
	if _, err := StartChild(FromRecords("x", synapsRecording()), WithIgnore("params/x")); err == nil {
		t.Fatal("bad ignore pattern accepted")
	}
	b := newBuilder("brainwires")
	b.add(cassette.Record{K: cassette.KindFrame, Conn: 1, D: cassette.DirIn, JSON: []byte(`{"type":"cancel"}`)})
	b.add(cassette.Record{K: cassette.KindFrame, Conn: 2, D: cassette.DirIn, JSON: []byte(`{"type":"cancel"}`)})
	if _, err := StartChild(FromRecords("sock", b.Records)); err == nil || !strings.Contains(err.Error(), "--conn") {
		t.Fatalf("two conns: %v", err)
	}
	if _, err := StartChild(FromRecords("sock", b.Records), WithConn(3)); err == nil {
		t.Fatal("conn 3 accepted")
	}
	if _, err := StartChild(FromRecords("sock", b.Records), WithConn(2)); err != nil {
		t.Fatal(err)
	}
}

func TestRunChildContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan error, 1)
	go func() {
		_, err := RunChild(ctx, FromRecords("x", synapsRecording()), pr, io.Discard, io.Discard, nil, WithSpeed(0))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestChildSignals(t *testing.T) {
	rec := func() []cassette.Record {
		b := newBuilder("synaps")
		b.frame(cassette.DirOut, []byte(`{"type":"ready","session_id":"s","model":"m","protocol_version":1}`))
		b.add(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventSignal, Signal: "SIGINT"})
		b.stderr("interrupted")
		b.add(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventExit, Exit: intp(130)})
		return b.end()
	}
	// The recorded SIGINT: the exit waits for it, then comes as recorded.
	p := startPeer(t, rec(), WithSpeed(0))
	p.recv()
	select {
	case <-p.c.done:
		t.Fatal("the fake child exited before the recorded signal came")
	case <-time.After(30 * time.Millisecond):
	}
	if !p.c.Signal("SIGINT") {
		t.Fatal("signal not delivered")
	}
	res, err := p.c.Wait()
	if err != nil || res.Exit.Code != 130 || len(res.Divergences) != 0 {
		t.Fatalf("%v %+v %v", err, res.Exit, res.Divergences)
	}
	if b, _ := io.ReadAll(p.c.Stderr); string(b) != "interrupted\n" {
		t.Fatalf("stderr %q", b)
	}
	// Another signal: the fake child dies of it, reported.
	p = startPeer(t, rec(), WithSpeed(0))
	p.recv()
	p.c.Signal("SIGTERM")
	res, _ = p.c.Wait()
	if res.Exit.Code != 143 || res.Exit.Signal != "SIGTERM" || len(res.Divergences) != 2 || res.Divergences[0].Method != "SIGTERM" || res.Divergences[1].Kind != Missing {
		t.Fatalf("%+v %v", res.Exit, res.Divergences)
	}
}

func TestChildRedactedRecordingMatchesLiveSecret(t *testing.T) {
	b := newBuilder("acp")
	b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"key","apiKey":"[REDACTED]"}}`))
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	var rep bytes.Buffer
	p := startPeer(t, b.end(), WithSpeed(0), WithReport(&rep))
	// A different methodId is a miss, and the report does not show the secret.
	p.send(`{"jsonrpc":"2.0","id":5,"method":"authenticate","params":{"methodId":"oauth","apiKey":"sk-live-secret"}}`)
	if r := p.recv(); r["error"] == nil {
		t.Fatalf("%v", r)
	}
	p.send(`{"jsonrpc":"2.0","id":4,"method":"authenticate","params":{"methodId":"key","apiKey":"sk-live-secret"}}`)
	if r := p.recv(); jsonOf(r["id"]) != "4" || r["result"] == nil {
		t.Fatalf("%v", r)
	}
	if strings.Contains(rep.String(), "sk-live") || !strings.Contains(rep.String(), `/params/methodId: "key" -> "oauth"`) {
		t.Fatalf("report:\n%s", rep.String())
	}
}

func TestChildExitRecordedBeforeDrainedOutput(t *testing.T) {
	// The tap reaped the child before it read the child's last output: the
	// exit event sits before frames the child wrote while alive.
	b := newBuilder("acp")
	b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`))
	b.event(cassette.EventStdinEOF, nil)
	b.event(cassette.EventExit, intp(0))
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`))
	b.stderr("bye")
	p := startPeer(t, b.end(), WithSpeed(0))
	p.send(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}`)
	p.c.Stdin.Close()
	if r := p.recv(); jsonOf(r["id"]) != "7" {
		t.Fatalf("%v", r)
	}
	res, err := p.c.Wait()
	if b, _ := io.ReadAll(p.c.Stderr); string(b) != "bye\n" || err != nil || res.Exit.Code != 0 {
		t.Fatalf("stderr %q, %v", b, err)
	}
}

func TestRedactValue(t *testing.T) {
	v, _ := decodeJSON([]byte(`{"apiKey":"k1","env":{"HOME":"/h"},"cmd":{"env":[{"name":"TOKEN","value":"t"}]},"headers":[{"name":"Authorization","value":"Bearer x"},{"name":"Accept","value":"json"}],"token":""}`))
	got := jsonOf(redactValue("", v))
	want := `{"apiKey":"[REDACTED]","cmd":{"env":[{"name":"TOKEN","value":"[REDACTED]"}]},"env":{"HOME":"[REDACTED]"},"headers":[{"name":"Authorization","value":"[REDACTED]"},{"name":"Accept","value":"json"}],"token":""}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestChildLongFramesAndParts(t *testing.T) {
	big := strings.Repeat("x", 3<<20) // 3 MiB, beyond any buffer
	b := newBuilder("synaps")
	b.frame(cassette.DirIn, []byte(`{"type":"prompt","id":"p","message":"`+big+`"}`))
	// The child's answer was recorded in two parts (a line longer than the
	// recorder holds whole).
	resp := `{"type":"response","id":"p","command":"prompt","echo":"` + big + `"}`
	r1 := cassette.NewLineRecord(cassette.KindFrame, cassette.DirOut, []byte(resp[:1<<20]), "")
	r1.Part = true
	b.add(r1)
	b.add(cassette.NewLineRecord(cassette.KindFrame, cassette.DirOut, []byte(resp[1<<20:]), "\n"))
	p := startPeer(t, b.end(), WithSpeed(0))
	go io.WriteString(p.c.Stdin, `{"type":"prompt","id":"live","message":"`+big+`"}`+"\n")
	r := p.recv()
	if r["id"] != "live" || r["echo"] != big {
		t.Fatalf("id %v, echo of %d bytes", r["id"], len(fmt.Sprint(r["echo"])))
	}
}

package intercept

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/tap"
)

// sink collects what a Writer forwards, one forward call a chunk.
type sink struct {
	mu     sync.Mutex
	chunks [][]byte
}

func (k *sink) forward(b []byte) error {
	k.mu.Lock()
	k.chunks = append(k.chunks, append([]byte(nil), b...))
	k.mu.Unlock()
	return nil
}

func (k *sink) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return string(bytes.Join(k.chunks, nil))
}

type rig struct {
	s       *Session
	in, out *Writer
	kin     *sink
	kout    *sink
	mu      sync.Mutex
	events  []tap.Event
}

func newRig(t *testing.T, opt Options) *rig {
	t.Helper()
	r := &rig{kin: &sink{}, kout: &sink{}}
	opt.Note = func(e tap.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	r.in = s.Wrap(tap.Stdin, r.kin.forward).(*Writer)
	r.out = s.Wrap(tap.Stdout, r.kout.forward).(*Writer)
	return r
}

func (r *rig) evs() []tap.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tap.Event(nil), r.events...)
}

// waitHeld waits until n frames are held and returns them.
func waitHeld(t *testing.T, s *Session, n int) []Held {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h := s.HeldFrames()
		if len(h) == n {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d frames held, want %d", len(h), n)
		}
		select {
		case <-s.Changed():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestPassThroughKeepsChunks: with no breakpoint, every chunk goes out
// whole and at once, as the plain tap would forward it, however it cuts
// frames, and whatever the bytes are.
func TestPassThroughKeepsChunks(t *testing.T) {
	r := newRig(t, Options{})
	chunks := []string{`{"jsonrpc":"2.0","id":1,"meth`, `od":"initialize"}` + "\n" + `{"a":`, "1}\r\n\x00\xff junk\n", "no newline at the end"}
	for _, c := range chunks {
		r.in.Write([]byte(c))
	}
	r.in.Flush()
	if len(r.kin.chunks) != len(chunks) {
		t.Fatalf("%d forwards for %d chunks", len(r.kin.chunks), len(chunks))
	}
	for i, c := range chunks {
		if string(r.kin.chunks[i]) != c {
			t.Errorf("chunk %d: %q, want %q", i, r.kin.chunks[i], c)
		}
	}
}

// TestHoldForwardOrder: a held frame holds the frames behind it in its
// direction; the other direction flows; forward lets both go, in order,
// and an intercept event follows.
func TestHoldForwardOrder(t *testing.T) {
	r := newRig(t, Options{})
	if _, err := r.s.Break("m:tools/call", 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		r.in.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}` + "\n"))
		r.in.Write([]byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"))
		close(done)
	}()
	h := waitHeld(t, r.s, 1)
	if h[0].Method != "tools/call" || h[0].Dir != cassette.DirIn || h[0].Breakpoint != 1 {
		t.Fatalf("held %+v", h[0])
	}
	if got := r.kin.String(); got != `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n" {
		t.Errorf("before forward the child got %q", got)
	}
	// The other direction flows meanwhile.
	r.out.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}` + "\n"))
	if !strings.Contains(r.kout.String(), `"tools":[]`) {
		t.Errorf("the parent's answer did not flow while a request was held")
	}
	select {
	case <-done:
		t.Fatal("frames behind the held one went through")
	case <-time.After(50 * time.Millisecond):
	}
	if err := r.s.Forward(h[0].N); err != nil {
		t.Fatal(err)
	}
	<-done
	want := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"
	if got := r.kin.String(); got != want {
		t.Errorf("child got %q", got)
	}
	ev := r.evs()
	if len(ev) != 1 || ev[0].Action != "forward" || ev[0].HeldNs <= 0 || ev[0].Breakpoint != "1 m:tools/call" || ev[0].Original != nil {
		t.Errorf("events %+v", ev)
	}
}

// TestResponseCarriesRequestMethod: kind:response & m=METHOD holds the
// answer to a request of METHOD, which names no method itself.
func TestResponseCarriesRequestMethod(t *testing.T) {
	r := newRig(t, Options{Protocol: "acp"})
	r.s.Break("kind:response & m=session/request_permission", 0)
	r.out.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}}` + "\n"))
	done := make(chan struct{})
	go func() {
		r.in.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}` + "\n"))
		close(done)
	}()
	h := waitHeld(t, r.s, 1)
	if h[0].Method != "session/request_permission" || h[0].Kind != "response" {
		t.Fatalf("held %+v", h[0])
	}
	if err := r.s.Edit(h[0].N, []byte("{\n  \"jsonrpc\": \"2.0\", \"id\": 0,\n  \"result\": {\"outcome\": {\"outcome\": \"cancelled\"}}\n}\n")); err != nil {
		t.Fatal(err)
	}
	<-done
	if got, want := r.kin.String(), `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`+"\n"; got != want {
		t.Errorf("child got %q, want %q", got, want)
	}
	ev := r.evs()
	if len(ev) != 1 || ev[0].Action != "edit" || !strings.Contains(string(ev[0].Original), `"allow"`) {
		t.Errorf("events %+v", ev)
	}
}

// TestEditContentLength: an edited frame on a Content-Length stream gets
// its length recounted, the header's other bytes kept.
func TestEditContentLength(t *testing.T) {
	r := newRig(t, Options{Protocol: "lsp"})
	req := `{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{}}`
	r.in.Write([]byte("Content-Length: " + itoa(len(req)) + "\r\n\r\n" + req))
	r.s.Break("dir:out & kind:response", 0)
	body := `{"jsonrpc":"2.0","id":7,"result":{"contents":"old"}}`
	done := make(chan struct{})
	go func() {
		r.out.Write([]byte("Content-Length: " + itoa(len(body)) + "\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + body[:20]))
		r.out.Write([]byte(body[20:]))
		close(done)
	}()
	h := waitHeld(t, r.s, 1)
	if h[0].Method != "textDocument/hover" {
		t.Errorf("held %+v", h[0])
	}
	edited := `{"jsonrpc":"2.0","id":7,"result":{"contents":"an edited hover, longer"}}`
	if err := r.s.Edit(h[0].N, []byte(edited)); err != nil {
		t.Fatal(err)
	}
	<-done
	want := "Content-Length: " + itoa(len(edited)) + "\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + edited
	if got := r.kout.String(); got != want {
		t.Errorf("parent got %q, want %q", got, want)
	}
}

// TestEditRefusesBadJSON: an edit must be valid JSON; the frame stays held.
func TestEditRefusesBadJSON(t *testing.T) {
	r := newRig(t, Options{})
	r.s.Break("dir:in", 0)
	go r.in.Write([]byte(`{"a":1}` + "\n"))
	h := waitHeld(t, r.s, 1)
	if err := r.s.Edit(h[0].N, []byte(`{"a":`)); err == nil || !strings.Contains(err.Error(), "JSON") {
		t.Errorf("edit with broken JSON: %v", err)
	}
	if len(r.s.HeldFrames()) != 1 {
		t.Errorf("a refused edit let the frame go")
	}
	r.s.Release()
}

// TestDropTimeoutRelease: drop sends nothing and keeps the original in the
// event; the timeout and Release forward unchanged.
func TestDropTimeoutRelease(t *testing.T) {
	r := newRig(t, Options{Timeout: 50 * time.Millisecond})
	r.s.Break("m:drop-me", 0)
	r.s.Break("m:wait", 0)
	done := make(chan struct{})
	go func() {
		r.in.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"drop-me"}` + "\n"))
		close(done)
	}()
	h := waitHeld(t, r.s, 1)
	r.s.Drop(h[0].N)
	<-done
	if got := r.kin.String(); got != "" {
		t.Errorf("a dropped frame went out: %q", got)
	}
	start := time.Now()
	r.in.Write([]byte(`{"jsonrpc":"2.0","id":2,"method":"wait"}` + "\n"))
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("held for %v, want the timeout of 50ms", d)
	}
	if !strings.Contains(r.kin.String(), `"wait"`) {
		t.Errorf("the timeout did not forward the frame")
	}
	ev := r.evs()
	if len(ev) != 2 || ev[0].Action != "drop" || !strings.Contains(string(ev[0].Original), "drop-me") || ev[1].Action != "timeout" {
		t.Errorf("events %+v", ev)
	}
	// Release: everything held goes, nothing more is held.
	r2 := newRig(t, Options{})
	r2.s.Break("dir:in", 0)
	done2 := make(chan struct{})
	go func() { r2.in.Write([]byte("{\"x\":1}\n{\"x\":2}\n")); close(done2) }()
	waitHeld(t, r2.s, 1)
	r2.s.Release()
	<-done2
	if got := r2.kin.String(); got != "{\"x\":1}\n{\"x\":2}\n" {
		t.Errorf("after Release the child got %q", got)
	}
}

// TestDetachForwardsOwned: when the connection that set a breakpoint goes,
// the breakpoint goes and its held frame is forwarded; the session's own
// breakpoints stay.
func TestDetachForwardsOwned(t *testing.T) {
	r := newRig(t, Options{})
	r.s.Break("m:mine", 7)
	r.s.Break("m:session", 0)
	done := make(chan struct{})
	go func() { r.in.Write([]byte(`{"method":"mine"}` + "\n")); close(done) }()
	waitHeld(t, r.s, 1)
	r.s.Detach(7)
	<-done
	if bps := r.s.Breakpoints(); len(bps) != 1 || bps[0].Expr != "m:session" {
		t.Errorf("breakpoints after detach: %+v", bps)
	}
	if ev := r.evs(); len(ev) != 1 || ev[0].Action != "release" {
		t.Errorf("events %+v", ev)
	}
}

// TestInjectTakesAnswer: an injected request gets rpctap's id, and the
// child's answer to it never reaches the parent; other frames pass.
func TestInjectTakesAnswer(t *testing.T) {
	r := newRig(t, Options{Protocol: "mcp"})
	inj, err := r.s.Inject(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if inj.ID != `"rpctap-1"` || !strings.Contains(r.kin.String(), `"id":"rpctap-1"`) || !strings.HasSuffix(r.kin.String(), "}\n") {
		t.Fatalf("injection %+v; child got %q", inj, r.kin.String())
	}
	c := r.s.AnswerTo(inj.N)
	r.out.Write([]byte(`{"jsonrpc":"2.0","id":"rpctap-1","result":{"content":[{"type":"text","text":"Echo: hi"}]}}` + "\n" + `{"jsonrpc":"2.0","id":5,"result":{}}` + "\n"))
	if got := r.kout.String(); got != `{"jsonrpc":"2.0","id":5,"result":{}}`+"\n" {
		t.Errorf("parent got %q", got)
	}
	select {
	case a := <-c:
		if !strings.Contains(a.Frame, "Echo: hi") {
			t.Errorf("answer %+v", a)
		}
	default:
		t.Error("no answer")
	}
	ev := r.evs()
	if len(ev) != 2 || ev[0].Action != "inject" || ev[1].Action != "take" || !strings.Contains(string(ev[1].Original), "Echo: hi") {
		t.Errorf("events %+v", ev)
	}
	// Injected at a frame boundary only: mid-frame, it waits.
	r.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/x"`))
	r.s.Inject(cassette.DirIn, []byte(`{"jsonrpc":"2.0","method":"notifications/y"}`))
	r.in.Write([]byte("}\n"))
	if got := r.kin.String(); !strings.HasSuffix(got, `{"jsonrpc":"2.0","method":"notifications/x"}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/y"}`+"\n") {
		t.Errorf("injection tore a frame: %q", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestStdinEndedReleases: when the parent closes stdin, the frames held
// then (here the child's) are forwarded first; the breakpoint stays and
// holds the next one.
func TestStdinEndedReleases(t *testing.T) {
	r := newRig(t, Options{})
	r.s.Break("dir:out", 0)
	done := make(chan struct{})
	go func() { r.out.Write([]byte("{\"a\":1}\n")); close(done) }()
	waitHeld(t, r.s, 1)
	r.in.StdinEnded()
	<-done
	if got := r.kout.String(); got != "{\"a\":1}\n" {
		t.Errorf("parent got %q", got)
	}
	if ev := r.evs(); len(ev) != 1 || ev[0].Action != "release" {
		t.Errorf("events %+v", ev)
	}
	go r.out.Write([]byte("{\"a\":2}\n"))
	waitHeld(t, r.s, 1)
	r.s.Release()
}

// TestCancel: the protocol's cancel message for a held request goes right
// behind it; per protocol, and refused where rpctap has none.
func TestCancel(t *testing.T) {
	for proto, want := range map[string]string{
		"mcp": `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"cancelled by rpctap","requestId":7}}`,
		"lsp": `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}`,
		"acp": `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`,
	} {
		c, err := CancelFor(proto, []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1"}}`))
		if err != nil || string(c) != want {
			t.Errorf("%s: %s %v, want %s", proto, c, err, want)
		}
	}
	if _, err := CancelFor("dap", []byte(`{"seq":1,"type":"request","command":"x"}`)); err == nil {
		t.Error("dap: no error")
	}
	r := newRig(t, Options{Protocol: "mcp"})
	r.s.Break("m=tools/call", 0)
	done := make(chan struct{})
	go func() {
		r.in.Write([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}` + "\n"))
		close(done)
	}()
	h := waitHeld(t, r.s, 1)
	if err := r.s.Cancel(h[0].N); err != nil {
		t.Fatal(err)
	}
	<-done
	want := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"cancelled by rpctap","requestId":3}}` + "\n"
	if got := r.kin.String(); got != want {
		t.Errorf("child got %q", got)
	}
	if ev := r.evs(); len(ev) != 2 || ev[0].Action != "forward" || ev[1].Action != "inject" {
		t.Errorf("events %+v", ev)
	}
}

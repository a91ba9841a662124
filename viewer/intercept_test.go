package viewer

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpctap/rpctap/internal/ctlsock"
	"github.com/rpctap/rpctap/internal/intercept"
	"github.com/rpctap/rpctap/tap"
)

// liveSession is an intercepting session with no tap around it: the test
// writes the parent's and the child's frames to its Writers and reads
// what they forward.
type liveSession struct {
	s       *intercept.Session
	in, out interface{ Write([]byte) (int, error) }
	mu      sync.Mutex
	toChild bytes.Buffer
	client  *intercept.Client
}

func (l *liveSession) sent() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.toChild.String()
}

func newLiveSession(t *testing.T) *liveSession {
	t.Helper()
	l := &liveSession{}
	s, err := intercept.New(intercept.Options{Protocol: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	l.s = s
	l.in = s.Wrap(tap.Stdin, func(b []byte) error { l.mu.Lock(); l.toChild.Write(b); l.mu.Unlock(); return nil })
	l.out = s.Wrap(tap.Stdout, func(b []byte) error { return nil })
	ln, err := ctlsock.Listen(filepath.Join(t.TempDir(), "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	srv := intercept.Serve(s, ln)
	t.Cleanup(func() { s.Release(); srv.Close() })
	c, err := intercept.Dial(ln.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Attach(); err != nil {
		t.Fatal(err)
	}
	l.client = c
	return l
}

// waitHeldN refreshes the viewer until the session holds n frames.
func waitHeldN(t *testing.T, h *harness, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.app.hs.st.Held) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the viewer shows %d held frames, want %d:\n%s", len(h.app.hs.st.Held), n, h.screen())
		}
		time.Sleep(10 * time.Millisecond)
		h.app.RefreshControl()
		h.settle()
	}
}

// TestAttachedHeldPane: an attached viewer on a SimulationScreen sets a
// breakpoint from its keys, shows the held frame with a ticking hold time
// and the count in the title, forwards, edits, drops and injects from the
// pane; when it goes, its breakpoint goes and what it held is forwarded.
func TestAttachedHeldPane(t *testing.T) {
	l := newLiveSession(t)
	h := newHarness(t, NewMemSource(acpSession()...), Options{Control: l.client})
	if scr := h.screen(); !strings.Contains(scr, "attached, 0 breakpoints") {
		t.Fatalf("the title does not say the viewer is attached:\n%s", scr)
	}
	h.keys("H").keys("bm:tools/call<enter>")
	if bps := l.s.Breakpoints(); len(bps) != 1 || bps[0].Expr != "m:tools/call" || bps[0].Owner == 0 {
		t.Fatalf("breakpoints after b: %+v", bps)
	}
	h.keys("bslow>1s<enter>")
	if scr := h.screen(); !strings.Contains(scr, "cannot be a breakpoint") {
		t.Errorf("a refused breakpoint is not explained:\n%s", scr)
	}

	write := func(frame string) chan struct{} {
		done := make(chan struct{})
		go func() { l.in.Write([]byte(frame + "\n")); close(done) }()
		return done
	}
	d1 := write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)
	waitHeldN(t, h, 1)
	scr := h.screen()
	if !strings.Contains(scr, "1 held, oldest") || !strings.Contains(scr, `1 → tools/call  held`) {
		t.Fatalf("the held frame is not shown:\n%s", scr)
	}
	// The hold time ticks on every draw.
	first := h.app.heldSummary()
	time.Sleep(300 * time.Millisecond)
	if second := h.app.heldSummary(); second == first {
		t.Errorf("hold time did not tick: %q then %q", first, second)
	}
	h.keys("f")
	<-d1
	if got := l.sent(); got != `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`+"\n" {
		t.Errorf("after f the child got %q", got)
	}

	// Edit inline: the line holds the frame; replace it.
	d2 := write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}`)
	waitHeldN(t, h, 1)
	h.keys("e<c-u>" + `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"EDITED"}}` + "<enter>")
	<-d2
	if !strings.Contains(l.sent(), `"EDITED"`) {
		t.Errorf("the edit did not reach the child: %q", l.sent())
	}
	// Edit in $EDITOR (a script that edits the file it is given).
	t.Setenv("VISUAL", "")
	t.Setenv("EDITOR", "sed -i s/beditor/EDITOR-EDITED/")
	d2b := write(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"beditor"}}`)
	waitHeldN(t, h, 1)
	h.keys("E")
	<-d2b
	if !strings.Contains(l.sent(), `"name":"EDITOR-EDITED"`) {
		t.Errorf("the $EDITOR edit did not reach the child: %q", l.sent())
	}
	// Drop.
	d3 := write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"c"}}`)
	waitHeldN(t, h, 1)
	h.keys("x")
	<-d3
	if strings.Contains(l.sent(), `"c"`) {
		t.Errorf("a dropped frame reached the child")
	}
	// Inject toward the child.
	h.keys("i<c-u>" + `child {"jsonrpc":"2.0","method":"notifications/x"}` + "<enter>")
	if !strings.Contains(l.sent(), `notifications/x`) {
		t.Errorf("the injection did not reach the child: %q", l.sent())
	}
	// A held frame, then the viewer goes: its breakpoint goes, the frame
	// is forwarded.
	d4 := write(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"d"}}`)
	waitHeldN(t, h, 1)
	l.client.Close()
	select {
	case <-d4:
	case <-time.After(10 * time.Second):
		t.Fatal("the frame held by the viewer's breakpoint was not forwarded when it went")
	}
	if bps := l.s.Breakpoints(); len(bps) != 0 {
		t.Errorf("breakpoints left after the viewer went: %+v", bps)
	}
}

// TestAttachedAnswerShown: the answer to a request injected from the
// viewer appears in its held pane, and is not forwarded to the parent.
func TestAttachedAnswerShown(t *testing.T) {
	l := newLiveSession(t)
	h := newHarness(t, NewMemSource(acpSession()...), Options{Control: l.client})
	h.keys("H")
	go func() {
		// The child answers the injected request once it arrives.
		for !strings.Contains(l.sent(), `"rpctap-1"`) {
			time.Sleep(5 * time.Millisecond)
		}
		l.out.Write([]byte(`{"jsonrpc":"2.0","id":"rpctap-1","result":{"content":[{"type":"text","text":"Echo: hi"}]}}` + "\n"))
	}()
	h.keys("i<c-u>" + `child {"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"}}` + "<enter>")
	h.app.RefreshControl()
	h.settle()
	if scr := h.screen(); !strings.Contains(scr, "answer to inject 1:") || !strings.Contains(scr, "Echo: hi") {
		t.Errorf("the answer is not shown:\n%s", scr)
	}
}

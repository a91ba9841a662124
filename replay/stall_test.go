package replay

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
)

// lockedBuffer is a report writer the test reads while the engine writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls the report until it contains s or d passes.
func (l *lockedBuffer) waitFor(s string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(l.String(), s) {
			return true
		}
	}
	return strings.Contains(l.String(), s)
}

func stallRecording() []cassette.Record {
	b := newBuilder("acp")
	b.event(cassette.EventStart, nil)
	b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":false}}}}`))
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`))
	b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`))
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}`))
	b.event(cassette.EventStdinEOF, nil)
	b.event(cassette.EventExit, intp(0))
	return b.end()
}

// Issue 20: a replay that stops answering because an early parent frame did
// not match says so within a second of going idle: the recorded frame it
// holds back, the one it waits for, and the nearest live frame with its
// first differing JSON path.
func TestChildSaysWhyItStalls(t *testing.T) {
	var rep lockedBuffer
	p := startPeer(t, stallRecording(), WithSpeed(0), WithReport(&rep), WithName("rpctap replay"))
	// A changed initialize: refused (the recording does not have it) ...
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}`)
	if r := p.recv(); r["error"] == nil {
		t.Fatalf("changed initialize: %v", r)
	}
	// ... and the parent goes on with session/new, which matches, but its
	// answer is held until the recorded initialize arrives.
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	sent := time.Now()
	if !rep.waitFor("is held back", 1500*time.Millisecond) {
		t.Fatalf("nothing said %v after going idle:\n%s", time.Since(sent).Round(time.Millisecond), rep.String())
	}
	if d := time.Since(sent); d > time.Second+200*time.Millisecond {
		t.Errorf("said after %v, want within a second", d)
	}
	out := rep.String()
	for _, want := range []string{
		"record #5 (response session/new) is held back",
		"record #2 (request initialize)",
		"nearest live frame: request initialize",
		"/params/clientCapabilities/fs/writeTextFile: false -> true",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	time.Sleep(1200 * time.Millisecond)
	if n := strings.Count(rep.String(), "is held back"); n != 1 {
		t.Errorf("said %d times, want once per stall:\n%s", n, rep.String())
	}
}

// A parent that is merely idle (it has its answers, it sends nothing yet)
// is not a stall: nothing is said.
func TestChildIdleIsNoStall(t *testing.T) {
	var rep lockedBuffer
	p := startPeer(t, stallRecording(), WithSpeed(0), WithReport(&rep), WithName("rpctap replay"))
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":false}}}}`)
	if r := p.recv(); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	if rep.waitFor("held back", 1500*time.Millisecond) {
		t.Errorf("an idle parent was reported as a stall:\n%s", rep.String())
	}
}

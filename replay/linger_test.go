package replay

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
)

// lingerRecording is an MCP session whose child did not exit when its
// stdin closed: the parent sent SIGTERM gap later and the child died of it
// (the MCP Go SDK client with @modelcontextprotocol/server-everything).
func lingerRecording(gap time.Duration) []cassette.Record {
	b := newBuilder("mcp")
	b.event(cassette.EventStart, nil)
	b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`))
	b.event(cassette.EventStdinEOF, nil)
	b.Wait(int64(gap))
	b.add(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventSignal, Signal: "SIGTERM"})
	b.add(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventExit, Signal: "SIGTERM"})
	return b.end()
}

// TestChildLingeringSignalNotOwed: a fake child exits at stdin EOF, so the
// live parent owes it none of the signals the recorded parent sent only
// because the recorded child lingered: --strict passes, and the fake child
// exits 0 (it was not signalled). Before, the signal was a missing parent
// frame ("1 recorded parent frame(s) never sent: #5 SIGTERM").
func TestChildLingeringSignalNotOwed(t *testing.T) {
	p := startPeer(t, lingerRecording(5*time.Second), WithSpeed(0), WithStrict(true))
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	p.recv()
	p.c.Stdin.Close()
	done := make(chan struct{})
	var res *Result
	var err error
	go func() { res, err = p.c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the fake child lingers after its stdin closed, waiting for the recorded SIGTERM")
	}
	if err != nil || len(res.Divergences) != 0 || res.Exit == nil || res.Exit.Code != 0 || res.Exit.Signal != "" {
		t.Fatalf("err %v exit %+v divergences %v", err, res.Exit, res.Divergences)
	}
}

// TestChildSignalBeforeEOFStillOwed: a signal sent while the child's stdin
// was open (an interrupt) is still a parent frame the replay waits for.
func TestChildSignalBeforeEOFStillOwed(t *testing.T) {
	b := newBuilder("mcp")
	b.event(cassette.EventStart, nil)
	b.add(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventSignal, Signal: "SIGINT"})
	b.event(cassette.EventStdinEOF, nil)
	b.add(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventExit, Exit: intp(0)})
	p := startPeer(t, b.end(), WithSpeed(0), WithStrict(true))
	p.c.Stdin.Close()
	res, err := p.c.Wait()
	if err == nil || len(res.Divergences) != 1 || res.Divergences[0].Kind != Missing || res.Divergences[0].Method != "SIGINT" {
		t.Fatalf("err %v divergences %v", err, res.Divergences)
	}
}

// lingerChild is a live child for RunParent: it answers initialize and
// closes its output at stdin EOF unless it lingers (then only a signal
// ends it).
type lingerChild struct {
	inR       *io.PipeReader
	inW       *io.PipeWriter
	outR      *io.PipeReader
	outW      *io.PipeWriter
	mu        sync.Mutex
	sigs      []string
	sigAt     time.Time
	eofAt     time.Time
	lingering bool
}

func newLingerChild(lingering bool) *lingerChild {
	c := &lingerChild{lingering: lingering}
	c.inR, c.inW = io.Pipe()
	c.outR, c.outW = io.Pipe()
	go func() {
		buf := make([]byte, 4096)
		answered := false
		for {
			_, err := c.inR.Read(buf)
			if err != nil {
				c.mu.Lock()
				c.eofAt = time.Now()
				c.mu.Unlock()
				if !c.lingering {
					c.outW.Close()
				}
				return
			}
			if !answered {
				answered = true
				io.WriteString(c.outW, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`+"\n")
			}
		}
	}()
	return c
}

func (c *lingerChild) signal(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sigs = append(c.sigs, name)
	c.sigAt = time.Now()
	c.outW.Close()
	return nil
}

// TestParentSendsLingerSignalOnlyToALingeringChild: verify's fake parent
// sends the recorded SIGTERM to a child still there the recorded time
// after its stdin closed, and not to one that exited at EOF.
func TestParentSendsLingerSignalOnlyToALingeringChild(t *testing.T) {
	const gap = 300 * time.Millisecond
	for _, lingering := range []bool{false, true} {
		c := newLingerChild(lingering)
		res, err := RunParent(context.Background(), FromRecords("linger", lingerRecording(gap)), c.outR, c.inW, c.signal, WithTimeout(5*time.Second))
		if err != nil || len(res.Divergences) != 0 || res.Matched != 1 {
			t.Fatalf("lingering %v: err %v %+v", lingering, err, res)
		}
		c.mu.Lock()
		sigs, wait := c.sigs, c.sigAt.Sub(c.eofAt)
		c.mu.Unlock()
		switch {
		case !lingering && len(sigs) != 0:
			t.Errorf("a child that exited at stdin EOF was sent %v", sigs)
		case lingering && len(sigs) != 1:
			t.Errorf("a lingering child was sent %v, want the recorded SIGTERM", sigs)
		case lingering && wait < gap-50*time.Millisecond:
			t.Errorf("the signal came %v after stdin EOF; the recorded parent waited %v", wait, gap)
		}
		if res.Exit == nil || res.Exit.Signal != "SIGTERM" {
			t.Errorf("recorded exit %+v", res.Exit)
		}
	}
}

package replay

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// A protocol named by a meta record (the recorder's detection) is the
// cassette's own, streamed or not: --protocol may not change it, even within
// the JSON-RPC family.
func TestStreamMetaProtocolIsOwn(t *testing.T) {
	b := replaytest.New("")
	b.Add(cassette.Record{K: cassette.KindMeta, Protocol: "acp"})
	b.In(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`).Out(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	recs := b.Event(cassette.EventStdinEOF).Exit(0).End()
	path := filepath.Join(t.TempDir(), "meta.cassette")
	if err := replaytest.WriteFile(path, recs, true); err != nil {
		t.Fatal(err)
	}
	for _, src := range []func() Source{
		func() Source { return FromRecords(path, recs) },
		func() Source {
			s, err := OpenStream(path)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	} {
		if _, err := StartChild(src(), WithProtocol("mcp")); err == nil || !strings.Contains(err.Error(), "records a acp session, not mcp") {
			t.Errorf("%T with --protocol mcp: %v", src(), err)
		}
		c, err := StartChild(src(), WithProtocol("acp"))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// A truncated cassette streams as far as it is complete; Warn says so when
// the replay reaches the cut.
func TestStreamTruncatedWarnsAtTheCut(t *testing.T) {
	b := replaytest.New("acp")
	b.In(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`).Out(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	b.In(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`).Out(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}`)
	path := filepath.Join(t.TempDir(), "cut.cassette")
	if err := replaytest.WriteFile(path, b.End(), false); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStream(path)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	s.Warn = func(msg string) { warned = append(warned, msg) }
	c, err := StartChild(s, WithSpeed(0))
	if err != nil {
		t.Fatal(err)
	}
	ask(t, c, `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`, `{"jsonrpc":"2.0","id":7,"result":{}}`)
	ask(t, c, `{"jsonrpc":"2.0","id":8,"method":"session/new","params":{}}`, `{"jsonrpc":"2.0","id":8,"result":{"sessionId":"s"}}`)
	c.Stdin.Close()
	res, err := c.Wait()
	if err != nil || res.Diverged() || res.Exit != nil {
		t.Fatalf("%v %+v", err, res)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "truncated") || !strings.Contains(warned[0], path) {
		t.Errorf("warnings %q; want one naming the file and the cut", warned)
	}
	if _, err := StartChild(s); err == nil {
		t.Error("a Stream replayed twice")
	}
}

// ask sends line to the fake child and checks the one line it answers.
func ask(t *testing.T, c *Child, line, want string) {
	t.Helper()
	go io.WriteString(c.Stdin, line+"\n")
	got, err := readLine(c.Stdout)
	if err != nil || got != want {
		t.Fatalf("sent %s: got %q, %v; want %s", line, got, err, want)
	}
}

// readLine reads one line byte by byte (no buffering past it).
func readLine(r io.Reader) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := r.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
}

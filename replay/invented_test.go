package replay

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/portable"
	"github.com/rpctap/rpctap/protocol"
)

// TestInventedNumbersByField: DAP thread and frame ids are learnt by field
// and carried into the frames sent later, where a number equal by value in
// another field (a line 1 beside thread 1) stays; 0 ("none") compares as
// itself; the JSON type is still compared.
func TestInventedNumbersByField(t *testing.T) {
	inv := compileInvented(protocol.WireOf("dap").Invented)
	if len(inv.names) == 0 {
		t.Fatal("DAP declares no invented fields")
	}
	dec := func(s string) any {
		v, ok := decodeJSON([]byte(s))
		if !ok {
			t.Fatalf("not JSON: %s", s)
		}
		return v
	}
	norm := func(s string) any { n, _ := inv.mark(dec(s), nil); return n }
	for _, c := range []struct {
		rec, live string
		equal     bool
	}{
		{`{"body":{"threadId":21807}}`, `{"body":{"threadId":22325}}`, true},
		{`{"body":{"threads":[{"id":21807,"name":"a.out"}]}}`, `{"body":{"threads":[{"id":22325,"name":"a.out"}]}}`, true},
		{`{"body":{"stackFrames":[{"id":1,"line":3,"source":{"sourceReference":0}}]}}`, `{"body":{"stackFrames":[{"id":9,"line":3,"source":{"sourceReference":0}}]}}`, true},
		{`{"body":{"stackFrames":[{"id":1,"line":3}]}}`, `{"body":{"stackFrames":[{"id":1,"line":4}]}}`, false},
		{`{"body":{"variablesReference":0}}`, `{"body":{"variablesReference":5}}`, false},
		{`{"body":{"threadId":1}}`, `{"body":{"threadId":"1"}}`, false},
		{`{"body":{"line":1}}`, `{"body":{"line":2}}`, false},
	} {
		if got := Equal(norm(c.rec), norm(c.live)); got != c.equal {
			t.Errorf("%s vs %s: equal %v, want %v", c.rec, c.live, got, c.equal)
		}
	}
	nums := map[string]string{}
	inv.learn(dec(`{"body":{"threads":[{"id":1,"name":"main"}]}}`), dec(`{"body":{"threads":[{"id":22325,"name":"main"}]}}`), nil, nums)
	inv.learn(dec(`{"body":{"stackFrames":[{"id":7,"line":1,"source":{"sourceReference":0}}]}}`), dec(`{"body":{"stackFrames":[{"id":524288,"line":1,"source":{"sourceReference":0}}]}}`), nil, nums)
	for _, c := range [][2]string{
		{`{"seq":5,"type":"request","command":"stackTrace","arguments":{"threadId":1,"startFrame":0,"levels":1}}`,
			`{"seq":5,"type":"request","command":"stackTrace","arguments":{"threadId":22325,"startFrame":0,"levels":1}}`},
		{`{"seq":6,"type":"request","command":"scopes","arguments": { "frameId" : 7 ,"line":1, "x":[1,7,{"a":"b\"}"}]}}`,
			`{"seq":6,"type":"request","command":"scopes","arguments": { "frameId" : 524288 ,"line":1, "x":[1,7,{"a":"b\"}"}]}}`},
		{`{"seq":7,"command":"variables","arguments":{"variablesReference":7}}`, `{"seq":7,"command":"variables","arguments":{"variablesReference":7}}`},
	} {
		if got := string(inv.substitute([]byte(c[0]), nums)); got != c[1] {
			t.Errorf("substitute\n %s\ngave\n %s\nwant\n %s", c[0], got, c[1])
		}
	}
	if got := string(inv.substitute([]byte(`{"threadId":1`), nums)); got != `{"threadId":1` {
		t.Errorf("a frame that is not JSON was changed: %s", got)
	}
}

// TestInventedPathsCompile: every protocol's invented fields are valid
// patterns (compileInvented drops a bad one).
func TestInventedPathsCompile(t *testing.T) {
	for _, name := range protocol.Names() {
		for _, v := range protocol.WireOf(name).Invented {
			if _, err := compileIgnores([]string{v.Path}); err != nil || v.Name == "" {
				t.Errorf("%s: invented %+v: %v", name, v, err)
			}
		}
	}
}

// TestPortableNumbersKeepTheirType: a portable cassette keeps a process id
// a number (rpctap normalize wrote "${RPCTAP_PID}", a string, in its place
// before); the header's table names the family, so the number compares as
// "a number", the live one is learnt by field and sent back where the
// recording has the recorded one, and one no live frame gave is this
// process's id.
func TestPortableNumbersKeepTheirType(t *testing.T) {
	b := newBuilder("mcp")
	b.Records[0].Header.Portable = map[string]string{portable.PID: portable.Kinds[portable.PID]}
	b.event(cassette.EventStart, nil)
	b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":4242,"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"},"instructions":"parent pid","_meta":{"pid":4242,"child":{"pid":5151}}}}`))
	b.event(cassette.EventStdinEOF, nil)
	b.event(cassette.EventExit, intp(0))
	p := startPeer(t, b.end(), WithSpeed(0), WithStrict(true), WithoutDefaultIgnores())
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":777,"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	r := p.recv()
	meta := r["result"].(map[string]any)["_meta"].(map[string]any)
	if meta["pid"] != json.Number("777") || meta["child"].(map[string]any)["pid"] != json.Number(strconv.Itoa(os.Getpid())) {
		t.Errorf("the fake child's pids: %v (want the live parent's 777, and its own %d)", meta, os.Getpid())
	}
	p.c.Stdin.Close()
	if res, err := p.c.Wait(); err != nil || len(res.Divergences) != 0 {
		t.Fatalf("%v %v", err, res.Divergences)
	}
}

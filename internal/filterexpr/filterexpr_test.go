package filterexpr

import (
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

func frame(d cassette.Dir, payload, kind, method, id string) cassette.Record {
	return Frame(d, []byte(payload), kind, method, id)
}

// TestParseKinds: kind: takes the kinds there are; a typo is an error
// naming them.
func TestParseKinds(t *testing.T) {
	for _, bad := range []string{"kind:bogus", "kind:requests", "!kind:x"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "kind:") {
			t.Errorf("%q: error %v, want one naming the kinds", bad, err)
		}
	}
	for _, good := range []string{"kind:req", "kind:response", "kind:notif", "kind:event", "kind:handshake", "kind:hello", "kind:invalid", "kind:stderr", "kind:violation", "kind:header", "kind:meta", "kind:end"} {
		if _, err := Parse(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// TestMatchFrames: the breakpoint examples on frames as the tap
// builds them.
func TestMatchFrames(t *testing.T) {
	call := frame(cassette.DirIn, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}`, "request", "tools/call", "3")
	toolErr := frame(cassette.DirOut, `{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":true}}`, "response", "", "3")
	toolOK := frame(cassette.DirOut, `{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`, "response", "", "3")
	rpcErr := frame(cassette.DirOut, `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}`, "response", "", "4")
	perm := frame(cassette.DirIn, `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, "response", "", "0")
	for _, c := range []struct {
		expr string
		r    cassette.Record
		m    MatchInfo
		want bool
	}{
		{"m:tools/call", call, MatchInfo{}, true},
		{"m:tools/call", toolOK, MatchInfo{Method: "tools/call"}, true}, // a response carries its request's method
		{"m:tools/call", toolOK, MatchInfo{}, false},
		{"kind:response & m=session/request_permission", perm, MatchInfo{Method: "session/request_permission"}, true},
		{"kind:response & m=session/request_permission", call, MatchInfo{}, false},
		{"dir:out & err", toolErr, MatchInfo{Method: "tools/call"}, true},
		{"dir:out & err", rpcErr, MatchInfo{}, true},
		{"dir:out & err", toolOK, MatchInfo{Method: "tools/call"}, false},
		{"dir:out & err", call, MatchInfo{}, false},
		{"!m:tools/call dir:in", call, MatchInfo{}, false},
		{"id:3 echo", call, MatchInfo{}, true},
		{"/\"name\":\"e.ho\"/", call, MatchInfo{}, true},
	} {
		f, err := ParseBreakpoint(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		c.m.Protocol = "mcp" // an isError result is a failure the MCP way
		if got := f.Match(&c.r, c.m); got != c.want {
			t.Errorf("%q on %s (method %q): %v, want %v", c.expr, c.r.Payload(), c.m.Method, got, c.want)
		}
	}
}

// TestBreakpointRefusesLaterTerms: terms that need a later frame or a
// finished validation are refused, each with a message that says why; the
// same terms stay valid filters.
func TestBreakpointRefusesLaterTerms(t *testing.T) {
	for _, c := range []struct{ expr, why string }{
		{"slow>1s", "later frame"},
		{"m:tools/call & slow>100ms", "later frame"},
		{"v", "validation"},
		{"!violations dir:in", "validation"},
		{"kind:violation", "validation"},
		{"kind:stderr", "frames only"},
		{"-aux", "frames only"},
		{"", "every frame"},
		{"kind:bogus", "kind:"},
	} {
		_, err := ParseBreakpoint(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("ParseBreakpoint(%q) = %v, want an error saying %q", c.expr, err, c.why)
		}
		if c.expr != "" && c.why != "kind:" {
			if _, err := Parse(c.expr); err != nil {
				t.Errorf("Parse(%q) as a filter: %v", c.expr, err)
			}
		}
	}
}

// TestText: what free text searches in each kind of record.
func TestText(t *testing.T) {
	code := 3
	for _, c := range []struct {
		r    cassette.Record
		want string
	}{
		{frame(cassette.DirIn, `{"a":1}`, "", "", ""), `{"a":1}`},
		{cassette.Record{K: cassette.KindFrame, B64: []byte{0xff}}, "base64:/w=="},
		{cassette.Record{K: cassette.KindEvent, Ev: cassette.EventExit, Exit: &code}, "exit 3"},
		{cassette.Record{K: cassette.KindViolation, Code: "acp.x", Msg: "bad", Pointer: "/p"}, "acp.x bad /p"},
		{cassette.Record{K: cassette.KindMeta, Protocol: "mcp"}, "protocol mcp"},
		{cassette.Record{K: cassette.KindEnd, Records: 9}, "end of cassette (9 records)"},
	} {
		if got := string(Text(&c.r)); got != c.want {
			t.Errorf("Text(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}

// TestInterceptText: intercept events and marked frames describe
// themselves (the viewer's rows, cat --format table).
func TestInterceptText(t *testing.T) {
	ev := cassette.Record{K: cassette.KindEvent, Ev: cassette.EventIntercept, D: cassette.DirIn, Act: "edit",
		Held: 1500e6, BP: "1 m:tools/call", Ref: 7, Orig: []byte(`{"a":1}`)}
	if got, want := string(Text(&ev)), "intercept in: held, then an edited frame sent instead after 1.5s (1 m:tools/call), sent as #7; original kept"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	f := frame(cassette.DirIn, `{"a":2}`, "", "", "")
	for icpt, want := range map[string]string{"": "", "edit": "[edited]", "inject": "[injected]", "rewrite": "[rewritten]", "timeout": "[held]"} {
		f.Icpt = icpt
		if got := InterceptMark(&f); got != want {
			t.Errorf("mark of %q: %q, want %q", icpt, got, want)
		}
	}
}

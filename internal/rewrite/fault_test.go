package rewrite

import (
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay"
)

// TestFaults: each rule fires on the frames its selectors name, in the
// direction it names (none: the child's), as often as it may, and gives
// the frame to send instead for truncate, corrupt and error.
func TestFaults(t *testing.T) {
	type frame struct {
		d                  cassette.Dir
		body, kind, method string
	}
	frames := []frame{
		{cassette.DirIn, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, "request", "tools/list"},
		{cassette.DirOut, `{"jsonrpc":"2.0","method":"note","params":{"a":1,"big":12345678901234567890}}`, "notification", "note"},
		{cassette.DirOut, `{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}`, "response", "tools/list"},
	}
	for _, c := range []struct {
		rule string
		hits string // "frame-index:action[:payload]" of each hit
	}{
		{"drop method=tools/list", "2:drop"},
		{"drop method=tools/list dir=in", "0:drop"},
		{"duplicate kind=notification", "1:duplicate"},
		{"split frame=2", "2:split"},
		{"split frame=1 dir=in", "0:split"},
		{"truncate method=tools/list", `2:truncate:{"jsonrpc":"2.0","id":7`},
		{"truncate dir=in", `0:truncate:{"jsonrpc":"2.0","id":7`},
		{"corrupt /params/a", `1:corrupt:{"jsonrpc":"2.0","method":"note","params":{"a":"rpctap-corrupted","big":12345678901234567890}}`},
		{"corrupt /params/missing", ""},
		{"error method=tools/list", `2:error:{"error":{"code":-32603,"message":"rpctap: injected fault"},"id":7,"jsonrpc":"2.0"}`},
		{"error kind=notification", ""},
		{"delay 1ms", "1:delay 2:delay"},
		{"drop times=1", "1:drop"},
		{"kill frame=2", "2:kill"},
		{"drop filter=m=tools/list&kind:response", "2:drop"},
		{"drop filter=/12345678901234567890/", "1:drop"},
		{"drop filter=m:nothing", ""},
	} {
		ft, err := replay.ParseFault(c.rule)
		if err != nil {
			t.Fatalf("%q: %v", c.rule, err)
		}
		f := NewFaults([]replay.Fault{ft})
		var hits []string
		for i, fr := range frames {
			if h := f.Apply("mcp", fr.d, []byte(fr.body), fr.kind, fr.method, ""); h != nil {
				s := itoa(i) + ":" + h.Action
				if h.Payload != nil {
					s += ":" + string(h.Payload)
				}
				if h.Rule != c.rule || !strings.HasPrefix(h.Msg(fr.d), c.rule+" on frame ") {
					t.Errorf("%q: hit names %q, message %q", c.rule, h.Rule, h.Msg(fr.d))
				}
				hits = append(hits, s)
			}
		}
		if got := strings.Join(hits, " "); got != c.hits {
			t.Errorf("%q: hits %q, want %q", c.rule, got, c.hits)
		}
	}
	if NewFaults(nil) != nil || NewFaults(nil).Apply("", cassette.DirOut, []byte("{}"), "", "", "") != nil {
		t.Error("no rules: an engine, or a hit")
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestFaultFilterSelectorErrors: a filter= that is not a valid breakpoint
// is a rule error saying why.
func TestFaultFilterSelectorErrors(t *testing.T) {
	for rule, want := range map[string]string{
		"drop filter=slow>1s":    "cannot be a breakpoint",
		"drop filter=kind:bogus": "kind:",
	} {
		if _, err := replay.ParseFault(rule); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", rule, err, want)
		}
	}
}

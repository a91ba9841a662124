package recfault

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/replay"
)

func rules(t *testing.T, rs ...string) []replay.Fault {
	var out []replay.Fault
	for _, r := range rs {
		f, err := replay.ParseFault(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

const (
	notif = `{"jsonrpc":"2.0","method":"note","params":{"a":1,"big":12345678901234567890}}` + "\n"
	resp  = `{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}` + "\n"
)

// TestWriter: each action on lines written in odd splits; a response is
// matched by its request's method; frame= and times= limit the hits; a
// last line without a newline is flushed unchanged.
func TestWriter(t *testing.T) {
	reqs := &Requests{}
	reqs.Feed([]byte(`{"jsonrpc":"2.0","id":7,"meth`))
	reqs.Feed([]byte(`od":"tools/list"}` + "\n"))
	for _, c := range []struct {
		rule, want string
		notes      int
	}{
		{"", notif + resp + "tail", 0},
		{"drop method=tools/list", notif + "tail", 1},
		{"duplicate kind=notification", notif + notif + resp + "tail", 1},
		{"split frame=2", notif + resp + "tail", 1},
		{"truncate method=tools/list", notif + resp[:(len(resp)-1)/2] + "\n" + "tail", 1},
		{"corrupt /params/a", `{"jsonrpc":"2.0","method":"note","params":{"a":"rpctap-corrupted","big":12345678901234567890}}` + "\n" + resp + "tail", 1},
		{"corrupt /params/missing", notif + resp + "tail", 0},
		{"error method=tools/list", notif + `{"error":{"code":-32603,"message":"rpctap: injected fault"},"id":7,"jsonrpc":"2.0"}` + "\n" + "tail", 1},
		{"error kind=notification", notif + resp + "tail", 0},
		{"delay 1ms", notif + resp + "tail", 2},
		{"drop times=1", resp + "tail", 1},
		{"kill frame=2", notif, 1},
		// filter=: the viewer's filter language selects the frame.
		{"drop filter=m=tools/list&kind:response", notif + "tail", 1},
		{"drop filter=/12345678901234567890/", resp + "tail", 1},
		{"drop filter=m:nothing", notif + resp + "tail", 0},
	} {
		var out bytes.Buffer
		var notes []string
		killed := false
		var rs []replay.Fault
		if c.rule != "" {
			rs = rules(t, c.rule)
		}
		w := &Writer{Dst: &out, Rules: rs, Requests: reqs,
			Note: func(rule string, frame int, what string) { notes = append(notes, what) },
			Kill: func() error { killed = true; return nil }}
		all := notif + resp + "tail"
		for i := 0; i < len(all); i += 5 {
			if _, err := w.Write([]byte(all[i:min(i+5, len(all))])); err != nil {
				t.Fatal(err)
			}
		}
		w.Flush()
		if out.String() != c.want {
			t.Errorf("%q: wrote\n%q\nwant\n%q", c.rule, out.String(), c.want)
		}
		if len(notes) != c.notes {
			t.Errorf("%q: %d notes %v, want %d", c.rule, len(notes), notes, c.notes)
		}
		if killed != strings.HasPrefix(c.rule, "kill") {
			t.Errorf("%q: killed %v", c.rule, killed)
		}
	}
}

// TestFilterSelectorErrors: a filter= that is not a valid breakpoint is a
// rule error saying why.
func TestFilterSelectorErrors(t *testing.T) {
	for rule, want := range map[string]string{
		"drop filter=slow>1s":    "cannot be a breakpoint",
		"drop filter=kind:bogus": "kind:",
	} {
		if _, err := replay.ParseFault(rule); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", rule, err, want)
		}
	}
}

package viewer

import (
	"slices"
	"strings"
	"testing"
)

// matches returns the record numbers of recs that f keeps, with the facts
// of a Store that has analysed them all.
func matches(t *testing.T, s *Store, f Filter) []int {
	t.Helper()
	var out []int
	for i := range s.Len() {
		r, ok := s.Record(i)
		if !ok {
			t.Fatalf("record %d unreadable", i)
		}
		if f.Match(&r, s.facts(&r)) {
			out = append(out, i)
		}
	}
	return out
}

func analysedStore(t *testing.T, b *rb) *Store {
	t.Helper()
	s := NewStore(NewMemSource(b.recs...))
	for !s.Scan(1 << 20) {
	}
	return s
}

func TestFilterExpressions(t *testing.T) {
	s := NewStore(NewMemSource(acpSession()...))
	for !s.Scan(1 << 20) {
	}
	// In acpSession: #7 and #20 are session/prompt requests, #17 answers #7
	// after 390ms; #13/#14 the permission request (agent id 1) and its
	// answer after 300ms; #2/#4 initialize (client id 1); #18 has a
	// violation; #3 and #21 are stderr lines; #1, #22, #23 events.
	cases := []struct {
		expr string
		want []int
	}{
		{"m:session/prompt", []int{7, 17, 20}}, // the response through its request
		{"m:SESSION/PROMPT", []int{7, 17, 20}},
		{"m:session/p", []int{7, 17, 20}},
		{"m:request_perm", []int{13, 14}}, // a prefix of a /-part
		{"m:prompt", []int{7, 17, 20}},
		{"m:ssion", nil}, // not a prefix
		{"m:session/prompt kind:req", []int{7, 20}},
		{"m:session/prompt & kind:request", []int{7, 20}},
		{"m:session/prompt&!kind:request", []int{17}},
		{"dir:in", []int{2, 5, 7, 14, 20}},
		{">", []int{2, 5, 7, 14, 20}},
		{"dir:out kind:req", []int{13}},
		{"id:1", []int{2, 4, 13, 14}},
		{`id:"1"`, []int{2, 4, 13, 14}},
		{"id:1 dir:in", []int{2, 14}},
		{"err", []int{18}},
		{"slow>100ms", []int{7, 13, 14, 17}},
		{"slow>350ms", []int{7, 17}},
		{"slow>1s", nil},
		{"kind:stderr", []int{3, 21}},
		{"kind:event", []int{1, 22, 23}},
		{"kind:violation", []int{19}},
		{`"Fix the bug"`, []int{7}},
		{"fix", []int{7}},
		{"!dir:in !dir:out kind:stderr", []int{3, 21}},
		{"!!kind:stderr", []int{3, 21}},
		{"m:session/update !agent_", []int{12, 15, 18}},
		{"/stopReason|outcome/", []int{14, 17}},
		{"v", []int{18, 19}},
		{"", nil}, // inactive: checked below
	}
	for _, c := range cases {
		f, err := ParseFilter(c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		if c.expr == "" {
			if f.Active() {
				t.Error("the empty filter is active")
			}
			continue
		}
		if got := matches(t, s, f); !slices.Equal(got, c.want) {
			t.Errorf("%q keeps %v, want %v", c.expr, got, c.want)
		}
		// What String gives back parses to the same filter.
		g, err := ParseFilter(f.String())
		if err != nil || !slices.Equal(matches(t, s, g), c.want) {
			t.Errorf("%q: String() = %q does not round-trip (%v)", c.expr, f.String(), err)
		}
	}
}

func TestFilterErrorResponses(t *testing.T) {
	for _, c := range []struct {
		proto string
		b     func(b *rb)
		want  []int
	}{
		{"acp", func(b *rb) {
			b.at(ms).in(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"x","cwd":"/","mcpServers":[]}}`)
			b.at(ms).out(`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"not found"}}`)
		}, []int{2}},
		{"mcp", func(b *rb) {
			b.at(ms).in(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
			b.at(ms).out(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`)
			b.at(ms).in(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"y"}}`)
			b.at(ms).out(`{"jsonrpc":"2.0","id":2,"result":{"content":[],"isError":false}}`)
		}, []int{2}},
		{"pi", func(b *rb) {
			b.at(ms).in(`{"id":"p1","type":"prompt","message":"hi"}`)
			b.at(ms).out(`{"id":"p1","type":"response","command":"prompt","success":false,"error":"no key"}`)
			b.at(ms).out(`{"type":"response","command":"get_state","success":true}`)
		}, []int{2}},
	} {
		b := newRB(c.proto)
		c.b(b)
		f, _ := ParseFilter("err")
		if got := matches(t, analysedStore(t, b), f); !slices.Equal(got, c.want) {
			t.Errorf("%s: err keeps %v, want %v", c.proto, got, c.want)
		}
	}
}

func TestParseFilterErrors(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"kind:foo", "kind is one of"},
		{"slow>fast", "slow> needs a duration"},
		{"slow>", "slow> needs a duration"},
		{"!", "negates nothing"},
		{"m:x & !", "negates nothing"},
		{`"unclosed`, "unclosed quote"},
		{"/[/", "bad regular expression"},
		{"dir:up", "dir is in or out"},
		{"m:", "m: needs a method"},
		{"id:", "id: needs an id"},
	} {
		_, err := ParseFilter(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one saying %q", c.expr, err, c.want)
		}
	}
}

// TestFilterAsYouType types a filter a key at a time: the list follows
// each good prefix; a bad expression keeps the last good filter and says
// why in the status line; Esc goes back to the filter from before.
func TestFilterAsYouType(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	rows := func() int { return h.app.view.Len(h.app.store) }
	h.keys("fkind:stderr")
	if rows() != 2 {
		t.Errorf("while typing kind:stderr: %d rows, want 2", rows())
	}
	scr := h.screen()
	if !strings.Contains(scr, "filter: kind:stderr") || !strings.Contains(scr, "filter kind:stderr: 2 rows") {
		t.Errorf("the filter bar or the title does not show the live filter:\n%s", scr)
	}
	// "slow" on its way to "slow>" is free text for a moment (one stderr
	// line says "slow disk"); "slow>" alone is an error.
	h.keys(" slow>")
	if rows() != 1 {
		t.Errorf("after a bad term: %d rows, want the last good filter's 1", rows())
	}
	if !strings.Contains(h.screen(), "slow> needs a duration") {
		t.Errorf("the bad term's error is not on screen:\n%s", h.screen())
	}
	h.keys("<enter>")
	if rows() != 1 || !strings.Contains(h.screen(), "the filter stays kind:stderr slow") {
		t.Errorf("Enter on a bad expression: %d rows, want the old filter kept and said:\n%s", rows(), h.screen())
	}
	h.keys("f<c-u>err<enter>")
	if rows() != 1 {
		t.Errorf("err: %d rows, want 1", rows())
	}
	h.keys("f<c-u>dir:in<esc>")
	if rows() != 1 || h.app.view.Filter().String() != "err" {
		t.Errorf("Esc: filter %q with %d rows, want err back", h.app.view.Filter().String(), rows())
	}
	h.keys("f<c-u><enter>")
	if !h.app.view.All() {
		t.Error("an empty filter did not clear it")
	}
}

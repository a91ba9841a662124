package viewer

import (
	"fmt"
	"testing"
)

// mcpInitSession: initialize, its answer, notifications/initialized, a
// tools/list and its answer, and a response to no request (#6).
func mcpInitSession() *rb {
	b := newRB("mcp")
	b.at(ms).in(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	b.at(ms).out(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	b.at(ms).in(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.at(ms).in(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	b.at(ms).out(`{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`)
	b.at(ms).out(`{"jsonrpc":"2.0","id":9,"result":{}}`)
	return b
}

// TestStatsRowFiltersByThatMethod: Enter on a statistics row keeps that
// method's frames only (m:initialize would keep notifications/initialized
// too), and on the row of frames without a method, those frames.
func TestStatsRowFiltersByThatMethod(t *testing.T) {
	for _, c := range []struct {
		method string
		want   string
	}{
		{"initialize", "[1 2]"},
		{"tools/list", "[4 5]"},
		{"(response)", "[6]"},
	} {
		h := newHarness(t, NewMemSource(mcpInitSession().recs...), Options{})
		h.keys("s")
		h.settle()
		idx := -1
		for i, m := range h.app.statsMethods {
			if m == c.method {
				idx = i
			}
		}
		if idx < 0 {
			t.Fatalf("no %s row in %v", c.method, h.app.statsMethods)
		}
		for i := 0; i <= idx; i++ {
			h.keys("<down>")
		}
		h.keys("<enter>")
		h.settle()
		var got []int
		for i := range h.app.view.Len(h.app.store) {
			got = append(got, h.app.view.At(i))
		}
		if h.app.mode != modeList || fmt.Sprint(got) != c.want {
			t.Errorf("Enter on the %s row: mode %v, rows %v; want the list with %s", c.method, h.app.mode, got, c.want)
		}
	}
}

func TestFilterExactMethod(t *testing.T) {
	h := newHarness(t, NewMemSource(mcpInitSession().recs...), Options{})
	for _, c := range []struct{ expr, want string }{
		{"m:initialize", "[1 2 3]"},
		{"m=initialize", "[1 2]"},
		{"m=INITIALIZE", "[1 2]"},
		{"!m=initialize dir:in", "[3 4]"},
		{"m=notifications/initialized", "[3]"},
		{"m=", "[6]"},
	} {
		if got := fmt.Sprint(viewRows(t, h, c.expr)); got != c.want {
			t.Errorf("%q keeps %s, want %s", c.expr, got, c.want)
		}
	}
}

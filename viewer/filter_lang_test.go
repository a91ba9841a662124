package viewer

import "testing"

// viewRows applies expr as h's filter, waits for the view to fill and
// returns the record numbers it shows.
func viewRows(t *testing.T, h *harness, expr string) []int {
	t.Helper()
	f, err := ParseFilter(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	h.app.setView(NewView(f), 0)
	h.app.kickFill(h.app.view)
	h.settle()
	var out []int
	for i := range h.app.view.Len(h.app.store) {
		out = append(out, h.app.view.At(i))
	}
	return out
}

// filtered applies expr to a fresh App over b's records.
func filtered(t *testing.T, b *rb, expr string) []int {
	t.Helper()
	return viewRows(t, newHarness(t, NewMemSource(b.recs...), Options{}), expr)
}

// TestFilterErrProtocolFailures: err keeps the failures each protocol
// reports its own way (protocol.Failed), not only JSON-RPC errors.
func TestFilterErrProtocolFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		b    func() *rb
		want string
	}{
		{"mcp tool result isError", func() *rb {
			b := newRB("mcp")
			b.at(ms).in(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
			b.at(ms).out(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`)
			b.at(ms).in(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"y"}}`)
			b.at(ms).out(`{"jsonrpc":"2.0","id":2,"result":{"content":[],"isError":false}}`)
			return b
		}, "[2]"},
		{"synaps error event", func() *rb {
			b := newRB("synaps")
			b.at(ms).out(`{"type":"message_update","event":{"type":"text_delta","delta":"hi"}}`)
			b.at(ms).out(`{"type":"error","id":"10","message":"provider returned 529"}`)
			return b
		}, "[2]"},
		{"pi failed tool and failed command", func() *rb {
			b := newRB("pi")
			b.at(ms).out(`{"type":"tool_execution_end","toolCallId":"c","toolName":"bash","result":{},"isError":true}`)
			b.at(ms).out(`{"type":"tool_execution_end","toolCallId":"d","toolName":"ls","result":{},"isError":false}`)
			b.at(ms).in(`{"id":"p1","type":"prompt","message":"hi"}`)
			b.at(ms).out(`{"id":"p1","type":"response","command":"prompt","success":false,"error":"no key"}`)
			return b
		}, "[1 4]"},
		{"acp JSON-RPC error", func() *rb {
			b := newRB("acp")
			b.at(ms).in(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"x","cwd":"/","mcpServers":[]}}`)
			b.at(ms).out(`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"not found"}}`)
			return b
		}, "[2]"},
	} {
		if got := sprintf("%v", filtered(t, c.b(), "err")); got != c.want {
			t.Errorf("%s: err keeps %s, want %s", c.name, got, c.want)
		}
	}
}

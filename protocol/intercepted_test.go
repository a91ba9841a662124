package protocol

import "testing"

// TestSessionIntercepted: a response rpctap kept (dropped, or taken as the
// answer to its own injected request) ends its request's wait, so End
// reports nothing; without the call the request is unanswered.
func TestSessionIntercepted(t *testing.T) {
	mcp, _ := Lookup("mcp")
	run := func(tell bool) []Violation {
		s := NewSession(mcp)
		s.Frame(1, FromParent, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
		s.Frame(2, FromChild, []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`))
		s.Frame(3, FromParent, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		s.Frame(4, FromParent, []byte(`{"jsonrpc":"2.0","id":"rpctap-1","method":"tools/list"}`))
		if tell {
			s.Intercepted(FromChild, []byte(`{"jsonrpc":"2.0","id":"rpctap-1","result":{"tools":[]}}`))
		}
		return s.End()
	}
	if vs := run(true); len(vs) != 0 {
		t.Errorf("with the kept answer told: %+v", vs)
	}
	if vs := run(false); len(vs) != 1 || vs[0].Code != CodeUnanswered {
		t.Errorf("without it: %+v, want one %s (the test can fail)", vs, CodeUnanswered)
	}
}

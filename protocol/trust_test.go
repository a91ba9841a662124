package protocol

import "testing"

// Regression tests for valid sessions that were flagged (issue 12). Each
// session is valid by its protocol's own documents; none may yield an error
// or a warning.

func noWarnings(t *testing.T, vs []Violation) {
	t.Helper()
	for _, v := range vs {
		if v.Severity != SevInfo {
			t.Errorf("record %d: %s %s: %s", v.Record, v.Severity, v.Code, v.Message)
		}
	}
}

// An MCP 2026-07-28 client probes with server/discover; an older server
// answers -32601 (method not found); the client falls back to initialize.
// The failed probe was no handshake, so initialize is the first one, not a
// repeat.
func TestMCPDiscoverFallbackToInitialize(t *testing.T) {
	vs, _ := runSession(t, "mcp", []step{
		in(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`),
		out(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`),
		in(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`),
		out(`{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`),
		in(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
		in(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`),
		out(`{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`),
	})
	noWarnings(t, vs)
	if hasCode(vs, CodeHandshakeRepeated) {
		t.Errorf("a fallback after a failed probe is no repeated handshake: %v", codes(vs))
	}
}

// A handshake that succeeded and is sent again is still a repeat.
func TestMCPSecondSuccessfulHandshakeStillRepeated(t *testing.T) {
	vs, _ := runSession(t, "mcp", []step{
		in(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`),
		out(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`),
		in(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`),
		out(`{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`),
	})
	if !hasCode(vs, CodeHandshakeRepeated) {
		t.Errorf("want %s, got %v", CodeHandshakeRepeated, codes(vs))
	}
}

// The parent closes the child's stdin (MCP's stdio shutdown); the server
// asks roots/list on its way out. Nobody can answer it: info, not warning.
// A request sent before the close and never answered still warns.
func TestRequestAfterParentClosedIsNotUnanswered(t *testing.T) {
	p, _ := Lookup("mcp")
	s := NewSession(p)
	frames := []step{
		in(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"c","version":"1"}}}`),
		out(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`),
		in(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
		// record 4 is the stdin-eof event
		out(`{"jsonrpc":"2.0","id":7,"method":"roots/list"}`), // record 5
	}
	var vs []Violation
	for i, st := range frames {
		rec := uint64(i + 1)
		if i == 3 {
			rec = 5
		}
		_, v := s.Frame(rec, st.dir, []byte(st.frame))
		vs = append(vs, v...)
	}
	s.ParentClosed(4)
	vs = append(vs, s.End()...)
	noWarnings(t, vs)
	if !hasCode(vs, CodeUnanswered) {
		t.Errorf("the request is still listed (as info): %v", codes(vs))
	}

	// Without the close, the same request is unanswered: a warning.
	vs, _ = runSession(t, "mcp", frames)
	found := false
	for _, v := range vs {
		found = found || v.Code == CodeUnanswered && v.Severity == SevWarning
	}
	if !found {
		t.Errorf("without a close: want an unanswered warning, got %v", vs)
	}
}

// synaps: every way the catalogue answers a command. An `error` with the
// command's id answers it (a second prompt while one is in flight); a
// prompt's runtime error is an `error` with its id, then agent_end, then the
// response, which is accepted too; an `error` without id (the answer to a
// line it could not parse) answers nothing and is no violation.
func TestSynapsErrorWithIDAnswersTheCommand(t *testing.T) {
	ready := out(`{"type":"ready","session_id":"s","model":"m","protocol_version":1}`)
	vs, infos := runSession(t, "synaps", []step{
		ready,
		in(`{"type":"prompt","id":"p1","message":"hi"}`),
		in(`{"type":"prompt","id":"p2","message":"again"}`),
		out(`{"type":"error","id":"p2","message":"another prompt is in flight; abort first"}`),
		in(`{"type":"new_session","id":"n1"}`),
		out(`{"type":"error","id":"n1","message":"another prompt is in flight; abort first"}`),
		out(`{"type":"error","id":"p1","message":"model failed"}`),
		out(`{"type":"agent_end","usage":{"input_tokens":1,"output_tokens":0}}`),
		out(`{"type":"response","id":"p1","command":"prompt","ok":false,"error":"model failed"}`),
		in(`{"type":"compact","id":"c1"}`),
		out(`{"type":"error","id":"c1","message":"nothing to compact"}`),
		out(`{"type":"error","message":"frame exceeds 1 MiB limit"}`),
		in(`{"type":"shutdown"}`),
	})
	noWarnings(t, vs)
	if hasCode(vs, CodeUnanswered) || hasCode(vs, CodeUnknownResponseID) {
		t.Errorf("answered commands flagged: %v", codes(vs))
	}
	if infos[3].Method != "error" {
		t.Errorf("the refusal stays an error event: %+v", infos[3])
	}

	// Without an answer of any kind, the command is still unanswered.
	vs, _ = runSession(t, "synaps", []step{ready, in(`{"type":"get_state","id":"g"}`)})
	if !hasCode(vs, CodeUnanswered) {
		t.Errorf("want unanswered, got %v", codes(vs))
	}
	// A second response after a refusal and its response is unknown.
	vs, _ = runSession(t, "synaps", []step{ready,
		in(`{"type":"prompt","id":"p","message":"x"}`),
		out(`{"type":"error","id":"p","message":"boom"}`),
		out(`{"type":"response","id":"p","command":"prompt","ok":false,"error":"boom"}`),
		out(`{"type":"response","id":"p","command":"prompt","ok":false,"error":"boom"}`),
	})
	if !hasCode(vs, CodeUnknownResponseID) {
		t.Errorf("want an unknown-response-id for the second response, got %v", codes(vs))
	}
}

// Valid sessions written from each JSON-RPC protocol's documents get no
// error and no warning (the event protocols have theirs in their own tests).
func TestACPValidSessions(t *testing.T)     { testValidSessions(t, "acp") }
func TestMCPValidSessions(t *testing.T)     { testValidSessions(t, "mcp") }
func TestJSONRPCValidSessions(t *testing.T) { testValidSessions(t, "jsonrpc") }
func TestLSPValidSessions(t *testing.T)     { testValidSessions(t, "lsp") }
func TestDAPValidSessions(t *testing.T)     { testValidSessions(t, "dap") }

package protocol

import "testing"

// TestSummarize: each protocol's frames say what they carry in a few words.
func TestSummarize(t *testing.T) {
	req := func(m string) Info { return Info{Kind: Request, Method: m} }
	resp := func(m string) Info { return Info{Kind: Response, Method: m} }
	notif := func(m string) Info { return Info{Kind: Notification, Method: m} }
	for _, c := range []struct {
		proto string
		info  Info
		frame string
		want  string
	}{
		{"acp", notif("session/update"), `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello there, this is a long answer that goes on and on"}}}}`,
			`agent_message_chunk "Hello there, this is a long answer that…"`},
		{"acp", notif("session/update"), `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read file","kind":"read","status":"pending"}}}`,
			`tool_call Read file read pending`},
		{"acp", notif("session/update"), `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":[{},{},{}]}}}`, `plan 3 entries`},
		{"acp", req("session/prompt"), `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"fix the bug"},{"type":"image"}]}}`, `"fix the bug [image]"`},
		{"acp", resp("session/prompt"), `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, `stop end_turn`},
		{"acp", resp("session/request_permission"), `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, `→ selected allow`},
		{"mcp", req("tools/call"), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, `tool echo`},
		{"mcp", resp("tools/call"), `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"no such file"}],"isError":true}}`, `isError "no such file"`},
		{"mcp", resp("tools/list"), `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`, `2 tools`},
		{"jsonrpc", resp("x"), `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, `error -32601 "Method not found"`},
		// A generic JSON-RPC session that uses ACP's method names is not
		// summarised by ACP's rules.
		{"jsonrpc", notif("session/update"), `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":[]}}}`, ``},
		{"acp", resp("session/prompt"), `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"boom"}}`, `error -32603 "boom"`},
		{"lsp", req("textDocument/hover"), `{"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///w/main.go"},"position":{"line":7,"character":27}}}`, `main.go:7:27`},
		{"lsp", notif("textDocument/publishDiagnostics"), `{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///w/main.go","diagnostics":[{}]}}`, `1 diagnostic main.go`},
		{"lsp", notif("$/progress"), `{"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":{"kind":"begin","title":"Indexing"}}}`, `begin "Indexing"`},
		{"dap", Info{Kind: Event, Method: "stopped"}, `{"seq":7,"type":"event","event":"stopped","body":{"reason":"breakpoint","threadId":1}}`, `breakpoint`},
		{"dap", resp("evaluate"), `{"seq":9,"type":"response","request_seq":7,"success":false,"command":"evaluate","message":"no symbol"}`, `failed "no symbol"`},
		{"pi", Info{Kind: Event, Method: "message_update"}, `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Hi!"}}`, `text_delta "Hi!"`},
		{"pi", resp("prompt"), `{"type":"response","command":"prompt","success":false,"error":"No API key"}`, `prompt failed "No API key"`},
		{"lsp", notif("initialized"), `{"jsonrpc":"2.0","method":"initialized","params":{}}`, ``},
	} {
		if got := Summarize(c.proto, FromChild, c.info, []byte(c.frame)); got != c.want {
			t.Errorf("Summarize(%s)\n got %q\nwant %q", c.frame, got, c.want)
		}
	}
}

func TestIsChunk(t *testing.T) {
	for _, c := range []struct {
		proto, frame string
		want         bool
	}{
		{"acp", `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk"}}}`, true},
		{"acp", `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call"}}}`, false},
		{"pi", `{"type":"message_update"}`, true},
		{"synaps", `{"type":"message_update"}`, true},
		{"opi", `{"type":"MessageUpdate"}`, true},
		{"opi", `{"type":"message_update"}`, false},
		{"mcp", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, true},
		{"mcp", `{"jsonrpc":"2.0","id":1,"result":{}}`, false},
		// A generic JSON-RPC session that happens to use ACP's or MCP's
		// method names gets the generic behaviour only.
		{"jsonrpc", `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk"}}}`, false},
		{"jsonrpc", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, false},
		{"", `{"type":"message_update"}`, false},
	} {
		if got := IsChunk(c.proto, "", []byte(c.frame)); got != c.want {
			t.Errorf("IsChunk(%s, %s) = %v", c.proto, c.frame, got)
		}
	}
}

func TestStreamsInto(t *testing.T) {
	prompt := []byte(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	upd := func(s string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + s + `","update":{"sessionUpdate":"agent_message_chunk"}}}`)
	}
	call := []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7}}}`)
	prog := func(tok string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + tok + `,"progress":1}}`)
	}
	for _, c := range []struct {
		proto string
		req   string
		rf    []byte
		notif string
		f     []byte
		want  bool
	}{
		{"acp", "session/prompt", prompt, "session/update", upd("s1"), true},
		{"acp", "session/prompt", prompt, "session/update", upd("s2"), false},
		{"mcp", "tools/call", call, "notifications/progress", prog("7"), true},
		{"mcp", "tools/call", call, "notifications/progress", prog("8"), false},
		{"mcp", "tools/call", call, "session/update", upd("s1"), false},
		{"jsonrpc", "session/prompt", prompt, "session/update", upd("s1"), false},
		{"acp", "tools/call", call, "notifications/progress", prog("7"), false},
	} {
		if got := StreamsInto(c.proto, c.req, c.rf, c.notif, c.f); got != c.want {
			t.Errorf("StreamsInto(%s, %s, %s) = %v", c.proto, c.req, c.f, got)
		}
	}
}

func TestFailed(t *testing.T) {
	for _, c := range []struct {
		proto string
		dir   Dir
		frame string
		want  bool
	}{
		{"acp", FromChild, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`, true},
		{"jsonrpc", FromChild, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`, true},
		{"", FromChild, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`, true},
		{"acp", FromChild, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`, false},
		{"mcp", FromChild, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`, true},
		{"mcp", FromChild, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, true},
		{"mcp", FromChild, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}`, false},
		{"mcp", FromChild, `{"jsonrpc":"2.0","id":1,"result":{"error":"a tool's own text"}}`, false},
		// isError is MCP's: a generic JSON-RPC result that carries one is
		// not a failure.
		{"jsonrpc", FromChild, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, false},
		{"pi", FromChild, `{"type":"response","command":"prompt","success":false,"error":"no key"}`, true},
		{"pi", FromChild, `{"type":"response","command":"get_state","success":true}`, false},
		{"opi", FromChild, `{"type":"response","command":"prompt","success":false,"error":"no key"}`, true},
		{"dap", FromChild, `{"seq":3,"type":"response","request_seq":2,"command":"launch","success":false,"message":"x"}`, true},
		{"dap", FromChild, `{"seq":3,"type":"response","request_seq":2,"command":"launch","success":true}`, false},
		{"pi", FromChild, `{"type":"tool_execution_end","toolName":"bash","isError":true}`, true},
		{"opi", FromChild, `{"type":"ToolExecutionEnd","tool_name":"read","is_error":false}`, false},
		{"opi", FromChild, `{"type":"ToolExecutionEnd","tool_name":"read","is_error":true}`, true},
		{"synaps", FromChild, `{"type":"error","id":"10","message":"provider returned 529"}`, true},
		{"synaps", FromParent, `{"type":"error"}`, false}, // a parent's command named error is not a failure report
		{"brainwires", FromChild, `{"type":"error","message":"boom","fatal":false}`, true},
		{"brainwires", FromChild, `{"type":"lock_result","success":false,"resource_type":"build","scope":"x"}`, true},
		{"jsonrpc", FromChild, `{"type":"error","message":"not JSON-RPC"}`, false},
		{"acp", FromChild, `not json`, false},
		{"acp", FromChild, `[1]`, false},
	} {
		if got := Failed(c.proto, c.dir, Info{}, []byte(c.frame)); got != c.want {
			t.Errorf("%s %s %s: Failed = %v, want %v", c.proto, c.dir, c.frame, got, c.want)
		}
	}
}

// TestGenericSessionGetsGenericOnly: ACP's and MCP's frames in a session of
// another protocol (generic JSON-RPC, or none known) get no surface, no
// telemetry facts beyond rpc.system, no transcript: only the protocol a
// session speaks reads its frames.
func TestGenericSessionGetsGenericOnly(t *testing.T) {
	list := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{}}]}}`)
	if s := SurfaceOf("mcp", "tools/list", list); s["tool:echo"] == nil {
		t.Errorf("mcp surface = %v", s)
	}
	if s := SurfaceOf("jsonrpc", "tools/list", list); s != nil {
		t.Errorf("jsonrpc surface = %v, want none", s)
	}
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`)
	if f := CallFactsOf("mcp", "tools/call", call); f.Target != "echo" || f.MethodAttr != "mcp.method.name" || f.RPCSystem != "jsonrpc" {
		t.Errorf("mcp facts = %+v", f)
	}
	if f := CallFactsOf("jsonrpc", "tools/call", call); f != (CallFacts{RPCSystem: "jsonrpc"}) {
		t.Errorf("jsonrpc facts = %+v, want rpc.system only", f)
	}
	prompt := []byte(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`)
	if f := CallFactsOf("acp", "session/prompt", prompt); !f.OpensTurn || f.Conversation != "s" || f.Operation != "invoke_agent" {
		t.Errorf("acp facts = %+v", f)
	}
	if f := CallFactsOf("", "session/prompt", prompt); f != (CallFacts{}) {
		t.Errorf("facts without a protocol = %+v, want none", f)
	}
	answer := []byte(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	if r := FinishReasonsOf("acp", "session/prompt", answer); len(r) != 1 || r[0] != "end_turn" {
		t.Errorf("acp finish reasons = %v", r)
	}
	if r := FinishReasonsOf("jsonrpc", "session/prompt", answer); r != nil {
		t.Errorf("jsonrpc finish reasons = %v", r)
	}
	for proto, turns := range map[string]int{"acp": 1, "jsonrpc": 0, "": 0} {
		tr := Transcript{Protocol: proto}
		tr.Add(TranscriptFrame{N: 1, Dir: FromParent, JSON: prompt})
		tr.Add(TranscriptFrame{N: 2, T: 5, Dir: FromChild, JSON: answer})
		if len(tr.Turns) != turns {
			t.Errorf("%q transcript: %d turns, want %d", proto, len(tr.Turns), turns)
		}
		if turns == 1 && (tr.Turns[0].Done != 5 || tr.Turns[0].Entries[0].Text != "hi") {
			t.Errorf("%q turn = %+v", proto, tr.Turns[0])
		}
	}
}

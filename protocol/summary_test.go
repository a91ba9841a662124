package protocol

import "testing"

// TestSummarize: each protocol's frames say what they carry in a few words.
func TestSummarize(t *testing.T) {
	req := func(m string) Info { return Info{Kind: Request, Method: m} }
	resp := func(m string) Info { return Info{Kind: Response, Method: m} }
	notif := func(m string) Info { return Info{Kind: Notification, Method: m} }
	for _, c := range []struct {
		info  Info
		frame string
		want  string
	}{
		{notif("session/update"), `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello there, this is a long answer that goes on and on"}}}}`,
			`agent_message_chunk "Hello there, this is a long answer that…"`},
		{notif("session/update"), `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read file","kind":"read","status":"pending"}}}`,
			`tool_call Read file read pending`},
		{notif("session/update"), `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":[{},{},{}]}}}`, `plan 3 entries`},
		{req("session/prompt"), `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"fix the bug"},{"type":"image"}]}}`, `"fix the bug [image]"`},
		{resp("session/prompt"), `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, `stop end_turn`},
		{resp("session/request_permission"), `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, `→ selected allow`},
		{req("tools/call"), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, `tool echo`},
		{resp("tools/call"), `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"no such file"}],"isError":true}}`, `isError "no such file"`},
		{resp("tools/list"), `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`, `2 tools`},
		{resp("x"), `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, `error -32601 "Method not found"`},
		{req("textDocument/hover"), `{"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///w/main.go"},"position":{"line":7,"character":27}}}`, `main.go:7:27`},
		{notif("textDocument/publishDiagnostics"), `{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///w/main.go","diagnostics":[{}]}}`, `1 diagnostic main.go`},
		{notif("$/progress"), `{"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":{"kind":"begin","title":"Indexing"}}}`, `begin "Indexing"`},
		{Info{Kind: Event, Method: "stopped"}, `{"seq":7,"type":"event","event":"stopped","body":{"reason":"breakpoint","threadId":1}}`, `breakpoint`},
		{resp("evaluate"), `{"seq":9,"type":"response","request_seq":7,"success":false,"command":"evaluate","message":"no symbol"}`, `failed "no symbol"`},
		{Info{Kind: Event, Method: "message_update"}, `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Hi!"}}`, `text_delta "Hi!"`},
		{resp("prompt"), `{"type":"response","command":"prompt","success":false,"error":"No API key"}`, `prompt failed "No API key"`},
		{notif("initialized"), `{"jsonrpc":"2.0","method":"initialized","params":{}}`, ``},
	} {
		if got := Summarize(FromChild, c.info, []byte(c.frame)); got != c.want {
			t.Errorf("Summarize(%s)\n got %q\nwant %q", c.frame, got, c.want)
		}
	}
}

func TestIsChunk(t *testing.T) {
	for frame, want := range map[string]bool{
		`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk"}}}`: true,
		`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call"}}}`:           false,
		`{"type":"message_update"}`: true,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`: true,
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                        false,
	} {
		if got := IsChunk("", []byte(frame)); got != want {
			t.Errorf("IsChunk(%s) = %v", frame, got)
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
		req   string
		rf    []byte
		notif string
		f     []byte
		want  bool
	}{
		{"session/prompt", prompt, "session/update", upd("s1"), true},
		{"session/prompt", prompt, "session/update", upd("s2"), false},
		{"tools/call", call, "notifications/progress", prog("7"), true},
		{"tools/call", call, "notifications/progress", prog("8"), false},
		{"tools/call", call, "session/update", upd("s1"), false},
	} {
		if got := StreamsInto(c.req, c.rf, c.notif, c.f); got != c.want {
			t.Errorf("StreamsInto(%s, %s) = %v", c.req, c.f, got)
		}
	}
}

func TestFailed(t *testing.T) {
	for _, c := range []struct {
		dir   Dir
		frame string
		want  bool
	}{
		{FromChild, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`, true},
		{FromChild, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`, false},
		{FromChild, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, true},
		{FromChild, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}`, false},
		{FromChild, `{"jsonrpc":"2.0","id":1,"result":{"error":"a tool's own text"}}`, false},
		{FromChild, `{"type":"response","command":"prompt","success":false,"error":"no key"}`, true},
		{FromChild, `{"type":"response","command":"get_state","success":true}`, false},
		{FromChild, `{"seq":3,"type":"response","request_seq":2,"command":"launch","success":false,"message":"x"}`, true},
		{FromChild, `{"type":"tool_execution_end","toolName":"bash","isError":true}`, true},
		{FromChild, `{"type":"ToolExecutionEnd","tool_name":"read","is_error":false}`, false},
		{FromChild, `{"type":"ToolExecutionEnd","tool_name":"read","is_error":true}`, true},
		{FromChild, `{"type":"error","id":"10","message":"provider returned 529"}`, true},
		{FromParent, `{"type":"error"}`, false}, // a parent's command named error is not a failure report
		{FromChild, `not json`, false},
		{FromChild, `[1]`, false},
	} {
		if got := Failed(c.dir, Info{}, []byte(c.frame)); got != c.want {
			t.Errorf("%s %s: Failed = %v, want %v", c.dir, c.frame, got, c.want)
		}
	}
}

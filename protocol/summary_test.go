package protocol

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		proto string
		dir   Dir
		frame string
		want  string
	}{
		// ACP: session/update kind and the first words of its text; tool calls.
		{"acp", FromChild, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"I will\n edit   main.go."}}}}`,
			`agent_message_chunk "I will edit main.go."`},
		{"acp", FromChild, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Looking"}}}}`,
			`agent_thought_chunk "Looking"`},
		{"acp", FromChild, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Edit main.go","kind":"edit","status":"pending"}}}`,
			`tool_call "Edit main.go" (pending)`},
		{"acp", FromChild, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed"}}}`,
			`tool_call_update c1 (completed)`},
		{"acp", FromChild, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{},{}]}}}`,
			`plan 2 entries`},
		{"acp", FromParent, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"Fix the bug"}]}}`,
			`"Fix the bug"`},
		{"acp", FromChild, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`, `stopReason end_turn`},
		{"acp", FromParent, `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, `selected allow`},
		{"acp", FromChild, `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c1","title":"Edit"},"options":[{},{}]}}`,
			`"Edit" (2 options)`},
		{"acp", FromChild, `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params"}}`, `error -32602: Invalid params`},
		// MCP: tool name, isError, progress, list sizes.
		{"mcp", FromParent, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, `echo`},
		{"mcp", FromChild, `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`, `isError "boom"`},
		{"mcp", FromChild, `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Echo: hi"}],"isError":false}}`, `"Echo: hi"`},
		{"mcp", FromChild, `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"},{"name":"b"},{"name":"c"}]}}`, `3 tools`},
		{"mcp", FromChild, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2,"total":5,"message":"step"}}`, `2/5 "step"`},
		{"mcp", FromChild, `{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found"}}`, `error -32601: Method not found`},
		// Event protocols: the inner event, the tool, the outcome of a command.
		{"pi", FromChild, `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Hello there"}}`, `text_delta "Hello there"`},
		{"pi", FromChild, `{"type":"tool_execution_end","toolCallId":"c","toolName":"bash","result":{},"isError":true}`, `bash isError`},
		{"pi", FromChild, `{"id":"p1","type":"response","command":"prompt","success":false,"error":"No API key found"}`, `error "No API key found"`},
		{"pi", FromChild, `{"id":"s1","type":"response","command":"get_state","success":true,"data":{}}`, `ok`},
		{"pi", FromParent, `{"id":"p1","type":"prompt","message":"list files"}`, `"list files"`},
		{"opi", FromChild, `{"type":"ToolExecutionStart","tool_call_id":"tc-1","tool_name":"read","args":{}}`, `read`},
		{"opi", FromChild, `{"type":"MessageEnd","message":{"role":"user","content":[{"type":"text","text":"hello"}]}}`, `user "hello"`},
		{"synaps", FromChild, `{"type":"message_update","event":{"type":"thinking_delta","delta":"The user greets."}}`, `thinking_delta "The user greets."`},
		{"synaps", FromChild, `{"type":"error","id":"10","message":"provider returned 529"}`, `error "provider returned 529"`},
		{"synaps", FromChild, `{"type":"subagent_start","subagent_id":1,"agent_name":"researcher","task_preview":"look up the"}`, `"look up the"`},
		// Generic JSON-RPC and no protocol: errors only.
		{"jsonrpc", FromChild, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom"}}`, `error -32000: boom`},
		{"jsonrpc", FromChild, `{"jsonrpc":"2.0","id":1,"result":{}}`, ``},
		{"", FromChild, `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`, `error 1: x`},
		// Not JSON, not an object: nothing to say, no panic.
		{"acp", FromChild, `not json`, ``},
		{"pi", FromChild, `[1,2]`, ``},
	}
	for _, c := range cases {
		var p Protocol
		if c.proto != "" {
			var err error
			if p, err = Lookup(c.proto); err != nil {
				t.Fatal(err)
			}
		}
		info := Info{}
		if p != nil {
			info = p.Classify(c.dir, []byte(c.frame))
		}
		if got := Summarize(p, c.dir, []byte(c.frame), info); got != c.want {
			t.Errorf("%s %s\n got %q\nwant %q", c.proto, c.frame, got, c.want)
		}
	}
}

func TestSummaryIsOneShortLine(t *testing.T) {
	long := strings.Repeat("word ", 100)
	p, _ := Lookup("acp")
	frame := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + long + `\nsecond line"}}}}`
	got := Summarize(p, FromChild, []byte(frame), Info{})
	if n := utf8.RuneCountInString(got); n != summaryMax || !strings.HasSuffix(got, "…") || strings.ContainsAny(got, "\n\r\t") {
		t.Errorf("summary of a long chunk: %d runes %q; want %d, cut with …, on one line", n, got, summaryMax)
	}
}

// TestSummaryOnSessions summarises every frame of the bundled valid
// sessions: no panic, one line, and the session/update and event frames
// that carry text get a summary that tells them apart.
func TestSummaryOnSessions(t *testing.T) {
	files, _ := filepath.Glob("testdata/*/valid.session")
	if len(files) < 5 {
		t.Fatalf("found %d valid sessions, want the bundled ones", len(files))
	}
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file))
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		distinct := map[string]bool{}
		summarised := 0
		for _, st := range loadSession(t, file) {
			s := Summarize(p, st.dir, st.frame, p.Classify(st.dir, st.frame))
			if strings.ContainsAny(s, "\n\r") || utf8.RuneCountInString(s) > summaryMax {
				t.Errorf("%s:%d: summary %q is not one short line", file, st.line, s)
			}
			if s != "" {
				summarised++
				distinct[s] = true
			}
		}
		if summarised == 0 || len(distinct) < summarised/3 {
			t.Errorf("%s: %d frames summarised, %d distinct summaries", file, summarised, len(distinct))
		}
		t.Logf("%s: %d frames summarised, %d distinct", name, summarised, len(distinct))
	}
}

func TestFailed(t *testing.T) {
	cases := []struct {
		proto, frame string
		want         bool
	}{
		{"acp", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`, true},
		{"acp", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`, false},
		{"mcp", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, true},
		{"mcp", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}`, false},
		{"mcp", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`, true},
		{"pi", `{"type":"response","command":"prompt","success":false,"error":"no key"}`, true},
		{"pi", `{"type":"response","command":"get_state","success":true}`, false},
		{"pi", `{"type":"tool_execution_end","toolName":"bash","isError":true}`, true},
		{"opi", `{"type":"ToolExecutionEnd","tool_name":"read","is_error":false}`, false},
		{"synaps", `{"type":"error","id":"10","message":"provider returned 529"}`, true},
		{"jsonrpc", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`, true},
		{"", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`, true},
		{"", `not json`, false},
	}
	for _, c := range cases {
		var p Protocol
		if c.proto != "" {
			p, _ = Lookup(c.proto)
		}
		if got := Failed(p, FromChild, []byte(c.frame), Info{}); got != c.want {
			t.Errorf("%s %s: Failed = %v, want %v", c.proto, c.frame, got, c.want)
		}
	}
}

package protocol

import "testing"

// summaryBenchFrames are frames as a session streams them: mostly ACP and
// MCP notifications, some responses, a DAP event and a pi update.
var summaryBenchFrames = []struct {
	proto string
	info  Info
	frame []byte
}{
	{"acp", Info{Kind: Notification, Method: "session/update"}, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello there, this is a long answer that goes on and on"}}}}`)},
	{"acp", Info{Kind: Notification, Method: "session/update"}, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read file","kind":"read","status":"pending"}}}`)},
	{"acp", Info{Kind: Response, Method: "session/prompt"}, []byte(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`)},
	{"mcp", Info{Kind: Response, Method: "tools/call"}, []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"no such file"}],"isError":true}}`)},
	{"mcp", Info{Kind: Notification, Method: "notifications/progress"}, []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1,"total":4}}`)},
	{"lsp", Info{Kind: Request, Method: "textDocument/hover"}, []byte(`{"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///w/main.go"},"position":{"line":7,"character":27}}}`)},
	{"dap", Info{Kind: Event, Method: "stopped"}, []byte(`{"seq":7,"type":"event","event":"stopped","body":{"reason":"breakpoint","threadId":1}}`)},
	{"pi", Info{Kind: Event, Method: "message_update"}, []byte(`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Hi!"}}`)},
}

// BenchmarkSummarize and BenchmarkFailed measure the per-frame work the
// viewer's list and export's reports do for each frame.
func BenchmarkSummarize(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f := &summaryBenchFrames[i%len(summaryBenchFrames)]
		Summarize(f.proto, FromChild, f.info, f.frame)
	}
}

func BenchmarkFailed(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f := &summaryBenchFrames[i%len(summaryBenchFrames)]
		Failed(f.proto, FromChild, f.info, f.frame)
	}
}

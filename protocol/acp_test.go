package protocol

import "testing"

const acpInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`

func TestACPRules(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
		want  string
	}{
		{"handshake missing", []step{
			in(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`),
		}, CodeHandshakeMissing},
		{"handshake late", []step{
			in(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`),
			in(acpInit),
		}, CodeHandshakeLate},
		{"unknown method", []step{in(acpInit), in(`{"jsonrpc":"2.0","id":1,"method":"session/explode","params":{}}`)}, "acp.unknown-method"},
		{"bad stopReason", []step{
			in(acpInit),
			in(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`),
			out(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"tired"}}`),
		}, "acp.bad-value"},
		{"bad sessionUpdate kind", []step{
			in(acpInit),
			out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"dance"}}}`),
		}, "acp.bad-value"},
		{"content block missing text", []step{
			in(acpInit),
			in(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text"}]}}`),
		}, "acp.missing-field"},
		{"tool call status wrong", []step{
			in(acpInit),
			out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","status":"done"}}}`),
		}, "acp.bad-value"},
		{"protocolVersion a string", []step{in(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1"}}`)}, "acp.wrong-type"},
		{"agent sends a client method", []step{
			in(acpInit),
			out(`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`),
		}, "acp.wrong-direction"},
		{"missing params", []step{in(acpInit), in(`{"jsonrpc":"2.0","id":1,"method":"session/list"}`)}, "acp.missing-params"},
		{"request sent as notification", []step{
			in(acpInit),
			in(`{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/","mcpServers":[]}}`),
		}, "acp.wrong-kind"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, _ := runSession(t, "acp", c.steps)
			if !hasCode(vs, c.want) {
				t.Errorf("want %s, got %v", c.want, vs)
			}
		})
	}
}

func TestACPExtensionMethods(t *testing.T) {
	vs, infos := runSession(t, "acp", []step{
		in(acpInit),
		out(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`),
		in(`{"jsonrpc":"2.0","id":1,"method":"_zed/custom","params":{"anything":[1]}}`),
		out(`{"jsonrpc":"2.0","method":"_agent/note"}`),
		out(`{"jsonrpc":"2.0","id":1,"result":"free-form"}`),
	})
	if len(vs) != 0 {
		t.Fatalf("extension methods: %v", vs)
	}
	if infos[4].Method != "_zed/custom" {
		t.Errorf("extension response method %q", infos[4].Method)
	}
}

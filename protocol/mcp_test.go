package protocol

import "testing"

func TestDetectACPvsMCP(t *testing.T) {
	cases := map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`:                                              "acp",
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`: "mcp",
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`:                                                                                    "mcp",
	}
	for frame, want := range cases {
		d := NewDetector()
		name, done := d.Add(FromParent, []byte(frame))
		if !done || name != want {
			t.Errorf("%s: got %q done=%v, want %q at once", frame, name, done, want)
		}
	}
	// Without initialize, method names decide after a few frames.
	var frames []DirFrame
	for i := 0; i < 3; i++ {
		frames = append(frames, DirFrame{FromParent, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)})
	}
	if got := Detect(frames); got != "mcp" {
		t.Errorf("tools/list session detected as %q", got)
	}
}

func TestMCPShapes(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
		want  string
		sev   Severity
	}{
		{"initialize without clientInfo", []step{
			in(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`),
		}, "mcp.missing-field", SevError},
		{"tools/call name not a string", []step{
			in(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`),
			in(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`),
		}, "mcp.wrong-type", SevError},
		{"tools/call result content block without text", []step{
			in(`{"jsonrpc":"2.0","id":0,"method":"server/discover"}`),
			in(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`),
			out(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text"}]}}`),
		}, "mcp.missing-field", SevError},
		{"bad log level", []step{
			in(`{"jsonrpc":"2.0","id":0,"method":"server/discover"}`),
			out(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"loud","data":"x"}}`),
		}, "mcp.bad-value", SevError},
		{"server sends a client-only request", []step{
			in(`{"jsonrpc":"2.0","id":0,"method":"server/discover"}`),
			out(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`),
		}, "mcp.wrong-direction", SevError},
		{"unknown method is info (each MCP version adds methods)", []step{
			in(`{"jsonrpc":"2.0","id":0,"method":"server/discover"}`),
			in(`{"jsonrpc":"2.0","method":"notifications/brand_new"}`),
		}, CodeMCPUnknownMethod, SevInfo},
		{"tools/list before initialize", []step{
			in(`{"jsonrpc":"2.0","id":1,"method":"ping"}`),
			in(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`),
		}, CodeHandshakeMissing, SevError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, _ := runSession(t, "mcp", c.steps)
			for _, v := range vs {
				if v.Code == c.want {
					if v.Severity != c.sev {
						t.Errorf("%s has severity %s, want %s", v.Code, v.Severity, c.sev)
					}
					return
				}
			}
			t.Errorf("want %s, got %v", c.want, vs)
		})
	}
}

func TestMCPCleanSession(t *testing.T) {
	vs, infos := runSession(t, "mcp", []step{
		in(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`),
		out(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`),
		in(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
		in(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`),
		out(`{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}`),
		in(`{"jsonrpc":"2.0","id":0,"result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}`),
		out(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`),
		out(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}],"isError":false}}`),
		in(`{"jsonrpc":"2.0","id":2,"method":"ping"}`),
		out(`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}`),
	})
	if len(vs) != 0 {
		t.Fatalf("clean MCP session: %v", vs)
	}
	if infos[5].Method != "sampling/createMessage" || infos[7].Method != "tools/call" {
		t.Errorf("responses not paired: %+v %+v", infos[5], infos[7])
	}
}

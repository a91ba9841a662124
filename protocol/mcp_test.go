package protocol

import (
	"fmt"
	"strings"
	"testing"
)

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

// TestMCPUnknownMethodRefused: a request whose method MCP does not define
// is info while the peer answers it (a newer revision's method, an
// extension); refused with -32601 by the peer it is a warning at the
// refusal (a typo such as tools/run). A known method refused with -32601
// (a server without that feature) is neither.
func TestMCPUnknownMethodRefused(t *testing.T) {
	p, _ := Lookup("mcp")
	lines := []string{
		`in {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`out {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`,
		`in {"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`in {"jsonrpc":"2.0","id":2,"method":"tools/run","params":{"name":"echo"}}`,
		`out {"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`,
		`in {"jsonrpc":"2.0","id":3,"method":"acme/status"}`,
		`out {"jsonrpc":"2.0","id":3,"result":{"ok":true}}`,
		`in {"jsonrpc":"2.0","id":4,"method":"resources/list"}`,
		`out {"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}`,
	}
	vs, _ := runSteps(p, mustSteps(t, lines...))
	var got []string
	for _, v := range vs {
		got = append(got, fmt.Sprintf("%d %s %s %s", v.Record, v.Severity, v.Code, v.Pointer))
	}
	want := []string{
		"4 info mcp.unknown-method /method",
		"5 warning mcp.unknown-method-refused /error/code",
		"6 info mcp.unknown-method /method",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant\n%s%s", strings.Join(got, "\n"), strings.Join(want, "\n"), fmtViolations(vs))
	}
	for _, v := range vs {
		if v.Code == CodeMCPUnknownMethodRefused && !strings.Contains(v.Message, `the server refused "tools/run" with -32601`) {
			t.Errorf("message: %s", v.Message)
		}
	}
}

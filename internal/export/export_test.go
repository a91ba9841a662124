package export

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/replay/replaytest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// cassettes for the goldens: the committed ACP sample (the ACP Go SDK
// example client and agent) and an MCP session of the MCP Go SDK peers
// (testdata/traffic/mcp-go-session: tools/call, roots/list, sampling, ping)
// written with fixed times.
func goldenCassettes(t *testing.T) map[string]string {
	t.Helper()
	acp, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	in, out := testpeers.FixtureStrings(t, "mcp-go-session")
	b := replaytest.New("mcp").Event("start").Interleave(in, out)
	b.Event("stdin-eof").Exit(0)
	recs := b.End()
	recs[0].Header.Created = "2026-11-21T08:00:00Z"
	mcp := filepath.Join(t.TempDir(), "mcp.cassette")
	if err := replaytest.WriteFile(mcp, recs, true); err != nil {
		t.Fatal(err)
	}
	demo, _ := filepath.Abs(filepath.Join("..", "..", "viewer", "testdata", "demo.cassette"))
	return map[string]string{"acp": acp, "mcp": mcp, "demo": demo}
}

func TestGoldens(t *testing.T) {
	for name, path := range goldenCassettes(t) {
		for _, format := range []string{"har", "trace", "otlp", "html"} {
			t.Run(name+"-"+format, func(t *testing.T) {
				var b bytes.Buffer
				var w Writer
				switch format {
				case "har":
					w = NewHAR(&b)
				case "trace":
					w = NewTrace(&b)
				case "html":
					w = NewHTML(&b)
				default:
					w = NewOTLP(&b, false)
				}
				if err := Run(path, w, Options{}, nil); err != nil {
					t.Fatal(err)
				}
				got := bytes.ReplaceAll(b.Bytes(), []byte(path), []byte("CASSETTE"))
				ext := ".golden.json"
				if format == "html" {
					ext = ".golden.html"
				} else if !json.Valid(got) {
					t.Fatalf("not JSON:\n%s", got)
				}
				golden := filepath.Join("testdata", name+"."+format+ext)
				if *update {
					os.WriteFile(golden, got, 0o644)
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test ./internal/export -update writes it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from %s (go test -update rewrites it)", format, golden)
				}
			})
		}
	}
}

// TestOTLPConventions checks the span names and attributes the OTel GenAI
// and MCP semantic conventions ask for, on both sessions.
func TestOTLPConventions(t *testing.T) {
	cs := goldenCassettes(t)
	spans := func(path string) []map[string]any {
		var b bytes.Buffer
		if err := Run(path, NewOTLP(&b, true), Options{}, nil); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []map[string]any `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.ResourceSpans[0].ScopeSpans[0].Spans
	}
	attrs := func(s map[string]any) map[string]string {
		m := map[string]string{}
		for _, a := range s["attributes"].([]any) {
			kv := a.(map[string]any)
			v := kv["value"].(map[string]any)
			for _, x := range v {
				m[kv["key"].(string)] = x.(string)
			}
		}
		return m
	}
	var toolCall, prompt map[string]any
	for _, s := range spans(cs["mcp"]) {
		if strings.HasPrefix(s["name"].(string), "tools/call ") && toolCall == nil {
			toolCall = s
		}
	}
	for _, s := range spans(cs["acp"]) {
		if s["name"] == "session/prompt" {
			prompt = s
		}
	}
	if toolCall == nil || prompt == nil {
		t.Fatal("no tools/call or session/prompt span")
	}
	a := attrs(toolCall)
	if toolCall["name"] != "tools/call greet" || a["mcp.method.name"] != "tools/call" || a["gen_ai.tool.name"] != "greet" ||
		a["gen_ai.operation.name"] != "execute_tool" || a["jsonrpc.request.id"] == "" || a["network.transport"] != "pipe" || a["rpctap.request.body"] == "" {
		t.Errorf("tools/call span: %v %v", toolCall["name"], a)
	}
	if toolCall["kind"].(float64) != 3 || toolCall["endTimeUnixNano"].(string) <= toolCall["startTimeUnixNano"].(string) {
		t.Errorf("tools/call span kind/times: %v", toolCall)
	}
	p := attrs(prompt)
	if p["gen_ai.conversation.id"] == "" || p["gen_ai.operation.name"] != "invoke_agent" {
		t.Errorf("session/prompt span: %v", p)
	}
	// The prompt turn: its tool calls are execute_tool spans, children of
	// the prompt's span, from the tool_call update to the one that
	// completed it; what else happened in the session during the turn is
	// a child of the prompt too.
	var tools []map[string]any
	children := 0
	for _, s := range spans(cs["acp"]) {
		name := s["name"].(string)
		if strings.HasPrefix(name, "execute_tool ") {
			tools = append(tools, s)
		}
		if s["parentSpanId"] == prompt["spanId"] {
			children++
		}
		if name == "session/prompt" && s["parentSpanId"] != nil {
			t.Errorf("the prompt span has a parent: %v", s)
		}
	}
	if len(tools) != 2 {
		t.Fatalf("%d execute_tool spans, want 2 (the ACP SDK example agent reads files, then modifies them)", len(tools))
	}
	for _, tl := range tools {
		a := attrs(tl)
		if tl["parentSpanId"] != prompt["spanId"] || a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.call.id"] == "" ||
			a["gen_ai.conversation.id"] != p["gen_ai.conversation.id"] || tl["endTimeUnixNano"].(string) < tl["startTimeUnixNano"].(string) {
			t.Errorf("tool span %v %v", tl["name"], a)
		}
	}
	if tools[0]["name"] != "execute_tool Reading project files" {
		t.Errorf("first tool span %q", tools[0]["name"])
	}
	if children < 8 {
		t.Errorf("%d spans are children of the prompt, want its updates, tool calls and permission request", children)
	}
}

// TestRedactAndHAR: secrets are redacted in every export (here a key added
// with --redact), and a HAR entry's latency is its answer's.
func TestRedactAndHAR(t *testing.T) {
	b := replaytest.New("jsonrpc").Event("start")
	b.In(`{"jsonrpc":"2.0","id":1,"method":"login","params":{"password":"hunter2","user":"ann","pin":"1234"}}`)
	b.Wait(2_500_000).Out(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"denied"}}`)
	b.Out(`{"jsonrpc":"2.0","method":"note"}`)
	recs := b.End()
	recs[0].Header.Created = "2026-11-21T08:00:00Z"
	path := filepath.Join(t.TempDir(), "s.cassette")
	if err := replaytest.WriteFile(path, recs, true); err != nil {
		t.Fatal(err)
	}
	for _, w := range []func(*bytes.Buffer) Writer{
		func(b *bytes.Buffer) Writer { return NewHAR(b) },
		func(b *bytes.Buffer) Writer { return NewOTLP(b, true) },
		func(b *bytes.Buffer) Writer { return NewTrace(b) },
	} {
		var out bytes.Buffer
		if err := Run(path, w(&out), Options{Redactor: redactWith("pin")}, nil); err != nil {
			t.Fatal(err)
		}
		if s := out.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "1234") {
			t.Errorf("a secret reached the export:\n%s", s)
		}
	}
	var out bytes.Buffer
	Run(path, NewHAR(&out), Options{}, nil)
	var har struct {
		Log struct {
			Entries []struct {
				Time     float64 `json:"time"`
				Response struct {
					Status int `json:"status"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(out.Bytes(), &har); err != nil || len(har.Log.Entries) != 2 {
		t.Fatalf("%v %s", err, out.String())
	}
	if e := har.Log.Entries[0]; e.Time < 2.5 || e.Time > 4 || e.Response.Status != 500 { // 2.5 ms waited, plus the builder's step
		t.Errorf("the error answer: %+v", e)
	}
	if e := har.Log.Entries[1]; e.Response.Status != 204 {
		t.Errorf("the notification: %+v", e)
	}
}

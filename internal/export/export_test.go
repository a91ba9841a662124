package export

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
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
					// the page's structure and data, not its bytes: a
					// style or script change leaves it alone
					ext = ".outline.txt"
					got = []byte(htmlOutline(t, string(got)))
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
	spans := func(path string) []map[string]any { return otlpSpans(t, path, true) }
	attrs := spanAttrs
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
	if p["gen_ai.conversation.id"] == "" || p["gen_ai.operation.name"] != "invoke_agent" || p["gen_ai.response.finish_reasons"] != "end_turn" {
		t.Errorf("session/prompt span: %v", p)
	}
	// The prompt turn: its tool calls are execute_tool spans, children of
	// the prompt's span, from the tool_call update to the one that
	// completed it; a tool call's updates and the permission request
	// naming it are its children; what else happened in the session
	// during the turn is a child of the prompt.
	var tools []map[string]any
	children := map[any]int{} // parent span id -> children
	for _, s := range spans(cs["acp"]) {
		name := s["name"].(string)
		if strings.HasPrefix(name, "execute_tool ") {
			tools = append(tools, s)
		}
		children[s["parentSpanId"]]++
		if name == "session/prompt" && s["parentSpanId"] != nil {
			t.Errorf("the prompt span has a parent: %v", s)
		}
	}
	if len(tools) != 2 {
		t.Fatalf("%d execute_tool spans, want 2 (the ACP SDK example agent reads files, then modifies them)", len(tools))
	}
	for i, tl := range tools {
		a := attrs(tl)
		if tl["parentSpanId"] != prompt["spanId"] || a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.call.id"] != fmt.Sprintf("call_%d", i+1) ||
			a["gen_ai.conversation.id"] != p["gen_ai.conversation.id"] || tl["endTimeUnixNano"].(string) <= tl["startTimeUnixNano"].(string) ||
			a["rpctap.acp.tool.kind"] != []string{"read", "edit"}[i] || a["rpctap.acp.tool.status"] != "completed" || a["gen_ai.tool.type"] != "" {
			t.Errorf("tool span %v %v", tl["name"], a)
		}
	}
	if tools[0]["name"] != "execute_tool Reading project files" {
		t.Errorf("first tool span %q", tools[0]["name"])
	}
	// 4 agent messages and 2 tool calls under the prompt; call_1's two
	// updates under it; call_2's two updates and the permission request
	// asking about it under call_2; initialize, session/new, the prompt
	// at the top.
	if children[prompt["spanId"]] != 6 || children[tools[0]["spanId"]] != 2 || children[tools[1]["spanId"]] != 3 || children[nil] != 3 {
		t.Errorf("children per parent: prompt %d, call_1 %d, call_2 %d, roots %d", children[prompt["spanId"]], children[tools[0]["spanId"]], children[tools[1]["spanId"]], children[nil])
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

// spanAttrs flattens an OTLP/JSON span's attributes to strings (arrays
// joined by ",").
func spanAttrs(s map[string]any) map[string]string {
	m := map[string]string{}
	for _, a := range s["attributes"].([]any) {
		kv := a.(map[string]any)
		for typ, x := range kv["value"].(map[string]any) {
			if typ == "arrayValue" {
				var vs []string
				for _, v := range x.(map[string]any)["values"].([]any) {
					vs = append(vs, v.(map[string]any)["stringValue"].(string))
				}
				m[kv["key"].(string)] = strings.Join(vs, ",")
				continue
			}
			m[kv["key"].(string)] = x.(string)
		}
	}
	return m
}

// otlpSpans exports path as OTLP/JSON (with the bodies when payloads) and
// returns its spans.
func otlpSpans(t *testing.T, path string, payloads bool) []map[string]any {
	t.Helper()
	var b bytes.Buffer
	if err := Run(path, NewOTLP(&b, payloads), Options{}, nil); err != nil {
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

// TestACPToolCallEnds: a failed tool call is an execute_tool span with
// error.type and status ERROR; a tool call still in flight when its turn
// is answered (here cancelled) ends with the turn instead of being lost;
// one never finished outside any turn ends at its last update; tool call
// ids are per session (two sessions' call_1 are two spans); an error
// answer to a prompt gives it error.type.
func TestACPToolCallEnds(t *testing.T) {
	up := func(sid, u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":` + u + `}}`
	}
	b := replaytest.New("acp").Event("start")
	b.In(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	b.In(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s2","prompt":[]}}`)
	b.Wait(1e6).Out(up("s1", `{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Run tests","kind":"execute","status":"pending"}`))
	b.Wait(1e6).Out(up("s2", `{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Fetch","kind":"fetch"}`))
	b.Wait(1e6).Out(up("s1", `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"failed"}`))
	b.Wait(1e6).Out(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`)
	b.Wait(1e6).Out(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}`)
	b.Wait(1e6).Out(up("s1", `{"sessionUpdate":"tool_call","toolCallId":"call_9","title":"Late","status":"in_progress"}`))
	recs := b.End()
	recs[0].Header.Created = "2026-11-21T08:00:00Z"
	path := filepath.Join(t.TempDir(), "f.cassette")
	if err := replaytest.WriteFile(path, recs, true); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	prompts := map[string]map[string]any{}
	for _, s := range otlpSpans(t, path, false) {
		got[s["name"].(string)] = s
		if s["name"] == "session/prompt" {
			prompts[spanAttrs(s)["gen_ai.conversation.id"]] = s
		}
	}
	fail, fetch, late := got["execute_tool Run tests"], got["execute_tool Fetch"], got["execute_tool Late"]
	if fail == nil || fetch == nil || late == nil || len(prompts) != 2 {
		t.Fatalf("spans: %v", got)
	}
	if a := spanAttrs(fail); a["error.type"] != "tool_call_failed" || fail["status"].(map[string]any)["code"] != 2.0 || fail["parentSpanId"] != prompts["s1"]["spanId"] {
		t.Errorf("failed tool call: %v %v", fail, a)
	}
	if a := spanAttrs(fetch); fetch["endTimeUnixNano"] != prompts["s2"]["endTimeUnixNano"] || a["error.type"] != "" || fetch["parentSpanId"] != prompts["s2"]["spanId"] || a["rpctap.acp.tool.kind"] != "fetch" {
		t.Errorf("the tool call in flight when s2's turn was cancelled: %v %v", fetch, a)
	}
	if late["parentSpanId"] != nil || late["endTimeUnixNano"] != late["startTimeUnixNano"] || spanAttrs(late)["rpctap.acp.tool.status"] != "in_progress" {
		t.Errorf("the tool call outside any turn: %v", late)
	}
	if a := spanAttrs(prompts["s2"]); a["gen_ai.response.finish_reasons"] != "cancelled" {
		t.Errorf("s2's prompt: %v", a)
	}
	if a := spanAttrs(prompts["s1"]); a["error.type"] != "-32603" || a["gen_ai.response.finish_reasons"] != "" {
		t.Errorf("s1's prompt: %v", a)
	}
}

// TestExportKeepsProgressTokens: an LSP session's progress tokens are
// correlation ids the protocol declares (protocol.NotSecret), so an export
// shows them as the recorder kept them; a token under any other method is
// still a secret.
func TestExportKeepsProgressTokens(t *testing.T) {
	b := replaytest.New("lsp").Event("start")
	b.Out(`{"jsonrpc":"2.0","id":1,"method":"window/workDoneProgress/create","params":{"token":"tok-41"}}`)
	b.In(`{"jsonrpc":"2.0","id":1,"result":null}`)
	b.Out(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"tok-41","value":{"kind":"begin","title":"Indexing"}}}`)
	b.In(`{"jsonrpc":"2.0","id":2,"method":"acme/signIn","params":{"token":"ghp_secret"}}`)
	recs := b.End()
	recs[0].Header.Created = "2026-11-21T08:00:00Z"
	path := filepath.Join(t.TempDir(), "s.cassette")
	if err := replaytest.WriteFile(path, recs, true); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(path, NewOTLP(&out, true), Options{}, nil); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, `\"token\":\"tok-41\"`) || strings.Contains(s, "ghp_secret") {
		t.Errorf("want both progress tokens kept and the sign-in token redacted:\n%s", s)
	}
}

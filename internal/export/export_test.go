package export

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
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
	return map[string]string{"acp": acp, "mcp": mcp}
}

func TestGoldens(t *testing.T) {
	for name, path := range goldenCassettes(t) {
		for _, format := range []string{"har", "trace", "otlp"} {
			t.Run(name+"-"+format, func(t *testing.T) {
				var b bytes.Buffer
				var w Writer
				switch format {
				case "har":
					w = NewHAR(&b)
				case "trace":
					w = NewTrace(&b)
				default:
					w = NewOTLP(&b, false)
				}
				if err := Run(path, w, Options{}, nil); err != nil {
					t.Fatal(err)
				}
				got := bytes.ReplaceAll(b.Bytes(), []byte(path), []byte("CASSETTE"))
				if !json.Valid(got) {
					t.Fatalf("not JSON:\n%s", got)
				}
				golden := filepath.Join("testdata", name+"."+format+".golden.json")
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

// otlpSpans exports path as OTLP/JSON and returns its spans.
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

// spanAttrs flattens a span's attributes to strings (arrays joined by ",").
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

// TestOTLPConventions checks the span names and attributes the OTel GenAI
// and MCP semantic conventions ask for, on both sessions.
func TestOTLPConventions(t *testing.T) {
	cs := goldenCassettes(t)
	var toolCall, prompt map[string]any
	for _, s := range otlpSpans(t, cs["mcp"], true) {
		if strings.HasPrefix(s["name"].(string), "tools/call ") && toolCall == nil {
			toolCall = s
		}
	}
	for _, s := range otlpSpans(t, cs["acp"], true) {
		if s["name"] == "session/prompt" {
			prompt = s
		}
	}
	if toolCall == nil || prompt == nil {
		t.Fatal("no tools/call or session/prompt span")
	}
	a := spanAttrs(toolCall)
	if toolCall["name"] != "tools/call greet" || a["mcp.method.name"] != "tools/call" || a["gen_ai.tool.name"] != "greet" ||
		a["gen_ai.operation.name"] != "execute_tool" || a["jsonrpc.request.id"] == "" || a["network.transport"] != "pipe" || a["rpctap.request.body"] == "" {
		t.Errorf("tools/call span: %v %v", toolCall["name"], a)
	}
	if toolCall["kind"].(float64) != 3 || toolCall["endTimeUnixNano"].(string) <= toolCall["startTimeUnixNano"].(string) {
		t.Errorf("tools/call span kind/times: %v", toolCall)
	}
	p := spanAttrs(prompt)
	if p["gen_ai.conversation.id"] == "" || p["gen_ai.operation.name"] != "invoke_agent" {
		t.Errorf("session/prompt span: %v", p)
	}
}

// TestACPTurnSpans: on the ACP SDK sample, the session/prompt span is the
// parent of its two tool calls (execute_tool spans from tool_call to the
// completing tool_call_update, named by their titles) and of the turn's
// updates; each tool call is the parent of its updates and of the
// permission request naming it; spans outside the turn have no parent.
func TestACPTurnSpans(t *testing.T) {
	acp, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	spans := otlpSpans(t, acp, true)
	byID := map[string]map[string]any{}
	var prompt map[string]any
	var tools []map[string]any
	for _, s := range spans {
		byID[s["spanId"].(string)] = s
		switch {
		case s["name"] == "session/prompt":
			prompt = s
		case strings.HasPrefix(s["name"].(string), "execute_tool "):
			tools = append(tools, s)
		}
	}
	if prompt == nil || len(tools) != 2 {
		t.Fatalf("want a prompt span and 2 tool spans, got %v and %d", prompt != nil, len(tools))
	}
	pid := prompt["spanId"].(string)
	if prompt["parentSpanId"] != nil {
		t.Errorf("the prompt has a parent: %v", prompt["parentSpanId"])
	}
	if a := spanAttrs(prompt); a["gen_ai.response.finish_reasons"] != "end_turn" {
		t.Errorf("prompt finish reasons: %v", a)
	}
	sort.Slice(tools, func(i, j int) bool {
		return tools[i]["startTimeUnixNano"].(string) < tools[j]["startTimeUnixNano"].(string)
	})
	for i, want := range []struct{ call, kind string }{{"call_1", "read"}, {"call_2", "edit"}} {
		tl := tools[i]
		a := spanAttrs(tl)
		if tl["parentSpanId"] != pid || a["gen_ai.tool.call.id"] != want.call || a["rpctap.acp.tool.kind"] != want.kind ||
			a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] == "" || tl["name"] != "execute_tool "+a["gen_ai.tool.name"] ||
			a["gen_ai.conversation.id"] != "sess_d19697b4d00049da84f8ab34" || a["rpctap.acp.tool.status"] != "completed" || a["error.type"] != "" ||
			a["gen_ai.tool.call.arguments"] == "" || a["gen_ai.tool.call.result"] == "" {
			t.Errorf("tool span %d: %v %v", i, tl["name"], a)
		}
		if !(tl["startTimeUnixNano"].(string) >= prompt["startTimeUnixNano"].(string) && tl["endTimeUnixNano"].(string) > tl["startTimeUnixNano"].(string) &&
			tl["endTimeUnixNano"].(string) <= prompt["endTimeUnixNano"].(string)) {
			t.Errorf("tool span %d is not inside its turn: %v..%v in %v..%v", i, tl["startTimeUnixNano"], tl["endTimeUnixNano"], prompt["startTimeUnixNano"], prompt["endTimeUnixNano"])
		}
	}
	children := map[string]int{} // parent name -> spans under it
	for _, s := range spans {
		a := spanAttrs(s)
		par, _ := s["parentSpanId"].(string)
		switch {
		case s["name"] == "initialize" || s["name"] == "session/new":
			if par != "" {
				t.Errorf("%v outside the turn has a parent", s["name"])
			}
		case s["name"] == "session/request_permission":
			if par != tools[1]["spanId"] {
				t.Errorf("the permission request is not under call_2: %v", par)
			}
		case s["name"] == "session/update":
			if par == "" {
				t.Errorf("update record %s has no parent", a["rpctap.record"])
			}
		}
		if p := byID[par]; p != nil {
			children[p["name"].(string)]++
		}
	}
	// 8 updates: 4 messages under the prompt, 2 under each tool call (the
	// second's permission request too).
	if children["session/prompt"] != 2+4 || children[tools[0]["name"].(string)] != 2 || children[tools[1]["name"].(string)] != 3 {
		t.Errorf("children per parent: %v", children)
	}
}

// TestACPToolFailed: a failed tool call is an execute_tool span with
// error.type=failed and status ERROR; a tool call still in flight when its
// turn ends (here cancelled) ends with the turn; an error answer to the
// prompt gives the prompt error.type; updates outside any turn have no
// parent.
func TestACPToolFailed(t *testing.T) {
	up := func(sid, u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":` + u + `}}`
	}
	b := replaytest.New("acp").Event("start")
	b.In(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	b.Wait(1e6).Out(up("s1", `{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Run tests","kind":"execute","status":"pending"}`))
	b.Wait(1e6).Out(up("s1", `{"sessionUpdate":"tool_call","toolCallId":"t2","title":"Fetch","kind":"fetch"}`))
	b.Wait(1e6).Out(up("s1", `{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"failed"}`))
	b.Wait(1e6).Out(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`)
	b.Wait(1e6).Out(up("s1", `{"sessionUpdate":"tool_call","toolCallId":"t3","title":"Late","status":"completed"}`))
	b.In(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	b.Wait(1e6).Out(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"boom"}}`)
	recs := b.End()
	recs[0].Header.Created = "2026-11-21T08:00:00Z"
	path := filepath.Join(t.TempDir(), "f.cassette")
	if err := replaytest.WriteFile(path, recs, true); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	var prompts []map[string]any
	for _, s := range otlpSpans(t, path, false) {
		if s["name"] == "session/prompt" {
			prompts = append(prompts, s)
		}
		got[s["name"].(string)] = s
	}
	if len(prompts) != 2 {
		t.Fatalf("prompts: %d", len(prompts))
	}
	fail, fetch, late := got["execute_tool Run tests"], got["execute_tool Fetch"], got["execute_tool Late"]
	if fail == nil || fetch == nil || late == nil {
		t.Fatalf("tool spans missing: %v", got)
	}
	if a := spanAttrs(fail); a["error.type"] != "failed" || fail["status"].(map[string]any)["code"] != 2.0 || fail["parentSpanId"] != prompts[0]["spanId"] || a["gen_ai.tool.call.arguments"] != "" {
		t.Errorf("failed tool: %v %v", fail, a)
	}
	if a := spanAttrs(fetch); fetch["endTimeUnixNano"] != prompts[0]["endTimeUnixNano"] || a["error.type"] != "" || fetch["parentSpanId"] != prompts[0]["spanId"] {
		t.Errorf("tool in flight at the turn's end: %v %v", fetch, a)
	}
	if late["parentSpanId"] != nil {
		t.Errorf("a tool call outside any turn has a parent: %v", late)
	}
	if a := spanAttrs(prompts[0]); a["gen_ai.response.finish_reasons"] != "cancelled" {
		t.Errorf("first prompt: %v", a)
	}
	if a := spanAttrs(prompts[1]); a["error.type"] != "-32603" || prompts[1]["status"].(map[string]any)["message"] != "boom" {
		t.Errorf("second prompt: %v", a)
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
		func(b *bytes.Buffer) Writer { return NewHTML(b) },
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

package export

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/rpctap/rpctap/protocol"
)

// Span is one OpenTelemetry span as rpctap builds it, before it is written
// as OTLP/JSON (JSONSpans) or handed to the OTel SDK's exporter (the
// --send sink in cmd/rpctap).
type Span struct {
	TraceID    [16]byte
	SpanID     [8]byte
	Parent     [8]byte // zero: a root span
	Name       string
	Kind       int   // OTLP SpanKind: 1 INTERNAL, 3 CLIENT
	Start, End int64 // Unix ns
	Attrs      []Attr
	Error      bool   // status ERROR
	StatusMsg  string // with Error
}

// Attr is one span or resource attribute; Value is a string, an int64 or
// a []string.
type Attr struct {
	Key   string
	Value any
}

// SpanSink receives the spans of one export: Begin once with the resource
// attributes, Span per span (parents may come after their children: a
// prompt turn ends after its tool calls), End once.
type SpanSink interface {
	Begin(resource []Attr) error
	Span(s *Span) error
	End() error
}

// OTLP writes a cassette as OpenTelemetry spans (docs/export.md
// "OpenTelemetry"): a span per request with its answer, named
// "{method} {target}" as the MCP semantic conventions name them, kind
// CLIENT (the sender's view), with jsonrpc.request.id, rpc.method,
// mcp.method.name (MCP), gen_ai.tool.name, gen_ai.operation.name,
// gen_ai.conversation.id (the ACP session), error.type and
// network.transport=pipe; payloads only when asked. Notifications are
// spans of zero length. All spans share one trace (the session), its id
// derived from the protocol and the session's start.
//
// ACP prompt turns: a session/prompt request is the parent of every span of
// its session recorded until its answer, and each tool call of the turn
// (session/update tool_call and tool_call_update with one toolCallId) is an
// execute_tool span of its own, from its first update to the one with
// status completed or failed, parent of those updates and of the
// session/request_permission naming it. Only the turns and tool calls in
// flight are held.
type OTLP struct {
	s        Session
	sink     SpanSink
	payloads bool
	trace    [16]byte
	turns    map[string]*turn     // ACP sessionId -> its prompt in flight
	tools    map[string]*toolCall // sessionId NUL toolCallId -> in flight
}

type turn struct {
	id    [8]byte
	t     int64    // the prompt request's record time
	tools []string // keys of its tool calls, in arrival order
}

type toolCall struct {
	id, parent            [8]byte
	session, callID       string
	title, kind, status   string
	start, end            int64 // record times
	input, output         json.RawMessage
	firstRecord, nUpdates uint64
}

// NewOTLP writes OTLP/JSON to w; payloads adds rpctap.request.body,
// rpctap.response.body and the tool calls' gen_ai.tool.call.arguments and
// gen_ai.tool.call.result.
func NewOTLP(w io.Writer, payloads bool) *OTLP { return NewOTLPSpans(NewJSONSpans(w), payloads) }

// NewOTLPSpans hands the spans to sink.
func NewOTLPSpans(sink SpanSink, payloads bool) *OTLP {
	return &OTLP{sink: sink, payloads: payloads, turns: map[string]*turn{}, tools: map[string]*toolCall{}}
}

func (o *OTLP) Begin(s Session) error {
	o.s = s
	sum := sha256.Sum256([]byte(s.Protocol + "\x00" + s.Created.UTC().Format(time.RFC3339Nano)))
	copy(o.trace[:], sum[:16])
	return o.sink.Begin([]Attr{{"service.name", "rpctap"}, {"rpctap.cassette", s.File}, {"rpctap.protocol", orRaw(s.Protocol)}})
}

func spanIDOf(parts ...any) [8]byte {
	h := fnv.New64a()
	fmt.Fprint(h, parts...)
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], h.Sum64())
	return id
}

func frameSpanID(f *Frame) [8]byte { return spanIDOf(fmt.Sprintf("%d/%s", f.Record, f.Dir)) }

// Open is told of each request as it is read (Opener): an ACP session/prompt
// opens its session's turn.
func (o *OTLP) Open(req *Frame) {
	if o.s.Protocol != "acp" || req.Method != "session/prompt" {
		return
	}
	if sid := protocol.CallFactsOf("acp", req.Method, req.Payload).Conversation; sid != "" {
		o.turns[sid] = &turn{id: frameSpanID(req), t: req.T}
	}
}

// acpUpdate is what a session/update tells about a tool call.
type acpUpdate struct {
	Params struct {
		Update struct {
			SessionUpdate string          `json:"sessionUpdate"`
			ToolCallID    string          `json:"toolCallId"`
			Title         string          `json:"title"`
			Kind          string          `json:"kind"`
			Status        string          `json:"status"`
			RawInput      json.RawMessage `json:"rawInput"`
			RawOutput     json.RawMessage `json:"rawOutput"`
		} `json:"update"`
		ToolCall *struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"` // session/request_permission
	} `json:"params"`
}

func (o *OTLP) Exchange(x *Exchange) error {
	req := x.Request
	facts := protocol.CallFactsOf(o.s.Protocol, req.Method, req.Payload)
	var parent [8]byte
	var closing *turn
	if o.s.Protocol == "acp" && facts.Conversation != "" {
		sid := facts.Conversation
		tn := o.turns[sid]
		if tn != nil && frameSpanID(req) == tn.id { // the prompt itself: its turn ends
			closing, tn = tn, nil
			delete(o.turns, sid)
		}
		if tn != nil && req.T >= tn.t {
			parent = tn.id
		}
		if p, err := o.acpTool(x, sid, tn, parent); err != nil {
			return err
		} else if p != nil {
			parent = *p
		}
	}
	if err := o.sink.Span(o.exchangeSpan(x, facts, parent)); err != nil {
		return err
	}
	if closing != nil {
		end := req.T
		if x.Response != nil {
			end = x.Response.T
		}
		for _, k := range closing.tools {
			if tc := o.tools[k]; tc != nil {
				delete(o.tools, k)
				tc.end = end
				if err := o.sink.Span(o.toolSpan(tc)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// acpTool follows the tool call a session/update or
// session/request_permission is about, and returns the tool call's span id
// as the frame's parent (nil when the frame names no tool call in flight).
func (o *OTLP) acpTool(x *Exchange, sid string, tn *turn, parent [8]byte) (*[8]byte, error) {
	req := x.Request
	if req.Method != "session/update" && req.Method != "session/request_permission" {
		return nil, nil
	}
	var u acpUpdate
	if json.Unmarshal(req.Payload, &u) != nil {
		return nil, nil
	}
	if req.Method == "session/request_permission" {
		if u.Params.ToolCall == nil {
			return nil, nil
		}
		if tc := o.tools[sid+"\x00"+u.Params.ToolCall.ToolCallID]; tc != nil {
			return &tc.id, nil
		}
		return nil, nil
	}
	up := u.Params.Update
	if (up.SessionUpdate != "tool_call" && up.SessionUpdate != "tool_call_update") || up.ToolCallID == "" {
		return nil, nil
	}
	key := sid + "\x00" + up.ToolCallID
	tc := o.tools[key]
	if tc == nil {
		tc = &toolCall{id: spanIDOf("tool/", sid, "/", up.ToolCallID, "/", req.Record), parent: parent, session: sid, callID: up.ToolCallID, start: req.T, firstRecord: req.Record}
		o.tools[key] = tc
		if tn != nil {
			tn.tools = append(tn.tools, key)
		}
	}
	tc.end = req.T
	tc.nUpdates++
	if up.Title != "" {
		tc.title = up.Title
	}
	if up.Kind != "" {
		tc.kind = up.Kind
	}
	if up.Status != "" {
		tc.status = up.Status
	}
	if len(up.RawInput) > 0 {
		tc.input = up.RawInput
	}
	if len(up.RawOutput) > 0 {
		tc.output = up.RawOutput
	}
	id := tc.id
	if tc.status == "completed" || tc.status == "failed" {
		delete(o.tools, key)
		if err := o.sink.Span(o.toolSpan(tc)); err != nil {
			return nil, err
		}
	}
	return &id, nil
}

func (o *OTLP) toolSpan(tc *toolCall) *Span {
	name := tc.title
	if name == "" {
		name = tc.kind
	}
	attrs := []Attr{{"gen_ai.operation.name", "execute_tool"}, {"gen_ai.tool.name", name}, {"gen_ai.tool.call.id", tc.callID}, {"gen_ai.conversation.id", tc.session}}
	if tc.kind != "" {
		attrs = append(attrs, Attr{"rpctap.acp.tool.kind", tc.kind})
	}
	if tc.status != "" {
		attrs = append(attrs, Attr{"rpctap.acp.tool.status", tc.status})
	}
	attrs = append(attrs, Attr{"rpctap.record", int64(tc.firstRecord)}, Attr{"rpctap.acp.tool.updates", int64(tc.nUpdates)})
	sp := &Span{TraceID: o.trace, SpanID: tc.id, Parent: tc.parent, Name: "execute_tool " + name, Kind: 1,
		Start: at(o.s, tc.start).UnixNano(), End: at(o.s, tc.end).UnixNano()}
	if tc.status == "failed" {
		attrs = append(attrs, Attr{"error.type", "failed"})
		sp.Error, sp.StatusMsg = true, "tool call failed"
	}
	if o.payloads {
		if len(tc.input) > 0 {
			attrs = append(attrs, Attr{"gen_ai.tool.call.arguments", string(tc.input)})
		}
		if len(tc.output) > 0 {
			attrs = append(attrs, Attr{"gen_ai.tool.call.result", string(tc.output)})
		}
	}
	sp.Attrs = attrs
	return sp
}

func (o *OTLP) exchangeSpan(x *Exchange, facts protocol.CallFacts, parent [8]byte) *Span {
	req := x.Request
	name := orRaw(req.Method)
	if facts.Target != "" {
		name += " " + facts.Target
	}
	sp := &Span{TraceID: o.trace, SpanID: frameSpanID(req), Parent: parent, Name: name, Kind: 3, Start: at(o.s, req.T).UnixNano()}
	sp.End = sp.Start
	attrs := []Attr{{"rpc.method", req.Method}, {"network.transport", "pipe"}, {"rpctap.direction", req.Dir}, {"rpctap.record", int64(req.Record)}}
	if o.s.Protocol == "mcp" {
		attrs = append(attrs, Attr{"mcp.method.name", req.Method})
	}
	if o.s.Protocol == "acp" || o.s.Protocol == "mcp" || o.s.Protocol == "jsonrpc" || o.s.Protocol == "lsp" {
		attrs = append(attrs, Attr{"rpc.system", "jsonrpc"})
	}
	if req.ID != "" {
		attrs = append(attrs, Attr{"jsonrpc.request.id", req.ID})
	}
	if facts.Tool != "" {
		attrs = append(attrs, Attr{"gen_ai.tool.name", facts.Tool})
	}
	if facts.Operation != "" {
		attrs = append(attrs, Attr{"gen_ai.operation.name", facts.Operation})
	}
	if facts.Conversation != "" {
		attrs = append(attrs, Attr{"gen_ai.conversation.id", facts.Conversation})
	}
	if x.Notification {
		sp.Kind = 1
	}
	if x.Response != nil {
		sp.End = at(o.s, x.Response.T).UnixNano()
		if code, msg, ok := errorOf(x.Response.Payload); ok {
			attrs = append(attrs, Attr{"error.type", strconv.FormatInt(code, 10)})
			if code != 0 {
				attrs = append(attrs, Attr{"rpc.jsonrpc.error_code", code})
			}
			sp.Error, sp.StatusMsg = true, msg
		} else if o.s.Protocol == "acp" && req.Method == "session/prompt" {
			var r struct {
				Result struct {
					StopReason string `json:"stopReason"`
				} `json:"result"`
			}
			if json.Unmarshal(x.Response.Payload, &r) == nil && r.Result.StopReason != "" {
				attrs = append(attrs, Attr{"gen_ai.response.finish_reasons", []string{r.Result.StopReason}})
			}
		}
		if o.payloads {
			attrs = append(attrs, Attr{"rpctap.response.body", string(x.Response.Payload)})
		}
	} else if !x.Notification {
		attrs = append(attrs, Attr{"error.type", "unanswered"})
		sp.Error, sp.StatusMsg = true, "never answered"
	}
	if o.payloads {
		attrs = append(attrs, Attr{"rpctap.request.body", string(req.Payload)})
	}
	sp.Attrs = attrs
	return sp
}

// End writes the tool calls still in flight (a turn never answered, or
// updates outside any turn), ended at their last update.
func (o *OTLP) End() error {
	var left []*toolCall
	for _, tc := range o.tools {
		left = append(left, tc)
	}
	sort.Slice(left, func(i, j int) bool { return left[i].firstRecord < left[j].firstRecord })
	for _, tc := range left {
		if err := o.sink.Span(o.toolSpan(tc)); err != nil {
			return err
		}
	}
	return o.sink.End()
}

// JSONSpans writes one OTLP/JSON ExportTraceServiceRequest, streamed span
// by span.
type JSONSpans struct{ js *jsonStream }

// NewJSONSpans writes to w.
func NewJSONSpans(w io.Writer) *JSONSpans { return &JSONSpans{js: newJSONStream(w)} }

func (j *JSONSpans) Begin(resource []Attr) error {
	j.js.tail = "\n]}]}]}\n"
	b, _ := json.Marshal(jsonAttrs(resource))
	_, err := fmt.Fprintf(j.js.w, `{"resourceSpans":[{"resource":{"attributes":%s},"scopeSpans":[{"scope":{"name":"rpctap","version":"1"},"spans":[`+"\n", b)
	return err
}

func (j *JSONSpans) Span(s *Span) error {
	e := map[string]any{
		"traceId": hex.EncodeToString(s.TraceID[:]), "spanId": hex.EncodeToString(s.SpanID[:]), "name": s.Name, "kind": s.Kind,
		"startTimeUnixNano": strconv.FormatInt(s.Start, 10), "endTimeUnixNano": strconv.FormatInt(s.End, 10),
		"attributes": jsonAttrs(s.Attrs), "status": map[string]any{},
	}
	if s.Parent != ([8]byte{}) {
		e["parentSpanId"] = hex.EncodeToString(s.Parent[:])
	}
	if s.Error {
		e["status"] = map[string]any{"code": 2, "message": s.StatusMsg} // STATUS_CODE_ERROR
	}
	return j.js.entry(e)
}

func (j *JSONSpans) End() error { return j.js.end() }

func jsonAttrs(as []Attr) []any {
	out := make([]any, len(as))
	for i, a := range as {
		out[i] = map[string]any{"key": a.Key, "value": jsonValue(a.Value)}
	}
	return out
}

func jsonValue(v any) map[string]any {
	switch x := v.(type) {
	case string:
		return map[string]any{"stringValue": x}
	case int64:
		return map[string]any{"intValue": strconv.FormatInt(x, 10)}
	case []string:
		vs := make([]any, len(x))
		for i, s := range x {
			vs[i] = map[string]any{"stringValue": s}
		}
		return map[string]any{"arrayValue": map[string]any{"values": vs}}
	}
	return map[string]any{"stringValue": fmt.Sprint(v)}
}

package export

import (
	"bufio"
	"crypto/sha256"
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

// jsonStream writes a JSON document whose one array grows entry by entry:
// head, then entries separated by commas, then tail.
type jsonStream struct {
	w    *bufio.Writer
	n    int
	tail string
}

func newJSONStream(w io.Writer) *jsonStream { return &jsonStream{w: bufio.NewWriterSize(w, 64<<10)} }

func (j *jsonStream) entry(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if j.n > 0 {
		j.w.WriteString(",\n")
	}
	j.n++
	_, err = j.w.Write(b)
	return err
}

func (j *jsonStream) end() error {
	j.w.WriteString(j.tail)
	return j.w.Flush()
}

// ---- HAR 1.2

// HAR writes an HTTP Archive 1.2 (docs/export.md "HAR"): one entry per
// exchange. A request is a POST to rpctap://PROTOCOL/METHOD with the frame
// as its JSON body; its answer is the response body, status 200, or 500 for
// an error answer; a request never answered has status 0; a notification
// or event is an entry with status 204 and no response body. time and
// timings.wait are the answer's latency in ms.
type HAR struct {
	s     Session
	js    *jsonStream
	notes []string // what was wrong with the cassette (Noter): the log's _rpctapNotes
}

// Note keeps msg for the log's "_rpctapNotes" (a custom field, as HAR 1.2
// allows them: its name starts with an underscore).
func (h *HAR) Note(msg string) { h.notes = append(h.notes, msg) }

// NewHAR writes to w.
func NewHAR(w io.Writer) *HAR { return &HAR{js: newJSONStream(w)} }

func (h *HAR) Begin(s Session) error {
	h.s = s
	h.js.tail = "\n]}}\n"
	_, err := fmt.Fprintf(h.js.w, `{"log":{"version":"1.2","creator":{"name":"rpctap","version":"1"},"comment":%s,"entries":[`+"\n", mustJSON("rpctap export of "+s.File+" ("+orRaw(s.Protocol)+")"))
	return err
}

func (h *HAR) Exchange(x *Exchange) error {
	req := x.Request
	type nv struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	status, statusText, latency := 0, "no answer", -1.0
	if x.CutOff != "" {
		statusText = x.CutOff
	}
	content := map[string]any{"size": 0, "mimeType": "application/json"}
	if x.Notification {
		status, statusText, latency = 204, req.Kind, 0
	}
	if x.Response != nil {
		latency = float64(x.Response.T-req.T) / 1e6
		status, statusText = 200, "OK"
		if code, msg, ok := errorOf(h.s.Protocol, x); ok {
			status, statusText = 500, fmt.Sprintf("%d %s", code, msg)
		}
		content = map[string]any{"size": len(x.Response.Payload), "mimeType": "application/json", "text": string(x.Response.Payload)}
	}
	wait := latency
	if wait < 0 {
		wait = -1
	}
	reqHeaders := []nv{{"X-Rpctap-Direction", req.Dir}, {"X-Rpctap-Kind", req.Kind}, {"X-Rpctap-Id", req.ID}, {"X-Rpctap-Record", strconv.FormatUint(req.Record, 10)}}
	if req.Intercept != "" {
		reqHeaders = append(reqHeaders, nv{"X-Rpctap-Intercept", req.Intercept})
	}
	respHeaders := []nv{}
	if x.Response != nil && x.Response.Intercept != "" {
		respHeaders = append(respHeaders, nv{"X-Rpctap-Intercept", x.Response.Intercept})
	}
	entry := map[string]any{
		"startedDateTime": at(h.s, req.T).UTC().Format(time.RFC3339Nano),
		"time":            max(latency, 0),
		"request": map[string]any{
			"method": "POST", "url": "rpctap://" + orRaw(h.s.Protocol) + "/" + req.Method, "httpVersion": "JSON-RPC",
			"headers": reqHeaders,
			"cookies": []nv{}, "queryString": []nv{}, "headersSize": -1, "bodySize": len(req.Payload),
			"postData": map[string]any{"mimeType": "application/json", "text": string(req.Payload)},
		},
		"response": map[string]any{
			"status": status, "statusText": statusText, "httpVersion": "JSON-RPC",
			"headers": respHeaders, "cookies": []nv{}, "content": content, "redirectURL": "", "headersSize": -1, "bodySize": content["size"],
		},
		"cache":   map[string]any{},
		"timings": map[string]any{"send": 0, "wait": wait, "receive": 0},
	}
	if x.CutOff != "" {
		entry["comment"] = x.CutOff
	}
	return h.js.entry(entry)
}

func (h *HAR) End() error {
	if len(h.notes) > 0 {
		h.js.tail = "\n],\"_rpctapNotes\":" + mustJSON(h.notes) + "}}\n"
	}
	return h.js.end()
}

// ---- Chrome / Perfetto trace

// Trace writes Chrome trace event JSON, which Perfetto and chrome://tracing
// open: one process for the session, one track (thread) per direction and
// method, a complete event ("X") per request with its answer, an instant
// ("i") per notification or event or unanswered request. Times in µs.
type Trace struct {
	s      Session
	js     *jsonStream
	tracks map[string]int
}

// NewTrace writes to w.
func NewTrace(w io.Writer) *Trace { return &Trace{js: newJSONStream(w), tracks: map[string]int{}} }

func (t *Trace) Begin(s Session) error {
	t.s = s
	t.js.tail = "\n]}\n"
	if _, err := io.WriteString(t.js.w, `{"displayTimeUnit":"ms","traceEvents":[`+"\n"); err != nil {
		return err
	}
	return t.js.entry(map[string]any{"ph": "M", "pid": 1, "name": "process_name", "args": map[string]any{"name": "rpctap " + s.File + " (" + orRaw(s.Protocol) + ")"}})
}

func (t *Trace) track(dir, method string) (int, error) {
	name := dir + " " + method
	if id, ok := t.tracks[name]; ok {
		return id, nil
	}
	id := len(t.tracks) + 1
	t.tracks[name] = id
	return id, t.js.entry(map[string]any{"ph": "M", "pid": 1, "tid": id, "name": "thread_name", "args": map[string]any{"name": name}})
}

func (t *Trace) Exchange(x *Exchange) error {
	req := x.Request
	tid, err := t.track(req.Dir, req.Method)
	if err != nil {
		return err
	}
	args := map[string]any{"record": req.Record, "kind": req.Kind}
	if req.ID != "" {
		args["id"] = req.ID
	}
	if req.Intercept != "" {
		args["intercept"] = req.Intercept
	}
	if x.Response != nil && x.Response.Intercept != "" {
		args["response_intercept"] = x.Response.Intercept
	}
	ev := map[string]any{"pid": 1, "tid": tid, "name": orRaw(req.Method), "cat": req.Kind, "ts": float64(req.T) / 1e3, "args": args}
	switch {
	case x.Response != nil:
		ev["ph"], ev["dur"] = "X", float64(x.Response.T-req.T)/1e3
		if code, msg, ok := errorOf(t.s.Protocol, x); ok {
			args["error"] = fmt.Sprintf("%d %s", code, msg)
		}
	default:
		ev["ph"], ev["s"] = "i", "t"
		switch {
		case x.CutOff != "":
			args["cut_off"] = true // the recording ends before an answer could come
		case !x.Notification:
			args["answered"] = false
		}
	}
	return t.js.entry(ev)
}

func (t *Trace) End() error { return t.js.end() }

// ---- OpenTelemetry OTLP/JSON

// OTLP writes one OTLP/JSON ExportTraceServiceRequest (docs/export.md
// "OpenTelemetry"): a span per request, named "{method} {target}" as the
// MCP semantic conventions name them, kind CLIENT (the sender's view), with
// jsonrpc.request.id, rpc.method, the protocol's method attribute
// (mcp.method.name), gen_ai.tool.name, gen_ai.operation.name,
// gen_ai.conversation.id, error.type and network.transport=pipe; payloads
// only when asked. Notifications are spans of zero length. All spans share
// one trace (the session), its id derived from the protocol and the
// session's start. What a protocol's frames mean for spans (targets, turns,
// tool calls) is the protocol's (protocol.CallFactsOf); this file names no
// protocol's method.
type OTLP struct {
	s        Session
	js       *jsonStream
	payloads bool
	trace    string
	// prompts maps a conversation to the span id of its open turn (the
	// request that opened it: an ACP session/prompt): what happens in that
	// conversation until the turn is answered (updates, permission
	// requests, file reads, tool calls) is a child of the turn's span.
	prompts map[string]string
	// tools holds the tool calls started and not yet finished, by
	// conversation NUL tool call id (ids are unique within one only).
	tools map[string]*toolCall
	// send, when set, receives each span instead of the JSON stream
	// (NewOTLPSender: spans go to an OTLP endpoint).
	send *otlpSender
	// link, while a linked cassette is exported into the parent's trace
	// (RunLinked), says where its spans hang.
	link *spanLink
	// more: End ends a session, not the output (RunLinked has more
	// sessions to write); sessions counts those begun.
	more     bool
	sessions int
}

// emit writes one span (in its OTLP/JSON form) to the stream or the sender.
func (o *OTLP) emit(span map[string]any) error {
	if o.send != nil {
		return o.send.add(span)
	}
	return o.js.entry(span)
}

// toolCall is a tool call between the update that starts it and the one
// that ends it (or its turn's end).
type toolCall struct {
	id, title, session string
	attrs              [][2]string // the protocol's attributes, in its order
	failed             bool
	parent             string // the turn's span id
	span               string // its own span id
	start, last        int64
	record             uint64
}

// NewOTLP writes to w; payloads adds rpctap.request.body and
// rpctap.response.body.
func NewOTLP(w io.Writer, payloads bool) *OTLP {
	return &OTLP{js: newJSONStream(w), payloads: payloads}
}

func (o *OTLP) Begin(s Session) error {
	o.s = s
	o.sessions++
	if o.sessions == 1 {
		// A linked session (RunLinked) joins the first one's trace.
		sum := sha256.Sum256([]byte(s.Protocol + "\x00" + s.Created.UTC().Format(time.RFC3339Nano)))
		o.trace = hex.EncodeToString(sum[:16])
	}
	if o.send != nil {
		return o.send.begin(s)
	}
	o.js.tail = "\n]}]}]}\n"
	res := []any{attr("service.name", "rpctap"), attr("rpctap.cassette", s.File), attr("rpctap.protocol", orRaw(s.Protocol))}
	b, _ := json.Marshal(res)
	head := `{"resourceSpans":[`
	if o.sessions > 1 {
		// The next resource: each cassette is one, all in one trace.
		head, o.js.n = "\n]}]},\n", 0
	}
	_, err := fmt.Fprintf(o.js.w, head+`{"resource":{"attributes":%s},"scopeSpans":[{"scope":{"name":"rpctap","version":"1"},"spans":[`+"\n", b)
	return err
}

func attr(k string, v any) map[string]any {
	switch x := v.(type) {
	case string:
		return map[string]any{"key": k, "value": map[string]any{"stringValue": x}}
	case int64:
		return map[string]any{"key": k, "value": map[string]any{"intValue": strconv.FormatInt(x, 10)}}
	case bool:
		return map[string]any{"key": k, "value": map[string]any{"boolValue": x}}
	case []string:
		vs := make([]any, len(x))
		for i, v := range x {
			vs[i] = map[string]any{"stringValue": v}
		}
		return map[string]any{"key": k, "value": map[string]any{"arrayValue": map[string]any{"values": vs}}}
	}
	return map[string]any{"key": k, "value": map[string]any{"stringValue": fmt.Sprint(v)}}
}

// spanID is a frame's span id, derived from its record and direction
// (and, for a linked cassette's frame, its file name: RunLinked).
func (o *OTLP) spanID(f *Frame) string {
	if o.link != nil {
		return frameSpanID(o.link.salt, f.Record, f.Dir)
	}
	return frameSpanID("", f.Record, f.Dir)
}

func frameSpanID(salt string, record uint64, dir string) string {
	h := fnv.New64a()
	if salt != "" {
		fmt.Fprintf(h, "%s/", salt)
	}
	fmt.Fprintf(h, "%d/%s", record, dir)
	return fmt.Sprintf("%016x", h.Sum64())
}

// toolSpanID is the span id of the tool call id started by record.
func toolSpanID(id string, record uint64) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "tool/%s/%d", id, record)
	return fmt.Sprintf("%016x", h.Sum64())
}

// Request notes a request that opens a turn as it starts
// (RequestWatcher).
func (o *OTLP) Request(f *Frame) {
	facts := protocol.CallFactsOf(o.s.Protocol, f.Method, f.Payload)
	if !facts.OpensTurn || facts.Conversation == "" {
		return
	}
	if o.prompts == nil {
		o.prompts = map[string]string{}
	}
	o.prompts[facts.Conversation] = o.spanID(f)
}

// toolSpans follows tool calls through the notifications that report them
// (u): one span per tool call, from the update that started it to the one
// that ended it, named "execute_tool TITLE", a child of the turn. It
// returns the span id of the tool call the frame belongs to ("" for any
// other frame): that frame is a child of the tool call.
func (o *OTLP) toolSpans(x *Exchange, u *protocol.ToolCallUpdate, session string) (string, error) {
	if o.tools == nil {
		o.tools = map[string]*toolCall{}
	}
	key := session + "\x00" + u.ID
	tc := o.tools[key]
	if tc == nil {
		if !u.Start {
			return "", nil // an update of a call that started before the recording
		}
		tc = &toolCall{id: u.ID, title: u.Title, session: session, parent: o.prompts[session],
			span: toolSpanID(u.ID, x.Request.Record), start: x.Request.T, record: x.Request.Record}
		o.tools[key] = tc
	}
	tc.last = x.Request.T
	if u.Title != "" {
		tc.title = u.Title
	}
	if tc.attrs == nil {
		tc.attrs = append([][2]string(nil), u.Attrs...)
	} else {
		for _, a := range u.Attrs {
			for i := range tc.attrs {
				if tc.attrs[i][0] == a[0] && a[1] != "" {
					tc.attrs[i][1] = a[1]
				}
			}
		}
	}
	if !u.End {
		return tc.span, nil
	}
	tc.failed = u.Failed
	delete(o.tools, key)
	return tc.span, o.emit(o.toolSpan(tc, x.Request.T))
}

// toolSpan is a tool call's span, ended at end.
func (o *OTLP) toolSpan(tc *toolCall, end int64) map[string]any {
	attrs := []any{attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", tc.title),
		attr("gen_ai.tool.call.id", tc.id), attr("gen_ai.conversation.id", tc.session), attr("network.transport", "pipe"),
		attr("rpctap.record", int64(tc.record))}
	for _, a := range tc.attrs {
		if a[1] != "" {
			attrs = append(attrs, attr(a[0], a[1]))
		}
	}
	status := map[string]any{}
	if tc.failed {
		attrs = append(attrs, attr("error.type", "tool_call_failed"))
		status = map[string]any{"code": 2, "message": "tool call failed"}
	}
	span := map[string]any{
		"traceId": o.trace, "spanId": tc.span, "name": "execute_tool " + tc.title, "kind": 1,
		"startTimeUnixNano": strconv.FormatInt(at(o.s, tc.start).UnixNano(), 10),
		"endTimeUnixNano":   strconv.FormatInt(at(o.s, end).UnixNano(), 10),
		"attributes":        attrs, "status": status,
	}
	if tc.parent != "" {
		span["parentSpanId"] = tc.parent
	}
	return span
}

// endTools writes the tool calls still open whose parent is the prompt
// span prompt ("" for all), ended at end (or, when end < 0, at their last
// update), in the order they started: a tool call the agent never
// reported finished still shows, with its last status.
func (o *OTLP) endTools(prompt string, end int64) error {
	var open []*toolCall
	for k, tc := range o.tools {
		if prompt == "" || tc.parent == prompt {
			open = append(open, tc)
			delete(o.tools, k)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].record < open[j].record })
	for _, tc := range open {
		e := end
		if e < 0 {
			e = tc.last
		}
		if err := o.emit(o.toolSpan(tc, e)); err != nil {
			return err
		}
	}
	return nil
}

func (o *OTLP) Exchange(x *Exchange) error {
	req := x.Request
	facts := protocol.CallFactsOf(o.s.Protocol, req.Method, req.Payload)
	name := orRaw(req.Method)
	if facts.Target != "" {
		name += " " + facts.Target
	}
	spanID := o.spanID(req)
	parent := ""
	if facts.Conversation != "" && !facts.OpensTurn {
		parent = o.prompts[facts.Conversation]
	}
	if parent == "" && o.link != nil {
		parent = o.link.parentAt(req.T, req.Dir == "in")
	}
	switch {
	case facts.ToolUpdate != nil:
		tool, err := o.toolSpans(x, facts.ToolUpdate, facts.Conversation)
		if err != nil {
			return err
		}
		if tool != "" {
			parent = tool
		}
	case facts.ToolCall != "":
		if tc := o.tools[facts.Conversation+"\x00"+facts.ToolCall]; tc != nil {
			parent = tc.span
		}
	case facts.OpensTurn:
		if x.Response != nil && o.prompts[facts.Conversation] == spanID {
			delete(o.prompts, facts.Conversation)
			if err := o.endTools(spanID, x.Response.T); err != nil {
				return err
			}
		}
	}
	start := at(o.s, req.T).UnixNano()
	end := start
	attrs := []any{attr("rpc.method", req.Method), attr("network.transport", "pipe"), attr("rpctap.direction", req.Dir), attr("rpctap.record", int64(req.Record))}
	if facts.MethodAttr != "" {
		attrs = append(attrs, attr(facts.MethodAttr, req.Method))
	}
	if facts.RPCSystem != "" {
		attrs = append(attrs, attr("rpc.system", facts.RPCSystem))
	}
	if req.ID != "" {
		attrs = append(attrs, attr("jsonrpc.request.id", req.ID))
	}
	if req.Intercept != "" {
		attrs = append(attrs, attr("rpctap.intercept", req.Intercept))
	}
	if x.Response != nil && x.Response.Intercept != "" {
		attrs = append(attrs, attr("rpctap.response.intercept", x.Response.Intercept))
	}
	if facts.Tool != "" {
		attrs = append(attrs, attr("gen_ai.tool.name", facts.Tool))
	}
	if facts.Operation != "" {
		attrs = append(attrs, attr("gen_ai.operation.name", facts.Operation))
	}
	if facts.Conversation != "" {
		attrs = append(attrs, attr("gen_ai.conversation.id", facts.Conversation))
	}
	status := map[string]any{}
	kind := 3 // SPAN_KIND_CLIENT
	if x.Notification {
		kind = 1 // SPAN_KIND_INTERNAL
	}
	if x.Response != nil {
		end = at(o.s, x.Response.T).UnixNano()
		if code, msg, ok := errorOf(o.s.Protocol, x); ok {
			attrs = append(attrs, attr("error.type", strconv.FormatInt(code, 10)))
			if code != 0 {
				attrs = append(attrs, attr("rpc.jsonrpc.error_code", code))
			}
			status = map[string]any{"code": 2, "message": msg} // STATUS_CODE_ERROR
		}
		if r := protocol.FinishReasonsOf(o.s.Protocol, req.Method, x.Response.Payload); r != nil {
			attrs = append(attrs, attr("gen_ai.response.finish_reasons", r))
		}
		if o.payloads {
			attrs = append(attrs, attr("rpctap.response.body", string(x.Response.Payload)))
		}
	} else if x.CutOff != "" {
		// Not an error: the recording ends before an answer could come.
		attrs = append(attrs, attr("rpctap.cut_off", true))
	} else if !x.Notification {
		attrs = append(attrs, attr("error.type", "unanswered"))
		status = map[string]any{"code": 2, "message": "never answered"}
	}
	if o.payloads {
		attrs = append(attrs, attr("rpctap.request.body", string(req.Payload)))
	}
	if o.link != nil && o.link.server != "" {
		attrs = append(attrs, attr("rpctap.linked.server", o.link.server))
	}
	span := map[string]any{
		"traceId": o.trace, "spanId": spanID, "name": name, "kind": kind,
		"startTimeUnixNano": strconv.FormatInt(start, 10), "endTimeUnixNano": strconv.FormatInt(end, 10),
		"attributes": attrs, "status": status,
	}
	if parent != "" {
		span["parentSpanId"] = parent
	}
	return o.emit(span)
}

func (o *OTLP) End() error {
	if err := o.endTools("", -1); err != nil {
		return err
	}
	if o.send != nil {
		return o.send.end()
	}
	if o.more {
		return nil // RunLinked writes the next session's resource
	}
	return o.js.end()
}

// finish ends the output after the last session RunLinked exported (each
// session's End sent or left open its part).
func (o *OTLP) finish() error {
	if o.send != nil {
		return nil
	}
	return o.js.end()
}

func orRaw(p string) string {
	if p == "" {
		return "raw"
	}
	return p
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

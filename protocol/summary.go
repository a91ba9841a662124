package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Summaries: a few words about what a frame carries beyond its kind and
// method, for lists where twelve "session/update" rows would otherwise look
// the same (the viewer's SUMMARY column). They are for a person, not a
// contract: the wording may change. Each protocol says what matters in its
// own frames through the optional Summarizer interface; protocols without
// one get the JSON-RPC error summary (code and message), which every
// JSON-RPC based protocol shares.
//
// Summaries decode the frame (encoding/json into raw members), which costs
// about as much as classifying it twice: callers summarise the rows they
// show, not every frame of a session.

// Summarizer is implemented by protocols that can describe a frame in a few
// words. frame is one line without its line ending; info is Classify's
// answer (for a response, Method is its request's method only when the
// caller knows it, so summarizers look at the result's shape instead).
type Summarizer interface {
	Summarize(dir Dir, frame []byte, info Info) string
}

// summaryMax is the longest summary in runes; longer text is cut with "…".
const summaryMax = 80

// Summarize describes frame in a few words on one line: "" when there is
// nothing to add to its kind, method and id. p may be nil (protocol
// unknown): then only JSON-RPC errors are described.
func Summarize(p Protocol, dir Dir, frame []byte, info Info) string {
	var s string
	if sm, ok := p.(Summarizer); ok {
		s = sm.Summarize(dir, frame, info)
	} else {
		s = rpcErrorSummary(sumMembers(frame))
	}
	return sumLine(s, summaryMax)
}

// ---- helpers shared by every section

// sobj is a JSON object's members, undecoded.
type sobj map[string]json.RawMessage

// members decodes raw as an object; nil when it is not one.
func sumMembers(raw []byte) sobj {
	if len(raw) == 0 {
		return nil
	}
	var o sobj
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

// str is member k as a string ("" when absent or not a string).
func (o sobj) str(k string) string {
	var s string
	if v, ok := o[k]; ok && json.Unmarshal(v, &s) == nil {
		return s
	}
	return ""
}

// obj is member k as an object.
func (o sobj) obj(k string) sobj { return sumMembers(o[k]) }

// is reports whether member k is the JSON literal lit (true, false, null).
func (o sobj) is(k, lit string) bool { return strings.TrimSpace(string(o[k])) == lit }

// arr is member k as an array of raw values.
func (o sobj) arr(k string) []json.RawMessage {
	var a []json.RawMessage
	if v, ok := o[k]; ok && json.Unmarshal(v, &a) == nil {
		return a
	}
	return nil
}

// first is the first non-empty string among members keys.
func (o sobj) first(keys ...string) string {
	for _, k := range keys {
		if s := o.str(k); s != "" {
			return s
		}
	}
	return ""
}

// quote puts text in quotes for a summary ("" stays "").
func quote(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return `"` + sumLine(s, summaryMax-2) + `"`
}

// join joins the non-empty parts with a space.
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// oneLine folds whitespace and control characters into single spaces and
// cuts s to max runes (the last one "…").
func sumLine(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r <= 0x20 || r == 0x7f || unicode.IsSpace(r)
	}), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:max-1])) + "…"
}

// contentText is the text of an ACP/MCP content block or of the first text
// block of an array of them.
func contentText(raw json.RawMessage) string {
	if o := sumMembers(raw); o != nil {
		if t := o.str("text"); t != "" {
			return t
		}
		return o.str("type")
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	for _, b := range blocks {
		if o := sumMembers(b); o != nil && o.str("text") != "" {
			return o.str("text")
		}
	}
	if len(blocks) > 0 {
		if o := sumMembers(blocks[0]); o != nil {
			return o.str("type")
		}
	}
	return ""
}

// ---- JSON-RPC 2.0 (every JSON-RPC based protocol)

// rpcErrorSummary is "error CODE: message" for a JSON-RPC error response
// (spec section 5.1: error is an object with code and message), "" for
// anything else.
func rpcErrorSummary(f sobj) string {
	e := f.obj("error")
	if e == nil {
		return ""
	}
	code := strings.TrimSpace(string(e["code"]))
	return join("error", code+":", e.str("message"))
}

func (jsonrpcProto) Summarize(_ Dir, frame []byte, _ Info) string {
	return rpcErrorSummary(sumMembers(frame))
}

// ---- ACP (../shared/protocols/acp.md)

func (acpProto) Summarize(_ Dir, frame []byte, info Info) string {
	f := sumMembers(frame)
	if f == nil {
		return ""
	}
	if s := rpcErrorSummary(f); s != "" {
		return s
	}
	params := f.obj("params")
	switch f.str("method") {
	case "session/update":
		return acpUpdateSummary(params.obj("update"))
	case "session/prompt":
		return quote(contentText(params["prompt"]))
	case "session/request_permission":
		tc := params.obj("toolCall")
		return join(quote(tc.first("title", "toolCallId")), fmt.Sprintf("(%d options)", len(params.arr("options"))))
	case "session/new":
		return params.str("cwd")
	case "session/load", "session/cancel", "session/set_mode":
		return join(params.str("sessionId"), params.str("modeId"))
	case "fs/read_text_file", "fs/write_text_file":
		return params.str("path")
	case "terminal/create":
		return join(params.str("command"), strings.Join(strArray(params["args"]), " "))
	case "initialize":
		return "protocol " + strings.TrimSpace(string(params["protocolVersion"]))
	}
	if _, ok := f["result"]; !ok {
		return ""
	}
	// A response: say what its result is by its shape.
	res := f.obj("result")
	switch {
	case res == nil:
		return ""
	case res.str("stopReason") != "":
		return "stopReason " + res.str("stopReason")
	case res.obj("outcome") != nil:
		o := res.obj("outcome")
		return join(o.str("outcome"), o.str("optionId"))
	case res.str("sessionId") != "":
		return "sessionId " + res.str("sessionId")
	case res["protocolVersion"] != nil:
		return "protocol " + strings.TrimSpace(string(res["protocolVersion"]))
	case res["content"] != nil:
		return quote(res.str("content"))
	}
	return ""
}

// acpUpdateSummary is a session/update's kind and what it says: the first
// words of a message or thought chunk, a tool call's title and status.
func acpUpdateSummary(u sobj) string {
	if u == nil {
		return ""
	}
	kind := u.str("sessionUpdate")
	switch kind {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
		return join(kind, quote(contentText(u["content"])))
	case "tool_call", "tool_call_update":
		title := u.str("title")
		if title == "" {
			title = u.str("toolCallId")
		} else {
			title = quote(title)
		}
		status := u.str("status")
		if status != "" {
			status = "(" + status + ")"
		}
		return join(kind, title, status)
	case "plan":
		return fmt.Sprintf("%s %d entries", kind, len(u.arr("entries")))
	case "available_commands_update":
		return fmt.Sprintf("%s %d commands", kind, len(u.arr("availableCommands")))
	case "current_mode_update":
		return join(kind, u.str("currentModeId"))
	}
	return kind
}

func strArray(raw json.RawMessage) []string {
	var a []string
	_ = json.Unmarshal(raw, &a)
	return a
}

// ---- MCP (https://modelcontextprotocol.io/specification)

func (mcpProto) Summarize(_ Dir, frame []byte, _ Info) string {
	f := sumMembers(frame)
	if f == nil {
		return ""
	}
	if s := rpcErrorSummary(f); s != "" {
		return s
	}
	params := f.obj("params")
	switch f.str("method") {
	case "tools/call", "prompts/get":
		return params.str("name")
	case "resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated":
		return params.str("uri")
	case "notifications/progress":
		p := strings.TrimSpace(string(params["progress"]))
		if t := strings.TrimSpace(string(params["total"])); t != "" {
			p += "/" + t
		}
		return join(p, quote(params.str("message")))
	case "notifications/message":
		data := params.str("data")
		if data == "" {
			data = string(params["data"])
		}
		return join(params.str("level"), quote(data))
	case "notifications/cancelled":
		return join("request", strings.TrimSpace(string(params["requestId"])), quote(params.str("reason")))
	case "initialize":
		ci := params.obj("clientInfo")
		return join(ci.str("name"), ci.str("version"), params.str("protocolVersion"))
	}
	if _, ok := f["result"]; !ok {
		return ""
	}
	res := f.obj("result")
	switch {
	case res == nil:
		return ""
	case res["isError"] != nil:
		// A tools/call result (spec: CallToolResult): isError says the tool
		// failed, the content says how.
		if res.is("isError", "true") {
			return join("isError", quote(contentText(res["content"])))
		}
		return quote(contentText(res["content"]))
	case res["tools"] != nil:
		return fmt.Sprintf("%d tools", len(res.arr("tools")))
	case res["resources"] != nil:
		return fmt.Sprintf("%d resources", len(res.arr("resources")))
	case res["prompts"] != nil:
		return fmt.Sprintf("%d prompts", len(res.arr("prompts")))
	case res.obj("serverInfo") != nil:
		si := res.obj("serverInfo")
		return join(si.str("name"), si.str("version"), res.str("protocolVersion"))
	case res["content"] != nil:
		return quote(contentText(res["content"]))
	case res["contents"] != nil:
		return fmt.Sprintf("%d contents", len(res.arr("contents")))
	case res["messages"] != nil:
		return fmt.Sprintf("%d messages", len(res.arr("messages")))
	}
	return ""
}

// ---- "type"-tagged event protocols: pi, opi, synaps, brainwires
//
// Their frames name themselves in "type" (the list's METHOD/TYPE column
// already shows it); the summary adds the event's own kind (a message
// update's delta type and its text), the tool a tool event is about and
// whether it failed, a command's outcome (success, or its error), and
// otherwise the first text-like member. The same reading serves all four:
// they differ in key spelling (toolName, tool_name), which the lists of
// keys below cover.

func (piProto) Summarize(d Dir, frame []byte, info Info) string  { return eventSummary(d, frame, info) }
func (opiProto) Summarize(d Dir, frame []byte, info Info) string { return eventSummary(d, frame, info) }
func (synapsProto) Summarize(d Dir, frame []byte, info Info) string {
	return eventSummary(d, frame, info)
}
func (brainwiresProto) Summarize(d Dir, frame []byte, info Info) string {
	return eventSummary(d, frame, info)
}

func eventSummary(_ Dir, frame []byte, _ Info) string {
	f := sumMembers(frame)
	if f == nil {
		return ""
	}
	typ := f.str("type")
	switch typ {
	case "response":
		// pi/opi: success true/false with error; synaps: no success member.
		if f.is("success", "false") || f.str("error") != "" {
			return join("error", quote(f.first("error", "message")))
		}
		if f.is("success", "true") {
			return "ok"
		}
		return ""
	case "error":
		return join("error", quote(f.first("message", "error")))
	case "message_update":
		// pi: assistantMessageEvent; synaps: event.
		ev := f.obj("assistantMessageEvent")
		if ev == nil {
			ev = f.obj("event")
		}
		return join(ev.str("type"), quote(ev.first("delta", "text", "content")))
	case "extension_ui_request":
		return join(f.str("method"), quote(f.first("title", "message")))
	}
	// Tool events: the tool's name, and a failure when the event says so.
	if tool := f.first("toolName", "tool_name", "tool"); tool != "" {
		failed := ""
		if f.is("isError", "true") || f.is("is_error", "true") {
			failed = "isError"
		}
		return join(tool, failed)
	}
	if msg := f.obj("message"); msg != nil {
		// MessageStart/End, TurnEnd (opi), message_start/end (pi).
		text := msg.str("content")
		if text == "" {
			text = contentText(msg["content"])
		}
		return join(msg.str("role"), quote(text))
	}
	if ev := f.obj("payload"); ev != nil {
		return quote(ev.first("formatted", "text"))
	}
	return quote(f.first("message", "text", "error", "error_message", "errorMessage", "reason", "title", "name", "task_preview", "result_preview", "status", "level", "model"))
}

// ---- failures

// Failer is implemented by protocols whose frames can report a failure in
// their own way besides a JSON-RPC error (an MCP tool result with isError,
// a pi/opi response with success false, a synaps error event).
type Failer interface {
	Failed(dir Dir, frame []byte, info Info) bool
}

// Failed reports whether frame reports a failure: a JSON-RPC error
// response (spec section 5: an "error" member), or what p's Failer says.
// p may be nil.
func Failed(p Protocol, dir Dir, frame []byte, info Info) bool {
	if fl, ok := p.(Failer); ok {
		return fl.Failed(dir, frame, info)
	}
	return sumMembers(frame).obj("error") != nil
}

// Failed: a JSON-RPC error, or a CallToolResult with isError true (the
// tool ran and failed, spec "Error Handling" of tools).
func (mcpProto) Failed(_ Dir, frame []byte, _ Info) bool {
	f := sumMembers(frame)
	return f.obj("error") != nil || f.obj("result").is("isError", "true")
}

func (piProto) Failed(_ Dir, frame []byte, _ Info) bool     { return eventFailed(frame) }
func (opiProto) Failed(_ Dir, frame []byte, _ Info) bool    { return eventFailed(frame) }
func (synapsProto) Failed(_ Dir, frame []byte, _ Info) bool { return eventFailed(frame) }
func (brainwiresProto) Failed(_ Dir, frame []byte, _ Info) bool {
	return eventFailed(frame)
}

// eventFailed: a response with success false (pi, opi) or an error
// member, an "error" event (synaps), a tool event that says it failed.
func eventFailed(frame []byte) bool {
	f := sumMembers(frame)
	switch {
	case f == nil:
		return false
	case f.str("type") == "error", f.is("success", "false"):
		return true
	case f.str("type") == "response" && f.str("error") != "":
		return true
	}
	return f.is("isError", "true") || f.is("is_error", "true")
}

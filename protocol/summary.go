package protocol

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Summarize says in a few words what a frame carries beyond its method, for
// lists (the viewer's SUMMARY column): the ACP sessionUpdate kind and the
// first words of its text, an MCP tool's name and isError, an LSP
// document and position, a DAP event's reason, a pi/opi/synaps event's
// type, an error response's code and message. info is the frame's
// classification (a response's Method names its request when known). It
// reads only the members it shows (no full decode), so a 1 MiB frame costs
// one scan; "" when there is nothing to add.
func Summarize(dir Dir, info Info, frame []byte) string {
	if len(frame) == 0 || frame[0] != '{' {
		return ""
	}
	if e := memberOf(frame, "error"); len(e) > 0 && e[0] == '{' && info.Kind == Response {
		return errorSummary(e)
	}
	params, result := memberOf(frame, "params"), memberOf(frame, "result")
	switch info.Method {
	// ACP
	case "session/update":
		return acpUpdateSummary(memberOf(params, "update"))
	case "session/prompt":
		if info.Kind == Request {
			return quoteWords(blocksText(memberOf(params, "prompt")))
		}
		return "stop " + str(memberOf(result, "stopReason"))
	case "session/request_permission":
		if info.Kind == Request {
			return "permission? " + str(memberOf(memberOf(params, "toolCall"), "title"))
		}
		o := memberOf(result, "outcome")
		return strings.TrimSpace("→ " + str(memberOf(o, "outcome")) + " " + str(memberOf(o, "optionId")))
	case "session/new":
		if info.Kind == Response {
			return "session " + str(memberOf(result, "sessionId"))
		}
		return str(memberOf(params, "cwd"))
	// MCP
	case "tools/call":
		if info.Kind == Request {
			return "tool " + str(memberOf(params, "name"))
		}
		if string(memberOf(result, "isError")) == "true" {
			return "isError " + quoteWords(blocksText(memberOf(result, "content")))
		}
		return quoteWords(blocksText(memberOf(result, "content")))
	case "tools/list":
		if info.Kind == Response {
			return count(memberOf(result, "tools"), "tool")
		}
	case "notifications/progress":
		s := "progress " + string(memberOf(params, "progress"))
		if t := memberOf(params, "total"); t != nil {
			s += "/" + string(t)
		}
		return strings.TrimSpace(s + " " + str(memberOf(params, "message")))
	case "notifications/message":
		return str(memberOf(params, "level")) + " " + quoteWords(jsonText(memberOf(params, "data")))
	// LSP
	case "textDocument/publishDiagnostics":
		return count(memberOf(params, "diagnostics"), "diagnostic") + " " + base(str(memberOf(params, "uri")))
	case "window/logMessage", "window/showMessage":
		return quoteWords(str(memberOf(params, "message")))
	case "$/progress":
		v := memberOf(params, "value")
		return strings.TrimSpace(str(memberOf(v, "kind")) + " " + quoteWords(str(memberOf(v, "title"))+" "+str(memberOf(v, "message"))))
	case "initialize":
		if info.Kind == Response {
			if si := memberOf(result, "serverInfo"); si != nil {
				return str(memberOf(si, "name"))
			}
			if ai := memberOf(result, "agentInfo"); ai != nil {
				return str(memberOf(ai, "name"))
			}
		}
	}
	if td := memberOf(params, "textDocument"); td != nil {
		s := base(str(memberOf(td, "uri")))
		if pos := memberOf(params, "position"); pos != nil {
			s += fmt.Sprintf(":%s:%s", memberOf(pos, "line"), memberOf(pos, "character"))
		}
		return s
	}
	// DAP
	if typ, _ := rawString(memberOf(frame, "type")); typ != "" {
		switch typ {
		case "event":
			body := memberOf(frame, "body")
			if r := str(memberOf(body, "reason")); r != "" {
				return r
			}
			return quoteWords(str(memberOf(body, "output")))
		case "response":
			if memberOf(frame, "request_seq") == nil {
				break // not DAP
			}
			if string(memberOf(frame, "success")) == "false" {
				return "failed " + quoteWords(str(memberOf(frame, "message")))
			}
			return "ok"
		}
		// synaps, opi, pi: the event inside a message update, a
		// response's outcome.
		if ev := firstMember(frame, "event", "assistant_event", "assistantMessageEvent"); ev != nil {
			t := str(memberOf(ev, "type"))
			if d := str(memberOf(ev, "delta")); d != "" {
				return t + " " + quoteWords(d)
			}
			return t
		}
		if typ == "response" {
			if string(firstMember(frame, "success", "ok")) == "false" {
				return str(memberOf(frame, "command")) + " failed " + quoteWords(jsonText(memberOf(frame, "error")))
			}
			return str(memberOf(frame, "command"))
		}
		if typ == "error" {
			return quoteWords(jsonText(memberOf(frame, "message")))
		}
	}
	return ""
}

// acpUpdateSummary: the sessionUpdate kind, then the first words of its
// text, a tool call's title and status, a plan's size.
func acpUpdateSummary(u []byte) string {
	kind := str(memberOf(u, "sessionUpdate"))
	switch kind {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
		return kind + " " + quoteWords(str(memberOf(memberOf(u, "content"), "text")))
	case "tool_call", "tool_call_update":
		s := kind
		for _, k := range []string{"title", "kind", "status"} {
			if v := str(memberOf(u, k)); v != "" {
				s += " " + v
			}
		}
		return s
	case "plan":
		return kind + " " + count(memberOf(u, "entries"), "entry")
	}
	return kind
}

func errorSummary(e []byte) string {
	s := "error " + string(memberOf(e, "code"))
	if m := str(memberOf(e, "message")); m != "" {
		s += " " + quoteWords(m)
	}
	return s
}

// blocksText is the text of a content block list (or one block).
func blocksText(raw []byte) string {
	if len(raw) > 0 && raw[0] == '{' {
		return str(memberOf(raw, "text"))
	}
	var parts []string
	forEachElement(raw, func(_ int, v []byte) {
		if t := str(memberOf(v, "text")); t != "" {
			parts = append(parts, t)
		} else if typ := str(memberOf(v, "type")); typ != "" {
			parts = append(parts, "["+typ+"]")
		}
	})
	return strings.Join(parts, " ")
}

func count(arr []byte, noun string) string {
	n := 0
	forEachElement(arr, func(int, []byte) { n++ })
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return strconv.Itoa(n) + " " + noun[:len(noun)-1] + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func firstMember(frame []byte, keys ...string) []byte {
	for _, k := range keys {
		if v := memberOf(frame, k); v != nil {
			return v
		}
	}
	return nil
}

// str is a JSON string member's value ("" for anything else).
func str(raw []byte) string {
	s, _ := rawString(raw)
	return s
}

// jsonText is a string's value, or the JSON itself for other values.
func jsonText(raw []byte) string {
	if s, ok := rawString(raw); ok {
		return s
	}
	return string(raw)
}

func base(uri string) string {
	if uri == "" {
		return ""
	}
	return path.Base(uri)
}

// quoteWords quotes the first 40 bytes of s on one line.
func quoteWords(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	if len(s) > 40 {
		cut := 40
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimRight(s[:cut], " ") + "…"
	}
	return strconv.Quote(s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// IsChunk reports whether a frame is one piece of a streamed answer: ACP
// message, thought and user chunks, synaps and pi message_update, opi
// MessageUpdate, MCP progress notifications. method is the frame's
// classified method or type ("" when unknown).
func IsChunk(method string, frame []byte) bool {
	switch method {
	case "message_update", "MessageUpdate", "notifications/progress":
		return true
	case "session/update":
		switch str(memberOf(memberOf(memberOf(frame, "params"), "update"), "sessionUpdate")) {
		case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
			return true
		}
		return false
	case "":
		if m, ok := rawString(memberOf(frame, "method")); ok && m != "" {
			return IsChunk(m, frame)
		}
		if t, ok := rawString(memberOf(frame, "type")); ok && t != "" {
			return IsChunk(t, frame)
		}
	}
	return false
}

// StreamsInto reports whether a notification (method notif, bytes frame)
// streams part of the answer to an open request (method req, bytes
// reqFrame): ACP session/update notifications of the prompt's session
// while a session/prompt is open, MCP notifications/progress carrying the
// request's progressToken. A flow view folds such notifications into the
// request's row.
func StreamsInto(req string, reqFrame []byte, notif string, frame []byte) bool {
	switch {
	case req == "session/prompt" && notif == "session/update":
		want := nestedMember(reqFrame, "params", "sessionId")
		return want != nil && string(nestedMember(frame, "params", "sessionId")) == string(want)
	case notif == "notifications/progress":
		tok := memberOf(memberOf(memberOf(reqFrame, "params"), "_meta"), "progressToken")
		return tok != nil && string(nestedMember(frame, "params", "progressToken")) == string(tok)
	}
	return false
}

// Failed reports whether a frame reports a failure, whichever way its
// protocol says it: a JSON-RPC error response (JSON-RPC 2.0 section 5: an
// "error" object instead of "result"); an MCP tool result with "isError":
// true (the tool ran and failed: MCP spec, Tools, "Error Handling"); a
// response with "success": false (DAP Response; pi and opi RPC responses);
// a synaps "error" event; a tool-execution event that says it failed (pi
// tool_execution_end "isError", opi ToolExecutionEnd "is_error"). Like
// Summarize it reads only the members it needs. Invalid frames are the
// caller's business (info.Kind == Invalid).
func Failed(dir Dir, info Info, frame []byte) bool {
	if len(frame) == 0 || frame[0] != '{' {
		return false
	}
	if e := memberOf(frame, "error"); len(e) > 0 && e[0] == '{' && memberOf(frame, "result") == nil {
		return true
	}
	if string(memberOf(memberOf(frame, "result"), "isError")) == "true" {
		return true
	}
	if string(memberOf(frame, "success")) == "false" {
		return true
	}
	if dir == FromChild && str(memberOf(frame, "type")) == "error" {
		return true
	}
	return string(firstMember(frame, "isError", "is_error")) == "true"
}

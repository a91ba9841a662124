package protocol

import (
	"path"
	"strconv"
	"strings"
)

// This file holds the shared half of what rpctap says about single frames
// (their summary, whether they are a streamed chunk, whether they stream
// into an open request, whether they report a failure): the functions the
// viewer and export call, which ask the session's protocol through the
// optional interfaces below, and the generic JSON-RPC behaviour a protocol
// without them gets. Everything one protocol knows about its own methods and
// events lives in its own files (acp_summary.go, mcp_summary.go, ...); this
// file names no protocol's method or event.

// Summarizer is implemented by protocols that can say in a few words what
// one of their frames carries beyond its method (Summarize).
type Summarizer interface {
	Summarize(dir Dir, info Info, frame []byte) string
}

// Chunker is implemented by protocols that stream answers in pieces
// (IsChunk). method is the frame's classified method or type, "" when the
// caller does not know it.
type Chunker interface {
	IsChunk(method string, frame []byte) bool
}

// Streamer is implemented by protocols whose notifications stream part of
// the answer to an open request (StreamsInto).
type Streamer interface {
	StreamsInto(req string, reqFrame []byte, notif string, frame []byte) bool
}

// Failer is implemented by protocols that report failures in ways of their
// own besides a JSON-RPC error response (Failed). Its answer replaces the
// generic one, so a JSON-RPC protocol checks rpcFailed itself.
type Failer interface {
	Failed(dir Dir, info Info, frame []byte) bool
}

// Cataloguer is implemented by protocols with a catalogue of message names
// (methods, commands, event and message types, as their frames name them).
// The tests use it to hold each protocol's files to its own names.
type Cataloguer interface {
	Catalogue() []string
}

// lookupKnown returns the protocol named proto, nil when none is registered
// by that name ("" for a session whose protocol is unknown).
func lookupKnown(proto string) Protocol {
	if e, ok := registry[proto]; ok {
		return e.p
	}
	return nil
}

// Summarize says in a few words what a frame of a session in protocol proto
// carries beyond its method, for lists (the viewer's SUMMARY column, the
// HTML report): an error response's code and message (JSON-RPC 2.0's error
// object, in any session), and what the protocol's Summarizer adds (an ACP update's kind
// and first words, an MCP tool's name, an LSP document and position, a DAP
// event's reason, a pi/opi/synaps event's type). info is the frame's
// classification (a response's Method names its request when known). The
// protocols read only the members they show (no full decode), so a 1 MiB
// frame costs one scan; "" when there is nothing to add.
func Summarize(proto string, dir Dir, info Info, frame []byte) string {
	if len(frame) == 0 || frame[0] != '{' {
		return ""
	}
	// JSON-RPC 2.0 section 5: a response with an "error" object.
	if e := memberOf(frame, "error"); len(e) > 0 && e[0] == '{' && info.Kind == Response {
		return errorSummary(e)
	}
	if s, ok := lookupKnown(proto).(Summarizer); ok {
		return s.Summarize(dir, info, frame)
	}
	return ""
}

// IsChunk reports whether a frame of a session in protocol proto is one
// piece of a streamed answer (the protocol's Chunker: ACP message, thought
// and user chunks, synaps and pi message_update, opi MessageUpdate, MCP
// progress). method is the frame's classified method or type ("" when
// unknown). Generic JSON-RPC has no chunks.
func IsChunk(proto, method string, frame []byte) bool {
	if c, ok := lookupKnown(proto).(Chunker); ok {
		return c.IsChunk(method, frame)
	}
	return false
}

// StreamsInto reports whether a notification (method notif, bytes frame)
// streams part of the answer to an open request (method req, bytes
// reqFrame) in protocol proto (its Streamer: ACP session/update
// notifications of the prompt's session while a session/prompt is open, MCP
// progress carrying the request's progressToken). A flow view folds such
// notifications into the request's row. Generic JSON-RPC streams nothing.
func StreamsInto(proto, req string, reqFrame []byte, notif string, frame []byte) bool {
	if s, ok := lookupKnown(proto).(Streamer); ok {
		return s.StreamsInto(req, reqFrame, notif, frame)
	}
	return false
}

// Failed reports whether a frame of a session in protocol proto reports a
// failure, whichever way its protocol says it (its Failer: an MCP tool
// result with "isError": true, a DAP or pi response with "success": false, a
// synaps "error" event, ...); without one, a JSON-RPC error response
// (rpcFailed). Like Summarize it reads only the members it needs. Invalid
// frames are the caller's business (info.Kind == Invalid).
func Failed(proto string, dir Dir, info Info, frame []byte) bool {
	if len(frame) == 0 || frame[0] != '{' {
		return false
	}
	if f, ok := lookupKnown(proto).(Failer); ok {
		return f.Failed(dir, info, frame)
	}
	return rpcFailed(frame)
}

// rpcFailed: a JSON-RPC error response (JSON-RPC 2.0 section 5: an "error"
// object instead of "result").
func rpcFailed(frame []byte) bool {
	e := memberOf(frame, "error")
	return len(e) > 0 && e[0] == '{' && memberOf(frame, "result") == nil
}

func errorSummary(e []byte) string {
	s := "error " + string(memberOf(e, "code"))
	if m := str(memberOf(e, "message")); m != "" {
		s += " " + quoteWords(m)
	}
	return s
}

// ---- helpers the protocols' summaries share

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

// QuoteWords quotes the first 40 bytes of s on one line, as summaries show
// text (a protocol outside this package uses it for the same look).
func QuoteWords(s string) string { return quoteWords(s) }

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

// streamEventSummary is how the "type"-tagged agent protocols (synaps,
// opi, pi) summarise the stream event a message update carries in its member
// key: the event's type and the first words of its delta. ok is false when
// the frame has no such member.
func streamEventSummary(frame []byte, key string) (string, bool) {
	e := memberOf(frame, key)
	if e == nil {
		return "", false
	}
	t := str(memberOf(e, "type"))
	if d := str(memberOf(e, "delta")); d != "" {
		return t + " " + quoteWords(d), true
	}
	return t, true
}

// commandOutcome is a command response's summary in those protocols: the
// command, and "failed" with the error when the member ok is false.
func commandOutcome(frame []byte, ok string) string {
	if string(memberOf(frame, ok)) == "false" {
		return str(memberOf(frame, "command")) + " failed " + quoteWords(jsonText(memberOf(frame, "error")))
	}
	return str(memberOf(frame, "command"))
}

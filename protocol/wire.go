package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// This file holds what a stand-in for one side of a session needs to know
// about a protocol's wire (replay's fake child and fake parent): how a frame
// is told apart from the live side's frames, which member carries a request's
// id and which member of a response names it, how a request nobody recorded
// is refused, and which fields differ from run to run. Each protocol declares
// its Wire in its own file (WireDescriber); replay asks here and names no
// protocol itself.

// WireStyle is how a protocol's frames are classified and refused.
type WireStyle uint8

const (
	// StyleWhole: no ids; frames are matched whole, every child frame is
	// an event (brainwires, raw, a user schema).
	StyleWhole WireStyle = iota
	// StyleJSONRPC: "method" with "id" is a request, without a
	// notification; "result"/"error" with "id" a response (acp, mcp,
	// jsonrpc, lsp).
	StyleJSONRPC
	// StyleSynaps: parent commands carry "id"; the child echoes it in a
	// "response" (naming the "command") or an "error"; "ready" opens.
	StyleSynaps
	// StyleOPI: every parent command gets a "response" naming its
	// "command" (and its "id" when it had one); "rpc_ready" opens.
	StyleOPI
	// StyleDAP: "type" request/response/event; a request's id is its
	// "seq", a response names it in "request_seq"; "command" and "event"
	// name the message.
	StyleDAP
)

// Wire is one protocol's wire, as a stand-in peer needs it.
type Wire struct {
	Style WireStyle
	// RequestID is the member holding a request's id, ResponseID the
	// member of a response that names its request ("id" and "id" for
	// JSON-RPC; "seq" and "request_seq" for DAP); both "" for StyleWhole.
	RequestID, ResponseID string
	// Volatile lists the default ignore patterns for matching (fields that
	// differ from run to run: session ids, paths, pids, timestamps); the
	// syntax is replay's Ignore ("/params/**/timestamp").
	Volatile []string
	// Opening is the type of the event by which the child opens the
	// session in the synaps and opi styles (synaps "ready", opi
	// "rpc_ready"), "" for none: a stand-in classifies it as a Handshake.
	Opening string
	// Chatter lists the notifications (or events) whose number and order
	// depend on timing, not on behaviour: log lines, progress reports.
	// A stand-in matches them when they come but neither waits for them
	// nor holds a missing or an extra one against the live side.
	Chatter []string
	// Invented lists the members whose number one side makes up at run
	// time and the other sends back: DAP's thread, stack frame, variables
	// and source handles. A number cannot be mapped by value (thread 1 and
	// line 1 would collide), so a stand-in learns each by field: it
	// compares only that the live member is a number as well (a 0, "none",
	// stays itself), learns the live value of each recorded one from the
	// frame that matched, and puts it in place of the recorded one in the
	// frames it sends after that.
	Invented []Invented
	// Stream names the event that carries pieces of a byte stream (DAP's
	// output event: the debuggee's stdout and stderr, split into events as
	// its writes and the adapter's reads happen to fall). A stand-in
	// compares the concatenation of the pieces of each stream, not how
	// they were cut. The zero value: none.
	Stream StreamEvent
}

// StreamEvent describes the events that carry pieces of byte streams
// (Wire.Stream). An event of that name whose Body object holds the Text
// member (a string) and at most the Key member (a string) is a piece; one
// with other members (DAP's output with a group, a source, variables or
// telemetry data) is matched as a frame.
type StreamEvent struct {
	Method     string // the event ("output"); "" for none
	Body       string // the member holding the fields ("body")
	Text       string // the piece of text ("output")
	Key        string // the stream it belongs to ("category")
	DefaultKey string // the stream when Key is absent ("console")
	// Log lists the streams that are the peer's own log, not its
	// program's output: their pieces are chatter (matched if they come,
	// never waited for, never missing), as a log notification is.
	Log []string
}

// IsLog reports whether the stream key is one of Log.
func (s StreamEvent) IsLog(key string) bool {
	for _, k := range s.Log {
		if k == key {
			return true
		}
	}
	return false
}

// Piece returns the stream and text of v, a decoded event named method,
// when it is a piece of a byte stream (see StreamEvent).
func (s StreamEvent) Piece(method string, v any) (key, text string, ok bool) {
	if s.Method == "" || method != s.Method {
		return "", "", false
	}
	m, _ := v.(map[string]any)
	body, _ := m[s.Body].(map[string]any)
	text, ok = body[s.Text].(string)
	if !ok {
		return "", "", false
	}
	key = s.DefaultKey
	switch len(body) {
	case 1:
	case 2:
		if key, ok = body[s.Key].(string); !ok {
			return "", "", false
		}
	default:
		return "", "", false
	}
	return key, text, true
}

// Invented is one member whose number a peer makes up (Wire.Invented).
type Invented struct {
	// Path is where the member is, in replay's Ignore syntax
	// ("/**/threadId", "/body/threads/*/id").
	Path string
	// Name is what it holds: values are learnt per name, so a thread id
	// learnt from /body/threads/0/id is the one sent in
	// /arguments/threadId.
	Name string
}

// IsChatter reports whether a frame of kind and method is chatter.
func (w Wire) IsChatter(kind Kind, method string) bool {
	if kind != Notification && kind != Event {
		return false
	}
	for _, m := range w.Chatter {
		if m == method {
			return true
		}
	}
	return false
}

// WireDescriber is implemented by protocols with a Wire; the others are
// StyleWhole with nothing volatile.
type WireDescriber interface {
	Wire() Wire
}

// WireOf returns the wire of the protocol named name ("" or unknown:
// StyleWhole).
func WireOf(name string) Wire {
	p, err := Lookup(name)
	if err != nil {
		return Wire{}
	}
	if w, ok := p.(WireDescriber); ok {
		return w.Wire()
	}
	return Wire{}
}

// RecordedKinds reports whether the kind, method and id the recorder stores
// for a frame (the protocol's Classify) are this wire's own, so a stand-in
// may use them instead of classifying again: true for the JSON-RPC and DAP
// styles. The event-style protocols' replay classification differs from
// their session rules' on purpose (a synaps error with an id answers its
// command; a brainwires handshake is matched whole).
func (w Wire) RecordedKinds() bool { return w.Style == StyleJSONRPC || w.Style == StyleDAP }

// Keyed reports whether responses are tied to requests by an id member.
func (w Wire) Keyed() bool { return w.Style != StyleWhole && w.ResponseID != "" }

// WireFrame is a frame as a stand-in peer classifies it.
type WireFrame struct {
	Kind   Kind   // Request, Response, Notification, Event, Handshake; Invalid for a line that is not a JSON object
	Method string // method, type, command or event; "" for a response (the request it answers names it)
	ID     string // the raw id (RequestID of a request, ResponseID of a response), "" when none or null
}

// Classify classifies raw, a frame from the parent (fromParent) or the
// child. isJSON says raw is valid JSON. It scans only top-level members, so
// a 1 MiB frame costs one pass.
func (w Wire) Classify(raw []byte, isJSON, fromParent bool) WireFrame {
	if i := jsonscan.SkipWS(raw, 0); !isJSON || i >= len(raw) || raw[i] != '{' {
		return WireFrame{Kind: Invalid}
	}
	var f WireFrame
	id := func(key string) string {
		if key == "" {
			return ""
		}
		v := memberOf(raw, key)
		if v == nil || bytes.Equal(v, []byte("null")) {
			return ""
		}
		return string(v)
	}
	str := func(key string) string { s, _ := rawString(memberOf(raw, key)); return s }
	switch w.Style {
	case StyleJSONRPC:
		// One scan of the top-level members (it stops once the kind is
		// certain): live frames of 1 MiB are classified on the reply path.
		rf := scanRPCMembers(raw, true)
		if rf.id != nil && !bytes.Equal(rf.id, []byte("null")) {
			f.ID = string(rf.id)
		}
		if m, ok := rawString(rf.method); ok {
			f.Method = m
			f.Kind = Notification
			if rf.id != nil {
				f.Kind = Request
			}
			return f
		}
		if rf.id != nil {
			f.Kind = Response
			return f
		}
		return WireFrame{Kind: Invalid}
	case StyleSynaps:
		f.ID = id("id")
		t := str("type")
		f.Method = t
		switch {
		case fromParent && f.ID != "":
			f.Kind = Request
		case fromParent:
			f.Kind = Notification // shutdown: no id, no answer
		case t == "response":
			f.Kind, f.Method = Response, str("command")
		case t == "error" && f.ID != "":
			f.Kind, f.Method = Response, ""
		case t != "" && t == w.Opening:
			f.Kind = Handshake
		default:
			f.Kind = Event
		}
	case StyleOPI:
		f.ID = id("id")
		t := str("type")
		f.Method = t
		switch {
		case fromParent:
			f.Kind = Request // every command gets a response
		case t == "response":
			f.Kind, f.Method = Response, str("command")
		case t != "" && t == w.Opening:
			f.Kind = Handshake
		default:
			f.Kind = Event
		}
	case StyleDAP:
		switch str("type") {
		case "request":
			f.Kind, f.Method, f.ID = Request, str("command"), id(w.RequestID)
		case "response":
			f.Kind, f.Method, f.ID = Response, str("command"), id(w.ResponseID)
		default:
			f.Kind, f.Method = Event, str("event")
		}
	default:
		f.Kind, f.Method = Event, str("type")
	}
	return f
}

// Refusal returns the frame that answers req (a live request nobody
// recorded; Invalid for a line that is not JSON) in the protocol's own error
// form, or nil when the protocol has none (a notification, a response, a
// protocol without ids). known says the method is in the cassette (so the
// call, not the method, is what the cassette lacks). The frame has no line
// ending or header.
func (w Wire) Refusal(req WireFrame, msg string, known bool) []byte {
	switch w.Style {
	case StyleJSONRPC:
		if req.Kind == Invalid {
			// Not JSON at all: JSON-RPC's parse error, id null.
			return []byte(jsonObject([][2]string{{"jsonrpc", `"2.0"`}, {"id", "null"},
				{"error", jsonObject([][2]string{{"code", "-32700"}, {"message", quoteJSON(msg)}})}}))
		}
		if req.Kind != Request {
			return nil
		}
		code := "-32602" // invalid params: the method is in the cassette, this call is not
		if !known {
			code = "-32601" // method not found
		}
		return []byte(jsonObject([][2]string{{"jsonrpc", `"2.0"`}, {"id", req.ID},
			{"error", jsonObject([][2]string{{"code", code}, {"message", quoteJSON(msg)}})}}))
	case StyleSynaps:
		if req.Kind == Response {
			return nil
		}
		m := [][2]string{{"type", `"error"`}}
		if req.ID != "" {
			m = append(m, [2]string{"id", req.ID})
		}
		return []byte(jsonObject(append(m, [2]string{"message", quoteJSON(msg)})))
	case StyleOPI:
		if req.Kind == Response {
			return nil
		}
		cmd := req.Method
		if req.Kind == Invalid {
			cmd = "parse"
		}
		m := [][2]string{{"type", `"response"`}, {"command", quoteJSON(cmd)}, {"success", "false"}}
		if req.ID != "" {
			m = append(m, [2]string{"id", req.ID})
		}
		return []byte(jsonObject(append(m, [2]string{"error", quoteJSON(msg)})))
	case StyleDAP:
		// A failed Response: "success: false", "message: Contains the
		// raw error in short form if success is false".
		if req.Kind != Request {
			return nil
		}
		return []byte(jsonObject([][2]string{{"seq", "0"}, {"type", `"response"`}, {"request_seq", req.ID},
			{"success", "false"}, {"command", quoteJSON(req.Method)}, {"message", quoteJSON(msg)}}))
	}
	return nil
}

// jsonObject builds an object from raw member values, in the given order.
func jsonObject(members [][2]string) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteJSON(m[0]))
		b.WriteByte(':')
		b.WriteString(m[1])
	}
	b.WriteByte('}')
	return b.String()
}

// quoteJSON encodes s as a JSON string without HTML escaping.
func quoteJSON(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return `""`
	}
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}

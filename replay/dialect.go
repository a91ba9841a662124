package replay

import (
	"bytes"
	"encoding/json"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// dialect is what replay must know about a protocol's wire to stand in for
// one side: how frames are classified, where ids live, how a request is
// refused, and which fields differ from run to run. Frame shapes and session
// rules are the protocol package's business; this is only the part a fake
// peer needs (id echo and error replies), which protocol.Protocol does not
// describe.
type dialect struct {
	name   string // the protocol name as given ("acp", "mcp", "synaps", ...)
	family family
	// ignore lists the default ignore patterns (see Ignore).
	ignore []string
}

type family uint8

const (
	famGeneric family = iota // no ids known: frames are matched whole
	famJSONRPC               // acp, mcp, jsonrpc, lsp: "id" both ways, method/result/error
	famSynaps                // synaps: parent commands carry "id", child echoes it in response/error
	famOPI                   // opi, pi: "type" commands with optional "id", "response" with "command"
)

// Frame kinds used by replay (the protocol package's names, plus "text" for
// a line that is not a JSON object).
const (
	kindRequest      = "request"
	kindResponse     = "response"
	kindNotification = "notification"
	kindEvent        = "event"
	kindHandshake    = "handshake"
	kindText         = "text"
)

func dialectFor(name string) dialect {
	switch name {
	case "acp":
		return dialect{name: name, family: famJSONRPC, ignore: []string{
			"/params/sessionId", "/result/sessionId", "/params/cwd",
			"/params/_meta", "/result/_meta",
		}}
	case "mcp":
		return dialect{name: name, family: famJSONRPC, ignore: []string{
			"/params/_meta", "/result/_meta", "/params/progressToken",
			"/params/processId", "/params/clientInfo/version",
		}}
	case "jsonrpc", "lsp":
		return dialect{name: name, family: famJSONRPC, ignore: []string{
			"/params/processId", "/params/_meta", "/result/_meta",
		}}
	case "synaps":
		return dialect{name: name, family: famSynaps, ignore: []string{
			"/session_id", "/**/timestamp",
		}}
	case "opi", "pi":
		return dialect{name: name, family: famOPI, ignore: []string{
			"/**/sessionId", "/**/session_id", "/**/timestamp", "/**/timestamp_ms",
			"/data/sessionFile",
		}}
	case "brainwires":
		return dialect{name: name, family: famGeneric, ignore: []string{
			"/session_id", "/session_token", "/**/timestamp",
		}}
	default:
		return dialect{name: name, family: famGeneric}
	}
}

// classify fills in kind, method and id of f, a frame travelling in
// direction fromParent, from the top-level members of its bytes (no full
// decoding: a 1 MiB frame costs one scan). For responses the method is left
// empty; the engine fills it in from the request the response answers.
func (d dialect) classify(f *Frame, fromParent bool) {
	raw := f.Raw
	if i := jsonscan.SkipWS(raw, 0); !f.json || i >= len(raw) || raw[i] != '{' {
		f.Kind = kindText
		f.Method = ""
		return
	}
	idRaw := memberRaw(raw, "id") // one scan: for a frame without an id it walks the whole object
	if idRaw != nil && !bytes.Equal(idRaw, []byte("null")) {
		f.ID = string(idRaw)
	}
	switch d.family {
	case famJSONRPC:
		if m, ok := memberString(raw, "method"); ok {
			f.Method = m
			if idRaw != nil {
				f.Kind = kindRequest
			} else {
				f.Kind = kindNotification
			}
			return
		}
		if idRaw != nil {
			f.Kind = kindResponse
			return
		}
		f.Kind = kindText
	case famSynaps:
		t, _ := memberString(raw, "type")
		f.Method = t
		switch {
		case fromParent && f.ID != "":
			f.Kind = kindRequest
		case fromParent:
			f.Kind = kindNotification // shutdown: no id, no answer
		case t == "response":
			f.Kind = kindResponse
			f.Method, _ = memberString(raw, "command")
		case t == "error" && f.ID != "":
			f.Kind = kindResponse
			f.Method = ""
		case t == "ready":
			f.Kind = kindHandshake
		default:
			f.Kind = kindEvent
		}
	case famOPI:
		t, _ := memberString(raw, "type")
		f.Method = t
		switch {
		case fromParent:
			f.Kind = kindRequest // every command gets a response
		case t == "response":
			f.Kind = kindResponse
			f.Method, _ = memberString(raw, "command")
		case t == "rpc_ready":
			f.Kind = kindHandshake
		default:
			f.Kind = kindEvent
		}
	default:
		t, _ := memberString(raw, "type")
		f.Method = t
		f.Kind = kindEvent
		f.ID = ""
	}
}

// memberString returns the top-level member key of the JSON object b when
// it is a string.
func memberString(b []byte, key string) (string, bool) {
	raw := memberRaw(b, key)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// idKeyed reports whether responses of this dialect are tied to requests by
// the "id" member (the engine maps live and recorded ids).
func (d dialect) idKeyed() bool { return d.family != famGeneric }

// refusal returns the frame that answers req (a live request nobody recorded)
// in the protocol's own error form, or nil when the protocol has none (a
// notification, a response, a protocol without ids).
func (d dialect) refusal(req *Frame, msg string, known bool) []byte {
	switch d.family {
	case famJSONRPC:
		if req.Kind == kindText {
			// Not JSON at all: JSON-RPC's parse error, id null.
			return mustJSON(map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": -32700, "message": msg}})
		}
		if req.Kind != kindRequest {
			return nil
		}
		code := -32602 // invalid params: the method is in the cassette, this call is not
		if !known {
			code = -32601 // method not found
		}
		return jsonObject([][2]string{
			{"jsonrpc", `"2.0"`},
			{"id", req.ID},
			{"error", string(mustJSON(map[string]any{"code": code, "message": msg}))},
		})
	case famSynaps:
		if req.Kind == kindResponse {
			return nil
		}
		m := [][2]string{{"type", `"error"`}}
		if req.ID != "" {
			m = append(m, [2]string{"id", req.ID})
		}
		m = append(m, [2]string{"message", string(mustJSON(msg))})
		return jsonObject(m)
	case famOPI:
		if req.Kind == kindResponse {
			return nil
		}
		cmd := req.Method
		if req.Kind == kindText {
			cmd = "parse"
		}
		m := [][2]string{{"type", `"response"`}, {"command", string(mustJSON(cmd))}, {"success", "false"}}
		if req.ID != "" {
			m = append(m, [2]string{"id", req.ID})
		}
		m = append(m, [2]string{"error", string(mustJSON(msg))})
		return jsonObject(m)
	}
	return nil
}

// jsonObject builds an object from raw member values, in the given order.
func jsonObject(members [][2]string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(m[0]))
		b.WriteByte(':')
		b.WriteString(m[1])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// mustJSON encodes v without HTML escaping; v is always encodable here.
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

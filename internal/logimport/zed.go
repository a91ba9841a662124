package logimport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// readZed reads what Zed's ACP log view copies with "Copy All Messages"
// (crates/acp_tools, serialize_observed_messages, read at zed commit
// 1261b0f3367b): a pretty-printed JSON array with one object per message:
//
//	_direction  "outgoing" (Zed to the agent) or "incoming"
//	_type       "request", "response" or "notification"
//	id          the request id, null for notifications
//	method      the method; on a response, its request's method
//	params      the params; on a response the result, or the error object
//
// The log has no times. A response's params are taken as an error when they
// are an object of code and message (and data) only, which is the shape
// Zed serialises acp::Error to.
func readZed(data []byte) *Log {
	l := &Log{Protocol: "acp", Clock: "none"}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// lineAt counts lines from the last offset asked for, so that a long
	// log is scanned once, not once per entry.
	lastOff, lastLine := int64(0), 1
	lineAt := func(off int64) int {
		if off < lastOff {
			return bytes.Count(data[:off], []byte("\n")) + 1
		}
		lastLine += bytes.Count(data[lastOff:off], []byte("\n"))
		lastOff = off
		return lastLine
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		l.Problems = append(l.Problems, Problem{lineAt(dec.InputOffset()), "not a JSON array (Zed's Copy All Messages gives one)"})
		return l
	}
	for dec.More() {
		start := dec.InputOffset()
		// The offset is where the previous value ended; the entry starts
		// after the comma and white space.
		for int(start) < len(data) && bytes.IndexByte([]byte(" \t\r\n,"), data[start]) >= 0 {
			start++
		}
		var e struct {
			Direction string          `json:"_direction"`
			Type      string          `json:"_type"`
			ID        json.RawMessage `json:"id"`
			Method    string          `json:"method"`
			Params    json.RawMessage `json:"params"`
		}
		if err := dec.Decode(&e); err != nil {
			at := dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) && se.Offset > 0 && se.Offset <= int64(len(data)) {
				at = se.Offset - 1
			}
			l.Problems = append(l.Problems, Problem{lineAt(at), fmt.Sprintf("not a message entry: %v", err)})
			return l
		}
		line := lineAt(start)
		m := Message{Line: line}
		switch e.Direction {
		case "outgoing":
			m.Dir = In
		case "incoming":
			m.Dir = Out
		default:
			l.Problems = append(l.Problems, Problem{line, fmt.Sprintf("_direction %q is neither incoming nor outgoing", e.Direction)})
			continue
		}
		params := e.Params
		if bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
			params = nil
		}
		if params != nil {
			c, err := compact(params)
			if err != nil {
				l.Problems = append(l.Problems, Problem{line, err.Error()})
				continue
			}
			params = c
		}
		id := e.ID
		if bytes.Equal(bytes.TrimSpace(id), []byte("null")) {
			id = nil
		}
		switch e.Type {
		case "request":
			m.Body = rpc(id, jsonString(e.Method), params, nil, nil)
		case "notification":
			m.Body = rpc(nil, jsonString(e.Method), params, nil, nil)
		case "response":
			if isErrorObject(params) {
				m.Body = rpc(id, nil, nil, nil, params)
			} else {
				if params == nil {
					params = json.RawMessage("null")
				}
				m.Body = rpc(id, nil, nil, params, nil)
			}
		default:
			l.Problems = append(l.Problems, Problem{line, fmt.Sprintf("_type %q is not request, response or notification", e.Type)})
			continue
		}
		l.Messages = append(l.Messages, m)
	}
	// The array's end: a log cut off after a whole entry (no closing
	// bracket) or with more after it (two copies pasted into one file) is
	// damaged too, not a clean import of what was read.
	if _, err := dec.Token(); err != nil {
		l.Problems = append(l.Problems, Problem{lineAt(int64(len(data))), "the log ends before the array does (cut off?)"})
	} else if _, err := dec.Token(); err != io.EOF {
		l.Problems = append(l.Problems, Problem{lineAt(dec.InputOffset()), "more after the array's end"})
	}
	return l
}

// isErrorObject reports whether v is a JSON-RPC error object: code (an
// integer), message (a string) and, optionally, data; nothing else.
func isErrorObject(v json.RawMessage) bool {
	var o map[string]json.RawMessage
	if json.Unmarshal(v, &o) != nil {
		return false
	}
	var code int64
	var msg string
	if json.Unmarshal(o["code"], &code) != nil || json.Unmarshal(o["message"], &msg) != nil {
		return false
	}
	for k := range o {
		if k != "code" && k != "message" && k != "data" {
			return false
		}
	}
	return true
}

package logimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// readLSPDevtools reads what `lsp-devtools record --to-file FILE` writes
// (swyddfa/lsp-devtools, lsp-devtools 0.2.0, commit a10ffe6,
// lsp_devtools/record/__init__.py and record/formatters.py): one message a
// line, as Python's json.dumps writes it ({"jsonrpc": "2.0", "id": 1, ...}),
// with no direction and no time. Records that carry them (the fields of its
// LspMessage: session, timestamp, source "client" or "server", id, method,
// params, result, error, as its SQLite store holds them and
// `sqlite3 -json` exports them) are read too, one a line or as one array.
//
// A bare message's direction is the LSP specification's: the requests and
// notifications a server sends (window/*, workspace/configuration,
// client/registerCapability, textDocument/publishDiagnostics, $/progress,
// ...) are Out, other requests and notifications In, and a response goes
// the other way from its request.
func readLSPDevtools(data []byte) *Log {
	l := &Log{Protocol: "lsp", Framing: "content-length", Clock: "none"}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var recs []json.RawMessage
		if err := json.Unmarshal(trimmed, &recs); err != nil {
			l.Problems = append(l.Problems, Problem{1, fmt.Sprintf("not a JSON array: %v", err)})
			return l
		}
		var b bytes.Buffer
		for _, r := range recs {
			c, _ := compact(r)
			b.Write(c)
			b.WriteByte('\n')
		}
		data = b.Bytes()
	}
	var g dirGuess
	for i, s := range lines(data) {
		if strings.TrimSpace(s) == "" {
			continue
		}
		var o map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			l.Problems = append(l.Problems, Problem{i + 1, fmt.Sprintf("not a JSON object: %v", err)})
			continue
		}
		if src, ok := o["source"]; ok {
			m, err := devtoolsRecord(o, src)
			if err != nil {
				l.Problems = append(l.Problems, Problem{i + 1, err.Error()})
				continue
			}
			m.Line = i + 1
			if !m.Time.IsZero() {
				l.Clock = "wall"
			}
			l.Messages = append(l.Messages, m)
			continue
		}
		body, _ := compact([]byte(s))
		l.Messages = append(l.Messages, Message{Line: i + 1, Dir: g.dir(o), Body: body})
	}
	return l
}

// devtoolsRecord rebuilds a message from an LspMessage record. Its params,
// result and error may be JSON text (the SQLite store keeps json.dumps of
// them) or JSON values.
func devtoolsRecord(o map[string]json.RawMessage, src json.RawMessage) (Message, error) {
	var m Message
	switch strings.Trim(string(src), `"`) {
	case "client":
		m.Dir = In
	case "server":
		m.Dir = Out
	default:
		return m, fmt.Errorf("source %s is neither client nor server", src)
	}
	val := func(k string) json.RawMessage {
		v := o[k]
		if v == nil || string(v) == "null" {
			return nil
		}
		var s string
		if json.Unmarshal(v, &s) == nil && k != "method" && k != "id" && json.Valid([]byte(s)) {
			v = json.RawMessage(s)
		}
		c, _ := compact(v)
		return c
	}
	id := val("id")
	if id != nil {
		// LspMessage keeps the id as a string; a number is more likely
		// what was sent when it is all digits.
		var s string
		if json.Unmarshal(id, &s) == nil {
			id = vsID(s)
		}
	}
	method, params, result, errv := val("method"), val("params"), val("result"), val("error")
	if method == nil && result == nil && errv == nil {
		result = json.RawMessage("null")
	}
	m.Body = rpc(id, method, params, result, errv)
	if ts := o["timestamp"]; ts != nil {
		var s string
		if json.Unmarshal(ts, &s) == nil {
			for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999"} {
				if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
					m.Time = t
					break
				}
			}
		}
	}
	return m, nil
}

// serverMethods are the requests and notifications an LSP server sends
// (LSP 3.17).
var serverMethods = map[string]bool{
	"window/showMessageRequest": true, "window/showDocument": true, "window/workDoneProgress/create": true,
	"client/registerCapability": true, "client/unregisterCapability": true, "workspace/workspaceFolders": true,
	"workspace/configuration": true, "workspace/applyEdit": true, "workspace/semanticTokens/refresh": true,
	"workspace/inlayHint/refresh": true, "workspace/inlineValue/refresh": true, "workspace/diagnostic/refresh": true,
	"workspace/codeLens/refresh": true, "workspace/foldingRange/refresh": true,
	"window/logMessage": true, "window/showMessage": true, "telemetry/event": true,
	"textDocument/publishDiagnostics": true, "$/logTrace": true, "$/progress": true,
}

// dirGuess gives bare LSP messages their direction.
type dirGuess struct{ pending [2]map[string]bool }

func (g *dirGuess) dir(o map[string]json.RawMessage) Dir {
	var method string
	json.Unmarshal(o["method"], &method)
	id := string(o["id"])
	if method != "" {
		d := In
		if serverMethods[method] {
			d = Out
		}
		if id != "" {
			if g.pending[d] == nil {
				g.pending[d] = map[string]bool{}
			}
			g.pending[d][id] = true
		}
		return d
	}
	for _, d := range []Dir{In, Out} {
		if g.pending[d][id] {
			delete(g.pending[d], id)
			return 1 - d
		}
	}
	return Out
}

// readJSONL reads a generic log: one JSON object a line,
//
//	{"direction": "in" | "out", "message": {...}, "time": "2026-11-21T08:00:00.123Z" | 1763712000123}
//
// direction "in" is parent to child; message is the message (a JSON value,
// or a string holding the line as it was); time is RFC 3339 or Unix
// milliseconds, and may be left out.
func readJSONL(data []byte) *Log {
	l := &Log{Clock: "none"}
	for i, s := range lines(data) {
		if strings.TrimSpace(s) == "" {
			continue
		}
		var e struct {
			Direction string          `json:"direction"`
			Message   json.RawMessage `json:"message"`
			Time      json.RawMessage `json:"time"`
		}
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			l.Problems = append(l.Problems, Problem{i + 1, fmt.Sprintf("not a JSON object: %v", err)})
			continue
		}
		m := Message{Line: i + 1}
		switch e.Direction {
		case "in":
			m.Dir = In
		case "out":
			m.Dir = Out
		default:
			l.Problems = append(l.Problems, Problem{i + 1, fmt.Sprintf("direction %q is neither \"in\" nor \"out\"", e.Direction)})
			continue
		}
		if e.Message == nil {
			l.Problems = append(l.Problems, Problem{i + 1, "no message"})
			continue
		}
		var str string
		if json.Unmarshal(e.Message, &str) == nil {
			m.Body = []byte(str)
		} else {
			m.Body, _ = compact(e.Message)
		}
		if e.Time != nil {
			var ts string
			var ms int64
			switch {
			case json.Unmarshal(e.Time, &ts) == nil:
				t, err := time.Parse(time.RFC3339Nano, ts)
				if err != nil {
					l.Problems = append(l.Problems, Problem{i + 1, fmt.Sprintf("time %q is not RFC 3339", ts)})
					continue
				}
				m.Time = t
			case json.Unmarshal(e.Time, &ms) == nil:
				m.Time = time.UnixMilli(ms)
			default:
				l.Problems = append(l.Problems, Problem{i + 1, "time is neither an RFC 3339 string nor Unix milliseconds"})
				continue
			}
			l.Clock = "wall"
		}
		l.Messages = append(l.Messages, m)
	}
	return l
}

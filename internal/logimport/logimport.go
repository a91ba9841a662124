// Package logimport reads the message logs other programs write (Zed's ACP
// log, VS Code's LSP trace, lsp-devtools' records, a generic JSONL) and
// gives back the messages in order, with their direction and time, so that
// rpctap can write them as a cassette.
//
// A log is not the wire: programs log the messages they parsed, written out
// again (VS Code pretty-prints them, Python re-serialises them), and some
// leave out what they judge empty. Each reader rebuilds one JSON-RPC
// message per log entry from what the log says, and nothing more; the
// cassette is marked imported so that no command claims its bytes are the
// bytes that were sent.
package logimport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Dir is a message's direction, as in a cassette: In is parent to child
// (editor to server or agent), Out child to parent.
type Dir int

const (
	In Dir = iota
	Out
)

// Message is one message of the log.
type Message struct {
	Dir  Dir
	Line int       // where the entry starts in the log (1-based)
	Time time.Time // zero when the log has no time for it
	Body []byte    // the message, compact JSON
}

// Log is what a reader got out of a file.
type Log struct {
	Format   string // the FORMAT name
	Protocol string // "lsp", "acp", or "" to detect from the messages
	Framing  string // "content-length" for LSP logs, "" for newline-delimited
	Messages []Message
	// Clock says what the times are: "wall" (dates and times of day),
	// "time-of-day" (no date: VS Code's [Trace - 10:15:02 AM]), "none".
	Clock string
	// Problems are the entries that could not be read, in line order;
	// everything else was kept.
	Problems []Problem
}

// Problem is an entry a reader could not use.
type Problem struct {
	Line int
	What string
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.What) }

// Formats are the FORMAT names, with what each reads.
var Formats = map[string]string{
	"zed-acp":      `Zed's ACP log ("dev: open acp logs", Copy All Messages): a JSON array of {_direction, _type, id, method, params}`,
	"vscode-lsp":   `VS Code's LSP trace ("trace.server": "verbose"), text ("[Trace - 10:15:02 AM] Sending request ...") or JSON ("[LSP - ...] {"isLSPMessage":true,...}") form, old and LogOutputChannel timestamps`,
	"lsp-devtools": `lsp-devtools record --to-file output: one JSON-RPC message a line, or its records with source and timestamp`,
	"jsonl":        `one JSON object a line: {"direction": "in"|"out", "message": {...}, "time": RFC 3339 or Unix ms}`,
}

// FormatNames are the names of Formats, sorted.
func FormatNames() []string {
	var n []string
	for k := range Formats {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Read reads a log of the given format. modTime (the file's modification
// time) dates a log whose entries only carry a time of day. It fails only
// when the format is unknown or nothing at all could be read from r;
// otherwise unreadable entries are in Log.Problems.
func Read(format string, r io.Reader, modTime time.Time) (*Log, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var l *Log
	switch format {
	case "zed-acp":
		l = readZed(data)
	case "vscode-lsp":
		l = readVSCode(data, modTime)
	case "lsp-devtools":
		l = readLSPDevtools(data)
	case "jsonl":
		l = readJSONL(data)
	default:
		return nil, fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(FormatNames(), ", "))
	}
	l.Format = format
	if len(l.Messages) == 0 {
		if len(l.Problems) > 0 {
			return nil, fmt.Errorf("no message could be read (%s)", l.Problems[0])
		}
		return nil, fmt.Errorf("no messages in the log")
	}
	return l, nil
}

// compact re-encodes a JSON value without insignificant white space,
// keeping key order, number spelling and escapes.
func compact(v []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// rpc builds a JSON-RPC 2.0 message from its members, in the order the
// specification lists them; nil members are left out.
func rpc(id, method, params, result, errv json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0"`)
	add := func(k string, v json.RawMessage) {
		if v == nil {
			return
		}
		b.WriteString(`,"` + k + `":`)
		b.Write(v)
	}
	add("id", id)
	add("method", method)
	add("params", params)
	add("result", result)
	add("error", errv)
	b.WriteByte('}')
	return b.Bytes()
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// lines splits data into lines without their line ending.
func lines(data []byte) []string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<30)
	var out []string
	for sc.Scan() {
		out = append(out, strings.TrimSuffix(sc.Text(), "\r"))
	}
	return out
}

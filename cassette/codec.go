package cassette

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// This file holds the record codec. The JSON form of a record is normative
// (docs/cassette-format.md); the encoder is hand written and append style so
// that the recorder's hot path does no reflection and no allocation per
// record, and so that a JSON payload is embedded byte for byte (encoding/json
// would compact a json.RawMessage and so change the recorded frame).

// SplitEOL splits a raw line into its payload and its line ending: "\n",
// "\r\n", or "" when the line has no newline (the last line of a stream, or a
// part of an over-long line).
func SplitEOL(line []byte) (payload []byte, eol string) {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		if n > 1 && line[n-2] == '\r' {
			return line[:n-2], "\r\n"
		}
		return line[:n-1], "\n"
	}
	return line, ""
}

// NewLineRecord builds a frame or stderr record (k) for direction d from the
// bytes of one line without its line ending (payload) and the ending that
// followed it (eol: "\n", "\r\n" or ""). It picks the payload form by the
// normative rules: JSON verbatim, else text, else base64.
//
// The record aliases payload (JSON and B64 point into it); Writer.Append
// encodes a record at once and keeps no reference, so a caller may reuse the
// buffer after Append returns.
func NewLineRecord(k Kind, d Dir, payload []byte, eol string) Record {
	r := Record{K: k, D: d, EOL: eol}
	r.SetPayload(payload)
	return r
}

// SetPayload sets the payload fields (JSON, Text/HasText, B64) from the bytes
// of a line without its ending, clearing the others. A payload is kept as JSON
// only when it is valid JSON, valid UTF-8, contains no newline and starts and
// ends with a non-space byte (Verbatim); those are the payloads that can be
// embedded verbatim in a JSON line and come back byte for byte.
func (r *Record) SetPayload(p []byte) {
	r.SetPayloadChecked(p, Verbatim(p))
}

// SetPayloadChecked is SetPayload for a caller that already knows
// verbatim == Verbatim(p) (the recorder checks each frame once and shares the
// answer with the protocol layer). A wrong true would make the encoder write
// a broken line, so pass only what Verbatim returned for these bytes.
func (r *Record) SetPayloadChecked(p []byte, verbatim bool) {
	r.JSON, r.Text, r.HasText, r.B64 = nil, "", false, nil
	switch {
	case verbatim:
		r.JSON = p
	case utf8.Valid(p):
		r.Text, r.HasText = string(p), true
	default:
		r.B64 = p
	}
	r.checked = true
}

// verbatimJSON reports whether p may be embedded as-is as a JSON value.
func verbatimJSON(p []byte) bool { return Verbatim(p) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// Payload returns the original bytes of a frame or stderr line without its
// line ending. It aliases the record's JSON or B64 field.
func (r *Record) Payload() []byte {
	switch {
	case r.JSON != nil:
		return r.JSON
	case r.B64 != nil:
		return r.B64
	default:
		return []byte(r.Text)
	}
}

// HasPayload reports whether the record carries a line (frame or stderr).
func (r *Record) HasPayload() bool { return r.JSON != nil || r.B64 != nil || r.HasText || r.Text != "" }

// Line returns the original bytes of the line including its line ending, as
// they travelled on the wire.
func (r *Record) Line() []byte {
	p := r.Payload()
	out := make([]byte, 0, len(r.Hdr)+len(p)+len(r.EOL))
	return append(append(append(out, r.Hdr...), p...), r.EOL...)
}

// AppendLine appends the line's original bytes (header block, payload and
// ending) to dst.
func (r *Record) AppendLine(dst []byte) []byte {
	dst = append(dst, r.Hdr...)
	switch {
	case r.JSON != nil:
		dst = append(dst, r.JSON...)
	case r.B64 != nil:
		dst = append(dst, r.B64...)
	default:
		dst = append(dst, r.Text...)
	}
	return append(dst, r.EOL...)
}

// isLine reports whether records of kind k carry a line (and an "eol").
func isLine(k Kind) bool { return k == KindFrame || k == KindStderr }

// MarshalJSON encodes the record in its normative JSON form (one line, no
// trailing newline).
func (r Record) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(nil), nil
}

// AppendJSON appends the record's normative JSON form to dst, without a
// trailing newline. A JSON payload that was not set through SetPayload or
// NewLineRecord is checked first, and kept as text or base64 if it could not
// be embedded verbatim, so a caller can never produce a broken line.
func (r *Record) AppendJSON(dst []byte) []byte {
	dst, p, done := r.appendHead(dst)
	if done {
		return dst
	}
	return r.appendTail(append(dst, p...))
}

// appendHead appends the record's JSON form up to its payload: when the
// payload is a JSON value embedded verbatim, up to and including its key,
// and p is the payload, which goes next; otherwise p is nil. done says the
// record is complete (a header). appendTail appends the rest. The Writer
// hands a large p to the compressor straight from the caller's buffer
// instead of copying it into its batch.
func (r *Record) appendHead(dst []byte) (out, p []byte, done bool) {
	dst = append(dst, `{"n":`...)
	dst = strconv.AppendUint(dst, r.N, 10)
	dst = append(dst, `,"t":`...)
	dst = strconv.AppendInt(dst, r.T, 10)
	dst = appendKey(dst, "k")
	dst = appendString(dst, string(r.K))
	if r.K == KindHeader {
		h := r.Header
		if h == nil {
			h = &Header{}
		}
		return append(appendHeader(dst, h), '}'), nil, true
	}
	if r.Conn != 0 {
		dst = appendKey(dst, "conn")
		dst = strconv.AppendInt(dst, int64(r.Conn), 10)
	}
	if r.D != "" {
		dst = appendKey(dst, "d")
		dst = appendString(dst, string(r.D))
	}
	if r.Hdr != "" {
		dst = appendKey(dst, "hdr")
		dst = appendString(dst, r.Hdr)
	}
	switch {
	case r.JSON != nil:
		if r.checked || verbatimJSON(r.JSON) {
			return appendKey(dst, "json"), r.JSON, false
		} else if utf8.Valid(r.JSON) {
			dst = appendKey(dst, "text")
			dst = appendString(dst, string(r.JSON))
		} else {
			dst = appendKey(dst, "b64")
			dst = appendB64(dst, r.JSON)
		}
	case r.B64 != nil:
		dst = appendKey(dst, "b64")
		dst = appendB64(dst, r.B64)
	case r.HasText || r.Text != "":
		dst = appendKey(dst, "text")
		dst = appendString(dst, r.Text)
	}
	return dst, nil, false
}

// appendTail appends what follows the payload (see appendHead).
func (r *Record) appendTail(dst []byte) []byte {
	if isLine(r.K) && r.EOL != "\n" {
		dst = appendKey(dst, "eol")
		dst = appendString(dst, r.EOL)
	}
	if r.Part {
		dst = append(dst, `,"part":true`...)
	}
	if r.Redacted {
		dst = append(dst, `,"redacted":true`...)
	}
	if len(r.RedactedAt) > 0 {
		dst = appendStrings(dst, "redactedAt", r.RedactedAt)
	}
	dst = appendOptString(dst, "icpt", r.Icpt)
	dst = appendOptString(dst, "kind", r.Kind)
	dst = appendOptString(dst, "method", r.Method)
	if len(r.ID) > 0 {
		dst = appendKey(dst, "id")
		if verbatimJSON(r.ID) {
			dst = append(dst, r.ID...)
		} else {
			dst = appendString(dst, string(r.ID))
		}
	}
	dst = appendOptString(dst, "ev", r.Ev)
	dst = appendStrings(dst, "argv", r.Argv)
	dst = appendOptString(dst, "cwd", r.Cwd)
	if r.PID != 0 {
		dst = appendKey(dst, "pid")
		dst = strconv.AppendInt(dst, int64(r.PID), 10)
	}
	if r.Exit != nil {
		dst = appendKey(dst, "exit")
		dst = strconv.AppendInt(dst, int64(*r.Exit), 10)
	}
	dst = appendOptString(dst, "signal", r.Signal)
	if r.Bytes != 0 {
		dst = appendKey(dst, "bytes")
		dst = strconv.AppendInt(dst, r.Bytes, 10)
	}
	dst = appendOptString(dst, "msg", r.Msg)
	dst = appendOptString(dst, "act", r.Act)
	if r.Held != 0 {
		dst = appendKey(dst, "held")
		dst = strconv.AppendInt(dst, r.Held, 10)
	}
	dst = appendOptString(dst, "bp", r.BP)
	if len(r.Orig) > 0 {
		if verbatimJSON(r.Orig) {
			dst = appendKey(dst, "orig")
			dst = append(dst, r.Orig...)
		} else {
			dst = appendOptString(dst, "orig_text", string(r.Orig))
		}
	}
	dst = appendOptString(dst, "orig_text", r.OrigText)
	if r.Ref != 0 {
		dst = appendKey(dst, "ref")
		dst = strconv.AppendUint(dst, r.Ref, 10)
	}
	dst = appendOptString(dst, "code", r.Code)
	dst = appendOptString(dst, "sev", r.Severity)
	dst = appendOptString(dst, "ptr", r.Pointer)
	dst = appendOptString(dst, "protocol", r.Protocol)
	if r.Records != 0 {
		dst = appendKey(dst, "records")
		dst = strconv.AppendUint(dst, r.Records, 10)
	}
	return append(dst, '}')
}

func appendHeader(dst []byte, h *Header) []byte {
	dst = appendKey(dst, "format")
	dst = appendString(dst, h.Format)
	dst = appendKey(dst, "version")
	dst = appendString(dst, h.Version)
	dst = appendOptString(dst, "rpctap", h.Rpctap)
	dst = appendKey(dst, "created")
	dst = appendString(dst, h.Created)
	dst = appendOptString(dst, "mode", h.Mode)
	dst = appendOptString(dst, "protocol", h.Protocol)
	dst = appendStrings(dst, "argv", h.Argv)
	dst = appendOptString(dst, "cwd", h.Cwd)
	dst = appendOptString(dst, "listen", h.Listen)
	dst = appendOptString(dst, "upstream", h.Upstream)
	dst = appendOptString(dst, "control", h.Control)
	if h.Redacted {
		dst = append(dst, `,"redacted":true`...)
	}
	if len(h.Portable) > 0 {
		keys := make([]string, 0, len(h.Portable))
		for k := range h.Portable {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = appendKey(dst, "portable")
		for i, k := range keys {
			if i == 0 {
				dst = append(dst, '{')
			} else {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendString(dst, h.Portable[k])
		}
		dst = append(dst, '}')
	}
	if im := h.Imported; im != nil {
		dst = append(dst, `,"imported":{"format":`...)
		dst = appendString(dst, im.Format)
		dst = appendOptString(dst, "from", im.From)
		dst = appendKey(dst, "clock")
		dst = appendString(dst, im.Clock)
		dst = append(dst, '}')
	}
	if h.Deep {
		dst = append(dst, `,"deep":true`...)
	}
	if pa := h.Parent; pa != nil {
		dst = append(dst, `,"parent":{"cassette":`...)
		dst = appendString(dst, pa.Cassette)
		dst = append(dst, `,"request":`...)
		if len(pa.Request) == 0 || !json.Valid(pa.Request) {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, pa.Request...)
		}
		dst = appendOptString(dst, "method", pa.Method)
		dst = appendOptString(dst, "server", pa.Server)
		dst = append(dst, '}')
	}
	return dst
}

func appendKey(dst []byte, k string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, k...)
	return append(dst, '"', ':')
}

func appendOptString(dst []byte, k, v string) []byte {
	if v == "" {
		return dst
	}
	return appendString(appendKey(dst, k), v)
}

func appendStrings(dst []byte, k string, v []string) []byte {
	if v == nil {
		return dst
	}
	dst = appendKey(dst, k)
	dst = append(dst, '[')
	for i, s := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

func appendB64(dst []byte, p []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, p)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Valid UTF-8 passes through
// unescaped (only '"', '\\' and control characters are escaped); an invalid
// byte becomes U+FFFD, as encoding/json does. Payloads are never passed here
// unless they are valid UTF-8, so no recorded line loses a byte.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// wire is the decoding shape of a record line. Pointers tell a field that is
// absent from one that is present and empty ("text":"" is the empty line,
// "eol":"" a line without newline).
type wire struct {
	N        *uint64         `json:"n"`
	T        int64           `json:"t"`
	K        Kind            `json:"k"`
	Conn     int             `json:"conn"`
	D        Dir             `json:"d"`
	JSON     json.RawMessage `json:"json"`
	Text     *string         `json:"text"`
	B64      []byte          `json:"b64"`
	EOL      *string         `json:"eol"`
	Hdr      string          `json:"hdr"`
	Part     bool            `json:"part"`
	Redacted bool            `json:"redacted"`
	RedAt    []string        `json:"redactedAt"`
	Kind     string          `json:"kind"`
	Method   string          `json:"method"`
	ID       json.RawMessage `json:"id"`
	Ev       string          `json:"ev"`
	Argv     []string        `json:"argv"`
	Cwd      string          `json:"cwd"`
	PID      int             `json:"pid"`
	Exit     *int            `json:"exit"`
	Signal   string          `json:"signal"`
	Bytes    int64           `json:"bytes"`
	Msg      string          `json:"msg"`
	Ref      uint64          `json:"ref"`
	Code     string          `json:"code"`
	Severity string          `json:"sev"`
	Pointer  string          `json:"ptr"`
	Protocol string          `json:"protocol"`
	Records  uint64          `json:"records"`
	Act      string          `json:"act"`
	Icpt     string          `json:"icpt"`
	Held     int64           `json:"held"`
	BP       string          `json:"bp"`
	Orig     json.RawMessage `json:"orig"`
	OrigText string          `json:"orig_text"`
	// header
	Format   string            `json:"format"`
	Version  string            `json:"version"`
	Rpctap   string            `json:"rpctap"`
	Created  string            `json:"created"`
	Mode     string            `json:"mode"`
	Listen   string            `json:"listen"`
	Upstream string            `json:"upstream"`
	Control  string            `json:"control"`
	Portable map[string]string `json:"portable"`
	Imported *Imported         `json:"imported"`
	Deep     bool              `json:"deep"`
	Parent   *Parent           `json:"parent"`
}

var errNoN = errors.New(`record has no "n"`)

// UnmarshalJSON decodes one record line in the normative form. A header
// record (k "header") fills Header and leaves the fields it shares with
// other records (argv, cwd, protocol, redacted) empty.
func (r *Record) UnmarshalJSON(b []byte) error {
	var w wire
	if !fastDecode(b, &w) {
		w = wire{}
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
	}
	if w.N == nil {
		return errNoN
	}
	if w.K == "" {
		return errors.New(`record has no "k"`)
	}
	*r = Record{N: *w.N, T: w.T, K: w.K, Conn: w.Conn, D: w.D}
	if w.K == KindHeader {
		r.Header = &Header{
			Format: w.Format, Version: w.Version, Rpctap: w.Rpctap, Created: w.Created,
			Mode: w.Mode, Protocol: w.Protocol, Argv: w.Argv, Cwd: w.Cwd,
			Listen: w.Listen, Upstream: w.Upstream, Control: w.Control, Redacted: w.Redacted, Portable: w.Portable,
			Imported: w.Imported, Deep: w.Deep, Parent: w.Parent,
		}
		return nil
	}
	n := 0
	if w.JSON != nil {
		r.JSON = w.JSON
		n++
	}
	if w.Text != nil {
		r.Text, r.HasText = *w.Text, true
		n++
	}
	if w.B64 != nil {
		r.B64 = w.B64
		n++
	}
	if n > 1 {
		return errors.New("record has more than one of json, text and b64")
	}
	if isLine(w.K) {
		if w.EOL == nil {
			r.EOL = "\n"
		} else {
			r.EOL = *w.EOL
		}
		if n == 0 { // a line record always carries a payload; "b64":"" decodes to an empty non-nil slice
			return fmt.Errorf("%s record has no payload", w.K)
		}
	} else if w.EOL != nil {
		r.EOL = *w.EOL
	}
	r.checked = r.JSON != nil
	r.Hdr, r.Part, r.Redacted, r.RedactedAt = w.Hdr, w.Part, w.Redacted, w.RedAt
	r.Kind, r.Method, r.ID = w.Kind, w.Method, w.ID
	r.Ev, r.Argv, r.Cwd, r.PID, r.Exit = w.Ev, w.Argv, w.Cwd, w.PID, w.Exit
	r.Signal, r.Bytes, r.Msg = w.Signal, w.Bytes, w.Msg
	r.Ref, r.Code, r.Severity, r.Pointer = w.Ref, w.Code, w.Severity, w.Pointer
	r.Protocol, r.Records = w.Protocol, w.Records
	r.Act, r.Held, r.BP, r.Orig, r.OrigText, r.Icpt = w.Act, w.Held, w.BP, w.Orig, w.OrigText, w.Icpt
	return nil
}

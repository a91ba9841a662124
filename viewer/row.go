package viewer

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
	"github.com/rpctap/rpctap/protocol"
)

// Row is the summary of one record that the frame list shows. The first
// block comes from the record alone (Summarize); Pair, Latency and
// Violations come from the Store's analysis and may be filled later.
type Row struct {
	N      uint64
	T      int64 // ns since start
	Delta  int64 // ns since the previous record
	K      cassette.Kind
	Conn   int
	Dir    cassette.Dir
	Kind   string // request, response, notification, event, handshake, invalid
	Method string // method/type; for responses the request's method once paired
	ID     string
	Size   int    // payload bytes
	Label  string // what to show for records that are not frames
	// Summary says what a frame carries beyond its method
	// (protocol.Summarize): an ACP update's kind and first words, an MCP
	// tool's name, an error's code and message.
	Summary string
	Chunk   bool // a streamed chunk (hidden by the "hide chunks" filter)
	// Origin is the server name of the linked cassette the record comes
	// from ("" for the cassette opened), and Tool the id of the parent's
	// tool call that encloses it in time (LinkedSource).
	Origin string
	File   string // the linked cassette's file name
	Tool   string

	Paired     bool
	Pair       uint64 // the paired request or response
	Latency    int64  // responses: ns since their request
	Violations int    // violation records that refer to this one
}

// Summarize derives a Row from one record of a session in protocol proto
// (and the time of the record before).
func Summarize(proto string, r *cassette.Record, prevT int64) Row {
	row := Row{N: r.N, T: r.T, Delta: r.T - prevT, K: r.K, Conn: r.Conn, Dir: r.D,
		Kind: r.Kind, Method: r.Method, ID: string(r.ID), Size: payloadSize(r)}
	if r.N == 0 {
		row.Delta = 0
	}
	switch r.K {
	case cassette.KindFrame:
		if row.Kind == "" && r.JSON == nil {
			row.Kind = string("invalid")
		}
		row.Chunk = IsChunk(proto, r)
		if r.JSON == nil {
			row.Label = oneLineText(payloadText(r), 200)
		} else if !r.Part {
			dir := protocol.DirOf(string(r.D))
			row.Summary = protocol.Summarize(proto, dir, protocol.Info{Kind: protocol.Kind(r.Kind), Method: r.Method, ID: string(r.ID)}, r.JSON)
		}
	case cassette.KindStderr:
		row.Label = oneLineText(payloadText(r), 200)
	case cassette.KindEvent:
		row.Label = EventText(r)
	case cassette.KindViolation:
		row.Label = fmt.Sprintf("%s %s on #%d: %s", r.Severity, r.Code, r.Ref, r.Msg)
	case cassette.KindHeader, cassette.KindMeta, cassette.KindEnd:
		row.Label = filterexpr.Label(r)
	}
	if r.Part {
		row.Label = strings.TrimSpace(row.Label + " (continued in next record)")
	}
	if m := filterexpr.InterceptMark(r); m != "" {
		// A frame rpctap sent other than as the other side wrote it
		// (record --intercept): the mark leads its summary.
		row.Summary = strings.TrimSpace(m + " " + row.Summary)
		row.Label = strings.TrimSpace(m + " " + row.Label)
	}
	return row
}

// EventText is a one-line description of an event record
// (filterexpr.EventText: what the filter language searches).
func EventText(r *cassette.Record) string { return filterexpr.EventText(r) }

// payloadSize is the size in bytes of a frame's or stderr line's payload.
func payloadSize(r *cassette.Record) int {
	switch {
	case r.JSON != nil:
		return len(r.JSON)
	case r.B64 != nil:
		return len(r.B64)
	default:
		return len(r.Text)
	}
}

// Payload returns the bytes of a frame or stderr line as they were on the
// wire, without the line ending (cassette.Record.Payload).
func Payload(r *cassette.Record) []byte { return r.Payload() }

// payloadText is the payload as text; bytes that are not UTF-8 are shown
// as base64 with a prefix.
func payloadText(r *cassette.Record) string {
	if r.B64 != nil {
		return "base64:" + base64.StdEncoding.EncodeToString(r.B64)
	}
	if r.JSON != nil {
		return string(r.JSON)
	}
	return r.Text
}

func oneLineText(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return s
}

// IsChunk reports whether a frame of a session in protocol proto is one
// piece of a streamed answer (filterexpr.IsChunk).
func IsChunk(proto string, r *cassette.Record) bool { return filterexpr.IsChunk(proto, r) }

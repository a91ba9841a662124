// Package framing cuts a byte stream (one direction of one connection) into
// the messages its protocol frames: lines for newline-delimited JSON (ACP, MCP
// stdio, pi/opi, synaps, brainwires, plain JSON-RPC), or header block plus
// body for Content-Length framing (the LSP base protocol, also used by DAP).
//
// It only splits: forwarding never goes through it (the tap copies bytes
// untouched), so a framing mistake can cost a recording its message
// boundaries but never change what the parent and child see. Every byte fed
// comes back out exactly once, in order, as a header block, a payload or a
// line ending, so the recorded stream can be written back byte for byte;
// the one exception is a loss (Splitter.Lost): the messages the lost bytes
// cut are dropped and counted, never joined across the loss.
//
// Memory is bounded: a Splitter holds at most its limit of payload bytes
// plus one header block (at most MaxHeader bytes); longer messages come out
// as a run of parts.
package framing

import (
	"fmt"
	"strings"
)

// Mode is how a stream is framed.
type Mode uint8

const (
	// Auto decides from the first bytes of the stream: a header name
	// (Content-Length or Content-Type) followed by ':' means ContentLength,
	// anything else Lines.
	Auto Mode = iota
	// Lines: one message per line, "\n" or "\r\n" ending (NDJSON).
	Lines
	// ContentLength: a header block ("Content-Length: N\r\n\r\n"), then
	// exactly N bytes of body (LSP base protocol, DAP).
	ContentLength
)

// String gives the name ParseMode accepts.
func (m Mode) String() string {
	switch m {
	case Lines:
		return "ndjson"
	case ContentLength:
		return "content-length"
	}
	return "auto"
}

// ParseMode reads a --framing value: auto, ndjson (or lines), content-length
// (or lsp).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return Auto, nil
	case "ndjson", "lines", "jsonl":
		return Lines, nil
	case "content-length", "lsp", "dap":
		return ContentLength, nil
	}
	return Auto, fmt.Errorf("unknown framing %q (known: auto, ndjson, content-length)", s)
}

// Func receives one message, or one part of a message longer than the
// splitter holds whole:
//   - hdr is the header block of a Content-Length message, verbatim up to and
//     including its empty line; nil for lines, for bytes that were not a
//     message (out of sync), and for every part of a message but the first;
//   - payload is the line without its ending, or the body;
//   - eol is the line ending ("\n", "\r\n", or "" for a body, a last line
//     without newline, or a part);
//   - part is true when the message continues in the next call.
//
// hdr and payload alias the splitter's buffer or the fed data and are only
// valid during the call.
type Func func(hdr, payload []byte, eol string, part bool)

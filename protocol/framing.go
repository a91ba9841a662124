package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rpctap/rpctap/internal/framing"
)

// Framing rules: how a stream is cut into messages (package framing) is
// judged here, once per message, before the message itself.
//
// A protocol says how its stdio streams are framed by implementing Framer;
// protocols that do not are newline-delimited (ACP, MCP, JSON-RPC, the
// event-style protocols). Callers tell the Session each message's header
// block with Session.Framed before its Frame call; a message without one was
// a line.

// Framer is implemented by protocols whose messages are not lines: LSP and
// DAP frame each message with a Content-Length header.
type Framer interface {
	Framing() framing.Mode
}

// Framing codes. docs/protocols.md lists them with the sentences they
// enforce.
const (
	CodeWrongFraming     = "session.wrong-framing"   // error: the side frames its messages other than the protocol says
	CodeHeaderSyntax     = "framing.header-syntax"   // error: a header line that is not "Name: value" ended by \r\n
	CodeHeaderType       = "framing.content-type"    // warning: a Content-Type other than the JSON-RPC one in UTF-8
	CodeHeaderUnknown    = "framing.unknown-header"  // info: a header field the base protocol does not define
	CodeShortBody        = "framing.short-body"      // error: the stream ended before Content-Length bytes of body
	CodeLengthMismatch   = "framing.length-mismatch" // error: the body holds the next message's header: Content-Length too large
	CodeOutOfSync        = "framing.out-of-sync"     // error: bytes where a header was expected
	CodeBodyNotUTF8      = "framing.not-utf8"        // error: a body that is not UTF-8
	contentTypeDefault   = "application/vscode-jsonrpc"
	framingHeaderExample = `"Content-Length: N\r\n\r\n"`
)

// framingState is the Session's per-direction view of framing.
type framingState struct {
	want    framing.Mode // the protocol's framing (Lines unless a Framer says otherwise)
	seen    [2]framing.Mode
	told    [2]bool // wrong-framing reported for that side
	hdr     [2][]byte
	hdrSet  [2]bool
	whole   [2]bool
	badPrev [2]bool // the side's previous message was not valid JSON
	// cut holds the child's messages cut short by the end of the stream,
	// judged at the session's end (see cutFindings).
	cut []Violation
}

func newFramingState(p Protocol) framingState {
	fs := framingState{want: framing.Lines}
	if f, ok := p.(Framer); ok {
		fs.want = f.Framing()
	}
	return fs
}

// Framed tells the Session the header block of the next message from dir
// (nil: the message was a line, or bytes out of sync on a Content-Length
// stream). whole is false when the message was recorded in parts and frame
// holds only its last part (its length is then not checked). Call it right
// before Frame for that message; a Frame call without it is taken as a line.
func (s *Session) Framed(dir Dir, hdr []byte, whole bool) {
	d := min(dir, FromChild)
	s.state.fr.hdr[d], s.state.fr.hdrSet[d], s.state.fr.whole[d] = hdr, true, whole
}

// framingChecks judges how a message came: it returns the violations and
// skip=true when the bytes were no message at all (out of sync), so that the
// frame checks do not report the same bytes again as "not JSON".
func (s *sessionState) framingChecks(rec uint64, dir Dir, frame []byte) (vs []Violation, skip bool) {
	fs := &s.fr
	hdr, whole := fs.hdr[dir], fs.whole[dir]
	if !fs.hdrSet[dir] {
		hdr, whole = nil, true
	}
	fs.hdr[dir], fs.hdrSet[dir] = nil, false
	add := func(code string, sev Severity, format string, a ...any) {
		vs = append(vs, Violation{Code: code, Severity: sev, Message: fmt.Sprintf(format, a...)})
	}
	mode := framing.Lines
	if hdr != nil {
		mode = framing.ContentLength
	}
	first := fs.seen[dir] == framing.Auto
	if first {
		fs.seen[dir] = mode
	}
	if hdr == nil && fs.seen[dir] == framing.ContentLength {
		// A line on a Content-Length stream: bytes that are no message.
		why := ""
		if fs.badPrev[dir] {
			why = "; the previous message was cut short, so its Content-Length was probably smaller than its body"
		}
		add(CodeOutOfSync, SevError, "the %s's stream is framed by Content-Length, but these bytes came where a header was expected (a print to stdout?)%s: %q",
			sideName(dir), why, excerpt(frame, 60))
		fs.badPrev[dir] = false
		return vs, true
	}
	if first && mode != fs.want && !fs.told[dir] {
		fs.told[dir] = true
		add(CodeWrongFraming, SevError, "%s", wrongFramingMessage(s.p.Name(), dir, mode))
	}
	if hdr == nil {
		return vs, false
	}
	for _, f := range framing.HeaderFields(hdr) {
		switch {
		case !f.Colon:
			add(CodeHeaderSyntax, SevError, "header line %q is not \"Name: value\"", excerpt([]byte(f.Line), 60))
		case !f.CRLF:
			// LSP base protocol: "Each header field is terminated by
			// '\r\n'", and "the header part is terminated by '\r\n'".
			add(CodeHeaderSyntax, SevError, "header field %q ends with a bare \\n; the base protocol terminates each header field with \\r\\n", f.Name)
		case strings.EqualFold(f.Name, "Content-Length"):
		case strings.EqualFold(f.Name, "Content-Type"):
			// "Content-Type ... Defaults to application/vscode-jsonrpc;
			// charset=utf-8"; "for backwards compatibility ... treat the
			// string 'utf8' as 'utf-8'".
			if !contentTypeOK(f.Value) {
				add(CodeHeaderType, SevWarning, "Content-Type %q: the base protocol's content is %s; charset=utf-8 (the only encoding supported)", f.Value, contentTypeDefault)
			}
		default:
			add(CodeHeaderUnknown, SevInfo, "header field %q is not one of the base protocol's (Content-Length, Content-Type)", f.Name)
		}
	}
	if !bytes.HasSuffix(hdr, []byte("\r\n\r\n")) && !bytes.HasSuffix(hdr, []byte("\n\n")) {
		add(CodeHeaderSyntax, SevError, "the header part does not end with an empty line")
	} else if !bytes.HasSuffix(hdr, []byte("\r\n\r\n")) {
		add(CodeHeaderSyntax, SevError, "the header part ends with a bare \\n\\n; the base protocol ends it with \\r\\n\\r\\n")
	}
	n, _ := framing.ContentLengthOf(hdr)
	if whole && int64(len(frame)) < n {
		msg := fmt.Sprintf("Content-Length says %d bytes, but the stream ended after %d bytes of body", n, len(frame))
		fs.badPrev[dir] = false
		if dir == FromChild {
			// Whether anyone could read it is known at the end.
			fs.cut = append(fs.cut, Violation{Code: CodeShortBody, Severity: SevError, Record: rec, Message: msg})
			return vs, true
		}
		add(CodeShortBody, SevError, "%s", msg)
		return vs, true
	}
	valid := json.Valid(frame)
	fs.badPrev[dir] = !valid
	if whole && !valid {
		if i := framing.IndexContentLength(frame); i > 0 && json.Valid(bytes.TrimSpace(frame[:i])) {
			add(CodeLengthMismatch, SevError, "Content-Length is %d, but the JSON body ends after %d bytes and the next message's header follows inside it: the sender counted more bytes than it wrote (characters instead of UTF-8 bytes?)", n, len(bytes.TrimSpace(frame[:i])))
			return vs, true
		}
	}
	if !utf8.Valid(frame) {
		// "Currently only 'utf-8' is supported" (LSP, Content Part).
		add(CodeBodyNotUTF8, SevError, "the body is not valid UTF-8, the only encoding the base protocol supports")
	}
	return vs, false
}

func contentTypeOK(v string) bool {
	parts := strings.Split(v, ";")
	if !strings.EqualFold(strings.TrimSpace(parts[0]), contentTypeDefault) && !strings.EqualFold(strings.TrimSpace(parts[0]), "application/json") {
		return false
	}
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "charset") {
			val = strings.Trim(strings.ToLower(val), `"`)
			if val != "utf-8" && val != "utf8" {
				return false
			}
		}
	}
	return true
}

// wrongFramingMessage names the mistake and the fix.
func wrongFramingMessage(proto string, dir Dir, got framing.Mode) string {
	side := sideName(dir)
	if got == framing.ContentLength {
		extra := ""
		if proto == "mcp" {
			// MCP, Transports, stdio: "Messages are delimited by
			// newlines, and MUST NOT contain embedded newlines."
			extra = " (MCP stdio: \"Messages are delimited by newlines\")"
		}
		return fmt.Sprintf("%s over stdio is newline-delimited JSON%s, but the %s frames its messages with LSP-style Content-Length headers, which the other side reads as garbage; fix: write each message as one line of JSON ending in \\n, with no header (a server built on an LSP JSON-RPC library needs that library's newline transport)",
			proto, extra, side)
	}
	// LSP base protocol: "The base protocol consists of a header and a
	// content part"; "Content-Length ... This header is required."
	return fmt.Sprintf("%s messages start with a header part (%s, then the JSON body), but the %s writes bare JSON lines, which the other side cannot read; fix: prefix each message with its Content-Length header (the newline-delimited transport is for MCP, not %s)",
		proto, framingHeaderExample, side, proto)
}

// cutFindings judges the child's messages cut short by the end of its
// stream: an error, unless the parent had closed the child's stdin before
// (the session was over: LSP's exit, MCP's close of the input stream),
// when the cut is the server dying mid-write on its way out (gopls's last
// log line races its exit) and nobody reads it: info.
func (s *sessionState) cutFindings() []Violation {
	out := s.fr.cut
	for i := range out {
		if s.closedAt != 0 && out[i].Record > s.closedAt {
			out[i].Severity = SevInfo
			out[i].Message += fmt.Sprintf(" (after the parent closed the child's stdin at record %d: nobody reads it)", s.closedAt)
		}
	}
	return out
}

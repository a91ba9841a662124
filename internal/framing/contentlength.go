package framing

import (
	"bytes"
	"strconv"
)

// This file holds Content-Length framing, the LSP base protocol's ("The base
// protocol consists of a header and a content part (comparable to HTTP). The
// header and content part are separated by a '\r\n'. ... Content-Length: The
// length of the content part in bytes. This header is required.") that DAP
// uses as well.

// Detect decides a stream's framing from its first bytes: ContentLength when
// they start with a header name Content-Length or Content-Type (any case)
// followed by ':', Lines otherwise. ok is false while too few bytes arrived
// to tell (fewer than the header name, all of them letters or '-').
func Detect(first []byte) (m Mode, ok bool) {
	if len(first) == 0 {
		return Auto, false
	}
	name, colon := headerName(first)
	if !colon {
		if len(name) == len(first) && len(first) < len("content-length:") {
			return Auto, false // still a possible header name
		}
		return Lines, true
	}
	if isFramingHeader(name) {
		return ContentLength, true
	}
	return Lines, true
}

// headerName returns the leading run of header-name bytes (letters, digits
// and '-') and whether a ':' follows it.
func headerName(b []byte) (name []byte, colon bool) {
	i := 0
	for i < len(b) && isNameByte(b[i]) && i < 64 {
		i++
	}
	return b[:i], i > 0 && i < len(b) && b[i] == ':'
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func isFramingHeader(name []byte) bool {
	return bytes.EqualFold(name, []byte("Content-Length")) || bytes.EqualFold(name, []byte("Content-Type"))
}

// feedContentLength adds data and emits every message it completes.
func (s *Splitter) feedContentLength(data []byte, emit Func) {
	s.grow(data)
	off := 0
	for off < len(s.buf) || s.inBody && s.need == 0 {
		var ok bool
		if s.inBody {
			off, ok = s.takeBody(off, emit)
		} else {
			off, ok = s.takeHeader(off, emit)
		}
		if !ok {
			break
		}
	}
	// Keep what is not out yet at the front of buf.
	rest := copy(s.buf, s.buf[off:])
	s.buf = s.buf[:rest]
	if cap(s.buf) > keepBuf && len(s.buf) == 0 {
		s.buf = nil
	}
}

// takeHeader looks for a message's header block at buf[off:]. It returns
// the new offset and whether it made progress: a header block found (the
// splitter is then in the body, the block at the returned offset), or bytes
// that are no header emitted as an out-of-sync record.
func (s *Splitter) takeHeader(off int, emit Func) (int, bool) {
	b := s.buf[off:]
	name, colon := headerName(b)
	if len(name) == len(b) && len(b) < 64 {
		return off, false // a header name still arriving
	}
	if colon {
		end := headerEnd(b)
		if end < 0 {
			if len(b) <= MaxHeader {
				return off, false // the rest of the header block is to come
			}
		} else if n, ok := ContentLengthOf(b[:end]); ok {
			s.inBody, s.hdrLen, s.need, s.sentPart = true, end, n, false
			return off, true
		}
	}
	// Out of sync: bytes where a header should start. Emit them a line at a
	// time, cut before the next "Content-Length:" so that the message it
	// starts is found again.
	cut := junkEnd(b)
	if cut < 0 && len(b) <= s.max {
		return off, false
	}
	line, eol := b, ""
	if cut >= 0 {
		line = b[:cut]
		switch {
		case bytes.HasSuffix(line, []byte("\r\n")):
			line, eol = line[:len(line)-2], "\r\n"
		case bytes.HasSuffix(line, []byte("\n")):
			line, eol = line[:len(line)-1], "\n"
		}
	}
	if len(line) > s.max {
		// Too long to hold whole: a part; the rest follows as junk.
		cut = partCut(b[:s.max], true)
		emit(nil, b[:cut], "", true)
		return off + cut, true
	}
	emit(nil, line, eol, false)
	return off + cut, true
}

// headerEnd returns the length of the header block at the start of b,
// including the empty line that ends it ("\r\n\r\n", or a bare "\n\n" that
// lenient peers write), or -1 when it has not ended yet.
func headerEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		// b[i] ends a header line; an empty line follows?
		j := i + 1
		if j < len(b) && b[j] == '\r' {
			j++
		}
		if j < len(b) && b[j] == '\n' {
			return j + 1
		}
	}
	return -1
}

const clKey = "content-length:"

// IndexContentLength returns where the first "Content-Length:" (in any
// case) starts in b, or -1.
func IndexContentLength(b []byte) int {
	for i := 0; i+len(clKey) <= len(b); i++ {
		if b[i]|0x20 == 'c' && bytes.EqualFold(b[i:i+len(clKey)], []byte(clKey)) {
			return i
		}
	}
	return -1
}

// junkEnd returns where a run of out-of-sync bytes at the start of b ends:
// after its first newline, or before a "Content-Length:" header (matched in
// any case) that starts before it, whichever comes first; -1 when neither is
// in b yet.
func junkEnd(b []byte) int {
	nl := bytes.IndexByte(b, '\n')
	stop := len(b) - len(clKey)
	if nl >= 0 && nl < stop {
		stop = nl
	}
	if i := IndexContentLength(b[1:min(stop+len(clKey), len(b))]); i >= 0 {
		return i + 1
	}
	if nl >= 0 {
		return nl + 1
	}
	return -1
}

// takeBody works on the message whose header block starts at buf[off] (or,
// once a part went out, whose body continues at buf[off]): it emits the
// whole message once the body is in, or a part when more than max body bytes
// are held. It returns the new offset and whether it made progress.
func (s *Splitter) takeBody(off int, emit Func) (int, bool) {
	start := off
	var hdr []byte
	if !s.sentPart {
		start += s.hdrLen
		hdr = s.buf[off:start]
	}
	have := int64(len(s.buf) - start)
	if have >= s.need && s.need <= int64(s.max) {
		end := start + int(s.need)
		emit(hdr, s.buf[start:end], "", false)
		s.inBody, s.hdrLen, s.need, s.sentPart = false, 0, 0, false
		return end, true
	}
	if have < int64(s.max) {
		return off, false
	}
	// Over the cap (need > max here, so the body goes on after this part).
	cut := start + partCut(s.buf[start:start+s.max], false)
	emit(hdr, s.buf[start:cut], "", true)
	s.need -= int64(cut - start)
	s.sentPart = true
	return cut, true
}

// emitBody emits what is held of a body when the stream ended (part false:
// the body is cut short) or bytes were lost (part true).
func (s *Splitter) emitBody(emit Func, part bool) {
	// feedContentLength leaves the message at the front of buf.
	start := 0
	var hdr []byte
	if !s.sentPart {
		start = s.hdrLen
		hdr = s.buf[:s.hdrLen]
	}
	emit(hdr, s.buf[start:], "", part)
}

// ContentLengthOf parses a header block (each line "Name: value", ended by
// an empty line) and returns its Content-Length. ok is false when there is
// none, or it is not a decimal number of bytes a stream could carry.
func ContentLengthOf(hdr []byte) (n int64, ok bool) {
	// No allocation: this runs for every message the recorder splits.
	for len(hdr) > 0 {
		line := hdr
		if i := bytes.IndexByte(hdr, '\n'); i >= 0 {
			line, hdr = hdr[:i], hdr[i+1:]
		} else {
			hdr = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			break
		}
		name, colon := headerName(line)
		if !colon || !bytes.EqualFold(name, []byte("Content-Length")) {
			continue
		}
		v := bytes.TrimSpace(line[len(name)+1:])
		if len(v) == 0 || len(v) > 19 {
			return 0, false
		}
		for _, c := range v {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int64(c-'0')
		}
		if n > maxContentLength {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// Field is one header line of a Content-Length message.
type Field struct {
	Name, Value string // Value without surrounding spaces
	Line        string // the whole line as it was, without its ending
	CRLF        bool   // the line ended with "\r\n" (the spec's ending), not a bare "\n"
	Colon       bool   // the line has a ':' after a non-empty name of letters, digits and '-'
}

// HeaderFields splits a header block into its lines, without the empty line
// that ends it.
func HeaderFields(hdr []byte) []Field {
	var out []Field
	for len(hdr) > 0 {
		i := bytes.IndexByte(hdr, '\n')
		line := hdr
		if i >= 0 {
			line, hdr = hdr[:i], hdr[i+1:]
		} else {
			hdr = nil
		}
		crlf := bytes.HasSuffix(line, []byte("\r"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			break
		}
		f := Field{Line: string(line), CRLF: crlf && i >= 0}
		name, colon := headerName(line)
		f.Colon = colon
		if colon {
			f.Name = string(name)
			f.Value = string(bytes.TrimSpace(line[len(name)+1:]))
		}
		out = append(out, f)
	}
	return out
}

// WithLength returns hdr with its Content-Length value replaced by n,
// every other byte kept (replay rewrites ids, which changes a body's
// length). A header block without Content-Length, or nil, gives the LSP
// default "Content-Length: n\r\n\r\n".
func WithLength(hdr []byte, n int) []byte {
	num := strconv.Itoa(n)
	rest := hdr
	at := 0
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		line := rest
		if i >= 0 {
			line = rest[:i+1]
		}
		name, colon := headerName(line)
		if colon && bytes.EqualFold(name, []byte("Content-Length")) {
			v := line[len(name)+1:]
			lead := len(v) - len(bytes.TrimLeft(v, " \t"))
			body := bytes.TrimRight(v, " \t\r\n")
			vs := at + len(name) + 1 + lead
			ve := at + len(name) + 1 + len(body)
			out := make([]byte, 0, len(hdr)+len(num))
			out = append(out, hdr[:vs]...)
			out = append(out, num...)
			return append(out, hdr[ve:]...)
		}
		at += len(line)
		rest = rest[len(line):]
	}
	return []byte("Content-Length: " + num + "\r\n\r\n")
}

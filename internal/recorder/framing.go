package recorder

import (
	"bytes"
	"unicode/utf8"
)

// MaxLine is the longest line the recorder holds whole: 16 MiB (brainwires'
// frame limit, the largest of the protocols rpctap knows) plus 64 KiB of
// slack for a line ending and framing overhead. A longer line is recorded as
// a run of records with Part set, each at most MaxLine bytes, followed by the
// record that carries the rest and the line ending, so the recorder's memory
// per stream stays bounded by MaxLine however long a line grows.
const MaxLine = 16<<20 + 64<<10

// splitter cuts one byte stream (one direction of one connection) into
// lines. It never uses bufio.Scanner: lines of any length are handled, line
// endings are kept exactly ("\n", "\r\n", or none at the end of the stream),
// and bytes that are not yet a complete line are held in buf, which never
// grows beyond max bytes.
//
// A splitter is owned by one goroutine (the recorder's writer goroutine); it
// is not safe for concurrent use.
type splitter struct {
	buf []byte // the start of a line whose end has not arrived yet
	max int    // MaxLine, or smaller in tests
}

// lineFunc receives one line: payload without its ending, the ending
// ("\n", "\r\n" or ""), and whether the line continues in the next call
// (a Part). payload is only valid during the call.
type lineFunc func(payload []byte, eol string, part bool)

// feed splits data, calling emit for every line it completes and for every
// part of an over-long line. Bytes after the last newline are kept for the
// next call.
func (s *splitter) feed(data []byte, emit lineFunc) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			s.hold(data, emit)
			return
		}
		line := data[:i+1]
		data = data[i+1:]
		if len(s.buf) == 0 {
			if len(line) <= s.max {
				emitLine(line, emit)
				continue
			}
		}
		// The line started in an earlier chunk (or is too long): take the
		// part before the newline through hold so that over-long lines are
		// cut into parts, then finish the line from the buffer.
		s.hold(line[:len(line)-1], emit)
		s.buf = append(s.buf, '\n')
		emitLine(s.buf, emit)
		s.buf = s.buf[:0]
	}
	if cap(s.buf) > keepLineBuf && len(s.buf) == 0 {
		s.buf = nil // do not keep a 16 MiB buffer around after one big line
	}
}

// hold appends data (which contains no newline) to the pending line,
// emitting full parts while the pending line is longer than max.
func (s *splitter) hold(data []byte, emit lineFunc) {
	for len(s.buf)+len(data) > s.max {
		if len(s.buf) < s.max {
			n := s.max - len(s.buf)
			s.buf = append(s.buf, data[:n]...)
			data = data[n:]
		}
		cut := partCut(s.buf[:s.max])
		emit(s.buf[:cut], "", true)
		rest := copy(s.buf, s.buf[cut:])
		s.buf = s.buf[:rest]
	}
	if n := len(s.buf) + len(data); n > cap(s.buf) {
		// Grow by doubling from 64 KiB, so that a line of up to
		// keepLineBuf bytes leaves a buffer the next long line fits in.
		b := make([]byte, len(s.buf), max(n, 2*cap(s.buf), 64<<10))
		copy(b, s.buf)
		s.buf = b
	}
	s.buf = append(s.buf, data...)
}

// keepLineBuf: a splitter keeps a line buffer up to this capacity between
// lines (agent sessions send ~1 MiB frames again and again); a larger one,
// grown for an exceptional line, is dropped once that line is out.
const keepLineBuf = 2 << 20

// partCut picks where to cut a full buffer into a part: at its end, moved
// back so that a "\r" that may precede the coming "\n" stays with the rest of
// the line, and so that a UTF-8 sequence is not torn in two (which would turn
// both halves into base64). It never moves back more than 4 bytes, so every
// part is non-empty.
func partCut(b []byte) int {
	n := len(b)
	if n > 4 && b[n-1] == '\r' {
		n--
	}
	for back := 0; back < 3 && n > 4; back++ {
		if utf8.RuneStart(b[n-1-back]) {
			r := b[n-1-back:]
			if utf8.FullRune(r) {
				return n // the last rune is complete
			}
			return n - 1 - back // cut before the torn rune
		}
	}
	return n
}

// end flushes a pending last line that had no newline (the stream ended).
func (s *splitter) end(emit lineFunc) {
	if len(s.buf) > 0 {
		emit(s.buf, "", false)
		s.buf = s.buf[:0]
	}
	s.buf = nil
}

// pending is the number of bytes held for an incomplete line.
func (s *splitter) pending() int { return len(s.buf) }

// emitLine splits a complete line (ending in "\n") into payload and ending.
func emitLine(line []byte, emit lineFunc) {
	n := len(line) - 1
	if n > 0 && line[n-1] == '\r' {
		emit(line[:n-1], "\r\n", false)
		return
	}
	emit(line[:n], "\n", false)
}

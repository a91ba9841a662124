package framing

import (
	"bytes"
	"unicode/utf8"
)

// MaxMessage is the longest message a Splitter made by NewSplitter holds
// whole: 16 MiB (brainwires' frame limit, the largest of the protocols rpctap
// knows) plus 64 KiB of slack for a line ending and framing overhead. A
// longer message comes out as a run of parts, each at most this long, so the
// memory per stream stays bounded however long a message grows.
const MaxMessage = 16<<20 + 64<<10

// MaxHeader is the longest header block a Content-Length stream may send
// before its empty line. LSP headers are one or two short fields; a longer
// run of bytes without an empty line is taken as out of sync, not held.
const MaxHeader = 8 << 10

// maxContentLength is the largest Content-Length believed: larger values
// are a corrupt header, not a message (and would overflow an int on 32-bit
// platforms).
const maxContentLength = 1 << 40

// Splitter cuts one byte stream into messages. It never uses bufio.Scanner:
// messages of any length are handled, line endings and header blocks are
// kept exactly, and bytes that are not yet a complete message are held in
// buf, which never grows beyond the limit plus one header block.
//
// A Splitter is owned by one goroutine; it is not safe for concurrent use.
type Splitter struct {
	mode Mode   // Auto until the first bytes decide
	max  int    // MaxMessage, or smaller in tests
	buf  []byte // bytes held: the start of a line, a header block, or a body

	// Content-Length state. hdrLen > 0 while a body is being read: buf
	// starts with the header block (hdrLen bytes), followed by body bytes
	// not yet emitted; need is how many body bytes are still to come;
	// sentPart says a part of this body was already emitted (so the header
	// went out with it and buf holds only body bytes).
	hdrLen   int
	need     int64
	inBody   bool
	sentPart bool

	// partOut: a part of the line being held was emitted already (lines).
	partOut bool
	// resync: bytes were lost (Lost) and the stream does not resume at a
	// message boundary: the bytes up to the next one are the rest of a
	// message whose start is gone, and Skip passes over them. For a
	// Content-Length body whose rest is known, skipBody counts the bytes
	// still to skip; -1 means look for the next "Content-Length:".
	resync   bool
	skipBody int64
}

// NewSplitter returns a splitter for mode that holds messages up to max
// bytes whole (MaxMessage when max <= 0).
func NewSplitter(mode Mode, max int) *Splitter {
	s := &Splitter{}
	s.Reset(mode, max)
	return s
}

// Reset makes s a fresh splitter for mode and max, keeping its buffer.
func (s *Splitter) Reset(mode Mode, max int) {
	if max <= 0 {
		max = MaxMessage
	}
	*s = Splitter{mode: mode, max: max, buf: s.buf[:0]}
}

// Resyncing reports whether the splitter, after Lost, is passing over the
// rest of a message the lost bytes cut (see Skip).
func (s *Splitter) Resyncing() bool { return s.resync }

// Mode is the stream's framing: what it was made with, or what Auto decided
// (Auto until enough bytes arrived).
func (s *Splitter) Mode() Mode { return s.mode }

// Detach hands the caller the buffer p lies in, when p is a line the
// splitter assembled from several chunks in its own buffer (newline mode;
// call it from the emit callback, for a line that is not a part): the
// splitter lets go of that buffer and starts the next line in another one
// (see Offer), so the caller may keep p without copying it. It returns nil,
// and the splitter keeps its buffer, for any other p.
func (s *Splitter) Detach(p []byte) []byte {
	if s.mode != Lines || s.partOut || len(p) == 0 || len(s.buf) == 0 || &p[0] != &s.buf[0] {
		return nil
	}
	b := s.buf
	s.buf = nil
	return b
}

// Offer gives the splitter an empty buffer for the lines it holds, when it
// has none (a buffer it let go of with Detach, coming back). It reports
// whether the splitter took it.
func (s *Splitter) Offer(b []byte) bool {
	if cap(s.buf) != 0 || cap(b) == 0 {
		return false
	}
	s.buf = b[:0]
	return true
}

// Pending is the number of bytes held for an incomplete message.
func (s *Splitter) Pending() int { return len(s.buf) }

// Feed splits data, calling emit for every message it completes and every
// part of an over-long one. Bytes of an incomplete message are kept for the
// next call.
func (s *Splitter) Feed(data []byte, emit Func) {
	if s.resync {
		// Callers that record what is skipped call Skip first.
		data = data[s.Skip(data):]
		if len(data) == 0 {
			return
		}
	}
	if s.mode == Auto {
		s.buf = append(s.buf, data...)
		m, ok := Detect(s.buf)
		if !ok {
			if len(s.buf) > s.max {
				// Cannot happen with Detect's 64-byte bound; kept so a
				// changed Detect can never grow buf without bound.
				s.mode = Lines
			} else {
				return
			}
		} else {
			s.mode = m
		}
		held := s.buf
		s.buf = nil
		s.Feed(held, emit)
		if cap(held) <= keepBuf && len(s.buf) == 0 {
			s.buf = held[:0]
		}
		return
	}
	if s.mode == ContentLength {
		s.feedContentLength(data, emit)
		return
	}
	s.feedLines(data, emit)
}

// End flushes what is held when the stream ended: a last line without a
// newline, a body cut short (with its header), or bytes that never became a
// header.
func (s *Splitter) End(emit Func) {
	switch {
	case s.mode == ContentLength && s.inBody:
		s.emitBody(emit, false)
	case s.mode == Auto && len(s.buf) > 0:
		// Too few bytes to decide: they are a line without an ending.
		s.mode = Lines
		fallthrough
	case len(s.buf) > 0:
		// A header block that never ended can be longer than max.
		s.emitHeld(emit, false)
	}
	s.buf = s.buf[:0]
	s.inBody, s.hdrLen, s.need, s.sentPart, s.partOut, s.resync = false, 0, 0, false, false, false
	if cap(s.buf) > keepBuf {
		s.buf = nil
	}
}

// Lost tells the splitter that n bytes of the stream were lost right here
// (the recorder could not keep up in lossy mode). boundary says the lost
// bytes ended a message, when the caller knows (for lines: their last byte
// was a newline).
//
// A message is never joined across lost bytes. The start of a message held
// when they were lost is dropped, and its length returned, so the caller
// counts it with the lost bytes; only when parts of that message went out
// already (a message longer than the splitter holds whole) is the held rest
// emitted, as the message's last record, cut short. After the loss, the
// splitter passes over the rest of the message the lost bytes cut (Skip),
// and resumes at the next message: the next line, or the next
// Content-Length header (a body whose rest is known to follow the lost
// bytes is skipped by its length).
func (s *Splitter) Lost(n int64, boundary bool, emit Func) (dropped int) {
	s.skipBody = -1
	switch {
	case s.mode == ContentLength && s.inBody:
		start := 0
		if !s.sentPart {
			start = s.hdrLen
		}
		if rest := s.need - int64(len(s.buf)-start); n < rest {
			s.skipBody = rest - n // the body goes on after the lost bytes
		}
		if s.sentPart {
			s.emitBody(emit, false)
		} else {
			dropped = len(s.buf)
		}
		s.resync = true
	case s.mode == ContentLength:
		// A header block, or out-of-sync bytes, cut: look for the next header.
		dropped = len(s.buf)
		s.resync = true
	default:
		if s.partOut && len(s.buf) > 0 {
			s.emitHeld(emit, false)
		} else {
			dropped = len(s.buf)
		}
		s.resync = !boundary
	}
	s.buf = s.buf[:0]
	s.inBody, s.hdrLen, s.need, s.sentPart, s.partOut = false, 0, 0, false, false
	return dropped
}

// Skip passes over the start of data that belongs to the message lost bytes
// cut (see Lost), and returns how many bytes that is; 0 when the splitter is
// not resyncing. Feed calls it itself; a caller that records the skipped
// bytes calls it before Feed.
func (s *Splitter) Skip(data []byte) int {
	if !s.resync {
		return 0
	}
	if s.mode != ContentLength {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return len(data)
		}
		s.resync = false
		return i + 1
	}
	if s.skipBody >= 0 {
		k := int(min(int64(len(data)), s.skipBody))
		s.skipBody -= int64(k)
		s.resync = s.skipBody > 0
		return k
	}
	if i := IndexContentLength(data); i >= 0 {
		s.resync = false
		return i
	}
	// No header in data: skip it but for an end that may be the start of
	// one ("Content-Le"), which Feed then holds like any header start.
	keep := 0
	for k := min(len(data), len(clKey)-1); k > 0; k-- {
		if bytes.EqualFold(data[len(data)-k:], []byte(clKey[:k])) {
			keep = k
			break
		}
	}
	if keep > 0 {
		s.resync = false
	}
	return len(data) - keep
}

// emitHeld emits what buf holds as records of at most max bytes, the last
// with part set as given.
func (s *Splitter) emitHeld(emit Func, lastPart bool) {
	b := s.buf
	for len(b) > s.max {
		cut := partCut(b[:s.max], false)
		emit(nil, b[:cut], "", true)
		b = b[cut:]
	}
	emit(nil, b, "", lastPart)
}

// keepBuf: a splitter keeps a buffer up to this capacity between messages
// (agent sessions send ~1 MiB frames again and again); a larger one, grown
// for an exceptional message, is dropped once that message is out.
const keepBuf = 2 << 20

// grow appends data to buf, growing it by doubling from 64 KiB up to
// 256 KiB and by a quarter past that, so that a message of up to keepBuf
// bytes leaves a buffer the next one fits in, and a ~1 MiB message does
// not leave a 2 MiB one (the sink's heap is what sets its memory).
func (s *Splitter) grow(data []byte) {
	if n := len(s.buf) + len(data); n > cap(s.buf) {
		next := 2 * cap(s.buf)
		if cap(s.buf) >= 256<<10 {
			next = cap(s.buf) + cap(s.buf)/4
		}
		b := make([]byte, len(s.buf), max(n, next, 64<<10))
		copy(b, s.buf)
		s.buf = b
	}
	s.buf = append(s.buf, data...)
}

// ---- newline-delimited ----

func (s *Splitter) feedLines(data []byte, emit Func) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			s.holdLine(data, emit)
			return
		}
		line := data[:i+1]
		data = data[i+1:]
		if len(s.buf) == 0 && len(line) <= s.max {
			emitLine(line, emit)
			continue
		}
		// The line started in an earlier chunk (or is too long): take the
		// part before the newline through holdLine so that over-long
		// lines are cut into parts, then finish the line from the buffer.
		s.holdLine(line[:len(line)-1], emit)
		s.buf = append(s.buf, '\n')
		emitLine(s.buf, emit)
		s.buf = s.buf[:0]
		s.partOut = false
	}
	if cap(s.buf) > keepBuf && len(s.buf) == 0 {
		s.buf = nil // do not keep a 16 MiB buffer around after one big line
	}
}

// holdLine appends data (which contains no newline) to the pending line,
// emitting full parts while the pending line is longer than max.
func (s *Splitter) holdLine(data []byte, emit Func) {
	for len(s.buf)+len(data) > s.max {
		if len(s.buf) < s.max {
			n := s.max - len(s.buf)
			s.buf = append(s.buf, data[:n]...)
			data = data[n:]
		}
		cut := partCut(s.buf[:s.max], true)
		emit(nil, s.buf[:cut], "", true)
		s.partOut = true
		rest := copy(s.buf, s.buf[cut:])
		s.buf = s.buf[:rest]
	}
	s.grow(data)
}

// emitLine splits a complete line (ending in "\n") into payload and ending.
func emitLine(line []byte, emit Func) {
	n := len(line) - 1
	if n > 0 && line[n-1] == '\r' {
		emit(nil, line[:n-1], "\r\n", false)
		return
	}
	emit(nil, line[:n], "\n", false)
}

// partCut picks where to cut a full buffer into a part: at its end, moved
// back so that a "\r" that may precede the coming "\n" stays with the rest of
// the line (keepCR), and so that a UTF-8 sequence is not torn in two (which
// would turn both halves into base64). It never moves back more than 4
// bytes, so every part is non-empty.
func partCut(b []byte, keepCR bool) int {
	n := len(b)
	if keepCR && n > 4 && b[n-1] == '\r' {
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

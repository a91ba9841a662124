package cassette

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// newDecoder returns the decoder readers use. Only DecodeAll is used: the
// container code hands it whole frames, or the complete blocks of a torn
// frame closed by closedCopy, so no decoder goroutines run and nothing the
// decoder prints can reach the user. Concurrency 1 keeps one block decoder.
func newDecoder() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxFrameRaw))
	if err != nil {
		panic("cassette: zstd decoder options: " + err.Error()) // fixed options: cannot fail
	}
	return d
}

// Reader reads a cassette from start to end. It is streaming: memory is
// bounded by one zstd frame (about 1 MiB decompressed), whatever the file's
// size. It is not safe for concurrent use.
//
// Next returns every record, the header record (number 0) first, then
// io.EOF after the end record. A cassette without an end record (killed
// recorder, file still being written) gives every complete record and then
// a *TruncatedError. Damage after the header does not stop it: Next
// returns one *DamageError per damaged range (offset, records lost) and
// goes on with the first readable frame after it, as the index does (see
// DamageError). Other errors (an I/O error) are sticky.
type Reader struct {
	in     source
	closer io.Closer
	dec    *zstd.Decoder
	hdr    Header
	off    int64 // file offset of the next unread byte

	buf  []byte // the current unit
	tmp  []byte // closedCopy of a torn frame
	sbuf []byte // units tried by a resync
	raw  []byte // decoded content of the current data frame
	pos  int    // next line in raw

	frameOff   int64        // offset of the data frame raw came from
	frameEnd   int64        // offset after it (as far as it was read)
	frameFirst uint64       // its first record number
	frameDone  bool         // raw is a complete frame
	count      uint64       // the number of the next record expected
	returned   uint64       // records Next returned
	ended      bool         // the end record was seen (or an index frame said it was there)
	pending    error        // errTorn: the input ended inside the frame raw came from; errDamaged: resync after it
	later      []byte       // errDamaged: what was read after the frame's whole blocks
	laterOff   int64        // its offset
	tornOff    int64        // offset of that frame
	atEnd      bool         // a resync found nothing readable up to the end of the file
	strict     bool         // reading the header: damage is fatal
	dmg        *DamageError // the damaged range being skipped, not yet returned
	held       *Record      // the record read after dmg, returned after it
	heldLine   []byte
	err        error // sticky
	header     *Record
	headerLine []byte
	last       []byte // the line of the record Next returned last
}

// source is where the streaming reader's bytes come from: bytes a resync
// read ahead and did not use (back), then the file through br (nil: none).
type source struct {
	back []byte
	br   *bufio.Reader
}

func (s *source) Read(p []byte) (int, error) {
	if len(s.back) > 0 {
		n := copy(p, s.back)
		s.back = s.back[n:]
		return n, nil
	}
	if s.br == nil {
		return 0, io.EOF
	}
	return s.br.Read(p)
}

func (s *source) ReadByte() (byte, error) {
	if len(s.back) > 0 {
		b := s.back[0]
		s.back = s.back[1:]
		return b, nil
	}
	if s.br == nil {
		return 0, io.EOF
	}
	return s.br.ReadByte()
}

func (s *source) Discard(n int) (int, error) {
	k := min(n, len(s.back))
	s.back = s.back[k:]
	if k == n {
		return n, nil
	}
	if s.br == nil {
		return k, io.EOF
	}
	m, err := s.br.Discard(n - k)
	return k + m, err
}

// Open opens the cassette at path for streaming.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads a cassette from rd. It reads the signature and the header
// record before returning, so a foreign, empty, newer or headless file fails
// here.
func NewReader(rd io.Reader) (*Reader, error) {
	r := &Reader{in: source{br: bufio.NewReaderSize(rd, 64<<10)}, strict: true}
	if err := checkSignature(r.in.br); err != nil {
		return nil, err
	}
	r.off = int64(sigFrameSize)
	r.dec = newDecoder()
	rec, err := r.next()
	r.strict = false
	if err != nil {
		r.dec.Close()
		return nil, err
	}
	if rec.K != KindHeader || rec.Header == nil {
		r.dec.Close()
		return nil, &CorruptError{Offset: r.frameOff, Reason: "the first record is not the header"}
	}
	if err := checkHeader(rec.Header); err != nil {
		r.dec.Close()
		return nil, err
	}
	r.hdr = *rec.Header
	r.header = rec
	r.returned = 1
	r.headerLine = append([]byte(nil), r.last...)
	return r, nil
}

// checkSignature reads and checks the signature frame.
func checkSignature(br *bufio.Reader) error {
	b, err := br.Peek(sigFrameSize)
	if len(b) == 0 {
		if err == io.EOF {
			return ErrEmpty
		}
		return err
	}
	if len(b) < sigFrameSize {
		want := appendSignature(nil)[:8+len(sigTag)]
		if bytes.HasPrefix(want, b[:min(len(b), len(want))]) {
			return &TruncatedError{Torn: true}
		}
		if err != nil && err != io.EOF {
			return err
		}
		return ErrNotCassette
	}
	if _, _, err := parseSignature(b); err != nil {
		return err
	}
	_, err = br.Discard(sigFrameSize)
	return err
}

// checkHeader checks the header record's format and version. The signature
// already carries the version; the header's copy is what `zstdcat | jq`
// users see, and both must agree with what this package understands.
func checkHeader(h *Header) error {
	if h.Format != FormatName {
		return ErrNotCassette
	}
	maj, min, ok := parseVersion(h.Version)
	if !ok {
		return &CorruptError{Offset: int64(sigFrameSize), Reason: fmt.Sprintf("bad version %q in the header", h.Version)}
	}
	if maj > VersionMajor {
		return &VersionError{Major: maj, Minor: min}
	}
	return nil
}

func parseVersion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	if !found {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	return major, minor, err1 == nil && err2 == nil && major >= 0 && minor >= 0
}

// Header returns the cassette's header (record 0).
func (r *Reader) Header() Header { return r.hdr }

// Next returns the next record. The record is the caller's to keep. A
// *DamageError is not sticky: call Next again for the records after the
// damaged range.
func (r *Reader) Next() (*Record, error) {
	if r.header != nil {
		h := r.header
		r.header = nil
		r.last = r.headerLine
		return h, nil
	}
	if r.held != nil {
		rec := r.held
		r.held, r.last = nil, r.heldLine
		r.returned++
		return rec, nil
	}
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if r.dmg != nil {
		// Report the range before what follows it.
		d := r.dmg
		r.dmg = nil
		if err != nil {
			r.err = err
		} else {
			r.held, r.heldLine = rec, r.last
		}
		r.last = nil
		return nil, d
	}
	if err != nil {
		r.err = err
		return nil, err
	}
	r.returned++
	return rec, nil
}

// Line returns the cassette's JSON line (without its newline) for the
// record Next returned last, exactly as stored. It is valid until the next
// call to Next.
func (r *Reader) Line() []byte { return r.last }

// Records returns how many records Next has returned (header included).
func (r *Reader) Records() uint64 { return r.returned }

// Offset is how far into the file the reader has read (the offset of the
// next unread byte): with the file's size, how far along a pass is.
func (r *Reader) Offset() int64 { return r.off }

func (r *Reader) next() (*Record, error) {
	for {
		if r.pos < len(r.raw) {
			line := r.raw[r.pos:]
			i := bytes.IndexByte(line, '\n')
			if i < 0 {
				r.pos = len(r.raw)
				if r.frameDone {
					if err := r.badLine("a zstd frame does not end at a record boundary"); err != nil {
						return nil, err
					}
				}
				// Otherwise the rest is a record cut in the middle; pending says so.
				continue
			}
			r.pos += i + 1
			r.last = line[:i]
			rec := new(Record)
			if err := rec.UnmarshalJSON(line[:i]); err != nil {
				if err := r.badLine("record " + strconv.FormatUint(r.count, 10) + ": " + err.Error()); err != nil {
					return nil, err
				}
				continue
			}
			if rec.N != r.count {
				if err := r.badLine(fmt.Sprintf("record number %d where %d was expected", rec.N, r.count)); err != nil {
					return nil, err
				}
				continue
			}
			r.count++
			if rec.K == KindEnd {
				r.ended = true
			}
			return rec, nil
		}
		if r.pending == errDamaged {
			// The whole blocks before a damaged block header were read.
			r.pending = nil
			rest := r.later
			r.later = nil
			if err := r.resync(r.laterOff, r.laterOff, "a damaged zstd block header", rest); err != nil {
				return nil, err
			}
			continue
		}
		if r.pending == errTorn {
			if r.ended {
				return nil, io.EOF
			}
			return nil, &TruncatedError{Records: r.count, Offset: r.tornOff, Torn: true}
		}
		if err := r.readFrame(); err != nil {
			return nil, err
		}
	}
}

var (
	errTorn    = errors.New("torn")
	errDamaged = errors.New("damaged") // go on at a resync from later once raw is read
)

func (r *Reader) corrupt(off int64, reason string) error {
	return &CorruptError{Offset: off, After: r.count, Reason: reason}
}

func (r *Reader) truncated(torn bool) error {
	if r.ended {
		return io.EOF
	}
	return &TruncatedError{Records: r.count, Offset: r.off, Torn: torn}
}

// badLine counts a line of a decoded frame that is not the record expected
// as one record lost (a line is a record) and goes on with the next line.
// While the header is read it is fatal instead.
func (r *Reader) badLine(reason string) error {
	if r.strict {
		return r.corrupt(r.frameOff, reason)
	}
	r.damaged(r.frameOff, reason)
	r.count++
	r.dmg.Lost = r.count - r.dmg.First
	r.dmg.End = max(r.dmg.End, r.frameEnd, r.frameOff+1)
	return nil
}

// damaged opens a damaged range at off, or extends the open one (nothing
// was read between the two).
func (r *Reader) damaged(off int64, reason string) {
	if r.dmg == nil {
		r.dmg = &DamageError{Offset: off, End: off + 1, First: r.count, Reason: reason}
	}
}

// readFrame reads units until one yields records, or sets pending.
func (r *Reader) readFrame() error {
	for {
		if r.atEnd {
			return io.EOF
		}
		u, err := readUnit(&r.in, r.off, r.buf)
		r.buf = u.data[:0]
		if err == io.EOF {
			if r.ended {
				return io.EOF
			}
			return r.truncated(false)
		}
		var fe *formatError
		if errors.As(err, &fe) {
			if r.strict {
				return r.corrupt(fe.off, fe.reason)
			}
			if err := r.resync(u.off, u.off+1, fe.reason, u.data[1:], u.rest); err != nil || r.resumed() {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if u.skippable() {
			if u.torn && u.magic == footerMagic && r.ended {
				return io.EOF // a footer cut while being written: every record was read
			}
			if u.torn {
				return r.truncated(true)
			}
			if u.magic == indexMagic {
				e, err := parseIndex(u.data, u.off)
				if err != nil {
					if r.strict {
						return r.corrupt(u.off, "bad index frame")
					}
					if err := r.resync(u.off, u.off+1, "bad index frame", u.data[1:]); err != nil || r.resumed() {
						return err
					}
					continue
				}
				if e.FrameOff != r.frameOff || e.FirstN != r.frameFirst || e.FirstN+e.Count != r.count {
					if r.strict {
						return r.corrupt(u.off, "bad index frame")
					}
					// A valid index frame is the writer's word on the
					// frame before it: believe it over what was read.
					r.damaged(u.off, "the index frame does not describe the data frame before it")
					r.resumeAt(e)
					r.off = u.off + indexFrameSize
					r.dmg.End = max(r.dmg.End, r.off)
					continue
				}
			}
			r.off += int64(len(u.data)) + u.skip
			// Other skippable frames are ignored, as zstd does.
			continue
		}
		if !u.complete && !r.strict {
			// The input ends inside this frame: a cut (kill -9, a file
			// still being written), unless a damaged block header sent the
			// parse past frames that follow. Those would be in what was
			// read; a cut leaves none. The blocks before the damaged
			// header are whole: their records are read first.
			restOff := u.off + int64(len(u.data))
			if u.blocks > 0 && r.findResume(restOff, u.rest) {
				rest := append([]byte(nil), u.rest...)
				if r.decodeUnit(&u) == nil {
					r.pending, r.later, r.laterOff = errDamaged, rest, restOff
					return nil
				}
			}
			if r.findResume(u.off+1, joinBytes(u.data[1:], u.rest)) {
				if err := r.resync(u.off, u.off+1, "a damaged zstd block header", u.data[1:], u.rest); err != nil || r.resumed() {
					return err
				}
				continue
			}
		}
		if err := r.decodeUnit(&u); err != nil {
			if r.strict {
				return err
			}
			if err := r.resync(u.off, u.off+1, err.(*CorruptError).Reason, u.data[1:], u.rest); err != nil || r.resumed() {
				return err
			}
			continue
		}
		return nil
	}
}

// resumed reports whether a resync went on at a data frame: its records
// are ready (or the input ends inside it).
func (r *Reader) resumed() bool { return r.pos < len(r.raw) || r.pending != nil }

// decodeUnit makes a data unit the current frame: a complete frame whole,
// a torn one's complete blocks (then Next reports the cut once they are
// returned).
func (r *Reader) decodeUnit(u *unit) error {
	r.frameOff, r.frameFirst = u.off, r.count
	r.pos = 0
	r.raw = r.raw[:0]
	if u.complete {
		r.off += int64(len(u.data))
		r.frameEnd = r.off
		raw, err := r.dec.DecodeAll(u.data, r.raw[:0])
		if err != nil {
			return r.corrupt(u.off, "zstd: "+err.Error())
		}
		r.raw, r.frameDone = raw, true
		return nil
	}
	r.frameDone = false
	r.frameEnd = u.off + int64(len(u.data)+len(u.rest))
	if u.blocks > 0 {
		if !u.contentFits() {
			return r.corrupt(u.off, errTooShort.Error())
		}
		r.tmp = closedCopy(u, r.tmp)
		raw, err := r.dec.DecodeAll(r.tmp, r.raw[:0])
		if err != nil {
			return r.corrupt(u.off, "zstd: "+err.Error())
		}
		r.raw = raw
	}
	r.tornOff = u.off
	r.pending = errTorn
	return nil
}

func joinBytes(a, b []byte) []byte {
	out := make([]byte, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// resumePoint is where reading can go on after damage: a valid index frame
// (idx) or a data frame that decodes (raw).
type resumePoint struct {
	off      int64
	isIndex  bool
	idx      indexEntry
	raw      []byte // the data frame's decoded content
	first    uint64 // its first record number
	complete bool   // the data frame is whole (else the input ends inside it)
	size     int64  // bytes of the frame
}

// resync skips damage found at off: it goes on at the first resume point
// in the bytes from offset from on (parts, then the rest of the input),
// reading on through the file as far as needed. Everything read ahead and
// not used goes back in front of the input.
func (r *Reader) resync(off, from int64, reason string, parts ...[]byte) error {
	r.damaged(off, reason)
	r.raw, r.pos, r.pending = r.raw[:0], 0, nil
	n := len(r.in.back) + 64<<10
	for _, p := range parts {
		n += len(p)
	}
	win := make([]byte, 0, n)
	for _, p := range parts {
		win = append(win, p...)
	}
	win = append(win, r.in.back...)
	r.in.back = nil
	eof := false
	for {
		p, i, need := r.scan(from, win, eof)
		if i > 0 && !need && p == nil {
			// Nothing in win: keep only what a resume point could start
			// with, and read on.
			keep := min(len(win), len(indexPattern)-1)
			from += int64(len(win) - keep)
			win = append(win[:0], win[len(win)-keep:]...)
		} else if i > 0 {
			from += int64(i)
			win = append(win[:0], win[i:]...)
		}
		if p != nil {
			r.apply(p)
			r.off = p.off + p.size
			if int64(len(win)) > p.size {
				r.in.back = win[p.size:]
			}
			return nil
		}
		if eof {
			// Nothing readable up to the end of the file.
			r.dmg.End = from + int64(len(win))
			if !r.ended {
				r.dmg.ToEnd, r.dmg.Lost = true, 0
			}
			r.atEnd = true
			return nil
		}
		n := max(64<<10, len(win))
		win = slices.Grow(win, n)
		k, err := io.ReadFull(r.in.br, win[len(win):len(win)+n])
		win = win[:len(win)+k]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			eof = true
		} else if err != nil {
			return err
		}
	}
}

// findResume reports whether win, the bytes from offset from to the end of
// the input, holds a resume point.
func (r *Reader) findResume(from int64, win []byte) bool {
	p, _, _ := r.scan(from, win, true)
	return p != nil
}

var (
	zstdPattern  = binary.LittleEndian.AppendUint32(nil, zstdMagic)
	indexPattern = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, indexMagic), indexPayload)
)

// scan returns the first resume point in win, whose first byte is at file
// offset from: p and its position i; or p nil and i the length of the
// prefix of win that holds none (need: the candidate at i needs more bytes
// than win has, and the input goes on).
func (r *Reader) scan(from int64, win []byte, eof bool) (p *resumePoint, i int, need bool) {
	zi, xi := -2, -2 // next match of each pattern at or after pos (-1: none)
	for pos := 0; pos < len(win); {
		if zi != -1 && zi < pos {
			zi = bytes.Index(win[pos:], zstdPattern)
			if zi >= 0 {
				zi += pos
			}
		}
		if xi != -1 && xi < pos {
			xi = bytes.Index(win[pos:], indexPattern)
			if xi >= 0 {
				xi += pos
			}
		}
		c := zi
		if c < 0 || xi >= 0 && xi < c {
			c = xi
		}
		if c < 0 {
			return nil, len(win), false
		}
		p, need := r.tryResume(from+int64(c), win[c:], eof)
		if p != nil || need {
			return p, c, need
		}
		pos = c + 1
	}
	return nil, len(win), false
}

// tryResume checks whether b (at file offset off) starts with a resume
// point: a valid index frame, or a zstd frame that decodes into lines whose
// first is a record numbered r.count or later. need: b is too short to
// tell and the input goes on.
func (r *Reader) tryResume(off int64, b []byte, eof bool) (p *resumePoint, need bool) {
	if bytes.HasPrefix(b, indexPattern) {
		if len(b) < indexFrameSize {
			return nil, !eof
		}
		e, err := parseIndex(b[:indexFrameSize], off)
		if err != nil {
			return nil, false
		}
		return &resumePoint{off: off, isIndex: true, idx: e, size: indexFrameSize}, false
	}
	u, err := readUnit(&source{back: b}, off, r.sbuf)
	r.sbuf = u.data[:0]
	if err != nil || u.skippable() {
		return nil, false
	}
	if u.torn && !eof {
		return nil, true
	}
	var raw []byte
	switch {
	case u.complete:
		raw, err = r.dec.DecodeAll(u.data, nil)
	case u.blocks > 0:
		raw, err = decodeTorn(r.dec, &u)
	default:
		return nil, false
	}
	if err != nil {
		return nil, false
	}
	j := bytes.IndexByte(raw, '\n')
	if j < 0 {
		return nil, false
	}
	var rec Record
	if rec.UnmarshalJSON(raw[:j]) != nil || rec.N < r.count {
		return nil, false
	}
	size := int64(len(b))
	if u.complete {
		size = int64(len(u.data))
	}
	return &resumePoint{off: off, raw: raw, first: rec.N, complete: u.complete, size: size}, false
}

// apply goes on reading at p, closing the damaged range before it.
func (r *Reader) apply(p *resumePoint) {
	if p.isIndex {
		r.resumeAt(p.idx)
		r.dmg.End = max(r.dmg.End, p.idx.Self)
		return
	}
	r.dmg.End = max(r.dmg.End, p.off)
	r.count = p.first
	r.dmg.Lost = r.count - r.dmg.First
	r.raw, r.pos = p.raw, 0
	r.frameOff, r.frameFirst, r.frameDone = p.off, p.first, p.complete
	r.frameEnd = p.off + p.size
	r.pending = nil
	if !p.complete {
		r.tornOff, r.pending = p.off, errTorn
	}
}

// resumeAt goes on after the valid index frame e: the records of the frame
// it describes are lost where they were not read.
func (r *Reader) resumeAt(e indexEntry) {
	r.count = max(r.count, e.FirstN+e.Count)
	r.dmg.Lost = r.count - r.dmg.First
	r.dmg.End = max(r.dmg.End, e.Self)
	if e.Flags&flagEnd != 0 {
		r.ended = true
	}
	r.raw, r.pos, r.pending = r.raw[:0], 0, nil
	r.frameOff, r.frameFirst = -1, r.count
}

// Close releases the decoder and closes the file opened by Open.
func (r *Reader) Close() error {
	if r.dec != nil {
		r.dec.Close()
		r.dec = nil
	}
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

package cassette

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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
// a *TruncatedError; damage gives a *CorruptError after the last good
// record. Errors are sticky.
type Reader struct {
	br     *bufio.Reader
	closer io.Closer
	dec    *zstd.Decoder
	hdr    Header
	off    int64 // file offset of the next unread byte

	buf []byte // the current unit
	tmp []byte // closedCopy of a torn frame
	raw []byte // decoded content of the current data frame
	pos int    // next line in raw

	frameOff   int64  // offset of the data frame raw came from
	frameFirst uint64 // its first record number
	frameDone  bool   // raw is a complete frame
	count      uint64 // records returned so far (the next expected number)
	ended      bool   // the end record was seen
	pending    error  // errTorn: the input ended inside the frame raw came from
	tornOff    int64  // offset of that frame
	err        error  // sticky
	header     *Record
	headerLine []byte
	last       []byte // the line of the record Next returned last
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
	r := &Reader{br: bufio.NewReaderSize(rd, 64<<10)}
	if err := checkSignature(r.br); err != nil {
		return nil, err
	}
	r.off = int64(sigFrameSize)
	r.dec = newDecoder()
	rec, err := r.next()
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

// Next returns the next record. The record is the caller's to keep.
func (r *Reader) Next() (*Record, error) {
	if r.header != nil {
		h := r.header
		r.header = nil
		r.last = r.headerLine
		return h, nil
	}
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
	}
	return rec, err
}

// Line returns the cassette's JSON line (without its newline) for the
// record Next returned last, exactly as stored. It is valid until the next
// call to Next.
func (r *Reader) Line() []byte { return r.last }

// Records returns how many records Next has returned (header included).
func (r *Reader) Records() uint64 { return r.count }

func (r *Reader) next() (*Record, error) {
	for {
		if r.pos < len(r.raw) {
			line := r.raw[r.pos:]
			i := bytes.IndexByte(line, '\n')
			if i < 0 {
				if r.frameDone {
					return nil, r.corrupt(r.frameOff, "a zstd frame does not end at a record boundary")
				}
				// The rest is a record cut in the middle; pending says so.
				r.pos = len(r.raw)
				continue
			}
			r.pos += i + 1
			r.last = line[:i]
			rec := new(Record)
			if err := rec.UnmarshalJSON(line[:i]); err != nil {
				return nil, r.corrupt(r.frameOff, "record "+strconv.FormatUint(r.count, 10)+": "+err.Error())
			}
			if rec.N != r.count {
				return nil, r.corrupt(r.frameOff, fmt.Sprintf("record number %d where %d was expected", rec.N, r.count))
			}
			r.count++
			if rec.K == KindEnd {
				r.ended = true
			}
			return rec, nil
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

var errTorn = errors.New("torn")

func (r *Reader) corrupt(off int64, reason string) error {
	return &CorruptError{Offset: off, After: r.count, Reason: reason}
}

func (r *Reader) truncated(torn bool) error {
	if r.ended {
		return io.EOF
	}
	return &TruncatedError{Records: r.count, Offset: r.off, Torn: torn}
}

// readFrame reads units until one yields records, or sets pending.
func (r *Reader) readFrame() error {
	for {
		u, err := readUnit(r.br, r.off, r.buf)
		r.buf = u.data[:0]
		if err == io.EOF {
			if r.ended {
				return io.EOF
			}
			return r.truncated(false)
		}
		var fe *formatError
		if errors.As(err, &fe) {
			return r.corrupt(fe.off, fe.reason)
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
			r.off += int64(len(u.data)) + u.skip
			if u.magic == indexMagic {
				e, err := parseIndex(u.data, u.off)
				if err != nil || e.FrameOff != r.frameOff || e.FirstN != r.frameFirst || e.FirstN+e.Count != r.count {
					return r.corrupt(u.off, "bad index frame")
				}
			}
			// Other skippable frames are ignored, as zstd does.
			continue
		}
		r.frameOff, r.frameFirst = u.off, r.count
		r.pos = 0
		if u.complete {
			r.off += int64(len(u.data))
			raw, err := r.dec.DecodeAll(u.data, r.raw[:0])
			if err != nil {
				return r.corrupt(u.off, "zstd: "+err.Error())
			}
			r.raw, r.frameDone = raw, true
			return nil
		}
		// Torn: the input ends inside this frame. Its complete blocks still
		// hold records; once they are returned, Next reports the cut.
		r.frameDone = false
		r.raw = r.raw[:0]
		if u.blocks > 0 {
			r.tmp = closedCopy(&u, r.tmp)
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

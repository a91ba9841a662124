package cassette

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Options tune a Writer. The zero value (or nil) gives the defaults.
type Options struct {
	// BatchSize: Append flushes by itself once this many bytes of encoded
	// records are pending (default 64 KiB). The recorder calls Flush when
	// its queue goes idle, which is the usual end of a batch.
	BatchSize int
	// FrameSize and FrameAge: at a flush, the current zstd frame is closed
	// (and its index frame written) once it holds this many decompressed
	// bytes (default 1 MiB) or was opened this long ago (default 1 s). Both
	// are checked only when a batch is flushed, never on a timer.
	FrameSize int
	FrameAge  time.Duration

	now func() time.Time // tests
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.BatchSize <= 0 {
		r.BatchSize = 64 << 10
	}
	if r.FrameSize <= 0 {
		r.FrameSize = 1 << 20
	}
	if r.FrameAge <= 0 {
		r.FrameAge = time.Second
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// encoderLevel is the Writer's zstd level (docs/cassette-format.md, "Level,
// window and frame size").
const encoderLevel = zstd.SpeedFastest

// ErrClosed is returned by a Writer's methods after Close.
var ErrClosed = errors.New("cassette writer is closed")

// Writer writes a cassette. It is not safe for concurrent use: the recorder
// owns it from one goroutine. It starts no goroutines and holds no locks, so
// it cannot deadlock; a Write on the underlying file that blocks (a stalled
// NFS mount, a full pipe) blocks the caller, which is how the recorder's
// backpressure reaches the tap.
//
// Errors are sticky (as in restic's writers): after the first failed write
// every call returns that error and writes nothing more, so a half-written
// batch is never followed by data that would make the file undecodable
// further on. The file stays readable up to the last complete record.
type Writer struct {
	w    io.Writer
	file *os.File // set by Create: fsynced and closed by Close
	enc  *zstd.Encoder
	opts Options

	raw  []byte // encoded records not yet compressed
	fed  int    // bytes handed to the compressor since the last flush (see feed)
	tail []byte // scratch: what follows a payload fed directly
	out  []byte // compressed bytes waiting for the one write of this batch
	off  int64  // file offset of out[0]
	err  error  // sticky
	next uint64 // next record number
	endN uint64 // records before the end record, set by Close

	// The open data frame.
	frameOpen  bool
	frameOff   int64
	frameRaw   int64
	frameFirst uint64
	frameCount uint64
	frameT0    int64
	frameT1    int64
	frameStart time.Time
	frameEnd   bool
	frameCRC   uint32 // CRC-32C of the frame's compressed bytes so far
	crcFrom    int    // how much of out is already in frameCRC
	prevIndex  int64
	lastT      int64
	closed     bool
	// index keeps a copy of every index frame written, for the footer
	// (nil once footerMaxFrames were exceeded: no footer then).
	index    []byte
	noFooter bool
}

// outSink collects the encoder's output in w.out; the encoder writes a frame
// header and each block separately, and the Writer turns them into one write
// per batch.
type outSink struct{ w *Writer }

func (s outSink) Write(p []byte) (int, error) {
	s.w.out = append(s.w.out, p...)
	return len(p), nil
}

// Create creates a new cassette at path with mode 0600 (creating missing
// directories with mode 0700) and writes its signature and header record
// before returning. It refuses to replace an existing file.
func Create(path string, h Header, o *Options) (*Writer, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	w, err := newWriter(f, h, o)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	w.file = f
	return w, nil
}

// NewWriter writes a cassette to w, which must be positioned at its start
// (offsets in the index count from the first byte written). The signature and
// header are written before it returns.
func NewWriter(w io.Writer, h Header, o *Options) (*Writer, error) {
	return newWriter(w, h, o)
}

func newWriter(w io.Writer, h Header, o *Options) (*Writer, error) {
	cw := &Writer{w: w, opts: o.withDefaults()}
	// A 1 MiB window matches the frame size: the ratio on the agent mix and
	// ../shared/traffic is unchanged, and a Writer's heap drops from about
	// 8.8 MB (the default window) to 2.7 MB. WithLowerEncoderMem keeps the
	// history buffer at window + one block (1.1 MiB) instead of twice the
	// window (2 MiB); the output is byte for byte the same.
	enc, err := zstd.NewWriter(outSink{cw},
		zstd.WithEncoderLevel(encoderLevel),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(1<<20),
		zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, err
	}
	cw.enc = enc
	if h.Format == "" {
		h.Format = FormatName
	}
	if h.Version == "" {
		h.Version = strconv.Itoa(VersionMajor) + "." + strconv.Itoa(VersionMinor)
	}
	if h.Created == "" {
		h.Created = time.Now().Format(time.RFC3339Nano)
	}
	cw.out = appendSignature(cw.out)
	cw.crcFrom = len(cw.out)
	hr := Record{K: KindHeader, Header: &h}
	cw.encode(&hr)
	// The header gets a frame of its own, so that a reader finds it by
	// decoding a few hundred bytes, however large the first batch is.
	if err := cw.flush(true); err != nil {
		return nil, err
	}
	return cw, nil
}

// Append encodes r as the next record, setting r.N. The record's bytes are
// copied; r (and the buffers its fields point into) may be reused once
// Append returns. When BatchSize bytes are pending it flushes.
func (w *Writer) Append(r *Record) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	before := len(w.raw)
	r.N = w.next
	head, p, done := r.appendHead(w.raw)
	if !done && len(p) >= directPayload {
		// A large JSON payload goes to the compressor from the caller's
		// buffer: the batch holds only what surrounds it. The bytes reach
		// the file at the same Flush as before.
		w.tail = r.appendTail(w.tail[:0])
		if size := len(head) - before + len(p) + len(w.tail); size > MaxRecord {
			w.raw = head[:before]
			r.N = 0
			return fmt.Errorf("cassette: record of %d bytes is over the %d byte limit; split the line into parts", size, MaxRecord)
		}
		w.raw = head
		if err := w.feed(w.raw); err != nil {
			return err
		}
		w.raw = w.raw[:0]
		if err := w.feed(p); err != nil {
			return err
		}
		w.raw = append(w.raw, w.tail...)
	} else {
		if !done {
			w.raw = r.appendTail(append(head, p...))
		} else {
			w.raw = head
		}
		if size := len(w.raw) - before; size > MaxRecord {
			w.raw = w.raw[:before]
			r.N = 0
			return fmt.Errorf("cassette: record of %d bytes is over the %d byte limit; split the line into parts", size, MaxRecord)
		}
	}
	w.commit(r)
	if len(w.raw)+w.fed >= w.opts.BatchSize {
		return w.flush(false)
	}
	return nil
}

// directPayload: a verbatim JSON payload this large is handed to the
// compressor where it lies instead of being copied into the batch first
// (agent sessions send ~1 MiB frames; the batch buffer grew to hold them:
// 0.9-2 MiB of the sink's heap).
const directPayload = 32 << 10

// feed hands b to the compressor as part of the open data frame (opening
// it), without ending a block: flush does that at the end of the batch.
func (w *Writer) feed(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	w.open()
	w.frameRaw += int64(len(b))
	w.fed += len(b)
	if _, err := w.enc.Write(b); err != nil {
		return w.fail(err)
	}
	return nil
}

// open opens a data frame if none is open.
func (w *Writer) open() {
	if !w.frameOpen {
		w.frameOpen = true
		w.frameOff = w.off + int64(len(w.out))
		w.frameStart = w.opts.now()
		w.frameCRC = 0
		w.crcFrom = len(w.out)
	}
}

// encode appends r as the next record.
func (w *Writer) encode(r *Record) {
	r.N = w.next
	w.raw = r.AppendJSON(w.raw)
	w.commit(r)
}

// commit ends the record just appended to raw: numbers it and counts it in
// the open frame's statistics.
func (w *Writer) commit(r *Record) {
	w.raw = append(w.raw, '\n')
	w.next++
	if w.frameCount == 0 {
		w.frameFirst, w.frameT0 = r.N, r.T
	}
	w.frameCount++
	w.frameT1 = r.T
	if r.T > w.lastT {
		w.lastT = r.T
	}
	if r.K == KindEnd {
		w.frameEnd = true
	}
}

// Next is the number the next appended record will get.
func (w *Writer) Next() uint64 { return w.next }

// Err returns the sticky error, if any.
func (w *Writer) Err() error { return w.err }

// Flush compresses the pending records and hands them to the file in one
// write, so that a batch is in the kernel (and survives kill -9 of rpctap)
// as soon as Flush returns. The recorder calls it when its queue goes idle.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	return w.flush(false)
}

func (w *Writer) flush(closeFrame bool) error {
	if len(w.raw) > 0 || w.fed > 0 {
		w.open()
		w.frameRaw += int64(len(w.raw))
		if _, err := w.enc.Write(w.raw); err != nil {
			return w.fail(err)
		}
		if err := w.enc.Flush(); err != nil {
			return w.fail(err)
		}
		w.fed = 0
		if cap(w.raw) > 4*w.opts.BatchSize && cap(w.raw) > 2<<20 {
			// A huge record passed; do not keep its buffer. Up to 2 MiB
			// is kept: agent sessions send ~1 MiB frames again and again,
			// and regrowing the buffer for each cost more than keeping it.
			w.raw = nil
		} else {
			w.raw = w.raw[:0]
		}
	}
	if w.frameOpen && (closeFrame || w.frameRaw >= int64(w.opts.FrameSize) ||
		w.opts.now().Sub(w.frameStart) >= w.opts.FrameAge) {
		if err := w.enc.Close(); err != nil {
			return w.fail(err)
		}
		w.frameCRC = crc32.Update(w.frameCRC, castagnoli, w.out[w.crcFrom:])
		self := w.off + int64(len(w.out))
		e := indexEntry{
			Self: self, Prev: w.prevIndex, FrameOff: w.frameOff, FrameLen: self - w.frameOff,
			RawLen: w.frameRaw, FirstN: w.frameFirst, Count: w.frameCount,
			FirstT: w.frameT0, LastT: w.frameT1, FrameCRC: w.frameCRC,
		}
		if w.frameEnd {
			e.Flags |= flagEnd
		}
		at := len(w.out)
		w.out = e.appendTo(w.out)
		if !w.noFooter {
			if len(w.index) >= footerMaxFrames*indexFrameSize {
				w.index, w.noFooter = nil, true
			} else {
				w.index = append(w.index, w.out[at:]...)
			}
		}
		w.prevIndex = self
		w.frameOpen, w.frameRaw, w.frameCount, w.frameEnd = false, 0, 0, false
		w.enc.Reset(outSink{w})
	} else if w.frameOpen {
		w.frameCRC = crc32.Update(w.frameCRC, castagnoli, w.out[w.crcFrom:])
	}
	w.crcFrom = 0
	if len(w.out) == 0 {
		return nil
	}
	n, err := w.w.Write(w.out)
	w.off += int64(n)
	if err == nil && n < len(w.out) {
		err = io.ErrShortWrite
	}
	if cap(w.out) > 4<<20 {
		w.out = nil
	} else {
		w.out = w.out[:0]
	}
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// writeFooter writes the footer (footer.go) after the last index frame of a
// cassette with at least footerMinFrames data frames.
func (w *Writer) writeFooter() error {
	if w.noFooter || len(w.index) < footerMinFrames*indexFrameSize {
		return nil
	}
	b := appendFooter(nil, w.index)
	w.index = nil
	n, err := w.w.Write(b)
	w.off += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return w.fail(err)
	}
	return nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("cassette: %w", err)
	}
	return w.err
}

// Close appends the end record (its T is the latest T appended), closes the
// last zstd frame and its index frame, and, for a file from Create, fsyncs
// and closes it. It returns the sticky error if any write failed; the file is
// closed in every case. Calling Close again returns the same result.
func (w *Writer) Close() error {
	return w.CloseAt(w.lastT)
}

// CloseAt is Close with the time of the end record given by the caller.
func (w *Writer) CloseAt(t int64) error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err == nil {
		w.endN = w.next
		end := Record{K: KindEnd, T: t, Records: w.next}
		w.encode(&end)
		err := w.flush(true)
		if err == nil {
			err = w.writeFooter()
		}
		if err == nil && w.file != nil {
			if err := w.file.Sync(); err != nil {
				w.fail(err)
			}
		}
	}
	if w.file != nil {
		if err := w.file.Close(); err != nil {
			w.fail(err)
		}
	}
	return w.err
}

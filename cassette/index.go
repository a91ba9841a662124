package cassette

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// FrameInfo describes one data frame of a cassette.
type FrameInfo struct {
	Offset int64  // file offset of the zstd frame
	Len    int64  // compressed length (complete blocks only for an open frame)
	RawLen int64  // decompressed length (complete records only for an open frame)
	First  uint64 // number of its first record
	Count  uint64 // complete records in it
	FirstT int64  // T of its first record
	LastT  int64  // T of its last record
	Closed bool   // the frame is complete; false for the open (torn or live) tail
	End    bool   // it holds the end record
}

// Index gives random access to a cassette's records by number and time
// without decompressing the file: it reads the chain of index frames from
// the end (about 100 bytes per data frame), decodes only the open tail frame,
// and decodes other frames on demand into a bounded LRU cache. Memory is
// bounded by the cache and the frame table, not by the file size.
//
// An Index is safe for concurrent use (the viewer reads while a follower
// refreshes). One mutex guards it; no method calls out to user code or
// blocks on anything but file reads while holding it, so it cannot deadlock.
type Index struct {
	mu   sync.Mutex
	ra   io.ReaderAt
	file *os.File // set by OpenIndex: closed by Close, stat'ed by Refresh
	dec  *zstd.Decoder
	hdr  Header
	size int64 // bytes of the file examined

	frames  []FrameInfo // data frames in order; an open tail frame last
	stable  int         // frames[:stable] are closed and followed by a valid index frame
	scanAt  int64       // offset after frames[:stable] (and their index frames)
	lastIdx int64       // offset of the last valid index frame (0: none)
	ended   bool
	trunc   *TruncatedError
	tailErr error

	cache frameCache
}

// DefaultCacheBytes bounds the decoded frames an Index keeps.
const DefaultCacheBytes = 32 << 20

// maxScanBack bounds the backward search for the last index frame of a live
// or torn file: the open frame can be no larger than a full frame plus one
// batch plus one maximal record. Beyond it the index is built forwards.
const maxScanBack = MaxRecord + 4<<20

// OpenIndex opens the cassette at path for random access. Refresh picks up
// data appended later (a recording in progress).
func OpenIndex(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	x, err := BuildIndex(f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	x.file = f
	return x, nil
}

// BuildIndex indexes the first size bytes of a cassette read through ra.
// It fails only when there is nothing to show: a foreign, empty or newer
// file, or one without a complete header record. Damage or a cut after the
// header is reported by TailError and Truncated, and everything before it is
// available.
func BuildIndex(ra io.ReaderAt, size int64) (*Index, error) {
	x := &Index{ra: ra, dec: newDecoder(), cache: frameCache{max: DefaultCacheBytes}}
	if err := x.build(size); err != nil {
		x.dec.Close()
		return nil, err
	}
	return x, nil
}

func (x *Index) build(size int64) error {
	if size == 0 {
		return ErrEmpty
	}
	sig := make([]byte, sigFrameSize)
	n, err := x.ra.ReadAt(sig, 0)
	if n < sigFrameSize && err != nil && err != io.EOF {
		return err
	}
	if err := checkSignature(bufio.NewReader(bytes.NewReader(sig[:min(int64(n), size)]))); err != nil {
		return err
	}
	x.size = size
	x.scanAt = int64(sigFrameSize)
	entries := readFooter(x.ra, size)
	if entries == nil {
		entries = x.readChain(size)
	}
	if entries != nil {
		for _, e := range entries {
			x.frames = append(x.frames, FrameInfo{
				Offset: e.FrameOff, Len: e.FrameLen, RawLen: e.RawLen, First: e.FirstN, Count: e.Count,
				FirstT: e.FirstT, LastT: e.LastT, Closed: true, End: e.Flags&flagEnd != 0,
			})
			x.ended = x.ended || e.Flags&flagEnd != 0
		}
		last := entries[len(entries)-1]
		x.stable, x.lastIdx, x.scanAt = len(entries), last.Self, last.Self+indexFrameSize
	}
	x.walk()
	if x.count() == 0 {
		if x.tailErr != nil {
			return x.tailErr
		}
		return &TruncatedError{Torn: true, Offset: int64(sigFrameSize)}
	}
	recs, err := x.records(0, 1)
	if err != nil {
		return err
	}
	if len(recs) == 0 || recs[0].K != KindHeader || recs[0].Header == nil {
		return &CorruptError{Offset: int64(sigFrameSize), Reason: "the first record is not the header"}
	}
	if err := checkHeader(recs[0].Header); err != nil {
		return err
	}
	x.hdr = *recs[0].Header
	return nil
}

// readChain finds the last valid index frame at or before size and follows
// the chain of previous offsets to the first. It returns nil when there is
// no index frame or the chain is inconsistent (then everything is walked
// forwards, which also finds where the damage is).
func (x *Index) readChain(size int64) []indexEntry {
	last, ok := x.findLastIndex(size)
	if !ok {
		return nil
	}
	chain := []indexEntry{last}
	buf := make([]byte, indexFrameSize)
	for e := last; e.Prev != 0; {
		if _, err := x.ra.ReadAt(buf, e.Prev); err != nil {
			return nil
		}
		p, err := parseIndex(buf, e.Prev)
		if err != nil {
			return nil
		}
		chain = append(chain, p)
		e = p
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	next, nextN := int64(sigFrameSize), uint64(0)
	for _, e := range chain {
		if e.FrameOff != next || e.FrameOff+e.FrameLen != e.Self || e.FirstN != nextN {
			return nil
		}
		next, nextN = e.Self+indexFrameSize, e.FirstN+e.Count
	}
	return chain
}

// findLastIndex returns the last valid index frame that ends at or before
// size. A cleanly closed file ends with one; a live or torn file has an open
// frame after it, so the search goes backwards through at most maxScanBack
// bytes. Validation (CRC and the frame's own offset) makes a false match in
// compressed data practically impossible.
func (x *Index) findLastIndex(size int64) (indexEntry, bool) {
	var pat [8]byte
	binary.LittleEndian.PutUint32(pat[:], indexMagic)
	binary.LittleEndian.PutUint32(pat[4:], indexPayload)
	const chunk = 256 << 10
	hi := size
	lowest := max(int64(sigFrameSize), size-maxScanBack)
	buf := make([]byte, chunk+indexFrameSize)
	for hi-lowest >= indexFrameSize {
		lo := max(lowest, hi-chunk-indexFrameSize)
		b := buf[:hi-lo]
		if n, _ := x.ra.ReadAt(b, lo); n < len(b) {
			return indexEntry{}, false
		}
		// Candidates from the end backwards; each search ends before the
		// last candidate's last byte, so it always moves left.
		for end := len(b); end >= len(pat); {
			i := bytes.LastIndex(b[:end], pat[:])
			if i < 0 {
				break
			}
			if len(b)-i >= indexFrameSize {
				if e, err := parseIndex(b[i:i+indexFrameSize], lo+int64(i)); err == nil {
					return e, true
				}
			}
			end = i + len(pat) - 1
		}
		if lo == lowest {
			break
		}
		hi = lo + indexFrameSize // the next chunk overlaps so a frame across the edge is found
	}
	return indexEntry{}, false
}

// walk reads frames forwards from scanAt to size: closed frames not yet in
// the chain (a file whose chain was unusable, or frames written since the
// last look) and the open tail. Closed frames are decoded to count their
// records; an index frame after one makes it stable.
func (x *Index) walk() {
	x.frames = x.frames[:x.stable]
	x.trunc, x.tailErr = nil, nil
	var nextN uint64
	if x.stable > 0 {
		f := x.frames[x.stable-1]
		nextN = f.First + f.Count
	}
	off := x.scanAt
	br := bufio.NewReaderSize(io.NewSectionReader(x.ra, off, x.size-off), 64<<10)
	var buf []byte
	for {
		u, err := readUnit(br, off, buf)
		buf = u.data[:0]
		if err == io.EOF {
			break
		}
		if err != nil {
			var fe *formatError
			if errors.As(err, &fe) {
				x.tailErr = &CorruptError{Offset: fe.off, After: nextN, Reason: fe.reason}
			} else {
				x.tailErr = err
			}
			break
		}
		if u.skippable() {
			if u.torn && u.magic == footerMagic && x.ended {
				break // only an accelerator, cut while being written: every record is there
			}
			if u.torn {
				x.setTrunc(nextN, off, true)
				break
			}
			if u.magic == indexMagic {
				e, err := parseIndex(u.data, off)
				n := len(x.frames)
				if err != nil || n == x.stable || !x.frames[n-1].Closed || e.FrameOff != x.frames[n-1].Offset || e.FirstN != x.frames[n-1].First || e.Count != x.frames[n-1].Count {
					x.tailErr = &CorruptError{Offset: off, After: nextN, Reason: "bad index frame"}
					break
				}
				x.stable, x.lastIdx = n, off
				x.scanAt = off + indexFrameSize
			}
			off += int64(len(u.data)) + u.skip
			if u.magic != indexMagic && len(x.frames) == x.stable {
				x.scanAt = off
			}
			continue
		}
		f := FrameInfo{Offset: off, Len: int64(len(u.data)), First: nextN, Closed: u.complete}
		var raw []byte
		if u.complete {
			raw, err = x.dec.DecodeAll(u.data, nil)
		} else if u.blocks > 0 {
			raw, err = decodeTorn(x.dec, &u)
		}
		if err != nil {
			x.tailErr = &CorruptError{Offset: off, After: nextN, Reason: "zstd: " + err.Error()}
			break
		}
		ent, err := newCacheEntry(raw, f.Closed)
		if err == nil {
			err = ent.check(f.First)
		}
		if err != nil {
			x.tailErr = &CorruptError{Offset: off, After: nextN, Reason: err.Error()}
			break
		}
		f.Count, f.RawLen = uint64(len(ent.ends)), int64(ent.rawLen())
		if f.Count > 0 {
			f.FirstT, f.LastT, f.End = ent.firstT, ent.lastT, ent.end
		}
		if !u.complete {
			x.ended = x.ended || f.End // a cut after the end record's block loses nothing
			if f.Count > 0 {
				x.frames = append(x.frames, f)
				x.cache.put(cacheKey{f.Offset, f.Len}, ent)
			}
			x.setTrunc(nextN+f.Count, off, true)
			break
		}
		x.frames = append(x.frames, f)
		x.cache.put(cacheKey{f.Offset, f.Len}, ent)
		x.ended = x.ended || f.End
		nextN += f.Count
		off += f.Len
	}
	if x.trunc == nil && x.tailErr == nil && !x.ended {
		x.setTrunc(nextN, off, false)
	}
}

func (x *Index) setTrunc(records uint64, off int64, torn bool) {
	if x.ended {
		return
	}
	x.trunc = &TruncatedError{Records: records, Offset: off, Torn: torn}
}

// Header returns the cassette's header.
func (x *Index) Header() Header {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.hdr
}

// Len is the number of complete records, the header included.
func (x *Index) Len() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.count()
}

func (x *Index) count() uint64 {
	if len(x.frames) == 0 {
		return 0
	}
	f := x.frames[len(x.frames)-1]
	return f.First + f.Count
}

// Count is Len.
func (x *Index) Count() uint64 { return x.Len() }

// Frames returns a copy of the frame table.
func (x *Index) Frames() []FrameInfo {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]FrameInfo(nil), x.frames...)
}

// Ended reports whether the cassette holds its end record (it was closed
// cleanly).
func (x *Index) Ended() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.ended
}

// Truncated describes the cut when the cassette has no end record (killed
// recorder or recording in progress); nil when it ended cleanly or is
// corrupt (see TailError).
func (x *Index) Truncated() *TruncatedError {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.trunc == nil {
		return nil
	}
	t := *x.trunc
	return &t
}

// TailError is a *CorruptError when the data after the last good record is
// damaged (rather than merely cut off), else nil.
func (x *Index) TailError() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.tailErr
}

// Size is how many bytes of the file the index covers.
func (x *Index) Size() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.size
}

// Refresh picks up data appended to a file opened with OpenIndex (a
// recording in progress). It reports whether records were added.
func (x *Index) Refresh() (bool, error) {
	if x.file == nil {
		return false, errors.New("cassette: Refresh needs an index from OpenIndex; use RefreshSize")
	}
	st, err := x.file.Stat()
	if err != nil {
		return false, err
	}
	return x.RefreshSize(st.Size())
}

// RefreshSize extends the index to the first size bytes of its ReaderAt.
// Only the frames after the last index frame are read again.
func (x *Index) RefreshSize(size int64) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if size <= x.size {
		return false, nil
	}
	before := x.count()
	x.size = size
	x.walk()
	return x.count() > before, nil
}

// Record returns record n.
func (x *Index) Record(n uint64) (Record, error) {
	recs, err := x.Records(n, 1)
	if err != nil {
		return Record{}, err
	}
	if len(recs) == 0 {
		return Record{}, fmt.Errorf("cassette: no record %d (%d records)", n, x.Count())
	}
	return recs[0], nil
}

// Records returns up to n records starting at number from; fewer at the end
// of the data, none when from is past it.
func (x *Index) Records(from uint64, n int) ([]Record, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.records(from, n)
}

func (x *Index) records(from uint64, n int) ([]Record, error) {
	var out []Record
	i := sort.Search(len(x.frames), func(i int) bool { return x.frames[i].First+x.frames[i].Count > from })
	for ; i < len(x.frames) && len(out) < n; i++ {
		f := &x.frames[i]
		ent, err := x.frame(i)
		if err != nil {
			return out, err
		}
		for j := from - f.First; j < f.Count && len(out) < n; j++ {
			var r Record
			if err := r.UnmarshalJSON(ent.line(int(j))); err != nil {
				return out, &CorruptError{Offset: f.Offset, After: f.First + j, Reason: err.Error()}
			}
			if r.N != f.First+j {
				// check looked at a frame's first and last record only.
				return out, &CorruptError{Offset: f.Offset, After: f.First + j,
					Reason: fmt.Sprintf("record number %d where %d was expected", r.N, f.First+j)}
			}
			out = append(out, r)
			from++
		}
	}
	return out, nil
}

// FindTime returns the number of the first record with T >= t, or Len when
// there is none. Records are in time order (the tap stamps each chunk when
// it reads it and the recorder writes in that order).
func (x *Index) FindTime(t int64) uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := sort.Search(len(x.frames), func(i int) bool { return x.frames[i].LastT >= t })
	if i == len(x.frames) {
		return x.count()
	}
	f := x.frames[i]
	if f.FirstT >= t {
		return f.First
	}
	ent, err := x.frame(i)
	if err != nil {
		return f.First
	}
	j := sort.Search(len(ent.ends), func(j int) bool { return ent.t(j) >= t })
	return f.First + uint64(j)
}

// frame returns the decoded frame i from the cache or the file.
func (x *Index) frame(i int) (*cacheEntry, error) {
	f := x.frames[i]
	key := cacheKey{f.Offset, f.Len}
	if ent := x.cache.get(key); ent != nil {
		return ent, nil
	}
	b := make([]byte, f.Len)
	if _, err := x.ra.ReadAt(b, f.Offset); err != nil {
		return nil, err
	}
	var raw []byte
	var err error
	if f.Closed {
		raw, err = x.dec.DecodeAll(b, nil)
	} else {
		// The open tail was evicted: its complete blocks are still there.
		u, uerr := readUnit(bufio.NewReader(bytes.NewReader(b)), f.Offset, nil)
		if uerr != nil || u.blocks == 0 {
			return nil, &CorruptError{Offset: f.Offset, After: f.First, Reason: "open frame changed under the index"}
		}
		raw, err = decodeTorn(x.dec, &u)
	}
	if err != nil {
		return nil, &CorruptError{Offset: f.Offset, After: f.First, Reason: "zstd: " + err.Error()}
	}
	ent, err := newCacheEntry(raw, f.Closed)
	if err == nil && uint64(len(ent.ends)) != f.Count {
		err = fmt.Errorf("frame holds %d records, its index says %d", len(ent.ends), f.Count)
	}
	if err == nil {
		err = ent.check(f.First)
	}
	if err != nil {
		return nil, &CorruptError{Offset: f.Offset, After: f.First, Reason: err.Error()}
	}
	x.cache.put(key, ent)
	return ent, nil
}

// Close releases the decoder and the cache, and closes the file opened by
// OpenIndex.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.dec != nil {
		x.dec.Close()
		x.dec = nil
	}
	x.cache = frameCache{max: x.cache.max}
	if x.file != nil {
		err := x.file.Close()
		x.file = nil
		return err
	}
	return nil
}

package cassette

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/zstd"
)

// The container: a cassette file is a sequence of zstd frames (RFC 8878).
//
//	signature   skippable frame, magic sigMagic, payload sigTag + major + minor
//	data frame  a standard zstd frame; its content is whole JSON lines
//	index frame skippable frame, magic indexMagic, fixed size, after each closed data frame
//	data frame  ...
//
// zstd tools skip the skippable frames, so `zstdcat` prints the JSON lines.
// rpctap parses the frame and block headers itself (they are a few bytes
// each) so that it always knows where complete data ends: it hands the
// decoder only whole blocks, and never lets the decoder see a skippable frame
// (klauspost's stream decoder prints a line on stderr for each one it skips).

const (
	zstdMagic  = 0xFD2FB528
	sigMagic   = 0x184D2A52 // skippable frame, user nibble 2: rpctap signature
	indexMagic = 0x184D2A53 // skippable frame, user nibble 3: rpctap index

	sigTag       = "RPCTAP-CASSETTE\x00"
	sigPayload   = len(sigTag) + 4
	sigFrameSize = 8 + sigPayload // 28

	indexTag       = "RPCTAPIX"
	indexPayload   = 96
	indexFrameSize = 8 + indexPayload // 104

	// maxBlock is the largest block zstd allows (Block_Maximum_Size).
	maxBlock = 128 << 10
	// MaxFrameRaw bounds the decompressed size of one data frame a reader
	// accepts. Frames close at ~1 MiB, so only a single enormous record
	// comes near it; the bound keeps a crafted file from exhausting memory.
	MaxFrameRaw = 256 << 20
	// MaxRecord is the largest encoded record Writer.Append accepts; the
	// recorder splits longer lines into Part records.
	MaxRecord = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendSignature(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, sigMagic)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(sigPayload))
	dst = append(dst, sigTag...)
	dst = binary.LittleEndian.AppendUint16(dst, VersionMajor)
	return binary.LittleEndian.AppendUint16(dst, VersionMinor)
}

// parseSignature checks the first sigFrameSize bytes of a file. The payload
// size is fixed (20) in major version 1; a newer major may change it, so the
// version is checked before the size.
func parseSignature(b []byte) (major, minor int, err error) {
	if len(b) < 8 || binary.LittleEndian.Uint32(b) != sigMagic {
		return 0, 0, ErrNotCassette
	}
	if len(b) < sigFrameSize {
		return 0, 0, io.ErrUnexpectedEOF
	}
	if string(b[8:8+len(sigTag)]) != sigTag {
		return 0, 0, ErrNotCassette
	}
	major = int(binary.LittleEndian.Uint16(b[8+len(sigTag):]))
	minor = int(binary.LittleEndian.Uint16(b[10+len(sigTag):]))
	if major > VersionMajor {
		return major, minor, &VersionError{Major: major, Minor: minor}
	}
	if binary.LittleEndian.Uint32(b[4:]) != uint32(sigPayload) || major < 1 {
		return major, minor, ErrNotCassette
	}
	return major, minor, nil
}

// indexEntry is the content of one index frame: where a closed data frame
// is and what it holds.
type indexEntry struct {
	Flags    uint32 // flagEnd: the frame holds the end record
	Self     int64  // offset of this index frame
	Prev     int64  // offset of the previous index frame, 0 for none
	FrameOff int64  // offset of the data frame it describes
	FrameLen int64  // compressed length of that frame
	RawLen   int64  // decompressed length
	FirstN   uint64 // first record number in the frame
	Count    uint64 // records in the frame
	FirstT   int64
	LastT    int64
	FrameCRC uint32 // CRC-32C of the compressed data frame
}

const flagEnd = 1

func (e *indexEntry) appendTo(dst []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, indexMagic)
	dst = binary.LittleEndian.AppendUint32(dst, indexPayload)
	dst = append(dst, indexTag...)
	dst = binary.LittleEndian.AppendUint16(dst, VersionMajor)
	dst = binary.LittleEndian.AppendUint16(dst, VersionMinor)
	dst = binary.LittleEndian.AppendUint32(dst, e.Flags)
	for _, v := range [...]uint64{uint64(e.Self), uint64(e.Prev), uint64(e.FrameOff), uint64(e.FrameLen),
		uint64(e.RawLen), e.FirstN, e.Count, uint64(e.FirstT), uint64(e.LastT)} {
		dst = binary.LittleEndian.AppendUint64(dst, v)
	}
	dst = binary.LittleEndian.AppendUint32(dst, e.FrameCRC)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start+8:], castagnoli))
}

var errBadIndex = errors.New("bad index frame")

// parseIndex decodes a whole index frame (header included). self is the
// offset the frame was read at; a frame that names another offset, fails its
// CRC or is not an index frame is rejected, which is what makes a backward
// scan for the last index frame safe.
func parseIndex(b []byte, self int64) (indexEntry, error) {
	var e indexEntry
	if len(b) < indexFrameSize || binary.LittleEndian.Uint32(b) != indexMagic ||
		binary.LittleEndian.Uint32(b[4:]) != indexPayload || string(b[8:16]) != indexTag {
		return e, errBadIndex
	}
	p := b[8:indexFrameSize]
	if crc32.Checksum(p[:indexPayload-4], castagnoli) != binary.LittleEndian.Uint32(p[indexPayload-4:]) {
		return e, errBadIndex
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(p[16+8*i:]) }
	e.Flags = binary.LittleEndian.Uint32(p[12:])
	e.Self, e.Prev, e.FrameOff, e.FrameLen = int64(u(0)), int64(u(1)), int64(u(2)), int64(u(3))
	e.RawLen, e.FirstN, e.Count = int64(u(4)), u(5), u(6)
	e.FirstT, e.LastT = int64(u(7)), int64(u(8))
	e.FrameCRC = binary.LittleEndian.Uint32(p[88:])
	if e.Self != self || e.FrameOff < 0 || e.FrameLen <= 0 || e.FrameOff+e.FrameLen > e.Self ||
		e.Prev < 0 || e.Prev >= e.Self || e.Count == 0 || e.RawLen <= 0 || e.RawLen > MaxFrameRaw {
		return e, errBadIndex
	}
	return e, nil
}

// unit is one zstd frame of the container as read by readUnit.
type unit struct {
	off   int64
	magic uint32
	data  []byte // the whole frame as stored (data frames: header, blocks, checksum)
	// Data frames only:
	complete bool   // the last block and the checksum are present
	blocks   int    // complete blocks in data
	lastHdr  int    // offset in data of the last complete block's header, -1 for none
	checksum bool   // the frame header announces a content checksum
	hasFCS   bool   // the frame header declares the content size
	fcs      uint64 // that size
	torn     bool   // the input ended inside this frame
	skip     int64  // skippable frames: payload bytes discarded, not in data
	// rest (torn data frames) is what was read after the last complete
	// block up to the end of the input: a partial block header, block or
	// checksum. It aliases data's array past len(data). A reader looks
	// into it for a resync point: a frame that only looks torn because a
	// damaged block header sent the parse past the next frames.
	rest []byte
}

func (u *unit) skippable() bool { return u.magic&0xFFFFFFF0 == 0x184D2A50 }

// formatError is a structural problem found by readUnit at a given offset;
// callers turn it into a *CorruptError with the record context.
type formatError struct {
	off    int64
	reason string
}

func (e *formatError) Error() string { return e.reason }

// unitSource is what readUnit reads from: a *bufio.Reader over the file,
// or the streaming reader's source (bytes a resync read ahead, then the
// file).
type unitSource interface {
	io.Reader
	io.ByteReader
	Discard(n int) (int, error)
}

// readUnit reads the next frame from br, which is positioned at file offset
// off. It returns io.EOF when br ends exactly at a frame boundary. When br
// ends inside a frame, it returns the unit with torn set and the bytes up to
// the last complete block (for data frames) and a nil error. Structural
// garbage gives a *formatError. Skippable payloads over 64 KiB (not ours)
// are discarded rather than buffered.
func readUnit(br unitSource, off int64, buf []byte) (unit, error) {
	u := unit{off: off, lastHdr: -1, data: buf[:0]}
	var m [4]byte
	n, err := io.ReadFull(br, m[:])
	if n == 0 && err == io.EOF {
		return u, io.EOF
	}
	u.data = append(u.data, m[:n]...)
	if err != nil {
		u.torn = true
		return u, nil
	}
	u.magic = binary.LittleEndian.Uint32(m[:])
	if u.skippable() {
		var sz [4]byte
		n, err := io.ReadFull(br, sz[:])
		u.data = append(u.data, sz[:n]...)
		if err != nil {
			u.torn = true
			return u, nil
		}
		size := int64(binary.LittleEndian.Uint32(sz[:]))
		if u.magic == indexMagic && size != indexPayload || u.magic == sigMagic && size > 1<<16 {
			return u, &formatError{off, "bad skippable frame size"}
		}
		if size > 1<<16 {
			// A foreign skippable frame we do not need: skip it without buffering.
			k, err := br.Discard(int(size))
			u.skip = int64(k)
			if int64(k) < size || err != nil {
				u.torn = true
			}
			u.complete = !u.torn
			return u, nil
		}
		u.data = grow(u.data, int(size))
		k, err := io.ReadFull(br, u.data[8:8+size])
		u.data = u.data[:8+k]
		if err != nil {
			u.torn = true
			return u, nil
		}
		u.complete = true
		return u, nil
	}
	if u.magic != zstdMagic {
		return u, &formatError{off, "not a zstd frame"}
	}
	// Frame header: descriptor, window descriptor, dictionary id, content size.
	fhd, err := br.ReadByte()
	if err != nil {
		u.torn = true
		return u, nil
	}
	u.data = append(u.data, fhd)
	if fhd&(1<<3) != 0 {
		return u, &formatError{off, "reserved bit set in zstd frame header"}
	}
	single := fhd&(1<<5) != 0
	u.checksum = fhd&(1<<2) != 0
	hlen := [4]int{0, 1, 2, 4}[fhd&3]
	if !single {
		hlen++
	}
	switch fhd >> 6 {
	case 0:
		if single {
			hlen++
		}
	case 1:
		hlen += 2
	case 2:
		hlen += 4
	case 3:
		hlen += 8
	}
	if !readN(br, &u, hlen) {
		return u, nil
	}
	// Frame_Content_Size, when present: the decoder allocates that much
	// up front, so a damaged or crafted header could make it allocate
	// MaxFrameRaw for a frame of a few bytes. Each block decompresses to
	// at most maxBlock bytes, which bounds what a frame can honestly say.
	if fcsLen := [4]int{0, 2, 4, 8}[fhd>>6]; fcsLen > 0 || single {
		if fcsLen == 0 {
			fcsLen = 1
		}
		var v uint64
		for i, b := range u.data[len(u.data)-fcsLen:] {
			v |= uint64(b) << (8 * i)
		}
		if fcsLen == 2 {
			v += 256
		}
		u.fcs, u.hasFCS = v, true
	}
	for {
		start := len(u.data)
		if !readN(br, &u, 3) {
			u.cutAt(start)
			return u, nil
		}
		bh := uint32(u.data[start]) | uint32(u.data[start+1])<<8 | uint32(u.data[start+2])<<16
		last := bh&1 == 1
		size := int(bh >> 3)
		switch (bh >> 1) & 3 {
		case 0, 2: // raw, compressed
		case 1: // RLE: one byte repeated size times
			size = 1
		default:
			return u, &formatError{off + int64(start), "reserved zstd block type"}
		}
		if size > maxBlock {
			return u, &formatError{off + int64(start), "zstd block too large"}
		}
		if !readN(br, &u, size) {
			u.cutAt(start)
			return u, nil
		}
		u.blocks++
		u.lastHdr = start
		if last {
			break
		}
		if len(u.data) > MaxFrameRaw {
			return u, &formatError{off, "zstd frame too large"}
		}
	}
	if !u.contentFits() {
		return u, &formatError{off, errTooShort.Error()}
	}
	if u.checksum {
		before := len(u.data)
		if !readN(br, &u, 4) {
			u.cutAt(before)
			return u, nil
		}
	}
	u.complete = true
	return u, nil
}

// contentFits reports whether the frame's declared content size (if any)
// fits in its complete blocks. Check it before decoding a torn frame's
// blocks; readUnit checks complete frames.
func (u *unit) contentFits() bool {
	return !u.hasFCS || u.fcs <= uint64(u.blocks)*maxBlock
}

// cutAt keeps data[:n] as the frame's complete part and the bytes read
// after it as rest.
func (u *unit) cutAt(n int) {
	u.rest = u.data[n:]
	u.data = u.data[:n]
}

// readN appends n bytes from br to u.data; on a short read it marks u torn
// and returns false (the partial bytes are left for the caller to drop).
func readN(br unitSource, u *unit, n int) bool {
	start := len(u.data)
	u.data = grow(u.data, n)
	k, err := io.ReadFull(br, u.data[start:start+n])
	u.data = u.data[:start+k]
	if err != nil {
		u.torn = true
		return false
	}
	return true
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

var errTooShort = errors.New("zstd frame content size larger than its blocks can hold")

// decodeTorn decodes the complete blocks of a torn data frame (closedCopy).
func decodeTorn(dec *zstd.Decoder, u *unit) ([]byte, error) {
	if !u.contentFits() {
		return nil, errTooShort
	}
	return dec.DecodeAll(closedCopy(u, nil), nil)
}

// closedCopy turns the complete blocks of a torn data frame into a frame a
// decoder accepts: the last complete block is marked last and the checksum
// flag is cleared (the checksum is written only after the last block). This
// is how a cassette that is still being written, or was cut by kill -9, gives
// up every record that reached the file.
func closedCopy(u *unit, dst []byte) []byte {
	dst = append(dst[:0], u.data...)
	dst[4] &^= 1 << 2
	dst[u.lastHdr] |= 1
	return dst
}

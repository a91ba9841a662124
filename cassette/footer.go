package cassette

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// The footer is a copy of every index frame, written once at the end of a
// cleanly closed cassette, so that a reader can index the whole file with two
// reads instead of one read per data frame. Following the chain of index
// frames backwards costs a random read per MiB of content: on a cold page
// cache and a network disk (~8 ms a read) that made the first screen of a
// 1 GiB cassette take 8.4 s. See docs/cassette-format.md, section 1.4.
//
//	footer frame   skippable, magic footerMagic, payload:
//	               N whole index frames (104 bytes each, as written in the file)
//	               trailer: footerTag (8) | N (8) | CRC-32C of the N frames (4) | CRC-32C of trailer bytes 0-19 (4)
//
// The footer immediately follows the last index frame and ends the file.
// Readers of format 1.0 skip it like any skippable frame that is not theirs.
const (
	footerMagic       = 0x184D2A54 // skippable frame, user nibble 4: rpctap footer
	footerTag         = "RPCTAPIF"
	footerTrailerSize = 24
	// footerMinFrames: smaller cassettes are indexed by a few reads anyway
	// and the footer would only add bytes.
	footerMinFrames = 32
	// footerMaxFrames bounds what the Writer keeps for the footer (about
	// 64 GiB of content; 6.8 MB of index frames); past it no footer is written.
	footerMaxFrames = 1 << 16
)

// appendFooter appends the footer frame for the index frames in frames (each
// indexFrameSize bytes, in file order).
func appendFooter(dst, frames []byte) []byte {
	n := len(frames) / indexFrameSize
	dst = binary.LittleEndian.AppendUint32(dst, footerMagic)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(frames)+footerTrailerSize))
	dst = append(dst, frames...)
	t := len(dst)
	dst = append(dst, footerTag...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(n))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(frames, castagnoli))
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[t:], castagnoli))
}

// readFooter returns the index entries of a footer that ends the first size
// bytes of ra, or nil when there is none or it does not check out (then the
// caller follows the chain, which finds the same entries more slowly). The
// entries must validate one by one (parseIndex at their own offsets), be
// contiguous from the first data frame on, and end right where the footer
// begins.
func readFooter(ra io.ReaderAt, size int64) []indexEntry {
	if size < int64(sigFrameSize)+8+footerTrailerSize {
		return nil
	}
	var tr [footerTrailerSize]byte
	if n, _ := ra.ReadAt(tr[:], size-footerTrailerSize); n < len(tr) {
		return nil
	}
	if string(tr[:8]) != footerTag || crc32.Checksum(tr[:20], castagnoli) != binary.LittleEndian.Uint32(tr[20:]) {
		return nil
	}
	n := binary.LittleEndian.Uint64(tr[8:])
	if n == 0 || n > footerMaxFrames {
		return nil
	}
	body := int64(n) * indexFrameSize
	start := size - footerTrailerSize - body - 8
	if start < int64(sigFrameSize) {
		return nil
	}
	b := make([]byte, 8+body)
	if k, _ := ra.ReadAt(b, start); k < len(b) {
		return nil
	}
	if binary.LittleEndian.Uint32(b) != footerMagic || int64(binary.LittleEndian.Uint32(b[4:])) != body+footerTrailerSize ||
		crc32.Checksum(b[8:], castagnoli) != binary.LittleEndian.Uint32(tr[16:]) {
		return nil
	}
	entries := make([]indexEntry, 0, n)
	next, nextN := int64(sigFrameSize), uint64(0)
	for i := range int64(n) {
		f := b[8+i*indexFrameSize : 8+(i+1)*indexFrameSize]
		self := int64(binary.LittleEndian.Uint64(f[24:]))
		e, err := parseIndex(f, self)
		if err != nil || e.FrameOff != next || e.FrameOff+e.FrameLen != e.Self || e.FirstN != nextN {
			return nil
		}
		next, nextN = e.Self+indexFrameSize, e.FirstN+e.Count
		entries = append(entries, e)
	}
	if next != start {
		return nil
	}
	return entries
}

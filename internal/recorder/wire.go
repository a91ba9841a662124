package recorder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The sink wire format: what `rpctap record` (the PipeObserver) writes to
// `rpctap __sink` (SinkMain).
//
// The sink is started with five extra file descriptors:
//
//	fd 3  ctl     main -> sink: the config message, then events and gaps
//	fd 4  in      main -> sink: chunks of the child's stdin (stream 0)
//	fd 5  out     main -> sink: chunks of the child's stdout (stream 1)
//	fd 6  err     main -> sink: chunks of the child's stderr (stream 2)
//	fd 7  status  sink -> main: JSON lines {"warn":MSG} and {"done":true,...}
//
// Each stream has its own pipe so that a large chunk written with one
// write system call is never interleaved with another stream's (writes over
// PIPE_BUF are not atomic); writers of one pipe (several connections in
// socket mode) take turns under a mutex. Every message on fds 3-6 is a
// 48-byte header followed by its payload, written with one writev:
//
//	offset size  field
//	 0      1    type: 'C' chunk, 'E' event, 'G' gap, 'H' config
//	 1      1    stream (tap.Stream: 0 in, 1 out, 2 err)
//	 2      1    flags: 1 (gap, or a chunk's lost bytes) the lost bytes
//	             ended with a newline, so the stream resumes at a message;
//	             2 (gap) it has no Seq of its own and is recorded after
//	             every chunk up to seq (gaps sent at the end)
//	 3      1    zero
//	 4      4    conn (socket mode connection, 0 in stdio mode)
//	 8      8    seq: the chunk's Seq; for an event, the highest Seq handed
//	             to Observe before it (the event is recorded after every
//	             chunk up to that Seq); for a gap, the dropped chunk's Seq
//	16      8    T: ns since the session started (int64)
//	24      4    length of the payload
//	28      4    magic 0x31747072 ("rpt1" in memory order)
//	32      8    events: for a chunk, how many events were written to ctl
//	             before it (the sink records the chunk after them: an event
//	             such as start precedes the chunks observed after it, though
//	             it travels on another pipe); 0 otherwise
//	40      8    lost: for a chunk, bytes of its stream and connection
//	             dropped just before it that no gap message reports (lossy
//	             mode, when more than maxPendGap gaps waited for room in
//	             ctl): the sink records them as a gap right before the
//	             chunk, on the right stream; 0 otherwise
//	48      -    payload: the chunk's bytes; an event or the config as JSON;
//	             for a gap, the number of bytes dropped (8 bytes)
//
// All integers are little-endian. A message cut short at the end of a pipe
// (rpctap killed in the middle of a write into a full pipe) is recorded as
// far as it goes, followed by a gap event for the rest.
const (
	msgChunk  = 'C'
	msgEvent  = 'E'
	msgGap    = 'G'
	msgConfig = 'H'

	flagBoundary = 1 // the lost bytes ended with a newline
	flagAfter    = 2 // a gap without a Seq of its own: record it after seq

	hdrLen    = 48
	wireMagic = 0x31747072

	// maxMsg bounds a message's payload (a chunk is at most the tap's read
	// size, 64 KiB, in practice); a larger length means a corrupt stream.
	maxMsg = 64 << 20
)

type msgHeader struct {
	typ    byte
	stream uint8
	flags  uint8
	conn   uint32
	seq    uint64
	t      int64
	length uint32
	events uint64
	lost   uint64
}

func (h *msgHeader) put(b *[hdrLen]byte) {
	b[0] = h.typ
	b[1] = h.stream
	b[2], b[3] = h.flags, 0
	binary.LittleEndian.PutUint32(b[4:], h.conn)
	binary.LittleEndian.PutUint64(b[8:], h.seq)
	binary.LittleEndian.PutUint64(b[16:], uint64(h.t))
	binary.LittleEndian.PutUint32(b[24:], h.length)
	binary.LittleEndian.PutUint32(b[28:], wireMagic)
	binary.LittleEndian.PutUint64(b[32:], h.events)
	binary.LittleEndian.PutUint64(b[40:], h.lost)
}

var errBadMessage = errors.New("sink: corrupt message header")

func (h *msgHeader) get(b []byte) error {
	if binary.LittleEndian.Uint32(b[28:]) != wireMagic {
		return errBadMessage
	}
	h.typ = b[0]
	h.stream = b[1]
	h.flags = b[2]
	h.conn = binary.LittleEndian.Uint32(b[4:])
	h.seq = binary.LittleEndian.Uint64(b[8:])
	h.t = int64(binary.LittleEndian.Uint64(b[16:]))
	h.length = binary.LittleEndian.Uint32(b[24:])
	h.events = binary.LittleEndian.Uint64(b[32:])
	h.lost = binary.LittleEndian.Uint64(b[40:])
	switch {
	case h.typ != msgChunk && h.typ != msgEvent && h.typ != msgGap && h.typ != msgConfig:
		return fmt.Errorf("sink: unknown message type %q", h.typ)
	case h.length > maxMsg:
		return fmt.Errorf("sink: message of %d bytes", h.length)
	case h.stream > 2:
		return fmt.Errorf("sink: unknown stream %d", h.stream)
	}
	return nil
}

// readMsg reads one message header and returns it; the payload is read by
// the caller. It returns io.EOF at a clean end and io.ErrUnexpectedEOF for a
// torn header.
func readHeader(r io.Reader, h *msgHeader) error {
	var b [hdrLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	return h.get(b[:])
}

package tap

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ChunkSize is the most a pump reads at once: the capacity of a Linux pipe.
// Smaller reads cost measurably more CPU per byte.
const ChunkSize = 64 << 10

// bufPool holds the pumps' read buffers. A pump owns one buffer for its whole
// life and forwards synchronously, so the tap holds at most one chunk per
// stream (per connection in socket mode), however fast the writer and however
// stalled the reader: memory stays flat and backpressure passes through.
var bufPool = sync.Pool{New: func() any { b := make([]byte, ChunkSize); return &b }}

// buffersInUse counts the pump buffers taken from bufPool and not yet
// returned, for tests and diagnostics.
var buffersInUse atomic.Int64

// BuffersInUse reports how many ChunkSize read buffers the tap holds right
// now in this process: one per running pump.
func BuffersInUse() int64 { return buffersInUse.Load() }

type deadlineReader interface {
	io.Reader
	SetReadDeadline(time.Time) error
}

type deadlineWriter interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// pump copies one stream: read up to ChunkSize, stamp the chunk (Seq, T) the
// moment the read returns, write it all to dst, then hand it to the
// observer (before the write with ObserveFirst; see Cmd.ObserveFirst). Nothing is buffered beyond the one chunk in flight and no
// line splitting happens here.
type pump struct {
	s      *session
	conn   int
	stream Stream
	src    deadlineReader
	dst    deadlineWriter

	n    int64 // bytes forwarded
	rerr error // why reading stopped (io.EOF on a clean end)
	werr error // why writing failed, if it did
}

// copy runs until src ends or fails, or a write to dst fails. It may block
// in Read (the writer is idle), in Write (the reader is stalled:
// backpressure) or in Observe (the observer is slowing us down on purpose).
// Deadlines set on src or dst by another goroutine end it.
func (p *pump) copy() {
	bp := bufPool.Get().(*[]byte)
	buffersInUse.Add(1)
	defer func() {
		buffersInUse.Add(-1)
		bufPool.Put(bp)
	}()
	buf := *bp
	for {
		n, err := p.src.Read(buf)
		if n > 0 {
			seq := p.s.seq.Add(1)
			t := p.s.now()
			c := Chunk{Conn: p.conn, Stream: p.stream, Seq: seq, T: t, Data: buf[:n]}
			if p.s.first {
				p.s.observe(c)
			}
			w, werr := p.dst.Write(buf[:n])
			p.n += int64(w)
			if !p.s.first && w > 0 {
				c.Data = buf[:w]
				p.s.observe(c)
			}
			if werr != nil {
				p.werr = werr
				p.rerr = err
				return
			}
		}
		if err != nil {
			p.rerr = err
			return
		}
	}
}

// eof reports whether the source ended cleanly (not cut off by a deadline or
// a failed write).
func (p *pump) eof() bool { return p.werr == nil && errors.Is(p.rerr, io.EOF) }

// stdinPump copies the parent's stdin to the child's stdin. When the parent
// closes its end, it closes the child's stdin (the half-close is passed on)
// and records a stdin-eof event. It owns the child's stdin and closes it
// however it ends, so the child never waits for input that cannot come.
//
// If the child stops reading, the pump blocks in Write and the parent's
// writes block in turn. If the child closes its stdin while running, the
// write fails with EPIPE and the pump ends, letting go of the parent's
// stdin: once no other descriptor of rpctap refers to that pipe (see
// DetachStdio, which `rpctap record` uses), the parent's next write fails
// with EPIPE too, as on a plain pipe. (Otherwise its writes block once the
// pipe is full, until rpctap exits.)
type stdinPump struct {
	pump
	parent *parentEnd
	done   chan struct{}
}

func (p *stdinPump) run() {
	defer close(p.done)
	p.copy()
	if f, ok := p.dst.(*os.File); ok {
		f.Close()
	}
	p.parent.close()
	if p.eof() {
		p.s.event(Event{Conn: p.conn, Kind: "stdin-eof"})
	}
}

// stdoutPump copies the child's stdout to the parent's stdout. It ends at
// the child's EOF (the child and every process that inherited its stdout
// closed it), or when Wait cuts it loose after the grace. If the parent
// closes its end, the pump closes the child's stdout, so the child's next
// write fails with EPIPE as it would on a plain pipe. When it ends it lets
// go of the parent's stdout, which passes the child's EOF on to the parent
// once no other descriptor of rpctap refers to it (see DetachStdio).
type stdoutPump struct {
	pump
	parent *parentEnd
	wg     *sync.WaitGroup
}

func (p *stdoutPump) run() {
	defer p.wg.Done()
	p.copy()
	if f, ok := p.src.(*os.File); ok {
		f.Close()
	}
	p.parent.close()
}

// stderrPump copies the child's stderr to rpctap's stderr, like stdoutPump.
type stderrPump struct {
	pump
	parent *parentEnd
	wg     *sync.WaitGroup
}

func (p *stderrPump) run() {
	defer p.wg.Done()
	p.copy()
	if f, ok := p.src.(*os.File); ok {
		f.Close()
	}
	p.parent.close()
}

package tap

import (
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
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

// takeBuf takes a pump's read buffer from bufPool; giveBuf puts it back.
func takeBuf() *[]byte {
	buffersInUse.Add(1)
	return bufPool.Get().(*[]byte)
}

func giveBuf(bp *[]byte) {
	buffersInUse.Add(-1)
	bufPool.Put(bp)
}

// pump copies one stream: read up to ChunkSize, stamp the chunk (Seq, T) the
// moment the read returns, write it all to dst, then hand it to the
// observer (before the write with ObserveFirst; see Cmd.ObserveFirst). Nothing is buffered beyond the one chunk in flight and no
// line splitting happens here.
type pump struct {
	s      *session
	conn   int
	stream Stream
	src    io.Reader // stdio mode: a rawFD; socket mode: a *net.UnixConn
	dst    io.Writer

	n    int64 // bytes forwarded (not counted when intercepted)
	rerr error // why reading stopped (io.EOF on a clean end)
	// intercepted: dst is an Interceptor's writer (Cmd.Intercept), and
	// the pump runs copyIntercepted instead of copy (chosen once, here,
	// never per chunk).
	intercepted bool
	werr        error // why writing failed, if it did
}

// copy runs until src ends or fails, or a write to dst fails. It may block
// in Read (the writer is idle), in Write (the reader is stalled:
// backpressure) or in Observe (the observer is slowing us down on purpose).
// Cutting src and dst loose from another goroutine (a cutter for raw
// descriptors, deadlines for connections) ends it.
func (p *pump) copy() {
	bp := takeBuf()
	defer giveBuf(bp)
	buf := *bp
	for {
		n, err := p.src.Read(buf)
		if n > 0 {
			var c Chunk
			if p.s.first {
				// Stamp and hand over as one step of the read order: an
				// event cannot slip in between (see session.ordered).
				p.s.order.RLock()
				c = p.s.stamp(p.conn, p.stream, buf[:n])
				p.s.observe(c)
				p.s.order.RUnlock()
			} else {
				p.s.order.RLock()
				c = p.s.stamp(p.conn, p.stream, buf[:n])
				p.s.order.RUnlock()
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
	inW    *rawFD // the child's stdin: dst, or under dst when intercepted
	parent *parentEnd
	done   chan struct{}
	cut    *cutter
}

func (p *stdinPump) run() {
	defer close(p.done)
	defer p.cut.release()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if p.intercepted {
		p.copyIntercepted()
	} else {
		p.copy()
	}
	if p.intercepted {
		if f, ok := p.dst.(flusher); ok {
			f.Flush() // a last frame the parent did not finish
		}
		if e, ok := p.dst.(stdinEnder); ok && p.eof() {
			e.StdinEnded()
		}
	}
	if p.eof() {
		// Record the EOF before passing it on: whatever the child does
		// about it (a last line, its exit) is read after this event took
		// its place in the read order, and reaches the observer after it.
		p.s.event(Event{Conn: p.conn, Kind: "stdin-eof"})
	}
	p.inW.close()
	p.parent.close()
}

// childOutputPump copies one of the child's output streams to ours: its
// stdout to the parent's stdout (the "stdout pump") or its stderr to
// rpctap's stderr (the "stderr pump"); both behave the same. It ends at the
// child's EOF (the child and every process that inherited the stream closed
// it), or when Wait cuts it loose after the grace. If the reader of our end
// goes away, the pump closes the child's end, so the child's next write
// fails with EPIPE as it would on a plain pipe. When it ends it lets go of
// our end, which passes the child's EOF on to the parent once no other
// descriptor of rpctap refers to it (see DetachStdio).
type childOutputPump struct {
	pump
	parent *parentEnd
	wg     *sync.WaitGroup
	cut    *cutter
}

func (p *childOutputPump) run() {
	defer p.wg.Done()
	defer p.cut.release()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if p.intercepted {
		p.copyIntercepted()
	} else {
		p.copy()
	}
	if f, ok := p.dst.(flusher); ok {
		f.Flush() // a StdoutFilter's held partial line
	}
	p.src.(*rawFD).close()
	p.parent.close()
}

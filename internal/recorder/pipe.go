package recorder

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rpctap/rpctap/tap"
)

// PipeObserver is the tap.Observer that `rpctap record` uses: right after
// the tap forwarded a chunk, Observe writes it to the sink process with one
// writev (see wire.go for the format). Once that write returned, the chunk is
// in the kernel and survives a SIGKILL of rpctap: the sink reads its pipes to
// the end and finalizes the cassette.
//
// Blocking: in the default (lossless) mode Observe waits while the stream's
// pipe is full, that is while the sink is behind; the tap's forwarding waits
// with it, as a tee would. The pipes are 1 MiB where the system allows, so
// bursts pass without waiting. Lossy mode never waits for space: a chunk
// that does not fit is dropped and a gap message sent instead. Event always
// waits for room on the ctl pipe (events are few and small). Observe calls
// for one pipe (all connections' chunks of one stream) take turns under the
// pipe's mutex; nothing else is shared, so Observe cannot deadlock with
// Event or with another stream. Close is called after every Observe and Event
// returned (the tap's contract) and waits for the sink to exit, at most
// SinkConfig.CloseTimeout.
//
// If the sink is gone (it failed and exited after reporting a warning, or
// was killed), writes fail with EPIPE and the observer quietly stops; the one
// warning comes from the status reader goroutine.
type PipeObserver struct {
	lossy  bool
	ctl    *wirePipe
	data   [3]*wirePipe
	maxSeq atomic.Uint64
	events atomic.Uint64 // events written to ctl so far
	dead   atomic.Bool   // the sink stopped reading: drop everything

	gapMu   sync.Mutex
	pendGap []msgHeader // lossy gaps that did not fit into ctl yet (bounded)

	overflowed atomic.Uint64 // gaps that found pendGap full (tests)

	sink   *sinkProc  // nil for an observer over plain pipes (tests)
	result SinkResult // set by Close
}

// wirePipe is one pipe's write end, with the mutex its writers share.
//
// In lossy mode a message is never left half-written and never waited for:
// when a non-blocking writev takes only part of a message, the rest is
// copied into tail and a pipe tail writer goroutine finishes it, waiting for
// room; until it has, further messages for this pipe are dropped (gaps).
// That goroutine holds no lock while it waits, and takes mu only to clear
// tail, so it cannot deadlock with Observe; close waits for it.
type wirePipe struct {
	mu       sync.Mutex
	f        *os.File
	rc       syscall.RawConn
	hdr      [hdrLen]byte
	closed   bool
	tail     []byte        // lossy: the rest of a partly written message
	tailDone chan struct{} // closed when the tail writer finished
	// lost (lossy): per connection, bytes dropped on this stream once
	// pendGap was full; they ride on the connection's next chunk here
	// (msgHeader.lost), or go to ctl at the end.
	lost map[uint32]lostRun

	// The state of the write in progress, kept here (under mu) rather than
	// captured by a closure, so that a write allocates nothing: a closure
	// passed to RawConn.Write escapes to the heap, and one per chunk made
	// the tap process's heap, and so its resident memory, grow with the
	// session (the garbage collector let it reach its goal first).
	writeFn func(fd uintptr) bool // p.writeLoop, bound once
	iovBuf  [2][]byte
	iov     [][]byte
	total   int
	done    int
	wait    bool
	partial bool
	werr    error
}

func newWirePipe(f *os.File) (*wirePipe, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	p := &wirePipe{f: f, rc: rc}
	p.writeFn = p.writeLoop
	return p, nil
}

var errNoRoom = errors.New("no room in the pipe")

// lostRun is a run of dropped chunks of one stream and connection that no
// gap message reports yet.
type lostRun struct {
	bytes    uint64
	t        int64 // when the first of them was read
	boundary bool  // the last of them ended with a newline
}

// maxPendGap bounds the lossy gaps waiting for room in the ctl pipe.
const maxPendGap = 4096

// write sends header+payload with one writev (more only when the pipe takes
// part of it). With wait=false (lossy) it never waits: errNoRoom when the
// pipe is full or a tail is still being written. Must be called with p.mu
// held.
func (p *wirePipe) write(h *msgHeader, payload []byte, wait bool) error {
	if p.closed {
		return os.ErrClosed
	}
	if p.tail != nil {
		if !wait {
			return errNoRoom
		}
		done := p.tailDone
		p.mu.Unlock()
		<-done
		p.mu.Lock()
		if p.closed {
			return os.ErrClosed
		}
	}
	h.length = uint32(len(payload))
	h.put(&p.hdr)
	p.iovBuf = [2][]byte{p.hdr[:], payload}
	p.iov = p.iovBuf[:]
	if len(payload) == 0 {
		p.iov = p.iov[:1]
	}
	p.total, p.done, p.wait, p.partial, p.werr = hdrLen+len(payload), 0, wait, false, nil
	err := p.rc.Write(p.writeFn)
	werr, partial := p.werr, p.partial
	if err == nil && partial {
		var rest []byte
		for _, b := range p.iov {
			rest = append(rest, b...)
		}
		p.tail, p.tailDone = rest, make(chan struct{})
		go p.writeTail(rest, p.tailDone)
	}
	p.iovBuf, p.iov, p.werr = [2][]byte{}, nil, nil // do not pin the caller's chunk
	if err != nil {
		return err
	}
	return werr
}

// writeLoop is the body of write's RawConn.Write: it returns false to wait
// for room in the pipe, true when done (p.werr, p.partial say how).
func (p *wirePipe) writeLoop(fd uintptr) bool {
	for {
		n, err := writev(int(fd), p.iov)
		if n > 0 {
			p.done += n
			if p.done == p.total {
				return true
			}
			p.iov = advance(p.iov, n)
		}
		switch err {
		case nil, unix.EINTR:
			continue
		case unix.EAGAIN:
			if p.wait {
				return false // wait for room
			}
			if p.done == 0 {
				p.werr = errNoRoom
			} else {
				p.partial = true
			}
			return true
		default:
			p.werr = err
			return true
		}
	}
}

// writeTail is the pipe tail writer goroutine (lossy mode).
func (p *wirePipe) writeTail(rest []byte, done chan struct{}) {
	defer close(done)
	p.rc.Write(func(fd uintptr) bool {
		for len(rest) > 0 {
			n, err := unix.Write(int(fd), rest)
			if n > 0 {
				rest = rest[n:]
			}
			switch err {
			case nil, unix.EINTR:
			case unix.EAGAIN:
				return false
			default:
				return true // the sink is gone; the status reader reports it
			}
		}
		return true
	})
	p.mu.Lock()
	p.tail = nil
	p.mu.Unlock()
}

// advance drops n written bytes from the front of iov.
func advance(iov [][]byte, n int) [][]byte {
	for n > 0 && len(iov) > 0 {
		if n < len(iov[0]) {
			iov[0] = iov[0][n:]
			return iov
		}
		n -= len(iov[0])
		iov = iov[1:]
	}
	return iov
}

func (p *wirePipe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tail != nil {
		done := p.tailDone
		p.mu.Unlock()
		<-done
		p.mu.Lock()
	}
	if !p.closed {
		p.closed = true
		p.f.Close()
	}
}

// Observe writes the chunk to the sink (see the type's documentation for
// when it blocks).
//
// Lossy mode: a chunk that finds no room is dropped, and the gap goes to
// the sink on the ctl pipe with its Seq (addGap). When more than maxPendGap
// gaps already wait for room there, the dropped bytes are counted per
// stream and connection instead (wirePipe.lost), and the next chunk of that
// stream and connection carries the count in its header, so the sink
// records the gap on the stream it happened on, with its exact size, right
// where the bytes went missing; from then on, drops of that stream and
// connection join the count until a chunk carried it, so gaps stay in
// order. Lock order: the data pipe's mutex, then gapMu, then ctl's.
func (o *PipeObserver) Observe(c tap.Chunk) {
	if o.dead.Load() {
		return
	}
	for {
		m := o.maxSeq.Load()
		if c.Seq <= m || o.maxSeq.CompareAndSwap(m, c.Seq) {
			break
		}
	}
	p := o.data[c.Stream%3]
	h := msgHeader{typ: msgChunk, stream: uint8(c.Stream % 3), conn: uint32(c.Conn), seq: c.Seq, t: c.T, events: o.events.Load()}
	p.mu.Lock()
	var run lostRun
	if o.lossy {
		run = p.lost[h.conn]
	}
	if run.bytes > 0 {
		h.lost = run.bytes
		if run.boundary {
			h.flags = flagBoundary
		}
	}
	err := p.write(&h, c.Data, !o.lossy)
	switch {
	case err == nil:
		if run.bytes > 0 {
			delete(p.lost, h.conn)
		}
	case errors.Is(err, errNoRoom):
		boundary := len(c.Data) > 0 && c.Data[len(c.Data)-1] == '\n'
		g := msgHeader{typ: msgGap, stream: h.stream, conn: h.conn, seq: h.seq, t: h.t}
		if boundary {
			g.flags = flagBoundary
		}
		if run.bytes > 0 || !o.addGap(g, int64(len(c.Data))) {
			if run.bytes == 0 {
				run.t = c.T
			}
			run.bytes += uint64(len(c.Data))
			run.boundary = boundary
			if p.lost == nil {
				p.lost = map[uint32]lostRun{}
			}
			p.lost[h.conn] = run
			o.overflowed.Add(1)
		}
	}
	p.mu.Unlock()
	switch {
	case err == nil:
		if o.lossy {
			o.sendGaps(false)
		}
	case errors.Is(err, errNoRoom):
		o.sendGaps(false)
	default:
		o.gone()
	}
}

// addGap queues the gap message for a dropped chunk of n bytes; false when
// maxPendGap gaps wait already.
func (o *PipeObserver) addGap(h msgHeader, n int64) bool {
	o.gapMu.Lock()
	defer o.gapMu.Unlock()
	if len(o.pendGap) >= maxPendGap {
		return false
	}
	h.length = uint32(n) // stashed here until sent; see sendGaps
	o.pendGap = append(o.pendGap, h)
	return true
}

// sendGaps writes pending gap messages to the ctl pipe, waiting for room
// only when wait is set (at Close).
func (o *PipeObserver) sendGaps(wait bool) {
	o.gapMu.Lock()
	defer o.gapMu.Unlock()
	if len(o.pendGap) == 0 {
		return
	}
	var b [8]byte
	o.ctl.mu.Lock()
	defer o.ctl.mu.Unlock()
	for len(o.pendGap) > 0 {
		h := o.pendGap[0]
		binary.LittleEndian.PutUint64(b[:], uint64(h.length))
		if err := o.ctl.write(&h, b[:], wait); err != nil {
			return
		}
		o.pendGap = o.pendGap[1:]
	}
	o.pendGap = nil
}

// sendLost sends, at the end, the dropped bytes no chunk carried (see
// Observe) as gaps recorded after every chunk observed.
func (o *PipeObserver) sendLost() {
	var b [8]byte
	for i, p := range o.data {
		p.mu.Lock()
		runs := p.lost
		p.lost = nil
		p.mu.Unlock()
		stream := uint8(i)
		for conn, run := range runs {
			h := msgHeader{typ: msgGap, stream: stream, conn: conn, seq: o.maxSeq.Load(), t: run.t, flags: flagAfter}
			if run.boundary {
				h.flags |= flagBoundary
			}
			binary.LittleEndian.PutUint64(b[:], run.bytes)
			o.ctl.mu.Lock()
			err := o.ctl.write(&h, b[:], true)
			o.ctl.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// wireEvent is the JSON payload of an event message.
type wireEvent struct {
	Kind   string   `json:"kind"`
	Argv   []string `json:"argv,omitempty"`
	Cwd    string   `json:"cwd,omitempty"`
	PID    int      `json:"pid,omitempty"`
	Exit   *int     `json:"exit,omitempty"`
	Signal string   `json:"signal,omitempty"`
	Bytes  int64    `json:"bytes,omitempty"`
	Msg    string   `json:"msg,omitempty"`
	// intercept events (tap.Event's Action, HeldNs, Breakpoint, Original)
	Action     string `json:"act,omitempty"`
	HeldNs     int64  `json:"held,omitempty"`
	Breakpoint string `json:"bp,omitempty"`
	Original   []byte `json:"orig,omitempty"`
}

// Event sends the event to the sink, to be recorded after every chunk
// observed before it.
func (o *PipeObserver) Event(e tap.Event) {
	if o.dead.Load() {
		return
	}
	payload, err := json.Marshal(wireEvent{Kind: e.Kind, Argv: e.Argv, Cwd: e.Cwd, PID: e.PID, Exit: e.Exit, Signal: e.Signal, Bytes: e.Bytes, Msg: e.Msg,
		Action: e.Action, HeldNs: e.HeldNs, Breakpoint: e.Breakpoint, Original: e.Original})
	if err != nil {
		return
	}
	h := msgHeader{typ: msgEvent, stream: uint8(e.Stream % 3), conn: uint32(e.Conn), seq: max(e.Seq, o.maxSeq.Load()), t: e.T}
	o.ctl.mu.Lock()
	err = o.ctl.write(&h, payload, true)
	if err == nil {
		o.events.Add(1)
	}
	o.ctl.mu.Unlock()
	if err != nil {
		o.gone()
	}
}

// gone marks the sink as unreachable; the status reader goroutine reports
// why (once).
func (o *PipeObserver) gone() { o.dead.Store(true) }

// closePipes sends what is pending and closes every pipe to the sink, which
// then finalizes the cassette.
func (o *PipeObserver) closePipes() {
	if !o.dead.Load() {
		o.sendGaps(true)
		o.sendLost()
	}
	for _, p := range o.data {
		p.close()
	}
	o.ctl.close()
}

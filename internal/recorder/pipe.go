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
	lostGap int64       // gap bytes beyond pendGap's bound, not yet reported

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
	err := p.write(&h, c.Data, !o.lossy)
	p.mu.Unlock()
	switch {
	case err == nil:
		if o.lossy {
			o.sendGaps(false)
		}
	case errors.Is(err, errNoRoom):
		o.addGap(msgHeader{typ: msgGap, stream: h.stream, conn: h.conn, seq: h.seq, t: h.t}, int64(len(c.Data)))
	default:
		o.gone()
	}
}

// addGap remembers a dropped chunk and tries to report it at once.
func (o *PipeObserver) addGap(h msgHeader, n int64) {
	o.gapMu.Lock()
	if len(o.pendGap) < 4096 {
		h.length = uint32(n) // stashed here until sent; see sendGaps
		o.pendGap = append(o.pendGap, h)
	} else {
		o.lostGap += n
	}
	o.gapMu.Unlock()
	o.sendGaps(false)
}

// sendGaps writes pending gap messages to the ctl pipe, waiting for room
// only when wait is set (at Close).
func (o *PipeObserver) sendGaps(wait bool) {
	o.gapMu.Lock()
	defer o.gapMu.Unlock()
	if len(o.pendGap) == 0 && o.lostGap == 0 {
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
	if o.lostGap > 0 {
		// Gaps past the bound lose their Seq: reported as one gap of the
		// stdout stream at the latest time (the sink's hold bound covers
		// the holes they leave).
		binary.LittleEndian.PutUint64(b[:], uint64(o.lostGap))
		h := msgHeader{typ: msgGap, stream: uint8(tap.Stdout)}
		if o.ctl.write(&h, b[:], wait) == nil {
			o.lostGap = 0
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
	}
	for _, p := range o.data {
		p.close()
	}
	o.ctl.close()
}

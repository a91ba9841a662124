package tap

import (
	"io"

	"golang.org/x/sys/unix"
)

// Interceptor, set as Cmd.Intercept, stands in the forwarding path of the
// parent's stdin and the child's stdout (`rpctap record --intercept`): it
// may hold a frame, change it, drop it, or send frames of its own.
//
// The tap chooses the path once, at Start: without an Interceptor the pumps
// run the plain copy loop (read, stamp, observe, write), unchanged in bytes
// and in cost; with one, the stdin and stdout pumps run copyIntercepted,
// which writes each chunk read to the Interceptor's writer and lets it
// forward. Observation follows the bytes that are actually sent: forward
// stamps, observes and writes what it is given, so the recording holds what
// each side received (an edited frame, not the original; nothing for a
// dropped one; an injected one).
//
// # Deadlocks
//
// The writer Wrap returns runs on the pump's goroutine and may block while
// it holds a frame: the pump then reads no more of that stream (frames
// behind the held one wait, and the writer behind them blocks in its
// kernel pipe, as with any stalled reader), while the other stream flows.
// forward blocks as a write to that side blocks. Release must make every
// such wait return (the tap calls it when the child exited, before the
// drain); a held frame never outlives its child.
type Interceptor interface {
	// Wrap returns the writer the pump of stream s (Stdin or Stdout)
	// writes each chunk it read to. forward sends bytes on to that
	// stream's reader, recording them in the read order; it may be called
	// from other goroutines too (frames injected by a control
	// connection), never concurrently with itself: the Interceptor
	// serialises its calls per stream.
	Wrap(s Stream, forward func([]byte) error) io.Writer
	// Release forwards everything held, unchanged, and holds nothing more.
	Release()
}

// stdinEnder is what the writer an Interceptor wraps stdin with may also
// be: told that the parent closed stdin, before the EOF is recorded and
// passed on to the child, so that what is held goes first.
type stdinEnder interface{ StdinEnded() }

// copyIntercepted is copy for a pump whose stream goes through an
// Interceptor: read a chunk and hand it to dst (the Interceptor's writer),
// which calls forward for what it sends. Observation happens in forward.
func (p *pump) copyIntercepted() {
	bp := takeBuf()
	defer giveBuf(bp)
	buf := *bp
	for {
		n, err := p.src.Read(buf)
		if n > 0 {
			if _, werr := p.dst.Write(buf[:n]); werr != nil {
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

// forwarder returns the forward function of an intercepted pump: stamp
// the bytes, observe them (before the write with ObserveFirst), write them
// to out.
func (p *pump) forwarder(out io.Writer) func([]byte) error {
	return func(b []byte) error {
		if len(b) == 0 {
			return nil
		}
		var c Chunk
		p.s.order.RLock()
		c = p.s.stamp(p.conn, p.stream, b)
		if p.s.first {
			p.s.observe(c)
		}
		p.s.order.RUnlock()
		w, err := out.Write(b)
		if !p.s.first && w > 0 {
			c.Data = b[:w]
			p.s.observe(c)
		}
		return err
	}
}

// flusher is what a StdoutFilter or an Interceptor's writer may also be.
type flusher interface{ Flush() error }

// watchHangup calls release once every writer of the parent's end of
// stdin is gone (a FIFO or socket reports POLLHUP), and stops when done is
// closed. An intercepting stdin pump may sit in its writer holding a
// frame, so it would not read the end of file behind it: without this
// watch a parent that dies while a frame of its is held would leave rpctap
// and the child waiting for a user forever. It polls a duplicate of the
// descriptor, taken here before the pump can close its own, and wakes
// every 250 ms to see done.
func watchHangup(fd int, done <-chan struct{}, release func()) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO && st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return
	}
	dup, err := unix.Dup(fd)
	if err != nil {
		return
	}
	go func() {
		defer unix.Close(dup)
		pfd := []unix.PollFd{{Fd: int32(dup)}} // no events: only POLLHUP and POLLERR are reported
		for {
			select {
			case <-done:
				return
			default:
			}
			n, err := unix.Poll(pfd, 250)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			if n > 0 && pfd[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
				release()
				return
			}
		}
	}()
}

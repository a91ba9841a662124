//go:build unix

package tap

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// errCut is what a raw descriptor's Read or Write returns once its cutter
// was fired (Wait ended the drain, or the child exited for stdin).
var errCut = errors.New("tap: stream cut off")

// cutter is a cancellation signal that a thread blocked in poll(2) sees: a
// pipe whose write end is closed by fire, so its read end polls as hung up.
type cutter struct {
	r, w  *os.File
	rfd   int
	once  sync.Once
	fired atomic.Bool
	users atomic.Int32 // closed when the last user released it

	// bells are the descriptors whose pumps read without polling (see
	// rawFD.Read): fire wakes each with a byte (ring). A descriptor is here
	// from its first read until its pump closes it, under bellMu, so fire
	// never writes to a number that was closed and reused meanwhile.
	bellMu sync.Mutex
	bells  []*rawFD
}

// newCutter returns a cutter with users references; each user calls
// release once it can no longer poll it.
func newCutter(users int32) (*cutter, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// Fd puts the read end in blocking mode; only poll(2) ever looks at it.
	c := &cutter{r: r, w: w, rfd: int(r.Fd())}
	c.users.Store(users)
	return c, nil
}

// fire wakes every poll on the cutter, now and later.
func (c *cutter) fire() {
	c.once.Do(func() {
		c.bellMu.Lock()
		c.fired.Store(true)
		for _, f := range c.bells {
			ring(f.fd)
		}
		c.bells = nil
		c.bellMu.Unlock()
		c.w.Close()
	})
}

// addBell registers f to be rung by fire; false once the cutter fired.
func (c *cutter) addBell(f *rawFD) bool {
	c.bellMu.Lock()
	defer c.bellMu.Unlock()
	if c.fired.Load() {
		return false
	}
	c.bells = append(c.bells, f)
	return true
}

// removeBell forgets f; its pump calls it before closing the descriptor.
func (c *cutter) removeBell(f *rawFD) {
	c.bellMu.Lock()
	defer c.bellMu.Unlock()
	for i, b := range c.bells {
		if b == f {
			c.bells = append(c.bells[:i], c.bells[i+1:]...)
			break
		}
	}
}

// release drops one reference; the last one closes the cutter (so a pump
// that Wait abandoned never polls a descriptor number reused meanwhile).
func (c *cutter) release() {
	if c.users.Add(-1) == 0 {
		c.fire()
		c.r.Close()
	}
}

// rawFD is a descriptor that a pump reads or writes with plain read(2) and
// write(2) system calls from its own locked OS thread, the way cat does,
// instead of through the runtime's poller: a 200-byte hop then costs one
// wake-up of a thread sleeping in the kernel rather than a failed
// non-blocking read, a park, an epoll wake-up on another thread and a
// goroutine switch.
//
// The descriptor's mode is left as it is (fds 0 and 1 are shared with the
// parent and maybe a shell: their O_NONBLOCK flag is never touched). Before a
// read that could block, and after a write that returned EAGAIN, the pump
// polls the descriptor together with its cutter, so Wait can cut a pump loose
// however the descriptor is set: a read never sleeps outside that poll. A
// write to a descriptor in blocking mode (the parent's stdout or stderr when
// the parent made them blocking, the usual case) sleeps inside write(2)
// while the reader does not read; that pump cannot be cut and Wait abandons
// it after the grace (see Cmd).
//
// A read on a descriptor in non-blocking mode is tried first when the last
// read filled the buffer (more is likely waiting), so bulk transfers cost one
// system call per chunk.
//
// Pipes need no poll at all where the cutter may and can ring them (the
// child's stdout and stderr, and the parent's stdin with Cmd.WakeStdin, on
// Linux): a pipe in blocking mode is read straight away, as cat does, and fire wakes a read
// blocked there by writing one byte into the pipe through a second write end
// (opened from /proc/self/fd). After a cut the pump forwards nothing more, so
// that byte, and whatever the same read returned with it, is never passed on:
// the same as a poll that reports the cutter before the data. Measured with
// bench/wire (200-byte round trips, forwarding only, 9 repetitions, A/B in one
// run): the tap's added p50 went from 1.53x to 1.33x of cat's (interleaved)
// and from 1.47x to 1.23x (back to back); the poll cost a system call and a
// second wake-up path per hop.
type rawFD struct {
	fd       int
	nonblock bool // the description is in non-blocking mode
	cut      *cutter
	hot      bool // the last read filled the buffer
	mayRing  bool // the cutter may write a byte into this pipe to wake its reader
	bell     int8 // 1: reads block without poll and fire rings; -1: poll first; 0: not decided yet
	pfd      [2]unix.PollFd
}

// ringing reports whether reads may block in read(2) without a poll: the
// descriptor is a pipe the cutter can ring (decided at the first read, when
// the cutter is known) and the cutter has not fired.
func (f *rawFD) ringing() bool {
	if f.bell == 0 {
		f.bell = -1
		if f.mayRing && f.cut != nil && ringable(f.fd) && f.cut.addBell(f) {
			f.bell = 1
		}
	}
	return f.bell > 0
}

func newRawFD(fd int, cut *cutter) *rawFD {
	f := &rawFD{fd: fd, cut: cut}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		f.nonblock = fl&unix.O_NONBLOCK != 0
	}
	return f
}

// wait polls the descriptor for ev and the cutter; errCut once it fired.
func (f *rawFD) wait(ev int16) error {
	for {
		f.pfd[0] = unix.PollFd{Fd: int32(f.fd), Events: ev}
		f.pfd[1] = unix.PollFd{Fd: int32(f.cut.rfd), Events: unix.POLLIN}
		_, err := unix.Poll(f.pfd[:], -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if f.pfd[1].Revents != 0 {
			return errCut
		}
		// Ready, hung up or in error: the read or write says which.
		return nil
	}
}

func (f *rawFD) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if f.cut.fired.Load() {
			return 0, errCut
		}
		if f.nonblock && !f.hot || !f.nonblock && !f.ringing() {
			if err := f.wait(unix.POLLIN); err != nil {
				return 0, err
			}
		}
		n, err := unix.Read(f.fd, p)
		if f.bell > 0 && f.cut.fired.Load() {
			// Cut while blocked (or the read may hold the cutter's byte):
			// nothing read from now on is forwarded.
			return 0, errCut
		}
		switch err {
		case nil:
			if n == 0 {
				return 0, io.EOF
			}
			f.hot = n == len(p)
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			f.hot = false
			f.nonblock = true
			continue
		}
		return 0, &os.PathError{Op: "read", Path: "tap", Err: err}
	}
}

func (f *rawFD) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		if f.cut.fired.Load() {
			return done, errCut
		}
		n, err := unix.Write(f.fd, p[done:])
		if n > 0 {
			done += n
		}
		switch err {
		case nil, unix.EINTR:
			continue
		case unix.EAGAIN:
			if err := f.wait(unix.POLLOUT); err != nil {
				return done, err
			}
			continue
		}
		return done, &os.PathError{Op: "write", Path: "tap", Err: err}
	}
	return done, nil
}

// close closes the descriptor. Only the pump that uses it calls it, when it
// is done with it, so no read or write can ever reach a reused number.
func (f *rawFD) close() error {
	if f.bell > 0 {
		f.cut.removeBell(f)
	}
	return unix.Close(f.fd)
}

// rawPipe makes a pipe for the child: the child's end is an *os.File in
// blocking mode (as a child expects its standard streams), ours is a raw
// descriptor, close-on-exec. Ours is in non-blocking mode when we write (the
// child's stdin: a write that would block polls, so it can be cut) and in
// blocking mode when we read (the child's stdout and stderr: read straight
// away, woken by the cutter's bell; see rawFD). Each end is its own open file
// description, so the child's end is not affected either way.
func rawPipe(childReads bool) (child *os.File, ours int, err error) {
	var p [2]int
	syscall.ForkLock.RLock()
	err = syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, -1, err
	}
	c, o := p[1], p[0]
	if childReads {
		c, o = p[0], p[1]
	}
	if err := unix.SetNonblock(o, childReads || !ringable(o)); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, -1, err
	}
	return os.NewFile(uintptr(c), "child-pipe"), o, nil
}

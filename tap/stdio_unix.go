//go:build unix

package tap

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// parentEnd is one of the parent's streams as the tap uses it: a duplicate
// descriptor (closing it leaves fd 0, 1 or 2 alone), used with plain read(2)
// and write(2) from a pump's own thread (see rawFD). Its flags are never
// changed: O_NONBLOCK belongs to the open file description, which the
// duplicate shares with the original and possibly with other processes (a
// terminal's shell), and a flag changed by rpctap would stay changed if
// rpctap were killed with SIGKILL.
type parentEnd struct {
	*rawFD
	once sync.Once
}

func openParentEnd(orig *os.File) (*parentEnd, error) {
	rc, err := orig.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var cerr error
	err = rc.Control(func(fd uintptr) {
		nfd, cerr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return &parentEnd{rawFD: newRawFD(nfd, nil)}, nil
}

// close closes the duplicate. It may be called more than once; only the
// pump that uses the end calls it once the tap runs (or Start, when it
// fails before the pumps run).
func (p *parentEnd) close() { p.once.Do(func() { p.rawFD.close() }) }

// openTTY opens the controlling terminal, if rpctap has one, to ask later
// whether rpctap's process group is in its foreground.
func openTTY() *os.File {
	f, err := os.OpenFile("/dev/tty", os.O_RDONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	return f
}

// ttyForeground reports whether rpctap's process group is the foreground
// group of its controlling terminal, so that a SIGINT or SIGQUIT typed there
// reached the child as well.
func ttyForeground(tty *os.File) bool {
	if tty == nil {
		return false
	}
	rc, err := tty.SyscallConn()
	if err != nil {
		return false
	}
	fg := -1
	rc.Control(func(fd uintptr) {
		if pg, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); err == nil {
			fg = pg
		}
	})
	return fg == unix.Getpgrp()
}

// DetachStdio hands the process's stdin and stdout over to a tap: it returns
// duplicates of fds 0 and 1 and points fds 0 and 1 at /dev/null, so that the
// tap holds the only references rpctap has to the parent's pipes. Then a
// child closing its stdout (or its stdin) is seen by the parent at once, as
// with a plain pipe, instead of when rpctap exits. Fd 2 stays: rpctap's own
// warnings go there.
func DetachStdio() (stdin, stdout *os.File, err error) {
	raw, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	// If a standard descriptor was closed, raw took its number: leave it
	// there (pointing at /dev/null) and work with a copy above 2.
	nfd, err := unix.FcntlInt(uintptr(raw), unix.F_DUPFD_CLOEXEC, 3)
	if raw > 2 {
		unix.Close(raw)
	}
	if err != nil {
		return nil, nil, err
	}
	null := os.NewFile(uintptr(nfd), os.DevNull)
	defer null.Close()
	var files [2]*os.File
	for fd := 0; fd < 2; fd++ {
		nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err == unix.EBADF {
			// Started with fd 0 or 1 closed: the child gets /dev/null
			// there, as it would have inherited a closed descriptor's
			// nearest equivalent.
			nfd, err = unix.FcntlInt(null.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		}
		if err != nil {
			return nil, nil, err
		}
		if err := unix.Dup2(int(null.Fd()), fd); err != nil {
			unix.Close(nfd)
			return nil, nil, err
		}
		files[fd] = os.NewFile(uintptr(nfd), []string{"/dev/stdin", "/dev/stdout"}[fd])
	}
	return files[0], files[1], nil
}

//go:build unix

package tap

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// parentEnd is one of the parent's streams as the tap uses it: a duplicate
// descriptor (closing it leaves fd 0, 1 or 2 alone), switched to
// non-blocking mode when asked so that the runtime's poller serves it and
// deadlines can cut a stuck read or write loose.
//
// O_NONBLOCK belongs to the open file description, which the duplicate
// shares with the original and possibly with other processes (a terminal's
// shell): close restores the flags the description had. If rpctap is killed
// with SIGKILL they stay non-blocking; shells cope with that.
type parentEnd struct {
	f       *os.File
	flags   int
	changed bool
	once    sync.Once
}

func openParentEnd(orig *os.File, nonblock bool) (*parentEnd, error) {
	rc, err := orig.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd, flags int
	var cerr error
	err = rc.Control(func(fd uintptr) {
		nfd, cerr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		if cerr != nil {
			return
		}
		flags, cerr = unix.FcntlInt(uintptr(nfd), unix.F_GETFL, 0)
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	p := &parentEnd{flags: flags}
	if nonblock && flags&unix.O_NONBLOCK == 0 && pollable(nfd) {
		if err := unix.SetNonblock(nfd, true); err == nil {
			p.changed = true
		}
	}
	// os.NewFile registers a non-blocking descriptor with the poller.
	p.f = os.NewFile(uintptr(nfd), orig.Name())
	return p, nil
}

// pollable reports whether fd is of a kind epoll serves: a pipe, socket or
// character device (a terminal). Regular files never block anyway.
func pollable(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR:
		return true
	}
	return false
}

// close restores the description's flags and closes the duplicate. It may
// be called more than once, from the pump and from Wait.
func (p *parentEnd) close() { p.once.Do(p.doClose) }

func (p *parentEnd) doClose() {
	if p.changed {
		if rc, err := p.f.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				unix.FcntlInt(fd, unix.F_SETFL, p.flags)
			})
		}
	}
	p.f.Close()
}

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

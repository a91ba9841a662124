package recorder

import (
	"os"

	"golang.org/x/sys/unix"
)

// setPipeSize asks for a larger pipe; the system may refuse (the per-user
// limit of pipe memory), which only costs burst absorption.
func setPipeSize(f *os.File, size int) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) })
	}
}

// writev writes a message's header and payload with one system call.
func writev(fd int, iov [][]byte) (int, error) { return unix.Writev(fd, iov) }

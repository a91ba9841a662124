package tap

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Status reports how a child ended: its exit code, or the signal it died of
// (then code is 128+n, the shell's convention).
func Status(ps *os.ProcessState) (code int, sig syscall.Signal) {
	if ps == nil {
		return -1, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return ps.ExitCode(), 0
}

// SignalName returns "SIGTERM" for syscall.SIGTERM and so on.
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}

// ExitLike ends the process the way the child ended: it dies of the child's
// fatal signal (see Reraise) or exits with its code. Call it last: it does
// not return.
func ExitLike(ps *os.ProcessState) {
	code, sig := Status(ps)
	if sig != 0 {
		Reraise(sig)
	}
	os.Exit(code)
}

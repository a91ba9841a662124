package tap

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysProcAttr makes the kernel send the child SIGTERM when the thread that
// started it dies: rpctap's reaper keeps that thread locked until the child
// is reaped, so this fires only when rpctap itself dies (SIGKILL included).
// No Setpgid: see Cmd.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// Reraise makes rpctap die of sig, as the child did, so that the parent's
// wait status says "killed by SIGTERM" rather than "exited 143". The Go
// runtime's own handling would print a stack trace for SIGQUIT and friends,
// so Reraise puts the kernel's default action back with rt_sigaction, turns
// off rpctap's own core dump (the child's is the one that matters) and
// sends sig to itself. It returns only if that did not work (a signal whose
// default action does not kill); the caller then exits with 128+n.
func Reraise(sig syscall.Signal) {
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	// A zeroed kernel sigaction is SIG_DFL with no flags and an empty mask,
	// whatever the architecture's field order.
	var sa [4]uint64
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0)
	unix.Kill(unix.Getpid(), sig)
	// Delivery is asynchronous only in theory: the signal is pending for
	// every thread that does not block it. Give it a moment.
	time.Sleep(200 * time.Millisecond)
}

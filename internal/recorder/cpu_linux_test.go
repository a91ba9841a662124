package recorder

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// threadCPU runs f locked to its thread and returns the thread's CPU time
// (user+system, ns) it took: a figure the other processes of a loaded
// machine do not inflate the way they do wall time.
func threadCPU(f func()) int64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &a)
	f()
	unix.Getrusage(unix.RUSAGE_THREAD, &b)
	return b.Utime.Nano() + b.Stime.Nano() - a.Utime.Nano() - a.Stime.Nano()
}

// Package thread holds what rpctap does to the OS thread it runs on.
package thread

import "golang.org/x/sys/unix"

// Nice sets the calling OS thread's nice value (on Linux a thread has its
// own). The caller must have locked the goroutine to the thread and must let
// the thread end with the goroutine (no UnlockOSThread), so that the runtime
// never reuses a niced thread for other work. Best effort: an error (the
// system refuses) leaves the thread at its priority.
func Nice(n int) error { return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n) }

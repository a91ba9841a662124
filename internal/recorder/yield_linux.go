package recorder

import "syscall"

// yieldCPU gives the rest of this thread's time slice to whatever else is
// runnable (sched_yield(2)); it returns at once when nothing is. A variable
// so that a test can count the calls.
var yieldCPU = func() { syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

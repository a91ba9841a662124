//go:build !linux

package recorder

import "time"

// threadCPU: wall time where the thread's CPU time is not at hand.
func threadCPU(f func()) int64 {
	t := time.Now()
	f()
	return int64(time.Since(t))
}

//go:build unix && !linux

package tap

import (
	"os/signal"
	"syscall"
	"time"
)

// sysProcAttr: outside Linux there is no Pdeathsig; a killed rpctap leaves
// the child to notice its stdin's EOF.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// Reraise makes rpctap die of sig; see the Linux version.
func Reraise(sig syscall.Signal) {
	signal.Reset(sig)
	syscall.Kill(syscall.Getpid(), sig)
	time.Sleep(200 * time.Millisecond)
}

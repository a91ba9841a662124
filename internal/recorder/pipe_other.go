//go:build !linux

package recorder

import (
	"os"

	"golang.org/x/sys/unix"
)

// setPipeSize: only Linux resizes pipes; elsewhere they keep the system's
// size, which only costs burst absorption.
func setPipeSize(f *os.File, size int) {}

// writev writes the parts of iov one after the other (not every system has
// writev in x/sys/unix). A message may then reach the sink in two writes;
// the pipe's mutex keeps messages whole, and a write cut by a crash is a torn
// message, as with writev.
func writev(fd int, iov [][]byte) (int, error) {
	total := 0
	for _, b := range iov {
		for len(b) > 0 {
			n, err := unix.Write(fd, b)
			if n > 0 {
				total += n
				b = b[n:]
			}
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

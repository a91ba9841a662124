//go:build unix

package wrap

import (
	"os"
	"syscall"
)

// sameOwner gives f the owner of the file like when rpctap runs as root, so
// that a config edited with sudo stays its user's.
func sameOwner(f *os.File, like string) {
	if os.Geteuid() != 0 {
		return
	}
	if st, err := os.Stat(like); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			f.Chown(int(sys.Uid), int(sys.Gid))
		}
	}
}

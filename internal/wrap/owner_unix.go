//go:build unix

package wrap

import (
	"os"
	"syscall"
)

// owner is a file's owner, kept when rpctap runs as root (a config edited
// with sudo stays its user's).
type owner struct {
	uid, gid int
	ok       bool
}

func ownerOf(path string) owner {
	if os.Geteuid() != 0 {
		return owner{}
	}
	st, err := os.Stat(path)
	if err != nil {
		return owner{}
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return owner{}
	}
	return owner{uid: int(sys.Uid), gid: int(sys.Gid), ok: true}
}

func (o owner) apply(path string) {
	if o.ok {
		os.Chown(path, o.uid, o.gid)
	}
}

//go:build darwin || freebsd

package ctlsock

import "golang.org/x/sys/unix"

// peerUID reads LOCAL_PEERCRED (what getpeereid(3) reads): the effective
// credentials of the process that connected, taken at connect time.
func peerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}

//go:build linux

package ctlsock

import "golang.org/x/sys/unix"

// peerUID reads SO_PEERCRED: the credentials of the process that connected
// (or that made the socket pair), taken by the kernel at connect time.
func peerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}

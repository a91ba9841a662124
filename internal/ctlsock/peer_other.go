//go:build !linux && !darwin && !freebsd

package ctlsock

import "errors"

// peerUID cannot tell who connected on this system: every connection is
// refused rather than trusted.
func peerUID(fd int) (int, error) {
	return -1, errors.New("control socket: peer credentials are not supported on this system")
}

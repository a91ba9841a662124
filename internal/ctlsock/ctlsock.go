// Package ctlsock is the control socket of an intercepting tap (`rpctap
// record --intercept`): a Unix socket in a private directory that only the
// user running rpctap can reach. There is no TCP listener; to intercept a
// session on another host, forward the socket with SSH (ssh -L
// /tmp/local.sock:/run/user/1000/rpctap/s-x/ctl.sock host).
//
// Two layers keep other users out, each enough on its own:
//
//   - the file system: the socket lives in a directory of its own, mode
//     0700, inside a base directory that is ours and 0700 too
//     ($XDG_RUNTIME_DIR/rpctap, else rpctap-UID in the temp dir); the socket
//     itself is 0600;
//   - the kernel's word on who connected: every accepted connection's peer
//     credentials (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS and
//     FreeBSD) must name our own uid, or the connection is closed at once.
package ctlsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// SocketName is the socket's file name inside its private directory.
const SocketName = "ctl.sock"

// BaseDir is where the private directories are made: $XDG_RUNTIME_DIR/rpctap
// when XDG_RUNTIME_DIR is set, else rpctap-UID in the temp dir.
func BaseDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "rpctap")
	}
	return filepath.Join(os.TempDir(), "rpctap-"+strconv.Itoa(os.Getuid()))
}

// Listener accepts control connections from the same user only.
type Listener struct {
	ln   *net.UnixListener
	dir  string
	path string
	// Refused, when set, is told about each connection refused (its uid,
	// or the error reading its credentials).
	Refused func(uid int, err error)
}

// Listen makes a new private directory under base (BaseDir when "") and
// listens on SocketName inside it.
func Listen(base string) (*Listener, error) {
	if base == "" {
		base = BaseDir()
	}
	if err := privateDir(base); err != nil {
		return nil, err
	}
	sweep(base)
	dir, err := os.MkdirTemp(base, "s-")
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	path := filepath.Join(dir, SocketName)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	// The directory is already 0700, so no one else could reach the
	// socket between its bind and this chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(dir)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return &Listener{ln: ln, dir: dir, path: path}, nil
}

// privateDir makes base (0700) if missing and refuses one that is not a
// directory of ours that only we can enter: a symlink or a directory of
// another user's in the temp dir could hand the socket to them.
func privateDir(base string) error {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	fi, err := os.Lstat(base)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("control socket: %s is not a directory", base)
	}
	if uid, ok := ownerOf(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("control socket: %s belongs to uid %d, not to us (uid %d)", base, uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("control socket: %s is mode %04o; others can enter it (want 0700)", base, fi.Mode().Perm())
	}
	return nil
}

// sweep removes the directories of sessions that died without closing
// their socket (a SIGKILLed rpctap): a socket nobody listens on refuses
// connections. Only s-* directories holding nothing but SocketName are
// touched.
func sweep(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "s-*"))
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil || len(entries) > 1 || len(entries) == 1 && entries[0].Name() != SocketName {
			continue
		}
		if len(entries) == 1 {
			p := filepath.Join(d, SocketName)
			c, err := net.Dial("unix", p)
			if err == nil {
				c.Close()
				continue // alive
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				continue
			}
			os.Remove(p)
		}
		os.Remove(d)
	}
}

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// Dir is the socket's private directory.
func (l *Listener) Dir() string { return l.dir }

// ErrOtherUser is why a connection from another uid was refused.
var ErrOtherUser = errors.New("control socket: connection from another user refused")

// Accept returns the next connection whose peer is our own uid. Connections
// from other users (or whose credentials cannot be read) are closed and
// told to Refused; Accept then waits for the next one.
func (l *Listener) Accept() (*net.UnixConn, error) {
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, err := PeerUID(c)
		if err == nil && uid == os.Getuid() {
			return c, nil
		}
		if err == nil {
			err = ErrOtherUser
		}
		c.Close()
		if l.Refused != nil {
			l.Refused(uid, err)
		}
	}
}

// Close stops listening and removes the socket and its directory.
func (l *Listener) Close() error {
	err := l.ln.Close()
	os.Remove(l.path)
	os.Remove(l.dir)
	return err
}

// PeerUID is the uid of the process at the other end of c, as the kernel
// recorded it when the connection was made.
func PeerUID(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var cerr error
	if err := rc.Control(func(fd uintptr) { uid, cerr = peerUID(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, cerr
}

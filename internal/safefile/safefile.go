// Package safefile writes the files rpctap makes (an export, a shrunk or
// normalized cassette, an updated reference cassette) so that a failure
// never leaves a broken file, and never replaces something that is not a
// file.
//
// The rule (issue 20, and the brief's standards):
//
//   - A regular file, or a path that does not exist yet, is written to a
//     temporary file beside its real path (symlinks followed, so that a
//     symlinked target is written through and stays a symlink), synced,
//     read back by the caller's Verify (a cassette: read to its end
//     record), then renamed over the target, and the directory is synced.
//     On any failure the target is untouched and the temporary file gone.
//   - Anything else (a character or block device, a FIFO, a socket, a
//     terminal, /dev/stdout and the /proc/self/fd links) is opened and
//     written directly: renaming over /dev/full or a FIFO would replace it
//     with a regular file.
//   - A missing parent directory is created (0700), as `rpctap record`
//     does for its --dir.
//
// Errors of the file system are *Error (rpctap's own failure, exit 125);
// errors of the caller's write function are returned as they are, so that
// a damaged input can still be told from a full disk.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options tune Write.
type Options struct {
	// Perm is the mode of a new file (default 0600: what rpctap writes
	// holds session payloads). A replaced file keeps its own mode.
	Perm fs.FileMode
	// Verify, if set, reads the synced temporary file back before it is
	// renamed over the target (a cassette: to its end record). Not called
	// when the target is written directly (a device or a FIFO cannot be
	// read back).
	Verify func(tmp string) error
}

// Error is a failure to write the target: the file system refused
// (a read-only directory, a full disk, a device that fails writes) or the
// written file did not read back. The target is untouched.
type Error struct {
	Path string // the target as the user named it
	Op   string // "create", "write", "sync", "verify", "rename", ...
	Err  error
	// Direct is set when the target was being written in place (a device,
	// a FIFO): it may hold part of the output.
	Direct bool
}

func (e *Error) Error() string {
	if e.Direct {
		return fmt.Sprintf("cannot write %s (%s: %v)", e.Path, e.Op, e.Err)
	}
	return fmt.Sprintf("cannot write %s (%s: %v); it was left as it was", e.Path, e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsError reports whether err is (or wraps) a write failure of this package.
func IsError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Direct reports whether path names something Write writes directly (a
// device, a FIFO, a socket, a /proc or /dev/fd descriptor link) rather than
// through a temporary file, following symlinks.
func Direct(path string) (bool, error) {
	real, st, err := resolve(path)
	if err != nil {
		return false, err
	}
	return direct(real, st), nil
}

// Write writes the target path with write, by the rule in the package
// comment. write gets the destination; if it returns an error the target is
// left untouched (a direct target may have received part of the output) and
// that error is returned unwrapped.
func Write(path string, o Options, write func(w io.Writer) error) error {
	if o.Perm == 0 {
		o.Perm = 0o600
	}
	real, st, err := resolve(path)
	if err != nil {
		return &Error{Path: path, Op: "resolve", Err: err}
	}
	if st != nil && st.IsDir() {
		return &Error{Path: path, Op: "open", Err: errors.New("is a directory")}
	}
	if direct(real, st) {
		return writeDirect(path, real, write)
	}
	return writeReplace(path, real, st, o, write)
}

// resolve follows symlinks from path to the name that is really written,
// and stats it (st is nil when it does not exist yet). A dangling symlink
// resolves to the missing file it points at. A path through /proc/*/fd or
// /dev/fd stays as named: its link target ("pipe:[123]", or a file the
// shell opened for us) is a descriptor, not a name to replace.
func resolve(path string) (string, fs.FileInfo, error) {
	p := path
	for hops := 0; ; hops++ {
		if hops > 40 {
			return "", nil, errors.New("too many levels of symbolic links")
		}
		if fdLink(p) {
			st, err := os.Stat(p)
			if err != nil {
				return "", nil, err
			}
			return p, st, nil
		}
		lst, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Not there (ENOTDIR: a file where a directory should be;
			// making the directory says so).
			return p, nil, nil
		}
		if err != nil {
			return "", nil, unwrapPath(err)
		}
		if lst.Mode()&fs.ModeSymlink == 0 {
			return p, lst, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
}

// fdLink reports whether p is a descriptor link (/dev/stdout, /dev/fd/N,
// /proc/self/fd/N, /proc/PID/fd/N).
func fdLink(p string) bool {
	c := filepath.Clean(p)
	switch c {
	case "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return true
	}
	if strings.HasPrefix(c, "/dev/fd/") {
		return true
	}
	if strings.HasPrefix(c, "/proc/") {
		parts := strings.Split(c, "/")
		return len(parts) == 5 && parts[3] == "fd"
	}
	return false
}

func direct(real string, st fs.FileInfo) bool {
	if fdLink(real) {
		return true
	}
	return st != nil && !st.Mode().IsRegular() && !st.IsDir()
}

// writeDirect opens an existing non-regular target and writes into it.
// Opening a FIFO blocks until a reader opens it, as for any writer.
func writeDirect(path, real string, write func(io.Writer) error) error {
	f, err := os.OpenFile(real, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		// O_TRUNC is refused by some devices and descriptor links.
		if f, err = os.OpenFile(real, os.O_WRONLY, 0); err != nil {
			return &Error{Path: path, Op: "open", Err: unwrapPath(err), Direct: true}
		}
	}
	ew := &errWriter{w: f}
	werr := write(ew)
	cerr := f.Close()
	switch {
	case ew.err != nil:
		return &Error{Path: path, Op: "write", Err: unwrapPath(ew.err), Direct: true}
	case werr != nil:
		return werr
	case cerr != nil:
		return &Error{Path: path, Op: "close", Err: unwrapPath(cerr), Direct: true}
	}
	return nil
}

// writeReplace writes a temporary file beside real, syncs it, verifies it
// and renames it over real.
func writeReplace(path, real string, st fs.FileInfo, o Options, write func(io.Writer) error) error {
	dir := filepath.Dir(real)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &Error{Path: path, Op: "create the directory", Err: unwrapPath(err)}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(real)+".rpctap-tmp-*")
	if err != nil {
		return &Error{Path: path, Op: "create", Err: unwrapPath(err)}
	}
	tmp := f.Name()
	untrack := Track(tmp)
	defer untrack()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	mode := o.Perm
	if st != nil {
		mode = st.Mode().Perm()
	}
	if err := f.Chmod(mode); err != nil {
		return &Error{Path: path, Op: "chmod", Err: unwrapPath(err)}
	}
	ew := &errWriter{w: f}
	werr := write(ew)
	if ew.err != nil {
		return &Error{Path: path, Op: "write", Err: unwrapPath(ew.err)}
	}
	if werr != nil {
		return werr
	}
	if err := f.Sync(); err != nil {
		return &Error{Path: path, Op: "sync", Err: unwrapPath(err)}
	}
	if err := f.Close(); err != nil {
		return &Error{Path: path, Op: "close", Err: unwrapPath(err)}
	}
	if o.Verify != nil {
		if err := o.Verify(tmp); err != nil {
			return &Error{Path: path, Op: "read back", Err: err}
		}
	}
	if err := os.Rename(tmp, real); err != nil {
		return &Error{Path: path, Op: "rename", Err: unwrapPath(err)}
	}
	done = true
	syncDir(dir)
	return nil
}

// syncDir makes a rename durable. Best effort: some file systems refuse to
// sync a directory, and the file itself is synced already.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// errWriter keeps the first write error, so that a write function that
// ignores errors (fmt.Fprintf) cannot make a failed write look done.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// unwrapPath drops the operation and path of an *fs.PathError (the
// message names the target itself).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// MkdirFor creates the missing parent directory of path (0700), for a
// command that opens path itself (the live recording), and says in one
// error why it cannot.
func MkdirFor(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the directory %s: %v", dir, unwrapPath(err))
	}
	return nil
}

// Beside returns an unused temporary name beside path's real target
// (symlinks followed; the directory is created 0700), for a writer that
// creates the file itself (the recorder behind `verify --update`) and then
// hands it to Commit. For a target written directly it is a name in the
// system's temporary directory. Making the name here, before the writer
// runs, finds a directory that cannot be written before any work is done.
func Beside(path string) (string, error) {
	real, st, err := resolve(path)
	if err != nil {
		return "", &Error{Path: path, Op: "resolve", Err: err}
	}
	if st != nil && st.IsDir() {
		return "", &Error{Path: path, Op: "open", Err: errors.New("is a directory")}
	}
	dir := filepath.Dir(real)
	if direct(real, st) {
		dir = os.TempDir()
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", &Error{Path: path, Op: "create the directory", Err: unwrapPath(err)}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(real)+".rpctap-tmp-*")
	if err != nil {
		return "", &Error{Path: path, Op: "create", Err: unwrapPath(err)}
	}
	name := f.Name()
	f.Close()
	os.Remove(name) // the writer creates it (cassette.Create refuses to replace)
	Track(name)     // until Commit or Discard
	return name, nil
}

// Discard removes tmp (from Beside) when its run is given up.
func Discard(tmp string) {
	os.Remove(tmp)
	forget(tmp)
}

// Commit puts the finished, synced file tmp (from Beside) in place of path
// by the rule of Write: verified and renamed over a regular or missing
// target, copied into a device or FIFO. tmp is gone afterwards in every
// case; on failure the target is untouched.
func Commit(tmp, path string, o Options) error {
	defer Discard(tmp)
	real, st, err := resolve(path)
	if err != nil {
		return &Error{Path: path, Op: "resolve", Err: err}
	}
	if st != nil && st.IsDir() {
		return &Error{Path: path, Op: "open", Err: errors.New("is a directory")}
	}
	if direct(real, st) {
		return writeDirect(path, real, func(w io.Writer) error {
			f, err := os.Open(tmp)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(w, f)
			return err
		})
	}
	if st != nil {
		if err := os.Chmod(tmp, st.Mode().Perm()); err != nil {
			return &Error{Path: path, Op: "chmod", Err: unwrapPath(err)}
		}
	}
	if o.Verify != nil {
		if err := o.Verify(tmp); err != nil {
			return &Error{Path: path, Op: "read back", Err: err}
		}
	}
	if err := os.Rename(tmp, real); err != nil {
		return &Error{Path: path, Op: "rename", Err: unwrapPath(err)}
	}
	syncDir(filepath.Dir(real))
	return nil
}

// Temporary files and signals. Go's default action for SIGINT, SIGTERM and
// SIGHUP ends the process at once, without running deferred calls, so a
// Ctrl-C in the middle of a write would leave the temporary file beside the
// target (the target itself is safe: only the last rename replaces it).
// While a temporary file is pending, safefile therefore catches those
// signals (the ones not ignored when rpctap started: a background job's
// SIGINT stays ignored), removes every pending file and dies of the same
// signal, as the default action would have. With nothing pending the
// signals have their default action again, so the commands that handle
// signals themselves (record and replay relay them to the child) are not
// affected: they write no temporary files.
var pending = struct {
	sync.Mutex
	names  map[string]int
	groups map[int]int // process groups to end first (TrackGroup)
	sigc   chan os.Signal
}{names: map[string]int{}, groups: map[int]int{}}

// Track registers name, a temporary file or directory the caller made, to
// be removed (with everything in it) if the process is ended by SIGINT,
// SIGTERM or SIGHUP before untrack is called.
func Track(name string) (untrack func()) {
	pending.Lock()
	defer pending.Unlock()
	pending.names[name]++
	catchLocked()
	var once sync.Once
	return func() { once.Do(func() { forget(name) }) }
}

// TrackGroup registers pgid, the process group of a command the caller
// runs on the user's behalf (shrink's test command), to be ended
// (interrupted says how) if rpctap is ended by SIGINT, SIGTERM or SIGHUP
// before untrack is called.
// A terminal's Ctrl-C reaches the whole foreground group anyway; a SIGTERM
// to rpctap alone (a CI job's timeout, kill PID) would otherwise leave the
// command running, writing into files that are about to be removed.
func TrackGroup(pgid int) (untrack func()) {
	pending.Lock()
	defer pending.Unlock()
	pending.groups[pgid]++
	catchLocked()
	var once sync.Once
	return func() { once.Do(func() { forgetGroup(pgid) }) }
}

// catchLocked starts catching the signals if nothing did yet. pending is
// locked.
func catchLocked() {
	if pending.sigc == nil {
		var sigs []os.Signal
		for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			if !signal.Ignored(s) {
				sigs = append(sigs, s)
			}
		}
		if len(sigs) > 0 {
			c := make(chan os.Signal, 1)
			signal.Notify(c, sigs...)
			pending.sigc = c
			go interrupted(c)
		}
	}
}

// forget drops name from the pending set; the last one gives the signals
// back their default action.
func forget(name string) {
	pending.Lock()
	defer pending.Unlock()
	if pending.names[name] == 0 {
		return
	}
	if pending.names[name]--; pending.names[name] == 0 {
		delete(pending.names, name)
	}
	stopIfIdleLocked()
}

// forgetGroup is forget for a process group (TrackGroup).
func forgetGroup(pgid int) {
	pending.Lock()
	defer pending.Unlock()
	if pending.groups[pgid]--; pending.groups[pgid] <= 0 {
		delete(pending.groups, pgid)
	}
	stopIfIdleLocked()
}

// stopIfIdleLocked gives the signals back their default action when
// nothing is pending. pending is locked.
func stopIfIdleLocked() {
	if len(pending.names) == 0 && len(pending.groups) == 0 && pending.sigc != nil {
		signal.Stop(pending.sigc)
		close(pending.sigc)
		pending.sigc = nil
	}
}

// interrupted waits for a signal on c (closed when nothing is pending),
// removes the pending files, and raises the signal again with its default
// action.
//
// The rest of the program runs on meanwhile, so the order matters. The
// tracked process groups are stopped (SIGSTOP), not killed, first: a
// stopped command writes nothing into the files being removed, and the
// goroutine waiting for it stays asleep (a killed one would wake it, and
// shrink would write its next candidate, recreating the directory just
// removed). pending stays locked until the process is gone, so no Track
// call can register a new handler that would catch the signal raised
// again; signal.Reset gives it its default action whatever else listens.
func interrupted(c chan os.Signal) {
	s, ok := <-c
	if !ok {
		return
	}
	pending.Lock()
	for pgid := range pending.groups {
		syscall.Kill(-pgid, syscall.SIGSTOP)
	}
	for name := range pending.names {
		for i := 0; os.RemoveAll(name) != nil && i < 50; i++ {
			time.Sleep(time.Millisecond)
		}
	}
	for pgid := range pending.groups {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	sig, _ := s.(syscall.Signal)
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Second) // the signal ends the process; this is a fallback
	os.Exit(128 + int(sig))
}

package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leftovers lists the temporary files Write left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".*.rpctap-tmp-*"))
	return m
}

func TestNewFileAndMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "out.json")
	if err := Write(p, Options{}, writeString("hello\n")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); got != "hello\n" {
		t.Fatalf("content %q", got)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", st.Mode().Perm())
	}
	dst, _ := os.Stat(filepath.Join(dir, "a"))
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("created directory mode %v, want 0700", dst.Mode().Perm())
	}
	if l := leftovers(t, filepath.Dir(p)); len(l) > 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestReplaceKeepsModeAndFailureKeepsTarget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	os.WriteFile(p, []byte("old"), 0o644)
	if err := Write(p, Options{}, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 || read(t, p) != "new" {
		t.Fatalf("mode %v content %q", st.Mode().Perm(), read(t, p))
	}
	// The write function fails half way: its error comes back as is, the
	// target keeps its old bytes, no temporary file is left.
	boom := errors.New("input damaged")
	err := Write(p, Options{}, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if err != boom || IsError(err) {
		t.Fatalf("err %v, want the write function's own", err)
	}
	// Verify refuses what was written: the target stays, an *Error says so.
	err = Write(p, Options{Verify: func(tmp string) error {
		if read(t, tmp) != "bad" {
			t.Errorf("Verify saw %q", read(t, tmp))
		}
		return errors.New("no end record")
	}}, writeString("bad"))
	if !IsError(err) || !strings.Contains(err.Error(), "left as it was") {
		t.Fatalf("err %v", err)
	}
	if got := read(t, p); got != "new" {
		t.Fatalf("target changed to %q after failures", got)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestSymlinkIsWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	target := filepath.Join(dir, "real", "report.html")
	os.WriteFile(target, []byte("old"), 0o640)
	link := filepath.Join(dir, "link.html")
	os.Symlink("real/report.html", link) // relative, as users make them
	if err := Write(link, Options{}, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if lst, _ := os.Lstat(link); lst.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced by a %v", lst.Mode())
	}
	if got := read(t, target); got != "new" {
		t.Fatalf("target holds %q", got)
	}
	// A dangling symlink creates the file it points at.
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "real", "later.json"), dangling)
	if err := Write(dangling, Options{}, writeString("x")); err != nil {
		t.Fatal(err)
	}
	if lst, _ := os.Lstat(dangling); lst.Mode()&fs.ModeSymlink == 0 || read(t, filepath.Join(dir, "real", "later.json")) != "x" {
		t.Fatal("dangling symlink not written through")
	}
}

func TestFIFOIsWrittenDirectly(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	verified := false
	if err := Write(p, Options{Verify: func(string) error { verified = true; return nil }}, writeString("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Fatalf("reader got %q", s)
	}
	if verified {
		t.Error("Verify ran on a FIFO")
	}
	if st, _ := os.Lstat(p); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO became %v", st.Mode())
	}
	if ok, _ := Direct(p); !ok {
		t.Error("Direct(FIFO) = false")
	}
}

// mknod makes a character device node like /dev/null (1,3) or /dev/full
// (1,7) inside the test's own directory: never a system device.
func mknod(t *testing.T, p string, minor uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root (run the tests as root to cover devices)")
	}
	if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, minor))); err != nil {
		t.Skipf("mknod refused (%v): a container without CAP_MKNOD", err)
	}
}

func TestDeviceStaysADevice(t *testing.T) {
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	mknod(t, null, 3)
	if err := Write(null, Options{}, writeString("discarded")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(null); st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("the device became %v", st.Mode())
	}
	// A full device: the write error is ours (*Error), the node stays.
	full := filepath.Join(dir, "full")
	mknod(t, full, 7)
	err := Write(full, Options{}, writeString(strings.Repeat("x", 1<<16)))
	if !IsError(err) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing a full device: %v", err)
	}
	if st, _ := os.Lstat(full); st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("the device became %v", st.Mode())
	}
	// Through a symlink too.
	link := filepath.Join(dir, "link")
	os.Symlink(full, link)
	if err := Write(link, Options{}, writeString("x")); !IsError(err) {
		t.Fatalf("writing a full device through a link: %v", err)
	}
	if st, _ := os.Lstat(full); st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatal("the device behind the link was replaced")
	}
	if len(leftovers(t, dir)) > 0 {
		t.Error("temporary files beside a device")
	}
}

func TestDescriptorLinksAreDirect(t *testing.T) {
	for _, p := range []string{"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"} {
		if !fdLink(p) {
			t.Errorf("fdLink(%s) = false", p)
		}
	}
	if fdLink("/proc/self/status") || fdLink("/dev/fdx") {
		t.Error("fdLink too wide")
	}
	// A descriptor that is a regular file (stdout redirected to a file):
	// written through the descriptor, never renamed over.
	dir := t.TempDir()
	p := filepath.Join(dir, "redirected")
	f, _ := os.Create(p)
	defer f.Close()
	fd := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := Write(fd, Options{}, writeString("via fd")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); got != "via fd" {
		t.Fatalf("file holds %q", got)
	}
}

// asNobody runs fn with the effective uid of nobody, so that a read-only
// directory is read-only even when the tests run as root; the saved uid
// brings root back.
func asNobody(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		fn()
		return
	}
	if err := syscall.Setresuid(-1, 65534, -1); err != nil {
		t.Skipf("cannot drop to uid 65534: %v", err)
	}
	defer func() {
		if err := syscall.Setresuid(-1, 0, -1); err != nil {
			panic("cannot become root again: " + err.Error())
		}
	}()
	fn()
}

func TestReadOnlyDirectory(t *testing.T) {
	base, err := os.MkdirTemp("", "safefile-ro-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	ro := filepath.Join(base, "ro")
	os.Mkdir(ro, 0o755)
	p := filepath.Join(ro, "x.cassette")
	os.WriteFile(p, []byte("the only recording"), 0o666)
	os.Chmod(ro, 0o555)
	defer os.Chmod(ro, 0o755)
	var werr, derr error
	asNobody(t, func() {
		werr = Write(p, Options{}, writeString("replacement"))
		derr = Write(filepath.Join(ro, "sub", "y"), Options{}, writeString("y"))
	})
	if !IsError(werr) || !errors.Is(werr, fs.ErrPermission) {
		t.Fatalf("write into a read-only directory: %v", werr)
	}
	if got := read(t, p); got != "the only recording" {
		t.Fatalf("target changed to %q", got)
	}
	if !IsError(derr) || !strings.Contains(derr.Error(), "create the directory") {
		t.Fatalf("a directory that cannot be created: %v", derr)
	}
	if len(leftovers(t, ro)) > 0 {
		t.Error("temporary files left")
	}
}

func TestDirectoryTargetRefused(t *testing.T) {
	dir := t.TempDir()
	err := Write(dir, Options{}, writeString("x"))
	if !IsError(err) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("err %v", err)
	}
}

func TestBesideAndCommit(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	target := filepath.Join(dir, "real", "x.cassette")
	os.WriteFile(target, []byte("old"), 0o640)
	link := filepath.Join(dir, "x.cassette")
	os.Symlink("real/x.cassette", link)
	tmp, err := Beside(link)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tmp) != filepath.Join(dir, "real") {
		t.Fatalf("temporary %s not beside the real target", tmp)
	}
	os.WriteFile(tmp, []byte("refused"), 0o600)
	if err := Commit(tmp, link, Options{Verify: func(string) error { return errors.New("no end record") }}); !IsError(err) {
		t.Fatalf("refused commit: %v", err)
	}
	if read(t, target) != "old" {
		t.Fatal("a refused commit changed the target")
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Error("the temporary file of a refused commit is left")
	}
	tmp, _ = Beside(link)
	os.WriteFile(tmp, []byte("new"), 0o600)
	if err := Commit(tmp, link, Options{}); err != nil {
		t.Fatal(err)
	}
	if lst, _ := os.Lstat(link); lst.Mode()&fs.ModeSymlink == 0 || read(t, target) != "new" {
		t.Fatal("commit through the symlink")
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the old 0640", st.Mode().Perm())
	}
}

// TestSignalRemovesPending: while a temporary file is pending, SIGTERM
// removes it and the process still dies of SIGTERM; once nothing is
// pending the signals have their default action again. The process that
// is signalled is this test binary re-executed (SAFEFILE_SIGNAL_CHILD).
func TestSignalRemovesPending(t *testing.T) {
	if dir := os.Getenv("SAFEFILE_SIGNAL_CHILD"); dir != "" {
		Write(filepath.Join(dir, "target"), Options{}, func(w io.Writer) error {
			io.WriteString(w, "partial")
			os.WriteFile(filepath.Join(dir, "writing"), nil, 0o600)
			select {} // until the signal
		})
		return
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "target"), []byte("old"), 0o600)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalRemovesPending$")
	cmd.Env = append(os.Environ(), "SAFEFILE_SIGNAL_CHILD="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "writing")); err == nil {
			break
		}
		if i > 1000 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child never started writing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("the writer ended with %v, want death by SIGTERM", cmd.ProcessState)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "target" && e.Name() != "writing" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "target")); string(b) != "old" {
		t.Errorf("target is %q", b)
	}

	// Nothing pending after a write, a Beside/Commit and a Discard.
	Write(filepath.Join(dir, "a"), Options{}, writeString("x"))
	tmp, err := Beside(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(tmp, []byte("y"), 0o600)
	Commit(tmp, filepath.Join(dir, "b"), Options{})
	tmp, _ = Beside(filepath.Join(dir, "c"))
	Discard(tmp)
	pending.Lock()
	n, c := len(pending.names), pending.sigc
	pending.Unlock()
	if n != 0 || c != nil {
		t.Errorf("after the writes: %d names pending, handler %v", n, c)
	}
}

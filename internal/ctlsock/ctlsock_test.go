package ctlsock

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the helper a test runs as another user: with
// RPCTAP_CTLSOCK_DIAL set it connects to that socket, writes a line and
// says what it read back ("closed" when the server hung up on it).
func TestMain(m *testing.M) {
	if path := os.Getenv("RPCTAP_CTLSOCK_DIAL"); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			os.Stdout.WriteString("dial: " + err.Error() + "\n")
			os.Exit(0)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("{\"op\":\"list\"}\n"))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == io.EOF || err != nil && strings.Contains(err.Error(), "reset") {
			os.Stdout.WriteString("closed\n")
		} else if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
		} else {
			os.Stdout.WriteString("answered: " + line)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestModes: the base directory and the socket's own directory are 0700,
// the socket 0600; Close removes both socket and directory.
func TestModes(t *testing.T) {
	base := filepath.Join(t.TempDir(), "rpctap")
	l, err := Listen(base)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{base: 0o700, l.Dir(): 0o700, l.Path(): 0o600} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
	if fi, _ := os.Lstat(l.Path()); fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("%s is not a socket", l.Path())
	}
	if filepath.Dir(l.Path()) != l.Dir() || filepath.Dir(l.Dir()) != base {
		t.Errorf("socket %s not in its own directory under %s", l.Path(), base)
	}
	l.Close()
	if _, err := os.Lstat(l.Dir()); !os.IsNotExist(err) {
		t.Errorf("after Close the directory is still there: %v", err)
	}
}

// TestBaseRefused: a base directory others can enter, or that is not a
// directory, is refused with a message naming it.
func TestBaseRefused(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	if _, err := Listen(open); err == nil || !strings.Contains(err.Error(), "0755") {
		t.Errorf("base 0755: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := Listen(file); err == nil {
		t.Errorf("base is a file: no error")
	}
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(t.TempDir(), link)
	if _, err := Listen(link); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("base is a symlink: %v", err)
	}
}

// TestBaseDir: $XDG_RUNTIME_DIR/rpctap, else rpctap-UID in the temp dir.
func TestBaseDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1234")
	if got := BaseDir(); got != "/run/user/1234/rpctap" {
		t.Errorf("BaseDir = %s", got)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	if got := BaseDir(); !strings.HasPrefix(filepath.Base(got), "rpctap-") {
		t.Errorf("BaseDir = %s", got)
	}
}

// TestSameUserAccepted: our own connection gets through, and PeerUID says
// who we are.
func TestSameUserAccepted(t *testing.T) {
	l, err := Listen(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := net.Dial("unix", l.Path())
		if err == nil {
			defer c.Close()
			c.Write([]byte("x"))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if uid, err := PeerUID(c); err != nil || uid != os.Getuid() {
		t.Errorf("PeerUID = %d, %v; want %d", uid, err, os.Getuid())
	}
}

// TestOtherUserRefused: with the file-system layer opened on purpose (the
// directory 0755, the socket 0777), a process of another uid reaches the
// socket, and the credential check alone closes its connection unanswered.
// It needs root to start a process as another user.
func TestOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a child as another uid (run the tests as root, as .ci/run does)")
	}
	// The test binary must be reachable by the other user too.
	world, err := os.MkdirTemp("", "rpctap-ctlsock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(world)
	os.Chmod(world, 0o755)
	exe, _ := os.Executable()
	bin := filepath.Join(world, "helper.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(world, "base")
	l, err := Listen(base)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(base, 0o755)
	os.Chmod(l.Dir(), 0o755)
	os.Chmod(l.Path(), 0o777)
	refused := make(chan int, 1)
	l.Refused = func(uid int, err error) { refused <- uid }
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// An accepted connection (the same user) is answered.
			c.Write([]byte("{\"ok\":true}\n"))
			c.Close()
		}
	}()
	run := func(uid uint32) string {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), "RPCTAP_CTLSOCK_DIAL="+l.Path())
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper as uid %d: %v\n%s", uid, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(65534); got != "closed" {
		t.Errorf("uid 65534: %q, want the connection closed unanswered", got)
	}
	select {
	case uid := <-refused:
		if uid != 65534 {
			t.Errorf("refused uid %d, want 65534", uid)
		}
	case <-time.After(5 * time.Second):
		t.Error("no refusal reported")
	}
	if got := run(0); !strings.HasPrefix(got, "answered") {
		t.Errorf("our own uid: %q, want an answer", got)
	}
}

// TestSweepStale: the directory of a session that died without closing its
// socket is removed by the next Listen; a live one is left alone.
func TestSweepStale(t *testing.T) {
	base := filepath.Join(t.TempDir(), "b")
	live, err := Listen(base)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := Listen(base)
	if err != nil {
		t.Fatal(err)
	}
	// A killed process leaves its socket file: stop listening, keep it.
	dead.ln.SetUnlinkOnClose(false)
	dead.ln.Close()
	if _, err := os.Stat(dead.Path()); err != nil {
		t.Fatalf("the dead socket is gone already: %v", err)
	}
	third, err := Listen(base)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := os.Stat(dead.Dir()); !os.IsNotExist(err) {
		t.Errorf("the dead session's directory is still there: %v", err)
	}
	if _, err := os.Stat(live.Path()); err != nil {
		t.Errorf("the live session's socket was removed: %v", err)
	}
}

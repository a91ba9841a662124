package tap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns a new pseudo-terminal's master and slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	rc, _ := m.SyscallConn()
	var n int
	var ierr error
	rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr == nil {
			n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	})
	if ierr != nil {
		m.Close()
		t.Skipf("pty: %v", ierr)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("pty slave: %v", err)
	}
	return m, s
}

// A SIGINT typed at a terminal goes to the whole foreground process group,
// the child included (no Setpgid): the tap must not relay it a second
// time. It records the signal, saying why it was not relayed.
func TestTerminalSignalNotDoubled(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	obs := filepath.Join(t.TempDir(), "obs.json")
	argv := helperArgv("tap", helperArgv("signals")...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = helperEnv("OBS=" + obs)
	c.ExtraFiles = []*os.File{slave}
	// rpctap in the foreground of its own terminal, as in a shell.
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	in, _ := c.StdinPipe()
	defer in.Close()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	defer c.Process.Kill()
	p := &tapProc{t: t, cmd: c, in: in, out: newLineReader(out), obs: obs}
	p.expectLine("ready")
	// What the terminal does on ^C: signal the foreground group.
	if err := syscall.Kill(-c.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	p.expectLine("SIGINT")
	// Signals aimed at rpctap alone are still relayed.
	c.Process.Signal(syscall.SIGUSR1)
	p.expectLine("SIGUSR1")
	c.Process.Signal(syscall.SIGTERM)
	p.expectLine("SIGTERM")
	if st := p.wait(); st.ExitCode() != 0 {
		t.Errorf("rpctap ended with %v", st)
	}
	d := readDump(t, obs)
	var intEv *Event
	for i, e := range d.Events {
		if e.Kind == "signal" && e.Signal == "SIGINT" {
			intEv = &d.Events[i]
		}
	}
	if intEv == nil || intEv.Msg == "" {
		t.Errorf("SIGINT event %+v: want one saying it was not relayed", intEv)
	}
}

package tap

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rpctap/rpctap/internal/testpeers"
)

// A SIGINT typed at a terminal goes to the whole foreground process group,
// the child included (no Setpgid): the tap must not relay it a second
// time. It records the signal, saying why it was not relayed.
func TestTerminalSignalNotDoubled(t *testing.T) {
	master, slave := testpeers.OpenPTY(t)
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

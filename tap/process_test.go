package tap

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tapProc is the "tap" helper (the tap with a collecting observer, exiting
// like rpctap record) run as a real process between the test and a child.
type tapProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	outF io.ReadCloser
	obs  string // where it dumps what it observed
}

func startTapProc(t *testing.T, env []string, role string, args ...string) *tapProc {
	t.Helper()
	obs := filepath.Join(t.TempDir(), "obs.json")
	argv := helperArgv("tap", helperArgv(role, args...)...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = helperEnv(append([]string{"OBS=" + obs}, env...)...)
	// No controlling terminal: relayed SIGINT/SIGQUIT must not be taken
	// for a terminal's.
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	c.Stderr = os.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := &tapProc{t: t, cmd: c, in: in, out: newLineReader(out), outF: out, obs: obs}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return p
}

func newLineReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }

func (p *tapProc) expectLine(want string) {
	p.t.Helper()
	type res struct {
		s   string
		err error
	}
	c := make(chan res, 1)
	go func() { s, err := p.out.ReadString('\n'); c <- res{s, err} }()
	select {
	case r := <-c:
		if r.s != want+"\n" {
			p.t.Fatalf("read %q (%v), want %q", r.s, r.err, want)
		}
	case <-time.After(10 * time.Second):
		p.t.Fatalf("no %q within 10 s", want)
	}
}

func (p *tapProc) wait() *os.ProcessState {
	p.t.Helper()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		p.t.Fatal("the tap process did not end")
	}
	return p.cmd.ProcessState
}

// rpctap's exit status is the child's; a child killed by a signal kills
// rpctap with the same signal (no stack trace, no 128+n exit).
func TestProcessExitStatus(t *testing.T) {
	for _, want := range []int{0, 3, 7} {
		p := startTapProc(t, nil, "exit", strconv.Itoa(want))
		p.in.Close()
		if got := p.wait().ExitCode(); got != want {
			t.Errorf("child exit %d: rpctap exited %d", want, got)
		}
		d := readDump(t, p.obs)
		if len(d.Events) == 0 || d.Events[len(d.Events)-1].Kind != "exit" || *d.Events[len(d.Events)-1].Exit != want {
			t.Errorf("child exit %d: events %+v", want, d.Events)
		}
	}
	p := startTapProc(t, nil, "killself")
	p.expectLine("dying")
	ws := p.wait().Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("rpctap ended with %v, want death by SIGTERM", p.cmd.ProcessState)
	}
	if d := readDump(t, p.obs); d.Closes != 1 {
		t.Errorf("observer closed %d times before re-raising", d.Closes)
	}
}

// Signals sent to rpctap reach the child, each recorded.
func TestProcessSignalsRelayed(t *testing.T) {
	p := startTapProc(t, nil, "signals")
	p.expectLine("ready")
	sigs := []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM}
	for _, s := range sigs {
		if err := p.cmd.Process.Signal(s); err != nil {
			t.Fatal(err)
		}
		p.expectLine(SignalName(s))
	}
	if st := p.wait(); st.ExitCode() != 0 {
		t.Errorf("rpctap ended with %v, want 0 (the child handled SIGTERM)", st)
	}
	d := readDump(t, p.obs)
	var got []string
	for _, e := range d.Events {
		if e.Kind == "signal" {
			if e.Msg != "" {
				t.Errorf("signal %s: %s", e.Signal, e.Msg)
			}
			got = append(got, e.Signal)
		}
	}
	if strings.Join(got, " ") != "SIGUSR1 SIGUSR2 SIGHUP SIGINT SIGQUIT SIGTERM" {
		t.Errorf("signal events %v", got)
	}
}

// kill -9 of rpctap: the child is not orphaned, it gets SIGTERM.
func TestProcessKill9ChildGetsSIGTERM(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "mark")
	p := startTapProc(t, []string{"MARK=" + mark}, "pdeath")
	p.expectLine("ready")
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(mark); err == nil && string(b) == "SIGTERM\n" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the child did not get SIGTERM after rpctap was killed")
}

// A parent that stops reading stalls the child's writes; rpctap's memory
// stays flat.
func TestProcessBackpressure(t *testing.T) {
	progress := filepath.Join(t.TempDir(), "progress")
	p := startTapProc(t, []string{"PROGRESS=" + progress, "DISCARD=1"}, "flood")
	written := func() int64 {
		b, _ := os.ReadFile(progress)
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n
	}
	// Get going, then stop reading.
	if _, err := io.CopyN(io.Discard, p.out, 32<<20); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	w1, rss1 := written(), vmRSS(t, p.cmd.Process.Pid)
	time.Sleep(1500 * time.Millisecond)
	w2, rss2 := written(), vmRSS(t, p.cmd.Process.Pid)
	t.Logf("stalled: child wrote %d then %d bytes; rpctap RSS %d then %d KiB", w1, w2, rss1, rss2)
	if w2-w1 > 0 {
		t.Errorf("the child wrote %d bytes while nobody read", w2-w1)
	}
	if w2 > 32<<20+4<<20 {
		t.Errorf("%d bytes written for 32 MiB read: more than the pipes and one chunk hold", w2)
	}
	if rss2-rss1 > 2048 {
		t.Errorf("rpctap's RSS grew by %d KiB while stalled", rss2-rss1)
	}
	// Reading again lets the child go on, and memory stays flat.
	if _, err := io.CopyN(io.Discard, p.out, 256<<20); err != nil {
		t.Fatal(err)
	}
	rss3 := vmRSS(t, p.cmd.Process.Pid)
	t.Logf("after 256 MiB more: RSS %d KiB", rss3)
	if rss3-rss1 > 16<<10 {
		t.Errorf("rpctap's RSS grew by %d KiB over 256 MiB", rss3-rss1)
	}
}

func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

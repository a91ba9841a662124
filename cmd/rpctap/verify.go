package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/recorder"
	"github.com/rpctap/rpctap/replay"
	"github.com/rpctap/rpctap/tap"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

type verifyOptions struct {
	replayFlags
	Timeout     time.Duration
	Update      bool
	ChildStderr bool
}

func init() {
	register(&command{
		Name:    "verify",
		Summary: "drive a real child with a recording's parent side and compare",
		Usage:   "verify [flags] CASSETTE -- CMD [ARGS...]",
		Long: `Plays the parent's side of a recording against a real child: each recorded
parent frame is sent once the child frames recorded before it have arrived (or
after --timeout), and everything the child says is compared with the recording
under the same rules as replay (ids mapped; session ids, cwd, timestamps and
--ignore fields left out; values the child made up, such as a new session id,
are carried into the parent frames that follow). Differences are printed on
stdout and make the exit status 1.

--update writes a fresh cassette from the run over CASSETTE instead (like a
golden file's -update): a temporary file, synced, then renamed.
See docs/replay.md.`,
		Example: `  rpctap verify session.cassette -- my-agent --acp
  rpctap verify --timeout 30s --ignore /result/usage session.cassette -- my-agent
  rpctap verify --update session.cassette -- my-agent`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &verifyOptions{}
			fs.DurationVar(&o.Timeout, "timeout", 5*time.Second, "how long to wait for a recorded child frame before going on without it")
			fs.BoolVar(&o.Update, "update", false, "record the run over CASSETTE instead of comparing")
			fs.BoolVar(&o.ChildStderr, "child-stderr", false, "pass the child's stderr through (by default its last lines are shown only on failure)")
			o.define(fs, true)
			o.defineFaults(fs)
			return func(args []string, stdio Stdio) error {
				if len(args) >= 2 && args[1] == "--" {
					args = append(args[:1:1], args[2:]...)
				} else if len(args) >= 2 && strings.HasPrefix(args[1], "-") {
					return Usagef("verify: flags go before the cassette: rpctap verify [flags] CASSETTE -- CMD [ARGS...] (got %s after it)", args[1])
				}
				if len(args) < 2 {
					return Usagef("verify needs a cassette and a command: verify CASSETTE -- CMD [ARGS...]")
				}
				if o.Timeout <= 0 {
					return Usagef("--timeout must be positive")
				}
				opts, err := o.options(fs)
				if err != nil {
					return err
				}
				return runVerify(args[0], args[1:], o, opts, stdio)
			}
		},
	})
}

func runVerify(path string, argv []string, o *verifyOptions, opts []replay.Option, stdio Stdio) error {
	rec, err := replay.Open(path)
	if err != nil {
		return Inputf("verify: %v", err)
	}
	if rec.Truncated != "" && !o.Update {
		fmt.Fprintf(stdio.Err, "rpctap verify: warning: %s is %s; verifying the complete records\n", path, rec.Truncated)
	}
	for _, d := range rec.Damage {
		fmt.Fprintf(stdio.Err, "rpctap verify: %s: %v\n", path, d)
	}
	proto, err := replay.Check(rec, opts...)
	if err != nil {
		return Inputf("verify: %v", err)
	}

	ch, err := startChild(argv)
	if err != nil {
		return err
	}
	var upd *updater
	childOut, childIn, childErr := io.Reader(ch.stdout), io.WriteCloser(ch.stdin), io.Reader(ch.stderr)
	if o.Update {
		upd, err = newUpdater(path, proto, argv, ch.cmd.Process.Pid)
		if err != nil {
			ch.kill()
			ch.wait(o.Timeout)
			return fmt.Errorf("verify --update: %v", err)
		}
		childOut, childIn, childErr = upd.wrap(ch.stdout, ch.stdin, ch.stderr)
	}
	var tail stderrTail
	errDone := make(chan struct{})
	var errDst io.Writer = &tail
	if o.ChildStderr {
		errDst = stdio.Err
	}
	go copyChildStderr(errDst, childErr, errDone)

	report := stdio.Out
	if o.Update {
		report = io.Discard
	}
	opts = append(opts, replay.WithTimeout(o.Timeout), replay.WithReport(report), replay.WithName("rpctap verify"))
	sendSignal := func(name string) error {
		n := unix.SignalNum(name)
		if n == 0 {
			return fmt.Errorf("unknown signal %s", name)
		}
		if upd != nil {
			upd.rec.Event(tap.Event{T: upd.now(), Kind: cassette.EventSignal, Signal: name})
		}
		return ch.cmd.Process.Signal(n)
	}
	res, runErr := replay.RunParent(context.Background(), rec, childOut, childIn, sendSignal, opts...)

	// The child's stdin is closed now; give it the timeout to exit.
	exit, killed := ch.wait(o.Timeout)
	ch.stdout.Close()
	<-errDone

	if upd != nil {
		if err := upd.finish(exit, killed); err != nil {
			return fmt.Errorf("verify --update: %v", err)
		}
		fmt.Fprintf(stdio.Out, "rpctap verify: wrote %s (%d frames)\n", path, upd.frames)
		return nil
	}
	if runErr != nil && res == nil {
		return Inputf("verify: %v", runErr)
	}
	if runErr != nil && !isBrokenPipe(runErr) && !errors.Is(runErr, replay.ErrDiverged) {
		return fmt.Errorf("verify: %v", runErr)
	}
	if len(rec.Damage) > 0 {
		return Inputf("verify: %s: %s; verified every readable record", path, replay.DamageSummary(rec.Damage))
	}
	divs := res.Divergences
	if d, ok := exitDivergence(res.Exit, exit, killed, o.Timeout); ok {
		d.Cassette = path
		divs = append(divs, d)
		fmt.Fprintf(stdio.Out, "rpctap verify: %s\n", d.Message)
	} else if killed {
		fmt.Fprintf(stdio.Out, "rpctap verify: note: the child did not exit within %v after its stdin closed; killed it\n", o.Timeout)
	}
	if len(divs) > 0 {
		if !o.ChildStderr {
			tail.writeTo(stdio.Out)
		}
		return Findingsf("verify: %d difference(s) between %s and %s", len(divs), path, strings.Join(argv, " "))
	}
	fmt.Fprintf(stdio.Out, "rpctap verify: ok: %d child frames matched, %d parent frames sent\n", res.Matched, res.Sent)
	return nil
}

// exitDivergence compares how the live child ended with how the recorded
// one did:
//   - the recorded child exited with a code: the live one must exit by
//     itself, with the same code (a crash, another status, or hanging on
//     after its stdin closed is a difference);
//   - the recorded child died of a signal (its parent or rpctap was killed,
//     as the ACP SDK example client does): the environment did that, so
//     any ending of the live child is accepted but a crash of its own;
//   - no recorded ending (a cassette cut off): only a crash is a difference.
//
// A crash is a death by a signal verify did not send.
func exitDivergence(rec *replay.Exit, live replay.Exit, killed bool, timeout time.Duration) (replay.Divergence, bool) {
	div := func(format string, a ...any) (replay.Divergence, bool) {
		return replay.Divergence{Kind: replay.ExitStatus, Message: fmt.Sprintf(format, a...)}, true
	}
	crashed := live.Signal != "" && !killed
	switch {
	case rec != nil && rec.Signal == "" && killed:
		return div("the child did not exit within %v after its stdin closed (killed it); the recorded child exited with %d", timeout, rec.Code)
	case rec != nil && rec.Signal == "" && crashed:
		return div("the child died of %s; the recorded child exited with %d", live.Signal, rec.Code)
	case rec != nil && rec.Signal == "" && live.Code != rec.Code:
		return div("the child exited with %d, the recorded child with %d", live.Code, rec.Code)
	case crashed:
		return div("the child died of %s", live.Signal)
	}
	return replay.Divergence{}, false
}

// child is the real child verify drives. Its pipes are made with os.Pipe so
// os/exec starts no copy goroutines (see DESIGN.md, the tap's rule 6).
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	exited chan struct{}
	state  *os.ProcessState
}

func startChild(argv []string) (*child, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, &ExitError{Code: ExitNotFound, Err: fmt.Errorf("verify: %s: command not found", argv[0])}
		}
		return nil, &ExitError{Code: ExitNoExec, Err: fmt.Errorf("verify: %s: %v", argv[0], err)}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, &ExitError{Code: ExitNoExec, Err: fmt.Errorf("verify: %s: %v", argv[0], err)}
	}
	c := &child{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, exited: make(chan struct{})}
	go c.reap()
	return c, nil
}

// reap is the goroutine that waits for the child's exit. cmd.Wait returns
// as soon as the child exits: os/exec runs no copy goroutines here (all
// three streams are *os.File), so a grandchild holding a pipe cannot hold
// it up.
func (c *child) reap() {
	c.cmd.Wait()
	c.state = c.cmd.ProcessState
	close(c.exited)
}

// copyChildStderr is the goroutine that copies the child's stderr to dst
// until every writer of the pipe has closed it (the child and any
// grandchild it gave its stderr to), then closes done.
func copyChildStderr(dst io.Writer, src io.Reader, done chan<- struct{}) {
	defer close(done)
	io.Copy(dst, src)
}

// wait waits up to grace for the child to exit, then kills it.
func (c *child) wait(grace time.Duration) (replay.Exit, bool) {
	c.stdin.Close()
	killed := false
	select {
	case <-c.exited:
	case <-time.After(grace):
		killed = true
		c.kill()
		<-c.exited
	}
	ex := replay.Exit{Code: c.state.ExitCode()}
	if ws, ok := c.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ex.Code = 128 + int(ws.Signal())
		ex.Signal = signalName(ws.Signal())
	}
	return ex, killed
}

func (c *child) kill() { c.cmd.Process.Kill() }

func signalName(s syscall.Signal) string { return unix.SignalName(s) }

// stderrTail keeps the last lines of the child's stderr.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 4 << 10

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailBytes {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *stderrTail) writeTo(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) == 0 {
		return
	}
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	fmt.Fprintf(w, "child stderr (last %d lines):\n", len(lines))
	for _, l := range lines {
		fmt.Fprintf(w, "  | %s\n", l)
	}
}

// updater records a verify run into a fresh cassette (verify --update) with
// the recorder, as `rpctap record` would have: it sees the bytes verify
// writes to the child and the bytes it reads back, stamped on one clock.
type updater struct {
	path, tmp string
	rec       *recorder.Recorder
	start     time.Time
	seq       atomic.Uint64
	frames    uint64
	warn      []string
	mu        sync.Mutex
}

func newUpdater(path, proto string, argv []string, pid int) (*updater, error) {
	u := &updater{path: path, start: time.Now()}
	u.tmp = filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.update-%d", filepath.Base(path), os.Getpid()))
	os.Remove(u.tmp)
	cwd, _ := os.Getwd()
	h := cassette.Header{Rpctap: Version, Mode: "stdio", Protocol: proto, Argv: argv, Cwd: cwd}
	w, err := cassette.Create(u.tmp, h, nil)
	if err != nil {
		return nil, err
	}
	u.rec = recorder.New(w, recorder.WithProtocol(proto, true), recorder.WithWarn(func(m string) {
		u.mu.Lock()
		u.warn = append(u.warn, m)
		u.mu.Unlock()
	}))
	u.rec.Event(tap.Event{T: 0, Kind: cassette.EventStart, Argv: argv, Cwd: cwd, PID: pid})
	return u, nil
}

func (u *updater) now() int64 { return int64(time.Since(u.start)) }

func (u *updater) observe(s tap.Stream, p []byte) {
	if len(p) == 0 {
		return
	}
	u.rec.Observe(tap.Chunk{Stream: s, Seq: u.seq.Add(1), T: u.now(), Data: p})
}

// wrap returns the child's streams with every chunk handed to the recorder:
// what verify writes, before it is written (so a reply is never recorded
// before the frame that provoked it); what it reads, once it is read.
func (u *updater) wrap(out io.Reader, in io.WriteCloser, errR io.Reader) (io.Reader, io.WriteCloser, io.Reader) {
	return observedReader{u, out, tap.Stdout}, &observedWriter{u: u, w: in}, observedReader{u, errR, tap.Stderr}
}

type observedReader struct {
	u *updater
	r io.Reader
	s tap.Stream
}

func (o observedReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	o.u.observe(o.s, p[:n])
	return n, err
}

type observedWriter struct {
	u      *updater
	w      io.WriteCloser
	closed bool
}

func (o *observedWriter) Write(p []byte) (int, error) {
	o.u.observe(tap.Stdin, p)
	return o.w.Write(p)
}

func (o *observedWriter) Close() error {
	if !o.closed {
		o.closed = true
		o.u.rec.Event(tap.Event{T: o.u.now(), Kind: cassette.EventStdinEOF})
	}
	return o.w.Close()
}

// finish records the exit, finalizes the cassette (the writer fsyncs it) and
// renames it over the old one.
func (u *updater) finish(ex replay.Exit, killed bool) error {
	ev := tap.Event{T: u.now(), Kind: cassette.EventExit}
	if ex.Signal != "" {
		ev.Signal = ex.Signal
	} else {
		code := ex.Code
		ev.Exit = &code
	}
	u.rec.Event(ev)
	err := u.rec.Close()
	st := u.rec.Stats()
	u.frames = st.Frames
	if err == nil && u.rec.Failed() {
		err = errors.New(strings.Join(u.warn, "; "))
	}
	if err != nil {
		os.Remove(u.tmp)
		return err
	}
	if err := os.Rename(u.tmp, u.path); err != nil {
		os.Remove(u.tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(u.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

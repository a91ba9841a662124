package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/recorder"
	"github.com/rpctap/rpctap/internal/safefile"
	"github.com/rpctap/rpctap/replay"
	"github.com/rpctap/rpctap/tap"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

type verifyOptions struct {
	replayFlags
	Timeout     time.Duration
	Update      bool
	Force       bool
	ChildStderr bool
}

func init() {
	register(&command{
		Name:      "verify",
		ChildArgs: true,
		Summary:   "drive a real child with a recording's parent side and compare",
		Usage:     "verify [flags] CASSETTE -- CMD [ARGS...]",
		Long: `Plays the parent's side of a recording against a real child: each recorded
parent frame is sent once the child frames recorded before it have arrived (or
after --timeout), and everything the child says is compared with the recording
under the same rules as replay (ids mapped; session ids, cwd, timestamps and
--ignore fields left out; values the child made up, such as a new session id,
are carried into the parent frames that follow). Differences are printed on
stdout and make the exit status 1.

--update writes a fresh cassette from the run over CASSETTE instead (like a
golden file's -update): a temporary file beside it, synced, read back to its
end record, then renamed (a symlink is written through). It takes only the
differences it is there to accept, in what the child says: a run whose child
crashed, was killed after --timeout, exited otherwise than recorded, or left
recorded frames unsent (it stopped reading, or never sent frames it sent in
the recording) leaves CASSETTE as it was and exits 1, unless --force says to
take it anyway. --update with --fault or
--faults is refused: a run with injected faults is no reference.
See docs/replay.md.`,
		Example: `  rpctap verify session.cassette -- my-agent --acp
  rpctap verify --timeout 30s --ignore /result/usage session.cassette -- my-agent
  rpctap verify --update session.cassette -- my-agent`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &verifyOptions{}
			fs.DurationVar(&o.Timeout, "timeout", 5*time.Second, "how long to wait for a recorded child frame before going on without it")
			fs.BoolVar(&o.Update, "update", false, "record the run over CASSETTE instead of comparing (refused for a crashed, killed, differently exiting or stalled child unless --force)")
			fs.BoolVar(&o.Force, "force", false, "with --update: take the run even when the child crashed, was killed, exited otherwise than recorded or left recorded frames unsent")
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
				if o.Force && !o.Update {
					return Usagef("--force goes with --update (it takes a run --update would refuse)")
				}
				if o.Update && (len(o.Fault) > 0 || o.FaultsFile != "") {
					return Usagef("verify: --update with --fault or --faults is refused: a run with injected faults would replace %s with a broken session", args[0])
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
	if conns := rec.Conns(); rec.Header.Mode == "socket" && !o.connSet() && len(conns) > 1 {
		return Usagef("verify: %s is a socket-mode recording of %d connections (%s): choose one with --conn N", path, len(conns), joinConns(conns))
	}
	conn := o.Conn
	if !o.connSet() {
		if cs := rec.Conns(); len(cs) > 0 {
			conn = cs[0]
		}
	}
	if err := faultsCanFire("verify", o.faults, cassette.DirIn, rec.Records, conn); err != nil {
		return err
	}
	proto, err := replay.Check(rec, opts...)
	if err != nil {
		return Inputf("verify: %v", err)
	}

	var upd *updater
	var obs tap.Observer
	if o.Update {
		if upd, err = newUpdater(path, proto, argv); err != nil {
			return fmt.Errorf("verify --update: %v", err)
		}
		obs = upd.rec
	}
	ch, err := startChild(argv, obs)
	if err != nil {
		if upd != nil {
			upd.abandon()
		}
		return err
	}
	childOut, childIn, childErr := io.Reader(ch.stdout), io.WriteCloser(ch.stdin), io.Reader(ch.stderr)
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
	sent := map[string]bool{} // the signals verify delivered, as recorded
	sendSignal := func(name string) error {
		n := unix.SignalNum(name)
		if n == 0 {
			return fmt.Errorf("unknown signal %s", name)
		}
		// Recorded in its place among the chunks, before it is sent.
		ch.cmd.Note(tap.Event{Kind: cassette.EventSignal, Signal: name})
		err := ch.cmd.Process.Signal(n)
		if errors.Is(err, os.ErrProcessDone) {
			return nil // the child exited first: nothing to end
		}
		if err == nil {
			sent[name] = true
		}
		return err
	}
	res, runErr := replay.RunParent(context.Background(), rec, childOut, childIn, sendSignal, opts...)

	// The child's stdin is closed now; give it the timeout to exit.
	exit, killed := ch.wait(o.Timeout)
	ch.stdout.Close()
	<-errDone

	if upd != nil {
		why := worseRun(rec, res, runErr, exit, killed, sent[exit.Signal], o)
		if why != "" && !o.Force {
			upd.abandon()
			return Findingsf("verify --update: %s; %s left as it was (add --force to take this run anyway)", why, path)
		}
		if err := upd.finish(); err != nil {
			return writeFailed("verify --update", err)
		}
		if why != "" {
			fmt.Fprintf(stdio.Err, "rpctap verify: warning: --force took a run in which %s\n", why)
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
	if d, ok := exitDivergence(res.Exit, exit, killed, sent[exit.Signal], o.Timeout); ok {
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
// A crash is a death by a signal verify did not send. sentSig says verify
// sent the signal the live child died of, as the recording has its parent
// doing: that death is the recorded outcome when the recorded child died of
// a signal too (its parent ended it: the MCP Go SDK client sends SIGTERM to
// a server still there after its stdin closed), and a difference when the
// recorded child outlived the signal and exited with a code.
func exitDivergence(rec *replay.Exit, live replay.Exit, killed, sentSig bool, timeout time.Duration) (replay.Divergence, bool) {
	div := func(format string, a ...any) (replay.Divergence, bool) {
		return replay.Divergence{Kind: replay.ExitStatus, Message: fmt.Sprintf(format, a...)}, true
	}
	crashed := live.Signal != "" && !killed && !sentSig
	switch {
	case rec != nil && rec.Signal == "" && killed:
		return div("the child did not exit within %v after its stdin closed (killed it); the recorded child exited with %d", timeout, rec.Code)
	case rec != nil && rec.Signal == "" && crashed:
		return div("the child died of %s; the recorded child exited with %d", live.Signal, rec.Code)
	case rec != nil && rec.Signal == "" && live.Signal != "" && !killed:
		return div("the child died of %s, which verify sent as recorded; the recorded child outlived it and exited with %d", live.Signal, rec.Code)
	case rec != nil && rec.Signal == "" && live.Code != rec.Code:
		return div("the child exited with %d, the recorded child with %d", live.Code, rec.Code)
	case crashed:
		return div("the child died of %s", live.Signal)
	}
	return replay.Divergence{}, false
}

// worseRun says why a verify --update run is worse than the recording it
// would replace ("" when it is not): --update accepts what the child says
// differently, not a child that crashed, hung past the timeout, exited
// otherwise than recorded, stopped reading before every recorded parent
// frame was sent, or never sent frames it sent in the recording (a live
// frame that differs from its recorded one is a mismatch, not missing: that
// is what --update is for). sentSig is exitDivergence's: verify sent the
// signal the live child died of, as recorded.
func worseRun(rec *replay.Recording, res *replay.Result, runErr error, live replay.Exit, killed, sentSig bool, o *verifyOptions) string {
	if runErr != nil && res == nil {
		return fmt.Sprintf("the run failed (%v)", runErr)
	}
	if d, ok := exitDivergence(res.Exit, live, killed, sentSig, o.Timeout); ok {
		return d.Message
	}
	if killed {
		return fmt.Sprintf("the child did not exit within %v after its stdin closed (killed it)", o.Timeout)
	}
	if want := recordedParentFrames(rec, o); res.Sent < want {
		return fmt.Sprintf("%d of %d recorded parent frames were never sent (the child stopped reading or exited early)", want-res.Sent, want)
	}
	missing := res.Unlisted
	for _, d := range res.Divergences {
		if d.Kind == replay.Missing {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Sprintf("%d recorded child frame(s) were never sent by the child (it stalled, or stopped answering)", missing)
	}
	if runErr != nil && !errors.Is(runErr, replay.ErrDiverged) {
		return fmt.Sprintf("the run failed (%v)", runErr)
	}
	return ""
}

// recordedParentFrames counts the parent's messages in the connection
// verify plays (an over-long line stored in parts counts once).
func recordedParentFrames(rec *replay.Recording, o *verifyOptions) int {
	conn := o.Conn
	if !o.connSet() {
		if cs := rec.Conns(); len(cs) > 0 {
			conn = cs[0]
		}
	}
	n := 0
	for i := range rec.Records {
		r := &rec.Records[i]
		if r.K == cassette.KindFrame && r.D == cassette.DirIn && !r.Part && r.Conn == conn {
			n++
		}
	}
	return n
}

// child is the real child verify drives. It is started through tap, the one
// spawning path `rpctap record` uses too (the same command lookup and exit
// codes, Pdeathsig so that a killed verify takes its child along, the drain
// after the exit, the exit event last); verify's engine is the tap's parent,
// on the other ends of three pipes. Pipes made with os.Pipe: no copy
// goroutines (DESIGN.md, the tap's rule 6).
type child struct {
	cmd    *tap.Cmd
	stdin  *os.File      // verify writes the child's stdin here; closing it passes EOF on
	stdout *os.File      // the child's stdout, as the tap forwards it
	stderr *os.File      // the child's stderr, likewise
	exited chan struct{} // closed once the tap's Wait returned (the child exited, its output drained)
}

// startChild starts argv through tap with obs (nil: none) observing what
// crosses, as a recording would.
func startChild(argv []string, obs tap.Observer) (*child, error) {
	var fds [6]*os.File // parent ends: in-read, in-write, out-read, out-write, err-read, err-write
	closeAll := func() {
		for _, f := range fds {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		fds[i], fds[i+1] = r, w
	}
	tuneForwarding()
	c := tap.Command(argv[0], argv[1:]...)
	c.Signals = nil // verify sends the recorded signals itself
	c.Stdin, c.Stdout, c.Stderr = fds[0], fds[3], fds[5]
	c.Observer = obs
	err := c.Start()
	// The tap holds duplicates of its ends.
	fds[0].Close()
	fds[3].Close()
	fds[5].Close()
	if err != nil {
		fds[1].Close()
		fds[2].Close()
		fds[4].Close()
		var se *tap.StartError
		switch {
		case errors.As(err, &se) && se.NotFound():
			return nil, &ExitError{Code: ExitNotFound, Err: fmt.Errorf("verify: %s: command not found", argv[0])}
		case errors.As(err, &se):
			return nil, &ExitError{Code: ExitNoExec, Err: fmt.Errorf("verify: %v", se)}
		}
		return nil, &ExitError{Code: ExitNoExec, Err: fmt.Errorf("verify: %s: %v", argv[0], err)}
	}
	ch := &child{cmd: c, stdin: fds[1], stdout: fds[2], stderr: fds[4], exited: make(chan struct{})}
	go ch.reap()
	return ch, nil
}

// reap is the goroutine that waits for the tap: the child's exit, the drain
// of its output (at most the tap's grace), the observer's close.
func (c *child) reap() {
	c.cmd.Wait()
	close(c.exited)
}

// copyChildStderr is the goroutine that copies the child's stderr to dst
// until the tap closed its end, then closes done.
func copyChildStderr(dst io.Writer, src io.Reader, done chan<- struct{}) {
	defer close(done)
	io.Copy(dst, src)
}

// wait closes the child's stdin, waits up to grace for the child to exit,
// then kills it.
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
	code, sig := tap.Status(c.cmd.ProcessState)
	ex := replay.Exit{Code: code}
	if sig != 0 {
		ex.Code = 128 + int(sig)
		ex.Signal = tap.SignalName(sig)
	}
	return ex, killed
}

func (c *child) kill() { c.cmd.Process.Kill() }

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
// the recorder, as `rpctap record` would have: it observes the tap that
// runs the child (the bytes verify writes, the bytes the child answers,
// its start, stdin EOF, signals and exit, on the tap's one clock), then
// renames the finished cassette over the old one.
type updater struct {
	path, tmp string
	rec       *recorder.Recorder
	frames    uint64
	warn      []string
	mu        sync.Mutex
}

func newUpdater(path, proto string, argv []string) (*updater, error) {
	u := &updater{path: path}
	tmp, err := safefile.Beside(path)
	if err != nil {
		return nil, err
	}
	u.tmp = tmp
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
	return u, nil
}

// abandon drops the cassette of a run that did not start.
func (u *updater) abandon() {
	u.rec.Close()
	safefile.Discard(u.tmp)
}

// finish puts the cassette the tap finalized (its Wait closed the recorder,
// whose writer fsyncs the file) in place of the old one, once it reads to
// its end record.
func (u *updater) finish() error {
	err := u.rec.Close() // a no-op after the tap's close; its error again
	st := u.rec.Stats()
	u.frames = st.Frames
	if err == nil && u.rec.Failed() {
		err = errors.New(strings.Join(u.warn, "; "))
	}
	if err != nil {
		safefile.Discard(u.tmp)
		return err
	}
	return safefile.Commit(u.tmp, u.path, safefile.Options{Verify: completeCassette})
}

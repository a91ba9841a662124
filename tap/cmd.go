package tap

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultGrace is how long Wait lets the child's stdout and stderr drain
// after the child exited, when Cmd.Grace is zero. It bounds the time a
// grandchild that inherited the child's stdout (and never closes it), or a
// parent that stopped reading, can keep the tap alive.
const DefaultGrace = 2 * time.Second

// MinProcs is the least GOMAXPROCS a process running a tap should have:
// each pump sleeps in a system call on its own locked thread, and a thread
// in a system call keeps its P until the runtime's monitor takes it back
// (milliseconds); with at least MinProcs Ps a pump waking up always finds
// an idle one. The tap leaves GOMAXPROCS to its caller (`rpctap record`
// raises it); with fewer Ps it works, with more latency.
const MinProcs = 8

// ForwardedSignals are the signals Command relays to the child.
var ForwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// Cmd is a child process run behind the tap: the parent's stdin is copied to
// the child's stdin, the child's stdout and stderr to the parent's, and every
// chunk is handed to Observer after it was forwarded.
//
// Cmd is used like an os/exec.Cmd: fill it (or use Command), call Start and
// Wait, or Run. A Cmd cannot be reused.
//
// # Pipes and goroutines
//
// The child's three pipes are made with os.Pipe and given to the child as
// files, so os/exec starts no copy goroutines of its own (whose Wait would
// hang while the parent's stdin stays open). The tap runs exactly one
// goroutine per stream (stdinPump, and a childOutputPump each for stdout and stderr), one reaper that
// starts and waits for the child, and Wait's own loop.
//
// # Process group and signals
//
// The child stays in rpctap's process group (no Setpgid), as it would be if
// the parent ran it through a plain pipe: a terminal's Ctrl-C or Ctrl-\ and a
// kill(2) aimed at the group reach the child directly, and a child that reads
// the terminal is not stopped as a background job. Signals sent to rpctap's
// pid alone are relayed (Signals; Command sets ForwardedSignals). To avoid
// a double delivery, SIGINT and SIGQUIT are not relayed while rpctap's
// process group is the foreground group of its controlling terminal: the
// terminal sent them to the whole group, the child included. (The price: a
// kill -INT aimed at rpctap's pid while it runs in the foreground of a
// terminal is not relayed.) A signal that was ignored when rpctap started
// (nohup) is left ignored and not relayed. Signals are never sent once the
// child was reaped.
//
// On Linux the child is started with Pdeathsig SIGTERM from an OS thread
// that stays locked until the child is reaped, so if rpctap is killed
// (even by SIGKILL) the child gets SIGTERM instead of being orphaned.
//
// # Deadlocks
//
//   - A parent that stops reading stalls the stdout pump in its write, which
//     stops it reading the child's stdout, which blocks the child's writes:
//     backpressure, as with a plain pipe. Likewise for stdin and stderr.
//   - An Observer whose Observe blocks stalls that stream (that is how a
//     lossless recorder slows forwarding). An Observe that never returns
//     stalls the stream for good and makes Wait block in Observer.Close.
//   - A child that ignores stdin EOF keeps Wait waiting, as a pipe would.
//   - After the child exited, Wait drains stdout and stderr for at most
//     Grace; then it cuts the pumps loose (a cutter their poll(2) sees) and
//     returns. A pump asleep in a write(2) to a descriptor of the parent's
//     that is in blocking mode (a parent that stopped reading) cannot be
//     woken: it is abandoned, not waited for, and closes its descriptors
//     when that write returns; it forwards nothing more.
//
// # Threads
//
// Each pump runs on its own locked OS thread and uses plain poll(2),
// read(2) and write(2) system calls (see rawFD), as cat does: a hop of a
// small frame costs one thread wake-up instead of the runtime poller's
// failed read, park, epoll wake-up and goroutine switch. Run it with
// GOMAXPROCS at least MinProcs so that pumps asleep in system calls never
// hold every P (the caller sets it: process-wide settings are the
// command's).
//
// # Order
//
// Every chunk gets a Seq and T when its read returned; every event (start,
// stdin-eof, signal, exit) takes its place in that order too (Event.Seq),
// and reaches the observer before any chunk read after it (with
// ObserveFirst, also after every chunk read before it). The stdin-eof event
// is taken before the EOF is passed on to the child, a signal event before
// the signal is sent, and the exit event after the child's stdout and
// stderr were drained (T: when the child was reaped, or the last chunk's T
// if that is later), so exit is always the last event.
type Cmd struct {
	Path string   // the command; looked up in PATH like exec.Command does
	Args []string // Args[0] is the command name as given
	Dir  string   // the child's working directory; "" is rpctap's
	Env  []string // the child's environment; nil is rpctap's

	// The parent's side of the three streams; nil means os.Stdin,
	// os.Stdout, os.Stderr. The tap uses duplicates of their descriptors
	// and never changes their flags: blocking or not, they stay as the
	// parent set them (see rawFD).
	Stdin, Stdout, Stderr *os.File

	Observer Observer // receives what was forwarded; may be nil

	// ObserveFirst hands each chunk to the Observer just before it is
	// forwarded instead of just after. Use it only with an observer whose
	// Observe is a bounded hand-over to the kernel, such as the recorder's
	// PipeObserver (one writev to the sink's pipe): then a chunk is out of
	// rpctap's memory before the other side can read it, and a parent that
	// SIGKILLs rpctap the instant it reads the last reply cannot make the
	// recording lose that reply. After-forwarding leaves a window of a few
	// microseconds in which it can (measured: 2 and 5 of 50 ACP SDK
	// sessions lost their last frame on a loaded 2-core machine; 0 of 50
	// with ObserveFirst). Framing, validation and compression stay off the
	// forwarding path either way. In lossless mode a full observer pipe
	// then holds the current chunk back rather than the next one. A chunk
	// whose forwarding then fails (the reader went away) is observed whole.
	ObserveFirst bool

	// Epoch is the instant Chunk.T and Event.T count from; zero means when
	// Start is called. record sets it to the instant its cassette header
	// names as created, taken before it starts the recorder, so that
	// created + T is the wall-clock time of every record (linked
	// recordings of record --deep are lined up that way). It must not be
	// after Start.
	Epoch time.Time

	// WakeStdin lets the tap read the parent's stdin without a poll(2)
	// before each read (one system call less per hop, as cat reads), when
	// stdin is a pipe on Linux. To end a read left blocked there when the
	// child exits, the tap then writes one byte into that pipe; the byte, and
	// whatever is read with it after the child exited, is dropped. Set it only
	// when nothing reads that stdin after the tap, as in `rpctap record`,
	// which exits with its child; otherwise the stdin pump polls and stdin is
	// never written to. (The child's stdout and stderr are the tap's own pipes
	// and are always read this way where possible.)
	WakeStdin bool

	// StdoutFilter, when set, wraps the writer the child's stdout is
	// forwarded to: the one exception to byte-exact forwarding, for
	// `rpctap record --fault` only. The filter's Write runs on the stdout
	// pump and may block it (backpressure, as any write); a Flush method,
	// if it has one, is called once when the child's stdout ends. nil (the
	// default) leaves the forwarding path as it is.
	StdoutFilter func(io.Writer) io.Writer

	// Intercept, when set, takes the parent's stdin and the child's stdout
	// through an Interceptor (`rpctap record --intercept`); see
	// Interceptor. nil (the default) leaves the forwarding path as it is.
	Intercept Interceptor

	Grace   time.Duration // drain time after the child exited; 0 is DefaultGrace
	Signals []os.Signal   // signals to relay to the child; nil relays none

	// Warn receives rpctap's own warnings, one line each (a failing
	// observer). nil means Stderr.
	Warn io.Writer

	Process      *os.Process      // the child, once started
	ProcessState *os.ProcessState // how it ended, once Wait returned

	s       *session
	started bool
	in      *parentEnd
	out     *parentEnd
	errOut  *parentEnd
	inW     *rawFD  // our end of the child's stdin
	outR    *rawFD  // our end of the child's stdout
	errR    *rawFD  // our end of the child's stderr
	cutIn   *cutter // cuts stdinPump loose (the child exited)
	cutOut  *cutter // cuts the stdout and stderr pumps loose (the grace ran out)
	sigc    chan os.Signal
	exitc   chan reaped
	tty     *os.File
	pumpsIn chan struct{} // closed when stdinPump is done
	pumpsOE sync.WaitGroup
}

// Note records an event of the caller's (a fault `rpctap record --fault`
// injected) in the read order, after the chunks read so far. It may be
// called from a StdoutFilter.
func (c *Cmd) Note(e Event) { c.s.event(e) }

// Command returns a Cmd that runs name with args and relays
// ForwardedSignals.
func Command(name string, arg ...string) *Cmd {
	return &Cmd{Path: name, Args: append([]string{name}, arg...), Signals: ForwardedSignals}
}

// StartError reports that the child could not be started.
type StartError struct {
	Name string // the command as given
	Err  error
}

func (e *StartError) Error() string {
	switch {
	case e.NotFound():
		return e.Name + ": command not found"
	case e.NotExecutable():
		return e.Name + ": permission denied (not executable)"
	}
	return fmt.Sprintf("%s: cannot start: %v", e.Name, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// NotFound reports whether the command does not exist (shells exit 127).
func (e *StartError) NotFound() bool {
	return errors.Is(e.Err, exec.ErrNotFound) || errors.Is(e.Err, fs.ErrNotExist)
}

// NotExecutable reports whether the command exists but cannot be executed
// (shells exit 126).
func (e *StartError) NotExecutable() bool {
	return !e.NotFound() && (errors.Is(e.Err, fs.ErrPermission) ||
		errors.Is(e.Err, syscall.ENOEXEC) || errors.Is(e.Err, syscall.EISDIR))
}

// LookPath resolves name as Start would, returning a *StartError when it
// cannot be run. It lets a caller fail before setting up a recording.
func LookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return "", &StartError{Name: name, Err: err}
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", &StartError{Name: name, Err: err}
	}
	if st.IsDir() {
		return "", &StartError{Name: name, Err: syscall.EISDIR}
	}
	if st.Mode()&0o111 == 0 {
		return "", &StartError{Name: name, Err: fs.ErrPermission}
	}
	return p, nil
}

// Run starts the child and waits for it; see Start and Wait.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

type reaped struct {
	state *os.ProcessState
	err   error
	t     int64 // when it was reaped, on the session's clock
}

// Start starts the child and the pumps. If it fails, the parent's streams are
// closed and Observer.Close is called (so a recorder is always finalized
// exactly once); the error is a *StartError when the command could not be
// started.
func (c *Cmd) Start() (err error) {
	if c.started {
		return errors.New("tap: Start called twice")
	}
	c.started = true
	if len(c.Args) == 0 {
		c.Args = []string{c.Path}
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.Stdin == nil {
		c.Stdin = os.Stdin
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.Warn == nil {
		c.Warn = c.Stderr
	}
	c.s = newSession(c.Observer, c.Warn, c.Epoch)
	c.s.first = c.ObserveFirst

	var closers []io.Closer
	defer func() {
		if err != nil {
			for _, cl := range closers {
				cl.Close()
			}
			c.restore()
			if c.sigc != nil {
				signal.Stop(c.sigc)
			}
			c.s.close()
		}
	}()

	if c.cutIn, err = newCutter(2); err != nil { // stdinPump, Wait
		return fmt.Errorf("tap: %w", err)
	}
	if c.cutOut, err = newCutter(3); err != nil { // the stdout and stderr pumps, Wait
		c.cutIn.release()
		c.cutIn.release()
		return fmt.Errorf("tap: %w", err)
	}
	cutters := []*cutter{c.cutIn, c.cutIn, c.cutOut, c.cutOut, c.cutOut}
	defer func() {
		if err != nil {
			for _, cu := range cutters {
				cu.release()
			}
		}
	}()

	if c.in, err = openParentEnd(c.Stdin); err != nil {
		return fmt.Errorf("tap: stdin: %w", err)
	}
	if c.out, err = openParentEnd(c.Stdout); err != nil {
		return fmt.Errorf("tap: stdout: %w", err)
	}
	if c.errOut, err = openParentEnd(c.Stderr); err != nil {
		return fmt.Errorf("tap: stderr: %w", err)
	}
	c.in.cut, c.out.cut, c.errOut.cut = c.cutIn, c.cutOut, c.cutOut
	c.in.mayRing = c.WakeStdin

	var ours []int
	defer func() {
		if err != nil {
			for _, fd := range ours {
				unix.Close(fd)
			}
		}
	}()
	inR, inW, err := rawPipe(true)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	closers, ours = append(closers, inR), append(ours, inW)
	outW, outR, err := rawPipe(false)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	closers, ours = append(closers, outW), append(ours, outR)
	errW, errR, err := rawPipe(false)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	closers, ours = append(closers, errW), append(ours, errR)

	// Subscribe before starting, so a signal that arrives while the child
	// starts is relayed once it runs rather than killing rpctap.
	var relay []os.Signal
	for _, s := range c.Signals {
		if !signal.Ignored(s) {
			relay = append(relay, s)
		}
	}
	if len(relay) > 0 {
		c.sigc = make(chan os.Signal, 16)
		signal.Notify(c.sigc, relay...)
		c.tty = openTTY()
		if c.tty != nil {
			closers = append(closers, c.tty)
		}
	}

	ec := exec.Command(c.Path)
	ec.Args = c.Args
	ec.Dir = c.Dir
	ec.Env = c.Env
	ec.Stdin, ec.Stdout, ec.Stderr = inR, outW, errW
	ec.SysProcAttr = sysProcAttr()
	if ec.Err != nil {
		var ee *exec.Error
		lerr := ec.Err
		if errors.As(lerr, &ee) {
			lerr = ee.Err
		}
		return &StartError{Name: c.Path, Err: lerr}
	}

	startc := make(chan error, 1)
	c.exitc = make(chan reaped, 1)
	go (&reaper{cmd: ec, started: startc, exited: c.exitc, now: c.s.now}).run()
	if err := <-startc; err != nil {
		return &StartError{Name: c.Path, Err: err}
	}
	c.Process = ec.Process

	// The child holds its ends now; ours would keep its stdin from seeing
	// EOF and its stdout from ever ending.
	inR.Close()
	outW.Close()
	errW.Close()
	c.inW, c.outR, c.errR = newRawFD(inW, c.cutIn), newRawFD(outR, c.cutOut), newRawFD(errR, c.cutOut)
	c.outR.mayRing, c.errR.mayRing = true, true

	cwd := c.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	c.s.event(Event{Kind: "start", Argv: append([]string(nil), c.Args...), Cwd: cwd, PID: ec.Process.Pid})

	c.pumpsIn = make(chan struct{})
	c.pumpsOE.Add(2)
	in := &stdinPump{pump: pump{s: c.s, stream: Stdin, src: c.in.rawFD, dst: c.inW}, inW: c.inW, parent: c.in, done: c.pumpsIn, cut: c.cutIn}
	var stdoutDst io.Writer = c.out.rawFD
	if c.StdoutFilter != nil {
		stdoutDst = c.StdoutFilter(stdoutDst)
	}
	out := &childOutputPump{pump{s: c.s, stream: Stdout, src: c.outR, dst: stdoutDst}, c.out, &c.pumpsOE, c.cutOut}
	if c.Intercept != nil {
		in.dst = c.Intercept.Wrap(Stdin, in.forwarder(c.inW))
		out.dst = c.Intercept.Wrap(Stdout, out.forwarder(stdoutDst))
		in.intercepted, out.intercepted = true, true
		watchHangup(c.in.fd, c.pumpsIn, c.Intercept.Release)
	}
	go in.run()
	go out.run()
	go (&childOutputPump{pump{s: c.s, stream: Stderr, src: c.errR, dst: c.errOut.rawFD}, c.errOut, &c.pumpsOE, c.cutOut}).run()
	return nil
}

// reaper starts the child from an OS thread it keeps locked until the child
// was reaped: Pdeathsig fires when the thread that forked the child exits,
// so that thread must live exactly as long as the child is ours.
type reaper struct {
	cmd     *exec.Cmd
	started chan<- error
	exited  chan<- reaped
	now     func() int64
}

func (r *reaper) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := r.cmd.Start(); err != nil {
		r.started <- err
		return
	}
	r.started <- nil
	// With *os.File streams Wait starts no copy goroutines: it only waits.
	err := r.cmd.Wait()
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		err = nil
	}
	r.exited <- reaped{state: r.cmd.ProcessState, err: err, t: r.now()}
}

// Wait relays signals until the child exits, drains its stdout and stderr
// for at most Grace, records the exit event, calls Observer.Close and
// returns. The child's exit status is in ProcessState; Wait's error is only
// about the tap itself (a non-zero exit is not an error).
func (c *Cmd) Wait() error {
	if c.s == nil || c.Process == nil {
		return errors.New("tap: Wait called without a successful Start")
	}
	var r reaped
loop:
	for {
		select {
		case sig := <-c.sigc:
			c.relay(sig)
		case r = <-c.exitc:
			break loop
		}
	}
	c.ProcessState = r.state
	if c.Intercept != nil {
		// Held frames go first (to a child that is gone, or to the
		// parent), and nothing is held from now on: the drain below
		// must not wait for a user.
		c.Intercept.Release()
	}
	defer c.cutIn.release()
	defer c.cutOut.release()

	// Nothing the parent still sends can reach the child: stop reading it.
	c.cutIn.fire()

	grace := time.NewTimer(c.Grace)
	defer grace.Stop()
	drained := make(chan struct{})
	go func() { c.pumpsOE.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-grace.C:
		// A grandchild holds stdout open, or the parent does not read.
		c.cutOut.fire()
	}
	// Pumps cut loose return at once unless they sleep in a write(2) to a
	// descriptor in blocking mode; such a pump is abandoned (see Cmd).
	abandon := time.NewTimer(250 * time.Millisecond)
	defer abandon.Stop()
	select {
	case <-drained:
	case <-abandon.C:
	}
	select {
	case <-c.pumpsIn:
	case <-abandon.C:
	}

	// The exit event comes after the child's last output: its time is
	// when the child was reaped, or the last chunk's if that was later
	// (the drain may read output written just before the exit after the
	// reaper saw it).
	ev := Event{Kind: "exit", T: r.t}
	if code, sig := Status(r.state); sig != 0 {
		ev.Signal = SignalName(sig)
	} else {
		ev.Exit = &code
	}
	c.s.event(ev)

	if c.sigc != nil {
		signal.Stop(c.sigc)
	}
	if c.tty != nil {
		c.tty.Close()
	}
	cerr := c.s.close()
	// Each pump closes its own descriptors when it returns (an abandoned
	// one, later): none is closed under a pump that may still use it.
	if r.err != nil {
		return fmt.Errorf("tap: wait: %w", r.err)
	}
	_ = cerr // the observer reported its own trouble as a warning
	return nil
}

// relay forwards one signal to the child and records it.
func (c *Cmd) relay(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	// The event takes its place in the read order before the signal is
	// sent, so what the child writes in reply is recorded after it.
	c.s.ordered(func(seq uint64, t int64) {
		ev := Event{Kind: "signal", Signal: SignalName(s)}
		if (s == syscall.SIGINT || s == syscall.SIGQUIT) && ttyForeground(c.tty) {
			ev.Msg = "not relayed: the terminal sent it to the child's process group too"
		} else if err := c.Process.Signal(s); err != nil {
			// os.ErrProcessDone: the child is exiting; the exit event follows.
			ev.Msg = "not relayed: " + err.Error()
		}
		c.s.deliver(ev, seq, t)
	})
}

func (c *Cmd) restore() {
	for _, p := range []*parentEnd{c.in, c.out, c.errOut} {
		if p != nil {
			p.close()
		}
	}
}

// session is what the pumps of one child (or all connections of a socket
// tap) share: the clock, the read counter and the guarded observer.
type session struct {
	start time.Time

	// order makes the read order total across chunks and events. A pump
	// holds it shared while it stamps a chunk (and, with ObserveFirst,
	// until the chunk was handed to the observer); an event holds it
	// exclusively from its stamp until the observer has it. So every
	// chunk stamped before an event reached the observer before it, and
	// every chunk stamped after it reaches the observer after it: an
	// observer that places an event after the highest Seq observed so far
	// places it exactly (see Event.Seq).
	order   sync.RWMutex
	stampMu sync.Mutex // seq and lastT, under order
	seq     uint64
	lastT   int64 // T of the latest stamp: T never decreases along Seq

	first  bool         // observe before forwarding (Cmd.ObserveFirst)
	mu     sync.RWMutex // Observe/Event hold it shared; close exclusively
	obs    Observer
	closed bool
	failed atomic.Bool
	warn   io.Writer
}

// newSession starts a session whose times count from epoch (now when it
// is zero).
func newSession(obs Observer, warn io.Writer, epoch time.Time) *session {
	if epoch.IsZero() || epoch.After(time.Now()) {
		epoch = time.Now()
	}
	return &session{start: epoch, obs: obs, warn: warn}
}

func (s *session) now() int64 { return int64(time.Since(s.start)) }

// stamp gives a chunk its Seq and T; call it with order held (shared).
func (s *session) stamp(conn int, stream Stream, data []byte) Chunk {
	s.stampMu.Lock()
	s.seq++
	t := max(s.now(), s.lastT)
	s.lastT = t
	c := Chunk{Conn: conn, Stream: stream, Seq: s.seq, T: t, Data: data}
	s.stampMu.Unlock()
	return c
}

// ordered runs f at one point of the read order, with the Seq of the last
// chunk stamped so far and the time (never less than that chunk's T); no
// chunk is stamped while f runs.
func (s *session) ordered(f func(seq uint64, t int64)) {
	s.order.Lock()
	defer s.order.Unlock()
	s.stampMu.Lock()
	seq, t := s.seq, max(s.now(), s.lastT)
	s.stampMu.Unlock()
	f(seq, t)
}

// event records e at this point of the read order (its Seq), at e.T if set
// (clamped to no less than the last chunk's T), else now.
func (s *session) event(e Event) {
	s.ordered(func(seq uint64, t int64) { s.deliver(e, seq, t) })
}

// deliver hands e to the observer with its place in the read order; call it
// from inside ordered.
func (s *session) deliver(e Event, seq uint64, now int64) {
	e.Seq = seq
	if e.T == 0 {
		e.T = now
	}
	s.stampMu.Lock()
	e.T = max(e.T, s.lastT)
	s.lastT = e.T
	s.stampMu.Unlock()
	s.observeEvent(e)
}

// observe hands a forwarded chunk to the observer. A panicking observer is
// switched off with one warning: the session goes on, forwarding only.
func (s *session) observe(c Chunk) {
	if s.obs == nil || s.failed.Load() {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	defer s.recoverObserver()
	s.obs.Observe(c)
}

func (s *session) observeEvent(e Event) {
	if s.obs == nil || s.failed.Load() {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	defer s.recoverObserver()
	s.obs.Event(e)
}

func (s *session) recoverObserver() {
	if r := recover(); r != nil {
		if s.failed.CompareAndSwap(false, true) {
			fmt.Fprintf(s.warn, "rpctap: warning: recorder failed (%v); forwarding only, the recording is incomplete\n", r)
		}
	}
}

// close calls Observer.Close once, after every Observe in progress returned.
func (s *session) close() (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.obs == nil {
		s.closed = true
		return nil
	}
	s.closed = true
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("observer panicked in Close: %v", r)
			if s.failed.CompareAndSwap(false, true) {
				fmt.Fprintf(s.warn, "rpctap: warning: recorder failed (%v); the recording is incomplete\n", r)
			}
		}
	}()
	return s.obs.Close()
}

package recorder

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/thread"
	"github.com/rpctap/rpctap/tap"
)

// SinkConfig configures the sink process started by StartSink.
type SinkConfig struct {
	// Path of the cassette to create (mode 0600; it must not exist).
	Path string
	// Header of the cassette. Format, Version and Created are filled in when
	// empty (Created should be the session's start: set it). Protocol is
	// taken from the Protocol field below when that forces one; Redacted
	// is set by the sink.
	Header cassette.Header
	// Protocol forces the protocol ("" detects it from the first frames).
	Protocol string
	// SchemaFile is a user JSON Schema for frames of a protocol of their own.
	SchemaFile string
	// Redact configures secret redaction (on by default).
	Redact RedactOptions
	// NoValidate records without validating (frames are still classified).
	NoValidate bool
	// Framing of stdin and stdout (framing.Auto decides per direction).
	Framing framing.Mode
	// Lossy: Observe never waits for the sink; chunks that do not fit into
	// the pipe are dropped and recorded as gaps.
	Lossy bool

	// Warn prints the one warning (default: "rpctap: warning: MSG" on
	// stderr). It is called from the status reader goroutine.
	Warn func(msg string)
	// Command runs the sink: program and arguments (default: this
	// executable, "/proc/self/exe", with the argument "__sink"). Tests
	// re-execute the test binary.
	Command []string
	// Env is added to the sink's environment.
	Env []string
	// Nice is the sink's niceness; 0 or less keeps rpctap's. rpctap record
	// asks 10, so that the sink yields the CPU to the child, the parent
	// and rpctap's forwarding.
	Nice int
	// PipeSize is the capacity asked for each stream's pipe (default 1 MiB,
	// the usual unprivileged maximum).
	PipeSize int
	// CloseTimeout bounds how long Close waits for the sink to finalize
	// (default 30 s); past it Close warns and returns, and the sink carries
	// on finishing in the background.
	CloseTimeout time.Duration
}

// sinkConfigWire is the config message: what the sink needs of SinkConfig.
type sinkConfigWire struct {
	Path       string          `json:"path"`
	Header     cassette.Header `json:"header"`
	Protocol   string          `json:"protocol,omitempty"`
	SchemaFile string          `json:"schema,omitempty"`
	Redact     RedactOptions   `json:"redact"`
	NoValidate bool            `json:"novalidate,omitempty"`
	Framing    framing.Mode    `json:"framing,omitempty"`
}

// sinkStatus is one line on the status pipe.
type sinkStatus struct {
	Warn    string `json:"warn,omitempty"`
	Done    bool   `json:"done,omitempty"`
	Records uint64 `json:"records,omitempty"`
	PeakRSS int64  `json:"peak_rss,omitempty"` // the sink's VmHWM in bytes
}

// SinkResult is what the sink reported at its end.
type SinkResult struct {
	Done    bool   // the cassette was finalized
	Records uint64 // records written, the header not counted
	PeakRSS int64  // the sink process's peak resident memory, bytes (0: unknown)
}

// peakRSS reads this process's VmHWM.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// sinkProc is the main process's handle on the sink.
type sinkProc struct {
	cmd      *exec.Cmd
	warn     func(string)
	warnOnce sync.Once
	status   chan sinkStatus // the status reader goroutine's verdict
	timeout  time.Duration
}

// StartSink starts the sink process and returns the observer that feeds it.
// It fails only when the process cannot be started at all (then the caller
// records nothing and should say so once); a cassette the sink cannot
// create is reported through cfg.Warn and leaves an observer that forwards
// nothing anywhere.
//
// The sink does not share rpctap's stdin, stdout or stderr (it would keep the
// parent's pipes open), runs in its own process group (a terminal's ^C or a
// hang-up for rpctap's group does not reach it; it ignores SIGINT, SIGTERM,
// SIGHUP and SIGQUIT as well) and ends by itself when its pipes close, that is
// when rpctap closes the observer or dies.
//
// ctx only stops a start that has not begun (the sink's lifetime follows
// the pipes, never a context: cancelling must not cut a recording short).
func StartSink(ctx context.Context, cfg SinkConfig) (*PipeObserver, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.Warn == nil {
		cfg.Warn = func(msg string) { fmt.Fprintf(os.Stderr, "rpctap: warning: %s\n", msg) }
	}
	if len(cfg.Command) == 0 {
		cfg.Command = []string{"/proc/self/exe", "__sink"}
	}
	if cfg.PipeSize == 0 {
		cfg.PipeSize = 1 << 20
	}
	if cfg.CloseTimeout == 0 {
		cfg.CloseTimeout = 30 * time.Second
	}
	switch {
	case cfg.SchemaFile != "":
		cfg.Header.Protocol = "schema"
	case cfg.Protocol != "":
		cfg.Header.Protocol = cfg.Protocol
	}
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, err
	}

	// Pipes: ours are the write ends (close-on-exec, so the child never
	// holds them), the sink's are the read ends, plus the status pipe the
	// other way.
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	var rds [4]*os.File
	var wrs [4]*os.File
	for i := range rds {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		files = append(files, r, w)
		rds[i], wrs[i] = r, w
		if i > 0 {
			setPipeSize(w, cfg.PipeSize)
		}
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	files = append(files, statusR, statusW)

	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.ExtraFiles = []*os.File{rds[0], rds[1], rds[2], rds[3], statusW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startNiced(cmd, cfg.Nice); err != nil {
		closeAll()
		return nil, fmt.Errorf("starting the recorder process: %w", err)
	}
	for _, f := range rds {
		f.Close()
	}
	statusW.Close()

	o := &PipeObserver{lossy: cfg.Lossy}
	for i, w := range wrs {
		p, err := newWirePipe(w)
		if err != nil {
			cmd.Process.Kill()
			closeAll()
			return nil, err
		}
		if i == 0 {
			o.ctl = p
		} else {
			o.data[i-1] = p
		}
	}
	o.sink = &sinkProc{cmd: cmd, warn: cfg.Warn, status: make(chan sinkStatus, 1), timeout: cfg.CloseTimeout}
	go o.sink.readStatus(statusR, o)

	conf, _ := json.Marshal(sinkConfigWire{Path: path, Header: cfg.Header, Protocol: cfg.Protocol,
		SchemaFile: cfg.SchemaFile, Redact: cfg.Redact, NoValidate: cfg.NoValidate, Framing: cfg.Framing})
	h := msgHeader{typ: msgConfig}
	o.ctl.mu.Lock()
	err = o.ctl.write(&h, conf, true)
	o.ctl.mu.Unlock()
	if err != nil {
		o.gone()
	}
	return o, nil
}

// startNiced starts cmd with the given niceness from its first instruction:
// a dedicated OS thread raises its own nice value, forks (the child inherits
// the thread's niceness, and every thread the Go runtime of the sink creates
// inherits it in turn), and is then thrown away, because an unprivileged
// process may not lower a nice value again.
func startNiced(cmd *exec.Cmd, nice int) error {
	if nice <= 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the goroutine exits locked, so the Go runtime
		// ends this (niced) thread instead of reusing it.
		// Best effort: if the system refuses, the sink runs at our
		// priority, which costs latency, not correctness.
		_ = thread.Nice(nice)
		errc <- cmd.Start()
	}()
	return <-errc
}

// readStatus is the status reader goroutine: it prints the sink's warning
// (at most one) and, at the end of the pipe, reports whether the sink
// finished. It returns when the sink closes the status pipe (it exited).
func (s *sinkProc) readStatus(r *os.File, o *PipeObserver) {
	defer r.Close()
	var final sinkStatus
	sc := bufio.NewReader(r)
	for {
		line, err := sc.ReadBytes('\n')
		if len(line) > 0 {
			var st sinkStatus
			if json.Unmarshal(line, &st) == nil {
				if st.Warn != "" {
					s.warnf("%s", st.Warn)
				}
				if st.Done {
					final = st
				}
			}
		}
		if err != nil {
			break
		}
	}
	if !final.Done {
		// The sink exited without finishing (after its own warning, or
		// killed): stop feeding it, and say so now if it could not.
		o.gone()
		s.warnf("recorder process ended unexpectedly; recording stopped, forwarding continues")
	}
	s.status <- final
}

func (s *sinkProc) warnf(format string, a ...any) {
	s.warnOnce.Do(func() { s.warn(fmt.Sprintf(format, a...)) })
}

// Close closes the pipes to the sink and waits (at most CloseTimeout) for it
// to write the end of the cassette and exit. Trouble was already reported
// through Warn, so Close returns nil unless the sink could not be waited for.
func (o *PipeObserver) Close() error {
	o.closePipes()
	s := o.sink
	if s == nil {
		return nil
	}
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case st := <-s.status:
		o.result = SinkResult{Done: st.Done, Records: st.Records, PeakRSS: st.PeakRSS}
		werr := s.cmd.Wait()
		if !st.Done {
			why := "it exited"
			if werr != nil {
				why = werr.Error()
			}
			s.warnf("recorder process ended early (%s); the cassette may be incomplete", why)
		}
		return nil
	case <-timer.C:
		s.warnf("recorder process did not finish within %s; it goes on in the background", s.timeout)
		go s.cmd.Wait() // reap it when it ends
		return nil
	}
}

// Result is what the sink reported when it finished; valid after Close.
func (o *PipeObserver) Result() SinkResult { return o.result }

// SinkMain runs the sink process (`rpctap __sink`): it reads the pipes set up
// by StartSink on fds 3-7 to their end, records through a Recorder, and
// finalizes the cassette. It returns the process's exit status; every
// problem is reported on the status pipe, never as a panic.
func SinkMain() int {
	status := os.NewFile(7, "status")
	ctl := os.NewFile(3, "ctl")
	data := [3]*os.File{os.NewFile(4, "in"), os.NewFile(5, "out"), os.NewFile(6, "err")}
	if status == nil || ctl == nil || data[0] == nil || data[1] == nil || data[2] == nil {
		fmt.Fprintln(os.Stderr, "rpctap: __sink is started by rpctap record, not by hand")
		return 2
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	// The sink's memory limit is the command's to set (cmd/rpctap,
	// tuneSink); it runs in this process before SinkMain.
	return runSink(ctl, data, status)
}

// statusWriter serializes status lines from the Recorder's warnings and the
// end message.
type statusWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *statusWriter) send(st sinkStatus) {
	b, _ := json.Marshal(st)
	s.mu.Lock()
	s.w.Write(append(b, '\n'))
	s.mu.Unlock()
}

func runSink(ctl io.ReadCloser, data [3]*os.File, statusF io.WriteCloser) (code int) {
	st := &statusWriter{w: statusF}
	defer statusF.Close()
	defer func() {
		if p := recover(); p != nil {
			st.send(sinkStatus{Warn: "recorder failed (" + panicLine(p) + "); the cassette is incomplete"})
			code = 1
		}
	}()
	// Read buffers: the ctl pipe carries the config, events and gaps, a few
	// small messages per session; a data pipe's messages are at most the
	// tap's 64 KiB chunk plus a header, and a payload at least as large as
	// the buffer is read straight into the chunk's own buffer, so a larger
	// buffer would only save a read system call per chunk. (They were 64
	// and 128 KiB: 448 KiB of the sink's live heap.)
	cr := bufio.NewReaderSize(ctl, 4<<10)
	var h msgHeader
	if err := readHeader(cr, &h); err != nil || h.typ != msgConfig {
		st.send(sinkStatus{Warn: "recorder got no configuration; nothing recorded"})
		return 1
	}
	conf := make([]byte, h.length)
	var cfg sinkConfigWire
	if _, err := io.ReadFull(cr, conf); err != nil || json.Unmarshal(conf, &cfg) != nil {
		st.send(sinkStatus{Warn: "recorder got a broken configuration; nothing recorded"})
		return 1
	}
	cfg.Header.Redacted = Redacting(cfg.Redact)
	w, err := createCassette(cfg.Path, cfg.Header)
	if err != nil {
		st.send(sinkStatus{Warn: fmt.Sprintf("cannot create cassette %s: %v; forwarding only, nothing is recorded", cfg.Path, err)})
		return 0
	}
	opts := Options{
		Protocol:       cfg.Protocol,
		HeaderProtocol: cfg.Protocol != "",
		NoValidate:     cfg.NoValidate,
		Framing:        cfg.Framing,
		Redact:         cfg.Redact,
		Warn:           func(msg string) { st.send(sinkStatus{Warn: msg}) },
		// Nothing more can be recorded: exit, so that rpctap's next write
		// fails with EPIPE and it stops feeding us (the warning is already
		// in the status pipe; the cassette Writer was closed).
		onFail:     func() { statusF.Close(); os.Exit(0) },
		yieldSmall: true,
	}
	if cfg.SchemaFile != "" {
		opts.Protocol, opts.HeaderProtocol = "", false
		opts.SchemaFile = cfg.SchemaFile
	}
	if sinkTestHook != nil {
		sinkTestHook(&opts)
	}
	rec := New(w, WithOptions(opts))

	var wg sync.WaitGroup
	wg.Add(4)
	gate := newEventGate()
	go func() { defer wg.Done(); defer gate.close(); sinkReader(rec, cr, nil, gate) }()
	for _, f := range data {
		go func() {
			defer wg.Done()
			d := &drainReader{r: f}
			sinkReader(rec, bufio.NewReaderSize(d, dataReadBuf), d, gate)
		}()
	}
	wg.Wait()
	rec.Close()
	if rec.Failed() {
		return 0 // the warning went out already
	}
	st.send(sinkStatus{Done: true, Records: rec.Stats().Records, PeakRSS: peakRSS()})
	return 0
}

// eventGate lets a pipe reader hold a chunk until the ctl reader has queued
// the events written before it. The ctl reader never waits for the pipe
// readers, and close (at the end of ctl, torn or not) releases every
// waiter, so the wait cannot deadlock.
type eventGate struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      uint64
	closed bool
}

func newEventGate() *eventGate {
	g := &eventGate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *eventGate) add() {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	g.cond.Broadcast()
}

func (g *eventGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cond.Broadcast()
}

func (g *eventGate) wait(n uint64) {
	g.mu.Lock()
	for g.n < n && !g.closed {
		g.cond.Wait()
	}
	g.mu.Unlock()
}

// drainReader notes whether its last read emptied the pipe (returned less
// than asked for): only then does the sink reader pause to gather, so a
// bulk transfer is read back to back at full speed. It also counts the
// bytes read since the last pause, which sets the next pause's length.
type drainReader struct {
	r       io.Reader
	drained bool
	since   int64       // bytes read since the last pause
	timer   *time.Timer // the pause's, reused
}

func (d *drainReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.drained = n < len(p)
	d.since += int64(n)
	return n, err
}

// pause sleeps to let chunks gather in the pipe (see sinkReader): long when
// little arrived since the last pause (small frames now and then: the
// wake-ups are what costs, and a few KiB cannot fill the pipe), short when
// much did (a 1 MiB pipe fills in ~3 ms at 300 MB/s, and a writer that finds
// it full waits for us).
func (d *drainReader) pause(hurry <-chan struct{}) {
	delay := d.nextPause()
	if delay <= 0 {
		return
	}
	if d.timer == nil {
		d.timer = time.NewTimer(delay)
	} else {
		d.timer.Reset(delay)
	}
	select {
	case <-d.timer.C:
	case <-hurry:
		d.timer.Stop()
	}
}

// nextPause returns the length of the pause due now and starts counting
// afresh.
func (d *drainReader) nextPause() time.Duration {
	delay := gatherBusy
	if d.since < gatherLight {
		delay = gatherDelay
	}
	d.since = 0
	return delay
}

// Gathering: a light session (under gatherLight bytes between pauses) lets
// chunks gather gatherDelay, a busy one gatherBusy. Measured with bench/wire
// (200-byte round trips, base vs 4 ms in one run): CPU per GiB of rpctap
// and its sink 331 -> 269 s, cassette 0.325 -> 0.281 of raw (fewer, larger
// batches), record's added p50 49.3 -> 43.3 us (forwarding alone: 43.8).
// The cassette lags the session by at most the pause plus the time to write;
// crash safety does not depend on it (see sinkReader).
var (
	gatherDelay = 4 * time.Millisecond
	gatherBusy  = time.Millisecond
	gatherLight = int64(64 << 10)
)

// sinkMsgDelay, in tests, slows every pipe reader of the sink down by this
// much per message (a sink that cannot keep up).
var sinkMsgDelay time.Duration

// sinkTestHook lets tests change the sink's Recorder options (a validator
// that panics); nil outside tests.
var sinkTestHook func(*Options)

// createCassette creates the cassette file. An existing character device
// (/dev/null to measure forwarding alone, /dev/full in tests) is written to
// as it is; anything else must be a new file.
func createCassette(path string, h cassette.Header) (Writer, error) {
	if st, err := os.Stat(path); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		w, err := cassette.NewWriter(f, h, nil)
		if err != nil {
			f.Close()
			return nil, err
		}
		return fileWriter{w, f}, nil
	}
	return cassette.Create(path, h, nil)
}

// fileWriter closes the device file after the cassette Writer.
type fileWriter struct {
	*cassette.Writer
	f *os.File
}

func (w fileWriter) Close() error {
	err := w.Writer.Close()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sinkReader is a pipe reader goroutine of the sink: it reads one pipe to
// its end and hands every message to the Recorder (which may block it:
// backpressure to rpctap through the pipe). pipe is nil for the ctl pipe
// (which never pauses).
// A torn last message is recorded as far as it goes, with a gap for the
// rest; a corrupt stream ends the reader (its remaining bytes are counted as
// a gap).
//
// Gathering: after a message, when nothing more is buffered and the last
// read emptied the pipe, the reader pauses (drainReader.pause: 1-4 ms) before its next read, so that a session's chunks
// pile up in the pipe and are read (and recorded, and flushed) together
// instead of waking this process for every chunk; when the pipe is still
// empty after the pause, the read blocks as usual (no periodic wake-ups
// while the session is idle). Crash safety does not depend on this: a
// chunk is safe from rpctap's death once it is in the pipe, and the sink
// drains the pipes whatever happens to rpctap. The cassette lags the
// session by at most the pause plus the time to write.
func sinkReader(rec *Recorder, r *bufio.Reader, pipe *drainReader, gate *eventGate) {
	var h msgHeader
	for {
		if pipe != nil && r.Buffered() == 0 && pipe.drained {
			pipe.pause(rec.hurry)
		}
		err := readHeader(r, &h)
		if sinkMsgDelay > 0 {
			time.Sleep(sinkMsgDelay)
		}
		if err != nil {
			if err != io.EOF {
				n, _ := io.Copy(io.Discard, r)
				if n > 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
					rec.enqueueEvent(tap.Event{Kind: cassette.EventWarning, Msg: "recorder pipe: " + err.Error()}, rec.maxSeq.Load())
				}
			}
			return
		}
		switch h.typ {
		case msgChunk:
			it := item{kind: itemChunk, conn: int(h.conn), stream: tap.Stream(h.stream), seq: h.seq, t: h.t,
				lost: int64(h.lost), lostBoundary: h.flags&flagBoundary != 0}
			if h.length <= poolBuf {
				it.buf = rec.getBuf(int(h.length))
				it.data = (*it.buf)[:h.length]
			} else {
				it.data = make([]byte, h.length)
			}
			n, err := io.ReadFull(r, it.data)
			gate.wait(h.events)
			if err != nil {
				// Torn: rpctap died inside this write. What arrived was
				// forwarded; the rest was forwarded but is lost to us.
				it.data = it.data[:n]
				rec.observeOwned(it)
				rec.enqueue(item{kind: itemGap, conn: it.conn, stream: it.stream, seq: h.seq, t: h.t, bytes: int64(int(h.length) - n)})
				return
			}
			rec.observeOwned(it)
		case msgGap:
			var b [8]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return
			}
			n := int64(binary.LittleEndian.Uint64(b[:]))
			boundary := h.flags&flagBoundary != 0
			if h.flags&flagAfter != 0 {
				e := tap.Event{Kind: cassette.EventGap, T: h.t, Conn: int(h.conn), Stream: tap.Stream(h.stream), Bytes: n}
				rec.enqueueItem(item{kind: itemEvent, ev: e, after: h.seq, t: e.T, conn: e.Conn, boundary: boundary})
				continue
			}
			rec.observeOwned(item{kind: itemGap, conn: int(h.conn), stream: tap.Stream(h.stream), seq: h.seq, t: h.t, bytes: n, boundary: boundary})
		case msgEvent:
			payload := make([]byte, h.length)
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			var we wireEvent
			if err := json.Unmarshal(payload, &we); err != nil {
				continue
			}
			e := tap.Event{T: h.t, Conn: int(h.conn), Kind: we.Kind, Argv: we.Argv, Cwd: we.Cwd, PID: we.PID,
				Exit: we.Exit, Signal: we.Signal, Stream: tap.Stream(h.stream), Bytes: we.Bytes, Msg: we.Msg,
				Action: we.Action, HeldNs: we.HeldNs, Breakpoint: we.Breakpoint, Original: we.Original}
			rec.enqueueEvent(e, h.seq)
			gate.add()
		default:
			io.CopyN(io.Discard, r, int64(h.length))
		}
	}
}

// dataReadBuf is the read buffer of each data pipe of the sink. A chunk's
// payload that does not fit in it is read straight into the chunk's own
// buffer, so with a small buffer only the header and the first few KiB of a
// bulk chunk are copied twice (kernel -> buffer -> chunk); with the tap's
// 64 KiB it was nearly all of them. Small messages still come many to a
// read system call.
const dataReadBuf = 4 << 10

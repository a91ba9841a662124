package replay

import (
	"context"
	"io"
	"sync"
)

// Child is a fake child process running in-process: the parent under test
// writes to Stdin and reads Stdout and Stderr, exactly as with the pipes of
// an exec.Cmd. Build one with NewChild or StartChild.
type Child struct {
	// Stdin is where the parent writes its frames. Closing it is the
	// parent closing the child's stdin. Writes fail with io.ErrClosedPipe
	// once the fake child has ended.
	Stdin io.WriteCloser
	// Stdout carries the recorded child frames; it reaches EOF when the
	// fake child ends. Writes to it block until the parent reads (a pipe).
	Stdout io.ReadCloser
	// Stderr carries the recorded stderr lines. It is buffered without
	// bound, so a parent that never reads it does not stall the replay.
	Stderr io.Reader

	cancel context.CancelFunc
	sigs   chan string
	done   chan struct{}
	res    *Result
	err    error
}

// NewChild opens the cassette at path and starts a fake child on it. The
// cassette is streamed (OpenStream): read as the replay advances, with
// memory bounded by the matching window and the largest frame.
func NewChild(path string, opts ...Option) (*Child, error) {
	s, err := OpenStream(path)
	if err != nil {
		return nil, err
	}
	c, err := StartChild(s, opts...)
	if err != nil {
		s.Close()
	}
	return c, err
}

// StartChild starts a fake child replaying src (a *Recording, or a *Stream
// read as the replay advances). It returns an error when
// the recording cannot be replayed (no frames, unknown connection, another
// protocol, a bad ignore pattern).
//
// The replay runs in its own goroutine (engineLoop) until the recorded exit
// is reached, the parent closes Stdin and nothing more can become due, or
// Close is called. A parent that stops reading Stdout while the replay has
// frames to send blocks the replay, as a real pipe would.
func StartChild(src Source, opts ...Option) (*Child, error) {
	o := defaults(opts...)
	e, err := newEngine(src, roleChild, o)
	if err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errBuf := newBufPipe()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Child{Stdin: inW, Stdout: outR, Stderr: errBuf, cancel: cancel, done: make(chan struct{}), sigs: make(chan string)}
	e.sigs = c.sigs
	e.out = outW
	e.errOut = errBuf
	go c.engineLoop(ctx, e, inR, outW, errBuf)
	return c, nil
}

// engineLoop is the goroutine that runs a fake child's engine, then closes
// the pipes: the parent sees EOF on stdout and stderr, and its writes to
// stdin fail. It blocks only where the engine does (see the package doc).
func (c *Child) engineLoop(ctx context.Context, e *engine, inR *io.PipeReader, outW *io.PipeWriter, errBuf *bufPipe) {
	defer close(c.done)
	c.res, c.err = e.run(ctx, inR)
	outW.Close()
	errBuf.Close()
	inR.CloseWithError(io.ErrClosedPipe)
}

// Wait waits for the fake child to end and returns what it found. The
// error is non-nil in strict mode when the session diverged (ErrDiverged),
// or when reading or writing the pipes failed. Result.Exit is the recorded
// exit status. Wait does not close Stdin: a parent that keeps it open and
// sends nothing more while the recording expects more waits forever; call
// Close to end it.
func (c *Child) Wait() (*Result, error) {
	<-c.done
	return c.res, c.err
}

// Signal delivers a signal (by name: "SIGINT", "SIGTERM", ...) to the fake
// child, as a parent's kill(2) would reach a real one. A signal the
// recording has at this point (rpctap record logs the signals it forwards)
// is matched like a frame; any other ends the fake child with status
// 128+n, as the default action would. It returns false when the fake child
// has already ended.
func (c *Child) Signal(name string) bool {
	select {
	case c.sigs <- name:
		return true
	case <-c.done:
		return false
	}
}

// Close ends the fake child at once (if it is still running) and returns
// Wait's result; recorded parent frames not yet received are reported as
// missing.
func (c *Child) Close() (*Result, error) {
	c.Stdin.Close()
	c.cancel()
	<-c.done
	if c.err == context.Canceled {
		return c.res, nil
	}
	return c.res, c.err
}

// RunChild runs a fake child over the given streams until it ends: in is
// what the parent writes, out and stderr what it reads. The result's Exit is
// the recorded exit status the process should end with. Cancelling ctx ends
// the replay; the goroutine reading in may stay blocked in Read until in is
// closed or written to.
//
// signals (may be nil) carries the names of signals the parent sent
// ("SIGINT", ...); see Child.Signal.
func RunChild(ctx context.Context, src Source, in io.Reader, out, stderr io.Writer, signals <-chan string, opts ...Option) (*Result, error) {
	o := defaults(opts...)
	e, err := newEngine(src, roleChild, o)
	if err != nil {
		return nil, err
	}
	e.out = out
	e.errOut = stderr
	e.sigs = signals
	return e.run(ctx, in)
}

// RunParent runs a fake parent: it writes the recorded parent frames to
// childIn (closing it where the recording says the parent closed stdin, and
// at the end), reads the child's frames from childOut and compares them with
// the recording. It returns when every parent frame was sent and the child's
// frames arrived, the child closed its stdout, or a recorded child frame
// did not come within the timeout (WithTimeout).
//
// signal, when not nil, sends a signal by name to the child; it is called
// where the recording has rpctap forwarding a signal.
func RunParent(ctx context.Context, src Source, childOut io.Reader, childIn io.WriteCloser, signal func(name string) error, opts ...Option) (*Result, error) {
	// A fake parent sends as soon as causality allows unless told otherwise.
	o := defaults(append([]Option{WithSpeed(0)}, opts...)...)
	e, err := newEngine(src, roleParent, o)
	if err != nil {
		return nil, err
	}
	e.out = childIn
	e.signal = signal
	var once sync.Once
	e.closer = func() error {
		var err error
		once.Do(func() { err = childIn.Close() })
		return err
	}
	res, err := e.run(ctx, childOut)
	e.closer()
	return res, err
}

// bufPipe is an unbounded in-memory pipe: writes never block.
type bufPipe struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	closed bool
}

func newBufPipe() *bufPipe {
	p := &bufPipe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *bufPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, io.ErrClosedPipe
	}
	p.buf = append(p.buf, b...)
	p.cond.Broadcast()
	return len(b), nil
}

// Read blocks until data arrives or the pipe is closed.
func (p *bufPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && !p.closed {
		p.cond.Wait()
	}
	if len(p.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

func (p *bufPipe) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	return nil
}

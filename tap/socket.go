package tap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Proxy is the tap in socket mode: it listens on a Unix socket and, for each
// accepted connection, dials Upstream and copies both directions, handing
// every forwarded chunk to Observer. Client to upstream is Stdin ("in"),
// upstream to client is Stdout ("out"); connections are numbered 1, 2, ...
// in Chunk.Conn and Event.Conn, with conn-open and conn-close events.
//
// Each connection has two pumps (connPump) and one connSupervisor. A
// pump that reads EOF passes the half-close on (CloseWrite on the other
// side) and the opposite direction goes on; when both directions ended, the
// connection is closed. A failed write closes the connection (as socat
// does). Backpressure passes through as in stdio mode: one chunk in flight
// per direction.
//
// # Deadlocks
//
// A client and upstream that both stop reading while writing stall their
// pumps for good, as they would on a direct connection. Serve's shutdown
// does not wait for that: after ctx is done it closes the listener, gives
// open connections Grace to finish, then cuts them loose (deadlines) and
// closes them. An Observe that never returns still blocks Serve in
// Observer.Close, as in stdio mode.
type Proxy struct {
	Listen   string        // the socket path to create
	Upstream string        // the socket path to dial for each connection
	Observer Observer      // may be nil
	Grace    time.Duration // shutdown drain for open connections; 0 is DefaultGrace
	Warn     io.Writer     // rpctap's own warnings; nil is os.Stderr
	// ObserveFirst: see Cmd.ObserveFirst.
	ObserveFirst bool
	// Epoch: see Cmd.Epoch.
	Epoch time.Time

	ln    *net.UnixListener
	s     *session
	nconn atomic.Int64
	mu    sync.Mutex
	conns map[*connSupervisor]bool
	wg    sync.WaitGroup
}

// Bind creates the listening socket. A stale socket file (one nobody
// listens on) is replaced; any other existing file is an error. Serve calls
// Bind if it was not called.
func (p *Proxy) Bind() error {
	if p.ln != nil {
		return nil
	}
	addr := &net.UnixAddr{Name: p.Listen, Net: "unix"}
	ln, err := net.ListenUnix("unix", addr)
	if err != nil && errors.Is(err, syscall.EADDRINUSE) {
		if st, serr := os.Lstat(p.Listen); serr == nil && st.Mode()&os.ModeSocket != 0 {
			c, derr := net.DialTimeout("unix", p.Listen, time.Second)
			if derr == nil {
				c.Close()
				return fmt.Errorf("%s: another process listens there", p.Listen)
			}
			if errors.Is(derr, syscall.ECONNREFUSED) {
				os.Remove(p.Listen)
				ln, err = net.ListenUnix("unix", addr)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	p.ln = ln
	return nil
}

// Serve accepts connections until ctx is done, then shuts down (see Proxy),
// removes the socket file and calls Observer.Close. It returns nil after a
// shutdown asked for by ctx.
func (p *Proxy) Serve(ctx context.Context) error {
	if p.Grace <= 0 {
		p.Grace = DefaultGrace
	}
	if p.Warn == nil {
		p.Warn = os.Stderr
	}
	p.s = newSession(p.Observer, p.Warn, p.Epoch)
	p.s.first = p.ObserveFirst
	defer p.s.close()
	if err := p.Bind(); err != nil {
		return err
	}
	p.conns = map[*connSupervisor]bool{}
	stop := context.AfterFunc(ctx, func() { p.ln.Close() })
	defer stop()

	var acceptErr error
	for {
		c, err := p.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() == nil {
				acceptErr = fmt.Errorf("accept: %w", err)
			}
			break
		}
		p.serveConn(c)
	}
	p.ln.Close() // removes the socket file

	// Shutdown: let open connections finish for Grace, then cut them loose.
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(p.Grace):
		p.mu.Lock()
		for cs := range p.conns {
			cs.cut()
		}
		p.mu.Unlock()
		<-done
	}
	return acceptErr
}

// serveConn dials upstream for an accepted client and starts its
// supervisor. A connection upstream refuses is closed at once and recorded
// as a warning event.
func (p *Proxy) serveConn(client *net.UnixConn) {
	n := int(p.nconn.Add(1))
	up, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: p.Upstream, Net: "unix"})
	if err != nil {
		client.Close()
		p.s.event(Event{Conn: n, Kind: "warning", Msg: "dial upstream: " + err.Error()})
		return
	}
	cs := &connSupervisor{p: p, n: n, client: client, up: up}
	p.mu.Lock()
	p.conns[cs] = true
	p.mu.Unlock()
	p.wg.Add(1)
	p.s.event(Event{Conn: n, Kind: "conn-open"})
	go cs.run()
}

// connSupervisor runs one connection's two pumps and closes it when both
// are done.
type connSupervisor struct {
	p          *Proxy
	n          int
	client, up *net.UnixConn
}

func (cs *connSupervisor) run() {
	defer cs.p.wg.Done()
	var wg sync.WaitGroup
	wg.Add(2)
	in := &connPump{pump: pump{s: cs.p.s, conn: cs.n, stream: Stdin, src: cs.client, dst: cs.up}, from: cs.client, to: cs.up, wg: &wg}
	out := &connPump{pump: pump{s: cs.p.s, conn: cs.n, stream: Stdout, src: cs.up, dst: cs.client}, from: cs.up, to: cs.client, wg: &wg}
	go in.run()
	go out.run()
	wg.Wait()
	cs.client.Close()
	cs.up.Close()
	cs.p.mu.Lock()
	delete(cs.p.conns, cs)
	cs.p.mu.Unlock()
	cs.p.s.event(Event{Conn: cs.n, Kind: "conn-close"})
}

// cut ends both pumps at once (shutdown after the grace).
func (cs *connSupervisor) cut() {
	past := time.Unix(1, 0)
	cs.client.SetDeadline(past)
	cs.up.SetDeadline(past)
}

// connPump copies one direction of a connection. At EOF it passes the
// half-close on (CloseWrite); when a write fails, the peer is gone, so it
// closes both sides, which ends the other direction too.
type connPump struct {
	pump
	from, to *net.UnixConn
	wg       *sync.WaitGroup
}

func (p *connPump) run() {
	defer p.wg.Done()
	p.copy()
	switch {
	case p.eof():
		p.to.CloseWrite()
	case p.werr != nil:
		p.from.Close()
		p.to.Close()
	default:
		// Read error or deadline: the other direction cannot carry on
		// usefully either.
		p.to.CloseWrite()
		p.from.CloseRead()
	}
}

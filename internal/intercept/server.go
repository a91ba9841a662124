package intercept

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/ctlsock"
)

// The control protocol: on a connection to the control socket, the client
// writes one JSON request a line and reads one JSON reply a line, in order.
//
//	{"op":"break","expr":"m:tools/call"}    -> {"ok":true,"n":1}
//	{"op":"unbreak","n":1}                  -> {"ok":true}
//	{"op":"list"}                           -> {"ok":true,"held":[...],"breakpoints":[...],"answers":[...],"protocol":"mcp"}
//	{"op":"forward","n":3}  (n 0: all)      -> {"ok":true}
//	{"op":"edit","n":3,"frame":{...}}       -> {"ok":true}
//	{"op":"drop","n":3}                     -> {"ok":true}
//	{"op":"cancel","n":3}                   -> {"ok":true}
//	{"op":"inject","to":"in","frame":{...},"wait_ms":5000}
//	                                        -> {"ok":true,"injection":{...},"answer":{...}}
//	{"op":"attach"}                         -> {"ok":true}
//
// A failure is {"ok":false,"error":"..."}. After attach, the breakpoints the
// connection sets are its own: they go, and what they hold is forwarded,
// when it closes.
type request struct {
	Op     string          `json:"op"`
	Expr   string          `json:"expr,omitempty"`
	N      int             `json:"n,omitempty"`
	Frame  json.RawMessage `json:"frame,omitempty"`
	To     cassette.Dir    `json:"to,omitempty"`
	WaitMs int64           `json:"wait_ms,omitempty"`
}

type reply struct {
	OK          bool         `json:"ok"`
	Error       string       `json:"error,omitempty"`
	N           int          `json:"n,omitempty"`
	Held        []Held       `json:"held,omitempty"`
	Breakpoints []Breakpoint `json:"breakpoints,omitempty"`
	Answers     []Answer     `json:"answers,omitempty"`
	Protocol    string       `json:"protocol,omitempty"`
	Cassette    string       `json:"cassette,omitempty"`
	Injection   *Injection   `json:"injection,omitempty"`
	Answer      *Answer      `json:"answer,omitempty"`
}

// Server serves the control protocol for one Session.
type Server struct {
	s  *Session
	l  *ctlsock.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	conns map[*net.UnixConn]bool
	next  int
}

// Serve accepts control connections on l until it is closed (Close).
func Serve(s *Session, l *ctlsock.Listener) *Server {
	sv := &Server{s: s, l: l, conns: map[*net.UnixConn]bool{}}
	sv.wg.Add(1)
	go sv.accept()
	return sv
}

func (sv *Server) accept() {
	defer sv.wg.Done()
	for {
		c, err := sv.l.Accept()
		if err != nil {
			return
		}
		sv.mu.Lock()
		sv.next++
		id := sv.next
		sv.conns[c] = true
		sv.mu.Unlock()
		sv.wg.Add(1)
		go sv.serve(c, id)
	}
}

// Close stops listening, closes every control connection and waits for
// them to end.
func (sv *Server) Close() error {
	err := sv.l.Close()
	sv.mu.Lock()
	for c := range sv.conns {
		c.Close()
	}
	sv.mu.Unlock()
	sv.wg.Wait()
	return err
}

func (sv *Server) serve(c *net.UnixConn, id int) {
	defer sv.wg.Done()
	attached := false
	defer func() {
		c.Close()
		sv.mu.Lock()
		delete(sv.conns, c)
		sv.mu.Unlock()
		if attached {
			sv.s.Detach(id)
		}
	}()
	rd := bufio.NewReader(c)
	enc := json.NewEncoder(c)
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return
		}
		var req request
		var rep reply
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			rep = reply{Error: "bad request: " + jerr.Error()}
		} else {
			owner := 0
			if attached {
				owner = id
			}
			if req.Op == "attach" {
				attached = true
				rep.OK = true
			} else {
				rep = sv.do(req, owner)
			}
		}
		if enc.Encode(rep) != nil {
			return
		}
		if err != nil {
			return
		}
	}
}

func (sv *Server) do(req request, owner int) reply {
	s := sv.s
	var err error
	rep := reply{}
	switch req.Op {
	case "break":
		rep.N, err = s.Break(req.Expr, owner)
	case "unbreak":
		err = s.Unbreak(req.N)
	case "list":
		rep.Held, rep.Breakpoints, rep.Answers, rep.Protocol = s.HeldFrames(), s.Breakpoints(), s.Answers(), s.Protocol()
		s.mu.Lock()
		rep.Cassette = s.opt.Cassette
		s.mu.Unlock()
	case "forward":
		err = s.Forward(req.N)
	case "drop":
		err = s.Drop(req.N)
	case "cancel":
		err = s.Cancel(req.N)
	case "edit":
		err = s.Edit(req.N, req.Frame)
	case "inject":
		if req.To != cassette.DirIn && req.To != cassette.DirOut {
			err = fmt.Errorf("inject: to is %q or %q", cassette.DirIn, cassette.DirOut)
			break
		}
		var inj Injection
		inj, err = s.Inject(req.To, req.Frame)
		if err != nil {
			break
		}
		rep.Injection = &inj
		if c := s.AnswerTo(inj.N); c != nil && req.WaitMs > 0 {
			t := time.NewTimer(time.Duration(req.WaitMs) * time.Millisecond)
			select {
			case a := <-c:
				rep.Answer = &a
			case <-t.C:
			}
			t.Stop()
		}
	default:
		err = fmt.Errorf("unknown operation %q", req.Op)
	}
	if err != nil {
		return reply{Error: err.Error()}
	}
	rep.OK = true
	return rep
}

// Client is the control protocol's Go API: one connection to a control
// socket. Its methods are safe for concurrent use (they take turns).
type Client struct {
	mu  sync.Mutex
	c   net.Conn
	rd  *bufio.Reader
	enc *json.Encoder
}

// Dial connects to the control socket at path.
func Dial(path string) (*Client, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return &Client{c: c, rd: bufio.NewReader(c), enc: json.NewEncoder(c)}, nil
}

// Close closes the connection. For an attached client, this removes the
// breakpoints it set and forwards what they hold.
func (c *Client) Close() error { return c.c.Close() }

// ErrClosed is returned when the session went away.
var ErrClosed = errors.New("control socket: the session closed the connection")

func (c *Client) call(req request) (reply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enc.Encode(req); err != nil {
		return reply{}, fmt.Errorf("control socket: %w", err)
	}
	line, err := c.rd.ReadBytes('\n')
	if err != nil {
		return reply{}, ErrClosed
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return reply{}, fmt.Errorf("control socket: bad reply: %v", err)
	}
	if !rep.OK {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// Attach makes the breakpoints this client sets from now on its own.
func (c *Client) Attach() error { _, err := c.call(request{Op: "attach"}); return err }

// Break sets a breakpoint and returns its number.
func (c *Client) Break(expr string) (int, error) {
	rep, err := c.call(request{Op: "break", Expr: expr})
	return rep.N, err
}

// Unbreak removes breakpoint n.
func (c *Client) Unbreak(n int) error { _, err := c.call(request{Op: "unbreak", N: n}); return err }

// State is what List returns.
type State struct {
	Held        []Held
	Breakpoints []Breakpoint
	Answers     []Answer
	Protocol    string
	Cassette    string // the path the session records to ("" when unknown)
}

// List returns the held frames (oldest first), the breakpoints and the
// answers to injected requests.
func (c *Client) List() (State, error) {
	rep, err := c.call(request{Op: "list"})
	return State{Held: rep.Held, Breakpoints: rep.Breakpoints, Answers: rep.Answers, Protocol: rep.Protocol, Cassette: rep.Cassette}, err
}

// Forward forwards held frame n unchanged (0: every held frame).
func (c *Client) Forward(n int) error { _, err := c.call(request{Op: "forward", N: n}); return err }

// Drop drops held frame n.
func (c *Client) Drop(n int) error { _, err := c.call(request{Op: "drop", N: n}); return err }

// Cancel forwards held request n followed by the protocol's cancel message
// for it (Session.Cancel).
func (c *Client) Cancel(n int) error { _, err := c.call(request{Op: "cancel", N: n}); return err }

// Edit sends frame (valid JSON) instead of held frame n.
func (c *Client) Edit(n int, frame []byte) error {
	if _, err := compactJSON(frame); err != nil {
		return err
	}
	_, err := c.call(request{Op: "edit", N: n, Frame: frame})
	return err
}

// Inject sends frame toward to (cassette.DirIn: the child; DirOut: the
// parent). For a request, it waits up to wait for the answer (nil if none
// came in time).
func (c *Client) Inject(to cassette.Dir, frame []byte, wait time.Duration) (Injection, *Answer, error) {
	if _, err := compactJSON(frame); err != nil {
		return Injection{}, nil, err
	}
	rep, err := c.call(request{Op: "inject", To: to, Frame: frame, WaitMs: wait.Milliseconds()})
	if err != nil {
		return Injection{}, nil, err
	}
	return *rep.Injection, rep.Answer, nil
}

// Package intercept is the intercepting tap of `rpctap record --intercept`:
// breakpoints written in the filter language (package filterexpr) hold the
// frames they match until a user forwards, edits or drops them, and frames
// of the user's own can be injected toward either side. A Session
// implements tap.Interceptor; Serve runs its control protocol on a
// ctlsock.Listener; Client is the same operations as a Go API (what `rpctap
// ctl` and the viewer use).
//
// Breakpoints and held frames belong to the Session, not to a control
// connection: `rpctap ctl` makes one connection per command and what it set
// stays until unbreak, forward or the timeout. A connection that attached
// (the viewer) owns the breakpoints it set: when it goes, they are removed
// and the frames they held are forwarded.
//
// # Goroutines and blocking
//
// Each direction's Writer runs on its tap pump. A frame that matches a
// breakpoint makes the Writer wait (in hold) until a verdict comes from a
// control connection, the timeout passes, or Release; frames behind it in
// that direction wait in the pump's pipe, and the other direction flows.
// Session.mu guards breakpoints and the held list and is never held while
// waiting or forwarding; a Writer's own mutex guards its forward calls (the
// pump's and injected frames') and is released while it waits.
package intercept

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
	"github.com/rpctap/rpctap/internal/rewrite"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

// Breakpoint is one active breakpoint.
type Breakpoint struct {
	N      int    `json:"n"`
	Expr   string `json:"expr"`
	Owner  int    `json:"owner,omitempty"` // the attached connection that set it; 0: the session's
	filter filterexpr.Filter
}

// Held is a frame the tap holds.
type Held struct {
	N          int          `json:"n"`
	Dir        cassette.Dir `json:"dir"`
	Method     string       `json:"method,omitempty"`
	Kind       string       `json:"kind,omitempty"`
	ID         string       `json:"id,omitempty"`
	Frame      string       `json:"frame"` // the payload (a line without its ending, or a body)
	Since      time.Time    `json:"since"`
	Breakpoint int          `json:"breakpoint"`
	Expr       string       `json:"expr"`

	verdict chan verdict
}

// Action is what became of a held, dropped, injected or taken frame.
type Action string

const (
	ActForward Action = "forward" // held, then forwarded as it was
	ActEdit    Action = "edit"    // held, then an edited frame sent instead
	ActDrop    Action = "drop"    // held, then not forwarded
	ActTimeout Action = "timeout" // held, forwarded unchanged after --intercept-timeout
	ActRelease Action = "release" // held, forwarded unchanged when the child exited or the controller went away
	ActInject  Action = "inject"  // a frame of the user's, not the other side's
	ActTake    Action = "take"    // the answer to an injected request, taken off the wire
	ActRewrite Action = "rewrite" // changed by a --rewrite rule
)

type verdict struct {
	act     Action
	payload []byte // ActEdit: the new payload
	after   []byte // a frame rpctap sends right behind it (Cancel)
}

// Answer is the other side's answer to an injected request.
type Answer struct {
	Inject int          `json:"inject"` // the injection's number
	ID     string       `json:"id"`     // the id rpctap gave the request
	Dir    cassette.Dir `json:"dir"`    // where the answer came from
	Frame  string       `json:"frame"`
}

// Options configure a Session.
type Options struct {
	// Timeout forwards a held frame unchanged after this long (0: never).
	Timeout time.Duration
	// Protocol classifies frames ("" detects it from the first frames).
	Protocol string
	// Note records an intercept event in the read order (tap.Cmd.Note);
	// nil records none.
	Note func(tap.Event)
	// Tell is told one line about each frame held and each verdict (stderr
	// in `rpctap record`); nil is quiet.
	Tell func(string)
	// Cassette is the path the session records to, told to control
	// clients (view --attach SOCKET opens it).
	Cassette string
	// Rewrite rules (record --rewrite) run on every frame of both
	// directions before breakpoints see it.
	Rewrite rewrite.Rules
	// Faults (record --fault) run on every frame of both directions after
	// the rewrite rules and before breakpoints: a frame a fault fired on is
	// not held. Each fault done is recorded as a fault event after the
	// frame (and its intercept event, when the frame was changed, dropped
	// or duplicated) and told to Faulted.
	Faults *rewrite.Faults
	// Faulted is told each fault done (nil: quiet).
	Faulted func(msg string)
	// Kill kills the child (the kill fault); nil: the fault only stops
	// forwarding.
	Kill func()
}

// Session is the intercepting state of one recording.
type Session struct {
	opt Options

	mu       sync.Mutex
	bps      []*Breakpoint
	nextBP   int
	held     []*Held
	nextHeld int
	released bool
	changed  chan struct{} // closed and replaced when held or breakpoints change

	pairs   pairs // requests in flight, to give responses their method
	proto   protocol.Protocol
	det     *protocol.Detector
	writers [2]*Writer

	dap dapState // dap.go

	injMu    sync.Mutex
	nextInj  int
	injected map[string]int // id -> injection number, per direction of the request: key dir+id
	answers  []Answer
	answerc  map[int]chan Answer
}

// New makes a Session.
func New(opt Options) (*Session, error) {
	s := &Session{opt: opt, changed: make(chan struct{}), injected: map[string]int{}, answerc: map[int]chan Answer{}}
	s.pairs.m = map[string]string{}
	if opt.Protocol != "" {
		p, err := protocol.Lookup(opt.Protocol)
		if err != nil {
			return nil, err
		}
		s.proto = p
	} else {
		s.det = protocol.NewDetector()
		s.proto, _ = protocol.Lookup("jsonrpc")
	}
	return s, nil
}

// Wrap implements tap.Interceptor.
func (s *Session) Wrap(st tap.Stream, forward func([]byte) error) io.Writer {
	w := newWriter(s, st, forward)
	s.writers[st&1] = w
	return w
}

// SetCassette tells the session where it records (Options.Cassette).
func (s *Session) SetCassette(path string) {
	s.mu.Lock()
	s.opt.Cassette = path
	s.mu.Unlock()
}

// writer is the Writer of direction d.
func (s *Session) writer(d cassette.Dir) *Writer {
	if d == cassette.DirIn {
		return s.writers[tap.Stdin]
	}
	return s.writers[tap.Stdout]
}

// Release implements tap.Interceptor: forward everything held, hold
// nothing more.
func (s *Session) Release() {
	s.mu.Lock()
	s.released = true
	held := s.held
	s.mu.Unlock()
	for _, h := range held {
		s.resolve(h.N, verdict{act: ActRelease})
	}
}

// ReleaseHeld forwards every frame held now, unchanged; breakpoints stay
// and hold later frames.
func (s *Session) ReleaseHeld() {
	for _, h := range s.HeldFrames() {
		s.resolve(h.N, verdict{act: ActRelease})
	}
}

// notify wakes whoever watches held frames and breakpoints; call with mu.
func (s *Session) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change of the held frames or
// breakpoints.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Break adds a breakpoint (filterexpr.ParseBreakpoint) and returns its
// number. owner is the attached connection that owns it (0: the session).
func (s *Session) Break(expr string, owner int) (int, error) {
	f, err := filterexpr.ParseBreakpoint(expr)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextBP++
	s.bps = append(s.bps, &Breakpoint{N: s.nextBP, Expr: f.Expr, Owner: owner, filter: f})
	s.notify()
	return s.nextBP, nil
}

// Unbreak removes breakpoint n. Frames it holds stay held.
func (s *Session) Unbreak(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.bps {
		if b.N == n {
			s.bps = append(s.bps[:i], s.bps[i+1:]...)
			s.notify()
			return nil
		}
	}
	return fmt.Errorf("no breakpoint %d", n)
}

// Detach removes the breakpoints owner set and forwards what they hold.
func (s *Session) Detach(owner int) {
	s.mu.Lock()
	keep := s.bps[:0]
	gone := map[int]bool{}
	for _, b := range s.bps {
		if b.Owner == owner {
			gone[b.N] = true
			continue
		}
		keep = append(keep, b)
	}
	s.bps = keep
	var release []int
	for _, h := range s.held {
		if gone[h.Breakpoint] {
			release = append(release, h.N)
		}
	}
	s.notify()
	s.mu.Unlock()
	for _, n := range release {
		s.resolve(n, verdict{act: ActRelease})
	}
}

// Breakpoints lists the active breakpoints.
func (s *Session) Breakpoints() []Breakpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Breakpoint, len(s.bps))
	for i, b := range s.bps {
		out[i] = *b
	}
	return out
}

// HeldFrames lists the held frames, oldest first.
func (s *Session) HeldFrames() []Held {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Held, len(s.held))
	for i, h := range s.held {
		out[i] = *h
		out[i].verdict = nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out
}

// active reports whether any breakpoint is set, or a rewrite or fault rule.
func (s *Session) active() bool {
	if len(s.opt.Rewrite) > 0 || s.opt.Faults != nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bps) > 0 && !s.released
}

// match returns the first breakpoint r matches, or nil.
func (s *Session) match(r *cassette.Record, m filterexpr.MatchInfo) *Breakpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil
	}
	for _, b := range s.bps {
		if b.filter.Match(r, m) {
			c := *b
			return &c
		}
	}
	return nil
}

// ErrNoHeld is the error for a held-frame number that is not held (any
// more).
var ErrNoHeld = errors.New("no such held frame")

// Forward forwards held frame n as it is; n == 0 forwards every held frame.
func (s *Session) Forward(n int) error {
	if n == 0 {
		for _, h := range s.HeldFrames() {
			s.resolve(h.N, verdict{act: ActForward})
		}
		return nil
	}
	return s.resolve(n, verdict{act: ActForward})
}

// Drop drops held frame n: the other side never gets it.
func (s *Session) Drop(n int) error { return s.resolve(n, verdict{act: ActDrop}) }

// Edit sends payload instead of held frame n. payload must be valid JSON;
// it is compacted to one line and written in the stream's framing.
func (s *Session) Edit(n int, payload []byte) error {
	p, err := compactJSON(payload)
	if err != nil {
		return err
	}
	return s.resolve(n, verdict{act: ActEdit, payload: p})
}

// resolve gives held frame n its verdict and takes it off the held list.
func (s *Session) resolve(n int, v verdict) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range s.held {
		if h.N == n {
			s.held = append(s.held[:i], s.held[i+1:]...)
			h.verdict <- v
			s.notify()
			return nil
		}
	}
	return fmt.Errorf("%w: %d", ErrNoHeld, n)
}

// hold puts h on the held list and waits for its verdict (or the timeout,
// or Release).
func (s *Session) hold(h *Held) verdict {
	h.verdict = make(chan verdict, 1)
	s.mu.Lock()
	if s.released {
		s.mu.Unlock()
		return verdict{act: ActRelease}
	}
	s.nextHeld++
	h.N = s.nextHeld
	s.held = append(s.held, h)
	s.notify()
	s.mu.Unlock()
	s.tell(fmt.Sprintf("held frame %d (%s %s) on breakpoint %d: %s", h.N, h.Dir, orDash(h.Method), h.Breakpoint, h.Expr))
	var timeout <-chan time.Time
	if s.opt.Timeout > 0 {
		t := time.NewTimer(s.opt.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case v := <-h.verdict:
		return v
	case <-timeout:
		if s.resolve(h.N, verdict{act: ActTimeout}) != nil {
			// A verdict came at the same moment: it wins.
			return <-h.verdict
		}
		return <-h.verdict
	}
}

func (s *Session) tell(msg string) {
	if s.opt.Tell != nil {
		s.opt.Tell(msg)
	}
}

func (s *Session) note(e tap.Event) {
	if s.opt.Note != nil {
		s.opt.Note(e)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package intercept

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

// pairs remembers the method of each request in flight, per the direction
// it went, so that a response (which names none) matches m:METHOD as in the
// viewer. It is bounded: past maxPairs requests nobody answered, it starts
// over.
type pairs struct {
	mu sync.Mutex
	m  map[string]string
}

const maxPairs = 1 << 14

func pairKey(d protocol.Dir, id string) string {
	if d == protocol.FromParent {
		return "in " + id
	}
	return "out " + id
}

func opposite(d protocol.Dir) protocol.Dir {
	if d == protocol.FromParent {
		return protocol.FromChild
	}
	return protocol.FromParent
}

// classify classifies a frame of direction d and returns its info and the
// method a breakpoint sees: its own, or for a response its request's.
func (s *Session) classify(d protocol.Dir, payload []byte) (protocol.Info, string) {
	s.pairs.mu.Lock()
	defer s.pairs.mu.Unlock()
	if s.det != nil {
		if name, done := s.det.Add(d, payload); done {
			if p, err := protocol.Lookup(name); err == nil {
				s.proto = p
			}
			s.det = nil
		}
	}
	info := s.proto.Classify(d, payload)
	method := info.Method
	switch {
	case info.Kind == protocol.Request && info.ID != "":
		if len(s.pairs.m) >= maxPairs {
			clear(s.pairs.m)
		}
		s.pairs.m[pairKey(d, info.ID)] = info.Method
	case info.Kind == protocol.Response && info.ID != "":
		k := pairKey(opposite(d), info.ID)
		if m, ok := s.pairs.m[k]; ok {
			if method == "" {
				method = m
			}
			delete(s.pairs.m, k)
		}
	}
	return info, method
}

// Protocol is the protocol frames are classified with so far.
func (s *Session) Protocol() string {
	s.pairs.mu.Lock()
	defer s.pairs.mu.Unlock()
	return s.proto.Name()
}

// intercepting reports whether direction d must be taken frame by frame: a
// breakpoint is set, or an injected request awaits its answer from d.
func (s *Session) intercepting(d cassette.Dir) bool {
	if s.active() || s.dapActive() {
		return true
	}
	s.injMu.Lock()
	defer s.injMu.Unlock()
	for k := range s.injected {
		if k[0] != d[0] { // a request that went the other way, answered from d
			return true
		}
	}
	return false
}

// Injection is a frame injected by the user.
type Injection struct {
	N  int          `json:"n"`
	To cassette.Dir `json:"to"`
	ID string       `json:"id,omitempty"` // the id rpctap gave a request ("" for a notification)
}

// Inject sends payload (one JSON value) toward the child (cassette.DirIn)
// or the parent (cassette.DirOut), at the next frame boundary of that
// stream, in its framing. A request gets an id from rpctap's own namespace
// ("rpctap-N"), and the other side's answer to it is taken off the wire
// (never forwarded) and kept as an Answer. Notifications and responses go
// as they are.
func (s *Session) Inject(to cassette.Dir, payload []byte) (Injection, error) {
	p, err := compactJSON(payload)
	if err != nil {
		return Injection{}, err
	}
	w := s.writer(to)
	if w == nil {
		return Injection{}, fmt.Errorf("the session has no %s stream", to)
	}
	pd := protocol.FromParent
	if to == cassette.DirOut {
		pd = protocol.FromChild
	}
	s.pairs.mu.Lock()
	proto := s.proto
	s.pairs.mu.Unlock()
	info := proto.Classify(pd, p)
	s.injMu.Lock()
	s.nextInj++
	inj := Injection{N: s.nextInj, To: to}
	s.injMu.Unlock()
	if info.Kind == protocol.Request && info.ID != "" && proto.Name() == "dap" {
		if to != cassette.DirIn {
			return Injection{}, fmt.Errorf("a DAP request toward the parent (a reverse request) cannot be injected")
		}
		return s.injectDAP(w, p, inj)
	}
	if info.Kind == protocol.Request && info.ID != "" {
		id := strconv.Quote("rpctap-" + strconv.Itoa(inj.N))
		if p, err = setMember(p, "id", json.RawMessage(id)); err != nil {
			return Injection{}, err
		}
		inj.ID = id
		s.injMu.Lock()
		s.injected[string(to)+" "+id] = inj.N
		s.answerc[inj.N] = make(chan Answer, 1)
		s.injMu.Unlock()
	}
	ev := tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActInject),
		Breakpoint: fmt.Sprintf("inject %d", inj.N)}
	if err := w.inject(w.framed(p), &ev); err != nil {
		return inj, err
	}
	s.tell(fmt.Sprintf("injected frame %d toward the %s", inj.N, sideName(to)))
	return inj, nil
}

func sideName(d cassette.Dir) string {
	if d == cassette.DirIn {
		return "child"
	}
	return "parent"
}

// takeAnswer reports whether a frame read from direction d answers an
// injected request, and keeps it if so.
func (s *Session) takeAnswer(d cassette.Dir, info protocol.Info, payload []byte) (int, bool) {
	if info.Kind != protocol.Response || info.ID == "" {
		return 0, false
	}
	to := cassette.DirIn
	if d == cassette.DirIn {
		to = cassette.DirOut
	}
	s.injMu.Lock()
	defer s.injMu.Unlock()
	k := string(to) + " " + info.ID
	n, ok := s.injected[k]
	if !ok {
		return 0, false
	}
	delete(s.injected, k)
	a := Answer{Inject: n, ID: info.ID, Dir: d, Frame: string(payload)}
	s.answers = append(s.answers, a)
	if c := s.answerc[n]; c != nil {
		c <- a // buffered: kept until the waiter takes it (AnswerTo), however early the answer came
	}
	s.mu.Lock()
	s.notify()
	s.mu.Unlock()
	return n, true
}

// Answers lists the answers to injected requests so far.
func (s *Session) Answers() []Answer {
	s.injMu.Lock()
	defer s.injMu.Unlock()
	return append([]Answer(nil), s.answers...)
}

// AnswerTo returns a channel that gets (or already holds) the answer to
// injection n, nil if n is not a request. The answer is in the channel
// once: read it from one place. (One small channel is kept per injected
// request for the session's life; injections are made by hand.)
func (s *Session) AnswerTo(n int) <-chan Answer {
	s.injMu.Lock()
	defer s.injMu.Unlock()
	return s.answerc[n]
}

// setMember returns the JSON object b with member name set to v.
func setMember(b []byte, name string, v json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	m[name] = v
	return json.Marshal(m)
}

// injectDAP sends a DAP request toward the adapter with the next seq above
// every seq the adapter got from the parent (see dapState). It must go out
// at once, at a frame boundary, so that no frame of the parent's passes it
// unrenumbered.
func (s *Session) injectDAP(w *Writer, p []byte, inj Injection) (Injection, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return inj, w.err
	}
	if w.ahead > 0 || len(w.run) > 0 || len(w.queue) > 0 {
		return inj, fmt.Errorf("the parent is in the middle of a frame; inject again")
	}
	seq := s.dapInjectSeq()
	id := strconv.FormatInt(seq, 10)
	p, err := setMember(p, "seq", json.RawMessage(id))
	if err != nil {
		return inj, err
	}
	inj.ID = id
	s.injMu.Lock()
	s.injected[string(cassette.DirIn)+" "+id] = inj.N
	s.answerc[inj.N] = make(chan Answer, 1)
	s.injMu.Unlock()
	ev := tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActInject),
		Breakpoint: fmt.Sprintf("inject %d", inj.N)}
	w.queue = append(w.queue, queued{w.framedLocked(p), &ev})
	if err := w.flushQueue(); err != nil {
		return inj, err
	}
	s.tell(fmt.Sprintf("injected frame %d toward the child (seq %s; the parent's later seqs are renumbered)", inj.N, id))
	return inj, nil
}

package protocol

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// Optional interfaces a Protocol may implement to drive the session rules.
// The Session is generic: everything protocol-specific comes from Classify,
// Validate, MaxFrame and these.

// Handshaker is implemented by protocols whose sessions open with a
// handshake frame (ACP/MCP initialize, synaps ready, opi rpc_ready,
// brainwires Handshake).
type Handshaker interface {
	// HandshakeDir is the side that must send the handshake before anything
	// else: FromParent for ACP/MCP/brainwires, FromChild for synaps/opi.
	HandshakeDir() Dir
	// IsHandshake reports whether a frame (as classified) is the handshake.
	IsHandshake(dir Dir, info Info) bool
}

// MultiHandshaker is implemented by a Handshaker whose sessions open with a
// handshake from more than one side (brainwires: the viewer's Handshake,
// answered by the agent's HandshakeResponse). HandshakeDirs then replaces
// HandshakeDir: the first frame of every listed side must be that side's
// handshake (IsHandshake is asked per direction), and each side's handshake
// is tracked on its own (missing, late and repeated are reported per side).
type MultiHandshaker interface {
	HandshakeDirs() []Dir
}

// HandshakeExempter is implemented by a Handshaker whose protocol allows some
// frames of the handshake side before the handshake (MCP ping).
type HandshakeExempter interface {
	AllowedBeforeHandshake(dir Dir, info Info) bool
}

// PairRole says what a frame does to the set of requests awaiting answers.
type PairRole uint8

const (
	PairNone  PairRole = iota // neither opens nor answers a request
	PairOpen                  // a request that awaits an answer from the other side
	PairClose                 // an answer to a request sent from the other side
	// PairOpenQueue is a request without an id that the other side answers
	// by name (opi, pi: commands without an id are answered by a response
	// naming the command). Requests with the same key queue up, first in,
	// first out; a second one while the first is unanswered is legal.
	PairOpenQueue
	// PairCloseQueue is an answer without an id: it closes the oldest
	// unanswered PairOpenQueue request with the same key from the other side.
	PairCloseQueue
	// PairRefuse is an error that names a request by its id (synaps:
	// {"type":"error","id":…}): it answers the request when nothing else
	// will (a command rejected while a prompt is in flight), and one later
	// PairClose of the same id is still accepted (a prompt's runtime error
	// is followed by its response). An id nobody sent is no violation: the
	// error is an event first.
	PairRefuse
)

// Pairer is implemented by protocols that name a response's request
// differently from the default. The default (JSON-RPC and most others):
// a Request with a non-empty Info.ID opens key ID in its direction; a
// Response with a non-empty ID other than "null" closes key ID of the other
// direction. Keys are per direction, so the same id in both directions is
// legal. Queue keys (PairOpenQueue/PairCloseQueue) are kept apart from id
// keys, so a command name never meets an id.
type Pairer interface {
	Pair(dir Dir, info Info) (key string, role PairRole)
}

// Canceller is implemented by protocols in which a notification withdraws
// one of its sender's own requests so that no answer is due (MCP
// notifications/cancelled: "The receiver of a cancellation notification
// SHOULD NOT send a response for the cancelled request"). CancelledID
// returns the id (raw JSON, as Info.ID) of the request that frame, sent in
// direction dir, cancels. The request is then no longer awaited, and a
// response that crosses the cancellation on the wire is still accepted.
// Protocols whose cancelled requests are still answered (LSP
// $/cancelRequest) do not implement it.
type Canceller interface {
	CancelledID(dir Dir, info Info, frame []byte) (id string, ok bool)
}

// Lifecycler is implemented by protocols with rules on the order of a
// session's messages beyond the handshake (LSP: initialized only after
// initialize's response, nothing but exit after shutdown, progress only on
// tokens that were created). NewLifecycle returns the state of one session.
type Lifecycler interface {
	NewLifecycle() Lifecycle
}

// Lifecycle is one session's order rules. Frame sees every JSON frame after
// pairing (a response's Info.Method names its request); End reports what is
// still wrong when the session ends. Violations' Record is filled in by the
// Session.
type Lifecycle interface {
	Frame(dir Dir, info Info, frame []byte) []Violation
	End() []Violation
}

// recordNoter is a Lifecycle that reports at End about a frame it saw
// earlier (a finding summed over the session, placed at its first frame):
// it is told each frame's record number before Frame sees the frame.
type recordNoter interface {
	noteRecord(rec uint64)
}

// NonJSONAccepter is implemented by protocols whose frames need not be JSON
// (raw). For the others the Session reports non-JSON frames itself and does
// not call Validate on them.
type NonJSONAccepter interface {
	AcceptsNonJSON() bool
}

func defaultPair(_ Dir, info Info) (string, PairRole) {
	switch info.Kind {
	case Request:
		if info.ID != "" {
			return info.ID, PairOpen
		}
	case Response:
		if info.ID != "" && info.ID != "null" {
			return info.ID, PairClose
		}
	}
	return "", PairNone
}

// Session-level codes. docs/protocols.md lists them with their severities.
const (
	CodeFrameTooLarge     = "session.frame-too-large"     // error: frame over the protocol's MaxFrame
	CodeNonJSONStdout     = "session.non-json-stdout"     // error: the child wrote a line that is not JSON
	CodeANSIBeforeJSON    = "session.ansi-before-json"    // error: terminal escape codes before a JSON frame on stdout
	CodeNonJSONStdin      = "session.non-json-stdin"      // warning: the parent wrote a line that is not JSON
	CodeEmptyLine         = "session.empty-line"          // info: an empty line
	CodeHandshakeMissing  = "session.handshake-missing"   // error: the first frame of a handshake side is not its handshake, or that side sent none
	CodeHandshakeLate     = "session.handshake-late"      // warning: a side's handshake came after its other frames
	CodeHandshakeRepeated = "session.handshake-repeated"  // warning: a second handshake from the same side
	CodeUnknownResponseID = "session.unknown-response-id" // error: a response whose id names no request in flight (or, without an id, whose command has none)
	CodeDuplicateID       = "session.duplicate-id"        // error: a request reuses an id still in flight in its direction
	CodeUnanswered        = "session.unanswered"          // warning: a request still unanswered when the session ended
)

type pairKey struct {
	dir Dir
	key string
}

type pending struct {
	method string
	rec    uint64
}

// sessionState holds the session-level rules.
type sessionState struct {
	p         Protocol
	hs        Handshaker
	exempt    HandshakeExempter
	pair      func(Dir, Info) (string, PairRole)
	cancel    Canceller
	nonJSONOK bool
	vj        validJSONValidator // Validate without the syntax check, for frames found valid here
	iv        indexedValidator   // Validate through an index of the frame (FrameClassifiedIndexed)
	idx       *jsonscan.Index    // the index handed to FrameClassifiedIndexed, for idxFor
	idxFor    []byte

	hsDir  [2]bool // the sides that open with a handshake
	hsSeen [2]bool
	// hsReq is the open handshake request of each side (pairKey, when the
	// handshake is a request): an error response to it means the handshake
	// failed and the side may open again (hsReqSet says it is set).
	hsReq    [2]pairKey
	hsReqSet [2]bool
	// closedAt is the record at which the parent closed the child's stdin
	// (0: it did not); see ParentClosed.
	closedAt   uint64
	stoppedAt  uint64  // frames from this record on are not judged (Session.Stopped); 0: all are
	hsMissing  [2]bool // handshake-missing already reported for that side
	frames     [2]uint64
	open       map[pairKey]pending
	queued     map[pairKey][]pending // PairOpenQueue requests, oldest first (nil until the first)
	refused    map[pairKey]bool      // requests answered by a PairRefuse, whose response may still come
	lastRecord uint64
	fr         framingState // framing.go
	life       Lifecycle    // per-session order rules of a Lifecycler (nil: none)
}

func newSessionState(p Protocol) sessionState {
	s := sessionState{p: p, pair: defaultPair, open: map[pairKey]pending{}}
	if h, ok := p.(Handshaker); ok {
		s.hs = h
		s.exempt, _ = p.(HandshakeExempter)
		if m, ok := p.(MultiHandshaker); ok {
			for _, d := range m.HandshakeDirs() {
				s.hsDir[min(d, FromChild)] = true
			}
		} else {
			s.hsDir[min(h.HandshakeDir(), FromChild)] = true
		}
	}
	if pr, ok := p.(Pairer); ok {
		s.pair = pr.Pair
	}
	s.cancel, _ = p.(Canceller)
	if n, ok := p.(NonJSONAccepter); ok {
		s.nonJSONOK = n.AcceptsNonJSON()
	}
	s.fr = newFramingState(p)
	if l, ok := p.(Lifecycler); ok {
		s.life = l.NewLifecycle()
	}
	s.vj, _ = p.(validJSONValidator)
	s.iv, _ = p.(indexedValidator)
	return s
}

func (s *sessionState) frame(rec uint64, dir Dir, frame []byte, validJSON bool, pre *Info) (Info, []Violation) {
	var vs []Violation
	add := func(code string, sev Severity, format string, a ...any) {
		vs = append(vs, Violation{Code: code, Severity: sev, Message: fmt.Sprintf(format, a...)})
	}
	if dir > FromChild {
		dir = FromChild
	}
	s.frames[dir]++
	s.lastRecord = rec
	if fvs, skip := s.framingChecks(rec, dir, frame); fvs != nil || skip {
		vs = append(vs, fvs...)
		if skip {
			return Info{Kind: Invalid}, s.finish(rec, vs)
		}
	}
	if m := s.p.MaxFrame(); m > 0 && len(frame) > m {
		add(CodeFrameTooLarge, SevError, "frame is %d bytes, over %s's limit of %d bytes", len(frame), s.p.Name(), m)
	}
	if !s.nonJSONOK {
		if len(frame) == 0 || len(skipWSAll(frame)) == 0 {
			add(CodeEmptyLine, SevInfo, "empty line")
			return Info{Kind: Invalid}, s.finish(rec, vs)
		}
		if !validJSON && !json.Valid(frame) {
			if rest, esc := stripANSI(frame); esc && len(rest) > 0 && json.Valid(rest) {
				if dir == FromChild {
					add(CodeANSIBeforeJSON, SevError, "terminal escape codes before the JSON frame on stdout (a logger writing colours to stdout?); the parent's JSON parser will fail: %q", excerpt(frame[:len(frame)-len(rest)], 40))
				} else {
					add(CodeNonJSONStdin, SevWarning, "terminal escape codes before the JSON frame on stdin: %q", excerpt(frame[:len(frame)-len(rest)], 40))
				}
				frame = rest // judge the JSON behind the junk so pairing stays right
			} else {
				if dir == FromChild {
					add(CodeNonJSONStdout, SevError, "the child wrote a line that is not JSON on stdout (logs belong on stderr): %q", excerpt(frame, 60))
				} else {
					add(CodeNonJSONStdin, SevWarning, "the parent wrote a line that is not JSON: %q", excerpt(frame, 60))
				}
				return Info{Kind: Invalid}, s.finish(rec, vs)
			}
		}
	}
	var info Info
	if pre != nil {
		info = *pre
	} else {
		info = s.p.Classify(dir, frame)
	}

	// Handshake.
	if s.hs != nil && s.hsDir[dir] {
		isHS := s.hs.IsHandshake(dir, info)
		switch {
		case isHS && s.hsSeen[dir]:
			add(CodeHandshakeRepeated, SevWarning, "a second %s handshake from the %s", s.p.Name(), sideName(dir))
		case isHS:
			s.hsSeen[dir] = true
			if s.hsMissing[dir] {
				add(CodeHandshakeLate, SevWarning, "the %s handshake from the %s came after that side's other frames", s.p.Name(), sideName(dir))
			}
		case s.hsSeen[dir]:
		case s.exempt != nil && s.exempt.AllowedBeforeHandshake(dir, info):
		case !s.hsMissing[dir]:
			s.hsMissing[dir] = true
			add(CodeHandshakeMissing, SevError, "%s sessions open with the handshake from the %s; the %s's first frame is %s", s.p.Name(), sideName(dir), sideName(dir), describe(info))
		}
	}

	// Pairing, before Validate so responses carry their request's method.
	key, role := s.pair(dir, info)
	switch role {
	case PairOpen:
		k := pairKey{dir, key}
		if old, dup := s.open[k]; dup {
			add(CodeDuplicateID, SevError, "id %s is already in flight from the %s (request %s at record %d)", key, sideName(dir), orQ(old.method), old.rec)
		}
		s.open[k] = pending{method: info.Method, rec: rec}
		if s.hs != nil && s.hsDir[dir] && s.hs.IsHandshake(dir, info) {
			s.hsReq[dir], s.hsReqSet[dir] = k, true
		}
	case PairRefuse:
		k := pairKey{1 - dir, key}
		if p, ok := s.open[k]; ok {
			s.withdraw(k)
			if info.Method == "" {
				info.Method = p.method
			}
		}
	case PairClose:
		k := pairKey{1 - dir, key}
		if s.refused[k] {
			if _, open := s.open[k]; !open {
				delete(s.refused, k) // the response that follows a refusal
				break
			}
		}
		if p, ok := s.open[k]; ok {
			delete(s.open, k)
			if info.Method == "" {
				info.Method = p.method
			}
			if s.hsReqSet[1-dir] && s.hsReq[1-dir] == k {
				// A handshake answered with an error did not happen: the
				// side may try again, as MCP 2026-07-28 clients do after
				// probing an older server with server/discover (-32601),
				// then falling back to initialize.
				s.hsReqSet[1-dir] = false
				if hasMember(frame, "error") {
					s.hsSeen[1-dir] = false
				}
			}
		} else {
			add(CodeUnknownResponseID, SevError, "response to id %s, but no request with that id from the %s is awaiting an answer", key, sideName(1-dir))
		}
	case PairOpenQueue:
		if s.queued == nil {
			s.queued = map[pairKey][]pending{}
		}
		k := pairKey{dir, key}
		s.queued[k] = append(s.queued[k], pending{method: info.Method, rec: rec})
	case PairCloseQueue:
		k := pairKey{1 - dir, key}
		if q := s.queued[k]; len(q) > 0 {
			first := q[0]
			if len(q) == 1 {
				delete(s.queued, k)
			} else {
				s.queued[k] = q[1:]
			}
			if info.Method == "" {
				info.Method = first.method
			}
		} else {
			add(CodeUnknownResponseID, SevError, "response to %q without an id, but no %q request without an id from the %s is awaiting an answer", key, key, sideName(1-dir))
		}
	}

	if s.cancel != nil && info.Kind == Notification {
		if id, ok := s.cancel.CancelledID(dir, info, frame); ok {
			if k := (pairKey{dir, id}); s.open[k].rec != 0 {
				s.withdraw(k)
			}
		}
	}

	if s.life != nil {
		if r, ok := s.life.(recordNoter); ok {
			r.noteRecord(rec)
		}
		vs = append(vs, s.life.Frame(dir, info, frame)...)
	}

	if s.iv != nil && s.idx != nil && len(frame) > 0 && len(s.idxFor) == len(frame) && &s.idxFor[0] == &frame[0] {
		vs = append(vs, s.iv.validateIndexed(dir, frame, info, s.idx)...)
	} else if s.vj != nil && !s.nonJSONOK {
		// frame passed json.Valid above (or is the JSON behind ANSI junk)
		vs = append(vs, s.vj.validateValidJSON(dir, frame, info)...)
	} else {
		vs = append(vs, s.p.Validate(dir, frame, info)...)
	}
	return info, s.finish(rec, vs)
}

// withdraw ends the wait for request k without an answer (refused or
// cancelled); one later answer to it is still accepted.
func (s *sessionState) withdraw(k pairKey) {
	delete(s.open, k)
	if s.refused == nil {
		s.refused = map[pairKey]bool{}
	}
	s.refused[k] = true
}

func (s *sessionState) finish(rec uint64, vs []Violation) []Violation {
	for i := range vs {
		vs[i].Record = rec
	}
	return vs
}

func (s *sessionState) end() []Violation {
	vs := s.cutFindings()
	if s.life != nil {
		vs = append(vs, s.life.End()...)
	}
	if s.hs != nil && s.frames[0]+s.frames[1] > 0 {
		for _, d := range [2]Dir{FromParent, FromChild} {
			if s.hsDir[d] && !s.hsSeen[d] && !s.hsMissing[d] {
				vs = append(vs, Violation{Code: CodeHandshakeMissing, Severity: SevError,
					Message: fmt.Sprintf("the session ended without the %s handshake from the %s", s.p.Name(), sideName(d))})
			}
		}
	}
	type unanswered struct {
		pending
		dir Dir
		id  string // "" for a queued request
	}
	left := make([]unanswered, 0, len(s.open))
	for k, p := range s.open {
		left = append(left, unanswered{p, k.dir, k.key})
	}
	for k, q := range s.queued {
		for _, p := range q {
			left = append(left, unanswered{p, k.dir, ""})
		}
	}
	sort.Slice(left, func(i, j int) bool { return left[i].rec < left[j].rec })
	for _, u := range left {
		var msg string
		if u.id == "" {
			msg = fmt.Sprintf("request %s (no id, answered in order by name; from the %s) was never answered", orQ(u.method), sideName(u.dir))
		} else {
			msg = fmt.Sprintf("request %s (id %s, from the %s) was never answered", orQ(u.method), u.id, sideName(u.dir))
		}
		sev := SevWarning
		if u.dir == FromChild && s.closedAt != 0 && u.rec > s.closedAt {
			// The parent had closed the child's stdin: nobody could answer.
			// Closing stdin is how a parent ends a stdio session (the MCP
			// specification, Lifecycle, Shutdown, stdio: the client should
			// initiate shutdown by first closing the input stream to the
			// child process), so a request the child sends on its way out
			// (MCP roots/list) is no bug.
			sev = SevInfo
			msg += fmt.Sprintf(" (sent after the parent closed the child's stdin at record %d)", s.closedAt)
		}
		vs = append(vs, Violation{Code: CodeUnanswered, Severity: sev, Record: u.rec, Message: msg})
	}
	return vs
}

// hasMember reports whether the JSON object frame has a top-level member
// named key.
func hasMember(frame []byte, key string) bool {
	found := false
	forEachMember(frame, func(k, _ []byte) bool {
		if string(k) == key {
			found = true
			return false
		}
		return true
	})
	return found
}

func sideName(d Dir) string {
	if d == FromParent {
		return "parent"
	}
	return "child"
}

func describe(info Info) string {
	if info.Method != "" {
		return fmt.Sprintf("%s %q", info.Kind, info.Method)
	}
	if info.Kind == "" {
		return "unclassified"
	}
	return string(info.Kind)
}

func orQ(s string) string {
	if s == "" {
		return "(unknown method)"
	}
	return fmt.Sprintf("%q", s)
}

func skipWSAll(b []byte) []byte { return b[skipWS(b, 0):] }

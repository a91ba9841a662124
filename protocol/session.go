package protocol

import "github.com/rpctap/rpctap/internal/jsonscan"

// Session applies one protocol's frame and session rules to the frames of
// one session (one child, or one socket connection) in recorded order.
// It is not safe for concurrent use.
//
// The zero Session is not usable; call NewSession. The concrete rules are
// implemented in this package; this file fixes the API the recorder, check,
// replay and the viewer call.
type Session struct {
	p     Protocol
	state sessionState
}

// NewSession starts a session judged by p.
func NewSession(p Protocol) *Session { return &Session{p: p, state: newSessionState(p)} }

// Protocol returns the protocol the session judges by.
func (s *Session) Protocol() Protocol { return s.p }

// Frame classifies and validates one frame. rec is the frame's cassette
// record number, copied into every violation returned.
func (s *Session) Frame(rec uint64, dir Dir, frame []byte) (Info, []Violation) {
	return s.state.frame(rec, dir, frame, false, nil)
}

// FrameValidJSON is Frame for a frame the caller has already found to be
// valid JSON (encoding/json.Valid would return true; the recorder checks each
// frame once and shares the answer), so the session skips its own syntax
// pass. The verdicts are Frame's; passing a frame that is not valid JSON
// gives unspecified (but never panicking) results.
func (s *Session) FrameValidJSON(rec uint64, dir Dir, frame []byte) (Info, []Violation) {
	return s.state.frame(rec, dir, frame, true, nil)
}

// FrameClassified is FrameValidJSON for a caller that has also classified
// the frame already: info must be what s.Protocol().Classify(dir, frame)
// returned (the recorder classifies every frame for its record and hands the
// answer on), so the session does not classify it a second time.
func (s *Session) FrameClassified(rec uint64, dir Dir, frame []byte, info Info) (Info, []Violation) {
	return s.state.frame(rec, dir, frame, true, &info)
}

// FrameClassifiedIndexed is FrameClassified for a frame that idx indexes
// (cassette.VerbatimIndexed made it while checking the frame's syntax; a
// recorder copies it along with the frame): the shape checks skip values
// through it instead of indexing the frame again. idx must index exactly
// frame; the verdicts are FrameClassified's.
func (s *Session) FrameClassifiedIndexed(rec uint64, dir Dir, frame []byte, info Info, idx *jsonscan.Index) (Info, []Violation) {
	s.state.idx, s.state.idxFor = idx, frame
	defer func() { s.state.idx, s.state.idxFor = nil, nil }()
	return s.state.frame(rec, dir, frame, true, &info)
}

// End reports what is still wrong when the session ends: requests never
// answered, a handshake never sent.
// After Stopped it reports nothing.
func (s *Session) End() []Violation {
	if s.state.stoppedAt != 0 {
		return nil
	}
	return s.state.end()
}

// Stopped tells the Session that frames from record rec on are not judged
// (the recorder stopped validating: it fell behind the traffic). End then
// reports nothing: every end-of-session finding (a request never answered,
// a handshake never sent, a body cut short by the end) needs the whole
// session, and the answer may be among the frames not judged.
func (s *Session) Stopped(rec uint64) {
	if s.state.stoppedAt == 0 || rec < s.state.stoppedAt {
		s.state.stoppedAt = max(rec, 1)
	}
}

// ParentClosed tells the Session that the parent closed the child's stdin
// at record rec (the cassette's stdin-eof event). Requests the child sends
// after that cannot be answered, so End does not hold them against the
// session. It may be called before or after the frames around rec are
// judged, but before End.
func (s *Session) ParentClosed(rec uint64) {
	if s.state.closedAt == 0 || rec < s.state.closedAt {
		s.state.closedAt = rec
	}
}

// Intercepted tells the Session about a frame of direction dir that the
// other side never got: an intercepting tap dropped it, or took it off the
// wire as the answer to a request the tap injected itself (`rpctap record
// --intercept`; the cassette's intercept events with act "drop" or
// "take"). A response among them ends its request's wait: the other side
// answered, rpctap kept the answer, so End does not report the request as
// unanswered. A later response to the same id is then accepted once, as
// after a cancellation. Other frames change nothing.
func (s *Session) Intercepted(dir Dir, frame []byte) {
	info := s.p.Classify(dir, frame)
	key, role := s.state.pair(dir, info)
	switch role {
	case PairClose, PairRefuse:
		if k := (pairKey{1 - dir, key}); s.state.open[k].rec != 0 {
			s.state.withdraw(k)
		}
	case PairCloseQueue:
		k := pairKey{1 - dir, key}
		if q := s.state.queued[k]; len(q) > 1 {
			s.state.queued[k] = q[1:]
		} else {
			delete(s.state.queued, k)
		}
	}
}

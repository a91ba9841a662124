package protocol

// sessionState holds the session-level rules. PLACEHOLDER: the protocol
// work replaces this file with the real state machine.
type sessionState struct{ p Protocol }

func newSessionState(p Protocol) sessionState { return sessionState{p: p} }

func (s *sessionState) frame(rec uint64, dir Dir, frame []byte) (Info, []Violation) {
	info := s.p.Classify(dir, frame)
	v := s.p.Validate(dir, frame, info)
	for i := range v {
		v[i].Record = rec
	}
	return info, v
}

func (s *sessionState) end() []Violation { return nil }

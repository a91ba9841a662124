package intercept

import (
	"encoding/json"
	"strconv"
	"sync"
)

// DAP numbers its messages by seq, one counter per side, and a response
// names its request by request_seq. A request rpctap injects toward the
// adapter takes a seq above every seq the parent has used, and from then
// on every frame of the parent's goes to the adapter with its seq raised
// by the number of requests injected so far (renumbered); the adapter's
// responses to renumbered requests go back to the parent with the
// parent's own request_seq. Each renumbered frame is marked in the
// cassette as a rewrite with its original.
type dapState struct {
	mu      sync.Mutex
	offset  int64           // added to the seq of every parent frame from now on
	maxSent int64           // the highest seq the adapter got from the parent's side
	back    map[int64]int64 // a renumbered request's seq -> the parent's own
}

// dapSeqs reads a DAP frame's type, seq and request_seq.
func dapSeqs(payload []byte) (typ string, seq, reqSeq int64, ok bool) {
	var m struct {
		Type       string `json:"type"`
		Seq        *int64 `json:"seq"`
		RequestSeq *int64 `json:"request_seq"`
	}
	if json.Unmarshal(payload, &m) != nil || m.Seq == nil {
		return "", 0, 0, false
	}
	if m.RequestSeq != nil {
		reqSeq = *m.RequestSeq
	}
	return m.Type, *m.Seq, reqSeq, true
}

func (s *Session) isDAP() bool { return s.Protocol() == "dap" }

// dapActive reports whether DAP frames must be renumbered or mapped back.
func (s *Session) dapActive() bool {
	s.dap.mu.Lock()
	defer s.dap.mu.Unlock()
	return s.dap.offset > 0 || len(s.dap.back) > 0
}

// dapParentFrame follows (and, once requests were injected, renumbers) a
// frame of the parent's: it returns the payload to send and whether it
// changed.
func (s *Session) dapParentFrame(payload []byte) ([]byte, bool) {
	typ, seq, _, ok := dapSeqs(payload)
	if !ok {
		return payload, false
	}
	s.dap.mu.Lock()
	defer s.dap.mu.Unlock()
	if s.dap.offset == 0 {
		s.dap.maxSent = max(s.dap.maxSent, seq)
		return payload, false
	}
	n := seq + s.dap.offset
	s.dap.maxSent = max(s.dap.maxSent, n)
	out, err := setMember(payload, "seq", json.RawMessage(strconv.FormatInt(n, 10)))
	if err != nil {
		return payload, false
	}
	if typ == "request" {
		if s.dap.back == nil {
			s.dap.back = map[int64]int64{}
		}
		s.dap.back[n] = seq
	}
	return out, true
}

// dapChildFrame maps the request_seq of the adapter's response to a
// renumbered request back to the parent's own seq.
func (s *Session) dapChildFrame(payload []byte) ([]byte, bool) {
	typ, _, reqSeq, ok := dapSeqs(payload)
	if !ok || typ != "response" {
		return payload, false
	}
	s.dap.mu.Lock()
	defer s.dap.mu.Unlock()
	orig, found := s.dap.back[reqSeq]
	if !found {
		return payload, false
	}
	delete(s.dap.back, reqSeq)
	out, err := setMember(payload, "request_seq", json.RawMessage(strconv.FormatInt(orig, 10)))
	if err != nil {
		return payload, false
	}
	return out, true
}

// dapInjectSeq gives an injected request the next seq above every seq the
// adapter got, and raises the offset for the parent's later frames.
func (s *Session) dapInjectSeq() int64 {
	s.dap.mu.Lock()
	defer s.dap.mu.Unlock()
	s.dap.maxSent++
	s.dap.offset++
	return s.dap.maxSent
}

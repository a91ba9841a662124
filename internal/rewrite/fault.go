package rewrite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay"
)

// Faults applies fault rules (replay.Fault, the syntax of `rpctap replay
// --fault`) to live frames of both directions, beside the rewrite rules:
// `rpctap record --fault` runs them in the intercepting tap, on either
// framing. A rule applies to the frames of its dir= (in: the parent's;
// out, or no dir=: the child's, as record --fault always did), and its
// frame=N counts the frames of that direction. Apply is safe for concurrent use (the two
// directions' pumps call it).
type Faults struct {
	mu     sync.Mutex
	rules  []replay.Fault
	hits   []int
	frames map[cassette.Dir]int
}

// NewFaults returns the engine for rules; nil when there are none.
func NewFaults(rules []replay.Fault) *Faults {
	if len(rules) == 0 {
		return nil
	}
	return &Faults{rules: rules, hits: make([]int, len(rules)), frames: map[cassette.Dir]int{}}
}

// FaultHit is a fault rule that fired on a frame: what to do with it.
type FaultHit struct {
	Rule   string        // the rule as written
	Action string        // delay, drop, duplicate, split, truncate, corrupt, error, kill
	Frame  int           // the frame's number among its direction's frames (from 1)
	What   string        // the frame's kind and method, for messages
	Delay  time.Duration // delay
	// Payload is the frame to send instead (truncate, corrupt, error); the
	// caller frames it (a newline, or a recounted Content-Length).
	Payload []byte
}

// Msg is the fault event's text: the rule, the frame's number among its
// direction's frames, its kind and method.
func (h *FaultHit) Msg(d cassette.Dir) string {
	return fmt.Sprintf("%s on frame %d of %s (%s)", h.Rule, h.Frame, d, h.What)
}

// Apply counts a frame of direction d and returns the first rule that
// fires on it (nil: none). payload is the frame (a line without its end,
// or a body); kind (request, response, notification, event), method (a
// response's request's) and id its classification; proto the session's
// protocol ("" unknown), for filter= selectors.
func (f *Faults) Apply(proto string, d cassette.Dir, payload []byte, kind, method, id string) *FaultHit {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frames[d]++
	n := f.frames[d]
	for i := range f.rules {
		r := &f.rules[i]
		if dir := r.Dir; dir == "" && d != cassette.DirOut || dir != "" && dir != string(d) {
			continue // without dir=, the child's frames (as record --fault always did)
		}
		if r.Method != "" && r.Method != method || r.Kind != "" && r.Kind != kind || r.Frame > 0 && r.Frame != n {
			continue
		}
		if !r.MatchFrame(proto, d, payload, kind, method, id) {
			continue
		}
		limit := r.Times
		if limit == 0 && r.Frame > 0 {
			limit = 1
		}
		if limit > 0 && f.hits[i] >= limit {
			continue
		}
		h := &FaultHit{Rule: r.String(), Action: r.Action, Frame: n, What: kind + " " + method, Delay: r.Delay}
		switch r.Action {
		case "truncate":
			h.Payload = append([]byte(nil), payload[:len(payload)/2]...)
		case "corrupt":
			nb, ok := corrupt(payload, r.Field)
			if !ok {
				continue // only frames that have the field
			}
			h.Payload = nb
		case "error":
			var e struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if kind != "response" || json.Unmarshal(payload, &e) != nil || len(e.Result) == 0 {
				continue // responses that succeeded
			}
			h.Payload, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.ID,
				"error": map[string]any{"code": -32603, "message": "rpctap: injected fault"}})
		}
		f.hits[i]++
		return h
	}
	return nil
}

// corrupt replaces the member at the JSON pointer ptr with the string
// "rpctap-corrupted" (as replay's corrupt does); false when the frame has
// no such member.
func corrupt(body []byte, ptr string) ([]byte, bool) {
	var root any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // the other numbers keep their digits
	if dec.Decode(&root) != nil || len(ptr) < 2 {
		return nil, false
	}
	cur := root
	toks := bytes.Split([]byte(ptr[1:]), []byte("/"))
	for i, t := range toks {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[string(t)]
		if !ok {
			return nil, false
		}
		if i == len(toks)-1 {
			m[string(t)] = "rpctap-corrupted"
			break
		}
		cur = v
	}
	out, err := json.Marshal(root)
	return out, err == nil
}

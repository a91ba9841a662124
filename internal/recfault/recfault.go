// Package recfault applies fault rules (replay.Fault, the syntax of
// `rpctap replay --fault`) to a real child's stdout while `rpctap record`
// forwards it: the one exception to byte-exact forwarding, made only when
// the user asks for it. It is installed as tap.Cmd.StdoutFilter; without
// rules nothing of it runs.
//
// The Writer holds the child's output until a line is complete (rules
// apply to frames, the tap forwards reads), then writes the line as the
// rule says, and tells each fault done to a callback (the recorder writes
// it as a "fault" event record). Requests is fed the parent's frames (by an
// observer wrapper) so that a response is matched by its request's method.
package recfault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay"
)

// Requests remembers the method of each request the parent sent, by its
// raw id, so that a response of the child can be matched by method. It is
// fed from the stdin pump and read from the stdout pump: a mutex guards it.
type Requests struct {
	mu      sync.Mutex
	partial []byte
	byID    map[string]string
}

// maxRequests bounds the ids remembered: the oldest are forgotten past it.
const maxRequests = 1 << 16

// Feed takes a chunk of the parent's stdin (any split).
func (r *Requests) Feed(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		e := envelopeOf(r.partial[:i])
		if e.Method != "" && len(e.ID) > 0 {
			if r.byID == nil || len(r.byID) >= maxRequests {
				r.byID = map[string]string{}
			}
			r.byID[string(e.ID)] = e.Method
		}
		r.partial = r.partial[i+1:]
	}
	if len(r.partial) == 0 {
		r.partial = nil
	}
}

func (r *Requests) method(id json.RawMessage) string {
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[string(id)]
}

type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Type   string          `json:"type"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func envelopeOf(line []byte) envelope {
	var e envelope
	_ = json.Unmarshal(bytes.TrimRight(line, "\r"), &e)
	if string(e.ID) == "null" {
		e.ID = nil
	}
	return e
}

// Writer applies the rules to the lines written to it and writes the
// result to Dst. Write may sleep (delay, split) and blocks while Dst does.
type Writer struct {
	Dst      io.Writer
	Rules    []replay.Fault
	Requests *Requests                                 // may be nil: responses then match no method= rule
	Note     func(rule string, frame int, what string) // each fault done
	Kill     func() error                              // kills the real child (kill rule)

	hits    []int
	frames  int
	partial []byte
	killed  bool
}

// Write takes a chunk of the child's stdout. It reports len(p) consumed
// unless Dst failed.
func (w *Writer) Write(p []byte) (int, error) {
	if w.killed {
		return len(p), nil // the child is being killed: nothing more of it goes through
	}
	w.partial = append(w.partial, p...)
	for !w.killed {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i+1]
		if err := w.line(line); err != nil {
			return 0, err
		}
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) == 0 {
		w.partial = nil
	}
	return len(p), nil
}

// Flush forwards a last line without a newline, unchanged.
func (w *Writer) Flush() error {
	if len(w.partial) == 0 || w.killed {
		return nil
	}
	_, err := w.Dst.Write(w.partial)
	w.partial = nil
	return err
}

// line forwards one complete line (with its newline) as the rules say.
func (w *Writer) line(line []byte) error {
	if w.hits == nil {
		w.hits = make([]int, len(w.Rules))
	}
	w.frames++
	body := bytes.TrimRight(line, "\r\n")
	eol := line[len(body):]
	e := envelopeOf(body)
	method, kind := e.Method, "notification"
	switch {
	case e.Type != "":
		method, kind = e.Type, "event"
	case e.Method != "" && len(e.ID) > 0:
		kind = "request"
	case e.Method == "" && len(e.ID) > 0:
		method, kind = w.Requests.method(e.ID), "response"
	}
	for i := range w.Rules {
		r := &w.Rules[i]
		if r.Method != "" && r.Method != method || r.Kind != "" && r.Kind != kind || r.Frame > 0 && r.Frame != w.frames {
			continue
		}
		if !r.MatchFrame("", cassette.DirOut, body, kind, method, string(e.ID)) {
			continue
		}
		limit := r.Times
		if limit == 0 && r.Frame > 0 {
			limit = 1
		}
		if limit > 0 && w.hits[i] >= limit {
			continue
		}
		what := fmt.Sprintf("%s %s", kind, method)
		switch r.Action {
		case "delay":
			w.hits[i]++
			w.note(r, what)
			time.Sleep(r.Delay)
			continue
		case "drop":
			w.hits[i]++
			w.note(r, what)
			return nil
		case "duplicate":
			w.hits[i]++
			w.note(r, what)
			return w.write(line, line)
		case "split":
			w.hits[i]++
			w.note(r, what)
			h := len(line) / 2
			return w.write(line[:h], line[h:])
		case "truncate":
			w.hits[i]++
			w.note(r, what)
			return w.write(append(append([]byte(nil), body[:len(body)/2]...), eol...))
		case "corrupt":
			nb, ok := corrupt(body, r.Field)
			if !ok {
				continue // only frames that have the field
			}
			w.hits[i]++
			w.note(r, what)
			return w.write(append(nb, eol...))
		case "error":
			if kind != "response" || len(e.Result) == 0 {
				continue // responses that succeeded
			}
			w.hits[i]++
			w.note(r, what)
			msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.ID,
				"error": map[string]any{"code": -32603, "message": "rpctap: injected fault"}})
			return w.write(append(msg, eol...))
		case "kill":
			w.hits[i]++
			w.note(r, what)
			w.killed = true
			if w.Kill != nil {
				return w.Kill()
			}
			return nil
		}
	}
	return w.write(line)
}

func (w *Writer) note(r *replay.Fault, what string) {
	if w.Note != nil {
		w.Note(r.String(), w.frames, what)
	}
}

func (w *Writer) write(parts ...[]byte) error {
	for i, p := range parts {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := w.Dst.Write(p); err != nil {
			return err
		}
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

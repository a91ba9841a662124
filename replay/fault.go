package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
)

// Fault injection: replay can misbehave on purpose, so that a parent's (or,
// with verify, a child's) failure paths get tested as deterministically as
// its happy path. A Fault is applied to the frames the replay sends (a fake
// child's answers, notifications and requests; verify's parent frames).
//
// A rule is one line: an action, its argument if it takes one, then
// selectors, all separated by spaces:
//
//	delay 2s method=tools/call        wait before sending
//	drop method=session/update         do not send it
//	duplicate frame=3                  send it twice
//	split method=initialize            send it in two writes, 50 ms apart
//	truncate kind=response             send its first half and the line end
//	corrupt /result/stopReason         replace that field by "rpctap-corrupted"
//	error method=session/new           answer with the protocol's error instead (responses)
//	kill frame=7                       the fake child dies of SIGKILL instead of sending it
//
// Selectors (all must hold): method=M (method, type or command; a response
// carries its request's), kind=request|response|notification|event,
// dir=in|out (replay sends out as a fake child and in as verify's fake
// parent, so a rule for the other direction never applies there),
// frame=N (the Nth frame this side sends, from 1), times=K (at most K
// times; default every match, or once with frame=), filter=EXPR (the
// viewer's filter language, package filterexpr, with & instead of spaces:
// filter=m:tools/&/"isError":true/; decided on the frame alone, as a
// breakpoint is). A rule file holds one
// rule a line; blank lines and lines starting with # are skipped.
type Fault struct {
	Action string        // delay, drop, duplicate, split, truncate, corrupt, error, kill
	Delay  time.Duration // delay
	Field  string        // corrupt: a JSON pointer
	Method string
	Kind   string
	Dir    string // "in" or "out": the direction of the frames it applies to; "" any
	Frame  int    // 0: any
	Times  int    // 0: every match
	Filter string // filter=: a filter expression the frame must match ("" any)
	hits   int
	rule   string
	filter filterexpr.Filter
}

// MatchFrame reports whether a frame of direction d of a session in
// protocol proto ("" when unknown) passes the rule's filter= selector
// (true when it has none); payload is the frame (a line without its end,
// or a body), kind, method and id its classification, method a response's
// request's.
func (f *Fault) MatchFrame(proto string, d cassette.Dir, payload []byte, kind, method, id string) bool {
	if f.Filter == "" {
		return true
	}
	r := filterexpr.Frame(d, payload, kind, method, id)
	return f.filter.Match(&r, filterexpr.MatchInfo{Method: method, Protocol: proto})
}

// String is the rule as written.
func (f *Fault) String() string { return f.rule }

var faultActions = map[string]bool{"delay": true, "drop": true, "duplicate": true, "split": true,
	"truncate": true, "corrupt": true, "error": true, "kill": true}

// ParseFault parses one rule.
func ParseFault(rule string) (Fault, error) {
	words := strings.Fields(rule)
	if len(words) == 0 {
		return Fault{}, fmt.Errorf("empty fault rule")
	}
	f := Fault{Action: words[0], rule: strings.Join(words, " ")}
	if !faultActions[f.Action] {
		return Fault{}, fmt.Errorf("fault %q: unknown action %q (delay, drop, duplicate, split, truncate, corrupt, error, kill)", rule, f.Action)
	}
	rest := words[1:]
	switch f.Action {
	case "delay":
		if len(rest) == 0 {
			return Fault{}, fmt.Errorf("fault %q: delay needs a duration (delay 2s ...)", rule)
		}
		d, err := time.ParseDuration(rest[0])
		if err != nil || d < 0 {
			return Fault{}, fmt.Errorf("fault %q: %q is not a duration", rule, rest[0])
		}
		f.Delay, rest = d, rest[1:]
	case "corrupt":
		if len(rest) == 0 || !strings.HasPrefix(rest[0], "/") {
			return Fault{}, fmt.Errorf("fault %q: corrupt needs a JSON pointer (corrupt /result/stopReason ...)", rule)
		}
		f.Field, rest = rest[0], rest[1:]
	}
	for _, w := range rest {
		k, v, ok := strings.Cut(w, "=")
		if !ok || v == "" {
			return Fault{}, fmt.Errorf("fault %q: %q is not a selector (method=, kind=, dir=, frame=, times=, filter=)", rule, w)
		}
		switch k {
		case "filter":
			expr := strings.ReplaceAll(v, "&", " & ")
			flt, err := filterexpr.ParseBreakpoint(expr)
			if err != nil {
				return Fault{}, fmt.Errorf("fault %q: filter=: %v", rule, err)
			}
			f.Filter, f.filter = v, flt
		case "method":
			f.Method = v
		case "dir":
			if v != "in" && v != "out" {
				return Fault{}, fmt.Errorf("fault %q: dir must be in (parent -> child) or out (child -> parent)", rule)
			}
			f.Dir = v
		case "kind":
			switch v {
			case kindRequest, kindResponse, kindNotification, kindEvent:
			default:
				return Fault{}, fmt.Errorf("fault %q: kind must be request, response, notification or event", rule)
			}
			f.Kind = v
		case "frame", "times":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return Fault{}, fmt.Errorf("fault %q: %s must be a positive number", rule, k)
			}
			if k == "frame" {
				f.Frame = n
			} else {
				f.Times = n
			}
		default:
			return Fault{}, fmt.Errorf("fault %q: unknown selector %q (method=, kind=, dir=, frame=, times=, filter=)", rule, k)
		}
	}
	if f.Frame > 0 && f.Times == 0 {
		f.Times = 1
	}
	return f, nil
}

// ReadFaults reads a rule file.
func ReadFaults(path string) ([]Fault, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return parseFaults(file, path)
}

func parseFaults(r io.Reader, name string) ([]Fault, error) {
	var out []Fault
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f, err := ParseFault(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		out = append(out, f)
	}
	return out, sc.Err()
}

// WithFaults injects faults into the frames the replay sends (see Fault).
func WithFaults(faults ...Fault) Option {
	return func(o *options) { o.faults = append(o.faults, faults...) }
}

// faultFor returns the fault to apply to the frame st (the n-th this side
// sends), counting the hit, or nil.
func (e *engine) faultFor(st *estep, n int) *Fault {
	for i := range e.faults {
		f := &e.faults[i]
		if f.Times > 0 && f.hits >= f.Times {
			continue
		}
		if (f.Method != "" && f.Method != st.frame.Method) || (f.Kind != "" && f.Kind != st.frame.Kind) || (f.Frame > 0 && f.Frame != n) {
			continue
		}
		if f.Dir != "" && f.Dir != e.sendDir() {
			continue
		}
		if !f.MatchFrame(e.d.name, cassette.Dir(e.sendDir()), st.frame.Raw, st.frame.Kind, st.frame.Method, st.frame.ID) {
			continue
		}
		if f.Action == "corrupt" && !hasPointer(st.frame.Raw, f.Field) {
			continue // only frames that have the field
		}
		f.hits++
		return f
	}
	return nil
}

// writeFaulty sends buf (one frame as the wire carries it: body, whose
// bytes are body, and line end, or header block and body) to the live side
// with fault f applied, and reports whether the session ends here (kill).
// It returns the error of the write, if any.
func (e *engine) writeFaulty(f *Fault, st *estep, buf, body []byte) (bool, error) {
	e.res.Faults = append(e.res.Faults, fmt.Sprintf("%s on record #%d (%s %s)", f.rule, st.frame.Record, st.frame.Kind, st.frame.Method))
	if w := e.o.report; w != nil {
		fmt.Fprintf(w, "%s: fault injected: %s on record #%d (%s %s)\n", e.o.prog, f.rule, st.frame.Record, st.frame.Kind, st.frame.Method)
	}
	eol := buf[len(buf)-len(st.eol):]
	frame := buf[:len(buf)-len(st.eol)] // on a Content-Length stream: header and body
	write := func(b []byte) error { _, err := e.out.Write(b); return err }
	// reframe gives a changed body its own line end or header.
	reframe := func(b []byte) []byte { return e.frameOut(nil, b, st.hdr, string(eol)) }
	switch f.Action {
	case "delay":
		time.Sleep(f.Delay)
		return false, write(buf)
	case "drop":
		return false, nil
	case "duplicate":
		if err := write(buf); err != nil {
			return false, err
		}
		return false, write(buf)
	case "split":
		half := len(frame) / 2
		if err := write(frame[:half]); err != nil {
			return false, err
		}
		time.Sleep(50 * time.Millisecond)
		return false, write(buf[half:])
	case "truncate":
		return false, write(append(append([]byte(nil), frame[:len(frame)/2]...), eol...))
	case "corrupt":
		return false, write(reframe(corruptField(body, f.Field)))
	case "error":
		if st.frame.Kind == kindResponse && st.pair != nil {
			req := *st.pair.frame
			if st.pair.liveID != "" {
				req.ID = st.pair.liveID
			}
			if b := e.d.refusal(&req, "rpctap fault injected: "+f.rule, true); b != nil {
				return false, write(reframe(b))
			}
		}
		return false, write(buf) // nothing to refuse: sent as recorded
	case "kill":
		e.exited = &Exit{Code: 128 + 9, Signal: "SIGKILL"}
		e.res.Exit = e.exited
		return true, nil
	}
	return false, write(buf)
}

// corruptField replaces the value at pointer ptr of a JSON frame by the
// string "rpctap-corrupted" (a wrong type for most fields, a wrong value for
// the rest). A frame that is not JSON, or has no such field, is cut in half.
func corruptField(frame []byte, ptr string) []byte {
	var v any
	if json.Unmarshal(frame, &v) != nil || !setPointer(v, ptr, "rpctap-corrupted") {
		return frame[:len(frame)/2]
	}
	b, err := json.Marshal(v)
	if err != nil {
		return frame[:len(frame)/2]
	}
	return b
}

// hasPointer reports whether the JSON frame has a value at pointer ptr.
func hasPointer(frame []byte, ptr string) bool {
	var v any
	return json.Unmarshal(frame, &v) == nil && setPointer(v, ptr, nil)
}

// setPointer finds the value at JSON pointer ptr in v and, when to is not
// nil, replaces it; it reports whether the value was there.
func setPointer(v any, ptr string, to any) bool {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := v
	for i, p := range parts {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[p]
			if !ok {
				return false
			}
			if last && to != nil {
				c[p] = to
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(c) {
				return false
			}
			if last && to != nil {
				c[n] = to
			}
			cur = c[n]
		default:
			return false
		}
	}
	return true
}

// sendDir is the direction of the frames this engine sends: a fake child
// writes the child's stdout ("out"), a fake parent the child's stdin ("in").
func (e *engine) sendDir() string {
	if e.role == roleChild {
		return "out"
	}
	return "in"
}

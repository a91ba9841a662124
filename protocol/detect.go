package protocol

import "sort"

// DetectFrames is how many frames a Detector looks at before it gives up
// waiting for a sure answer.
const DetectFrames = 8

// sureScore is the sniff score that ends detection at once.
const sureScore = 100

// minScore is the lowest best score that still names a specific protocol
// when the Detector gives up; below it the fallback applies.
const minScore = 50

// Detector guesses a session's protocol from its first frames, using each
// registered protocol's sniff. It is not safe for concurrent use.
type Detector struct {
	n       int
	best    map[string]int // highest score per protocol so far
	jsonrpc bool           // some frame was a JSON-RPC 2.0 message
	done    bool
	name    string
}

// NewDetector returns a Detector with nothing seen yet.
func NewDetector() *Detector { return &Detector{best: map[string]int{}} }

// DirFrame is one frame with its direction, for Detect.
type DirFrame struct {
	Dir   Dir
	Frame []byte
}

// Detect runs a Detector over frames and returns its answer.
func Detect(frames []DirFrame) string {
	d := NewDetector()
	for _, f := range frames {
		if name, done := d.Add(f.Dir, f.Frame); done {
			return name
		}
	}
	return d.Result()
}

// Add looks at one more frame. It returns the protocol's name and done=true
// as soon as a protocol is sure (or after DetectFrames frames, with the best
// guess: a specific protocol that scored at least 50, else "jsonrpc" if the
// session speaks JSON-RPC 2.0, else "raw"). Before that it returns the
// current best guess and done=false. Once done, it keeps returning the same
// answer.
func (d *Detector) Add(dir Dir, frame []byte) (name string, done bool) {
	if d.done {
		return d.name, true
	}
	d.n++
	if !d.jsonrpc && looksJSONRPC20(frame) {
		d.jsonrpc = true
	}
	var sure []string
	for n, e := range registry {
		if e.sniff == nil {
			continue
		}
		sc := e.sniff(dir, frame)
		if sc > d.best[n] {
			d.best[n] = sc
		}
		if sc >= sureScore {
			sure = append(sure, n)
		}
	}
	if len(sure) > 0 {
		d.name, d.done = pickBest(sure), true
		return d.name, true
	}
	if d.n >= DetectFrames {
		d.name, d.done = d.Result(), true
		return d.name, true
	}
	return d.Result(), false
}

// Result is the Detector's answer from what it has seen so far; call it when
// a session ends before Add said done.
func (d *Detector) Result() string {
	if d.done {
		return d.name
	}
	top := 0
	var cands []string
	for n, sc := range d.best {
		switch {
		case sc > top:
			top, cands = sc, []string{n}
		case sc == top && sc > 0:
			cands = append(cands, n)
		}
	}
	if top >= minScore {
		return pickBest(cands)
	}
	if d.jsonrpc {
		return "jsonrpc"
	}
	return "raw"
}

// pickBest breaks ties by registered priority, then by name for stability.
func pickBest(names []string) string {
	sort.Slice(names, func(i, j int) bool {
		pi, pj := registry[names[i]].priority, registry[names[j]].priority
		if pi != pj {
			return pi > pj
		}
		return names[i] < names[j]
	})
	return names[0]
}

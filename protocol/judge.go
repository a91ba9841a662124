package protocol

// Holder is the detect-and-hold step of judging a session, shared by Judge
// (`rpctap check`) and the recorder: while the protocol is not known it
// feeds each frame to a Detector, and holds what the caller gives it for the
// frames seen so far; once the Detector decides (Add says so) or the session
// ends undecided (Result), the caller takes the held items in order (Take)
// and judges them, then the frame that decided, by the protocol decided. It
// holds at most DetectFrames items: the Detector decides by then.
//
// A Holder is not safe for concurrent use. A sniff that panics is the
// caller's to recover from (the recorder does).
type Holder[T any] struct {
	det  *Detector
	held []T
}

// NewHolder returns a Holder that has seen nothing.
func NewHolder[T any]() *Holder[T] { return &Holder[T]{det: NewDetector()} }

// Add feeds one frame to the Detector. Until it decides, name is the best
// guess so far and decided false (the caller may Hold an item for the
// frame); when this frame decides, name is the protocol and decided true.
func (h *Holder[T]) Add(dir Dir, frame []byte) (name string, decided bool) {
	return h.det.Add(dir, frame)
}

// Hold keeps item until Take, unless DetectFrames items are held already
// (then it reports false).
func (h *Holder[T]) Hold(item T) bool {
	if len(h.held) >= DetectFrames {
		return false
	}
	h.held = append(h.held, item)
	return true
}

// Take returns the items held, in order, and holds nothing more.
func (h *Holder[T]) Take() []T {
	held := h.held
	h.held = nil
	return held
}

// Result is the Detector's answer for a session that ended before it
// decided.
func (h *Holder[T]) Result() string { return h.det.Result() }

// Judge takes one session's frames, in recorded order, through the whole
// protocol layer: a Holder until the protocol is decided (or nothing, when
// it is forced), then a Session for the held frames and every later one,
// handing each verdict to the caller. It is the loop `rpctap check` runs
// per connection. The recorder runs the same steps with the same Holder,
// but validates on a goroutine of its own so that validation never holds
// up the cassette (internal/recorder).
//
// A Judge is not safe for concurrent use.
type Judge struct {
	forced   Protocol
	fallback string // the protocol the recording names, used when detection can only say jsonrpc or raw
	hold     *Holder[heldFrame]
	sess     *Session
	source   string // how the protocol was chosen: "flag", "detected", "header"
	closedAt uint64
	verdict  func(Verdict)
}

type heldFrame struct {
	rec         uint64
	dir         Dir
	hdr, frame  []byte
	intercepted bool // for Session.Intercepted, not a frame to judge
}

// Verdict is what the Judge found about one frame.
type Verdict struct {
	Record     uint64
	Dir        Dir
	Frame      []byte
	Info       Info
	Violations []Violation
}

// NewJudge returns a Judge that hands each frame's verdict to verdict.
// forced, when not nil, is the protocol to judge by (no detection);
// fallback names the protocol the recording says it holds (a cassette
// header or meta record), used when detection can only fall back to
// "jsonrpc" or "raw".
func NewJudge(forced Protocol, fallback string, verdict func(Verdict)) *Judge {
	j := &Judge{forced: forced, fallback: fallback, verdict: verdict}
	if forced != nil {
		j.sess, j.source = NewSession(forced), "flag"
	} else {
		j.hold = NewHolder[heldFrame]()
	}
	return j
}

// SetFallback changes the protocol the recording names (a meta record that
// came after the header).
func (j *Judge) SetFallback(name string) { j.fallback = name }

// Frame judges one frame: the body of a Content-Length message with its
// header block hdr, or a line (hdr nil). A frame held for detection is
// copied; frame may be reused after the call.
func (j *Judge) Frame(rec uint64, dir Dir, hdr, frame []byte) {
	if j.sess != nil {
		j.judge(rec, dir, hdr, frame)
		return
	}
	_, decided := j.hold.Add(dir, frame)
	if !decided {
		j.hold.Hold(heldFrame{rec: rec, dir: dir, hdr: append([]byte(nil), hdr...), frame: append([]byte(nil), frame...)})
		return
	}
	j.decide()
	j.judge(rec, dir, hdr, frame)
}

// Intercepted tells the Judge about a frame the other side never got (see
// Session.Intercepted), in its place among the frames judged.
func (j *Judge) Intercepted(dir Dir, frame []byte) {
	if j.sess != nil {
		j.sess.Intercepted(dir, frame)
		return
	}
	j.hold.Hold(heldFrame{dir: dir, frame: append([]byte(nil), frame...), intercepted: true})
}

// ParentClosed tells the Judge that the parent closed the child's stdin at
// record rec (see Session.ParentClosed).
func (j *Judge) ParentClosed(rec uint64) {
	if j.closedAt == 0 || rec < j.closedAt {
		j.closedAt = rec
	}
}

// End decides the protocol if the session ended before the Detector did,
// judges what was held, and returns what is wrong at the end (requests
// never answered, a handshake never sent).
func (j *Judge) End() []Violation {
	if j.sess == nil {
		j.decide()
	}
	if j.closedAt != 0 {
		j.sess.ParentClosed(j.closedAt)
	}
	return j.sess.End()
}

// Protocol names the protocol the session is judged by and how it was
// chosen ("flag", "detected", "header"); "" while it is not decided.
func (j *Judge) Protocol() (name, source string) {
	if j.sess == nil {
		return "", ""
	}
	return j.sess.Protocol().Name(), j.source
}

func (j *Judge) decide() {
	name, src := j.hold.Result(), "detected"
	if (name == "raw" || name == "jsonrpc") && j.fallback != "" && j.fallback != name {
		if _, err := Lookup(j.fallback); err == nil {
			name, src = j.fallback, "header"
		}
	}
	p, err := Lookup(name)
	if err != nil {
		p, _ = Lookup("raw")
	}
	j.sess, j.source = NewSession(p), src
	for _, h := range j.hold.Take() {
		if h.intercepted {
			j.sess.Intercepted(h.dir, h.frame)
			continue
		}
		j.judge(h.rec, h.dir, h.hdr, h.frame)
	}
}

func (j *Judge) judge(rec uint64, dir Dir, hdr, frame []byte) {
	if len(hdr) > 0 {
		j.sess.Framed(dir, hdr, true)
	}
	info, vs := j.sess.Frame(rec, dir, frame)
	j.verdict(Verdict{Record: rec, Dir: dir, Frame: frame, Info: info, Violations: vs})
}

package protocol

// Judge takes one session's frames, in recorded order, through the whole
// protocol layer: while the protocol is not known it holds the first frames
// and feeds a Detector; once the Detector decides (or from the start, when
// the protocol is forced) it runs the held frames, then every later one,
// through a Session, handing each verdict to the caller. It is the loop
// `rpctap check` runs per connection. (The recorder runs the same steps, but
// split over two goroutines so that validation never holds up the cassette;
// see internal/recorder.)
//
// A Judge is not safe for concurrent use.
type Judge struct {
	forced   Protocol
	fallback string // the protocol the recording names, used when detection can only say jsonrpc or raw
	det      *Detector
	sess     *Session
	source   string // how the protocol was chosen: "flag", "detected", "header"
	held     []heldFrame
	closedAt uint64
	verdict  func(Verdict)
}

type heldFrame struct {
	rec        uint64
	dir        Dir
	hdr, frame []byte
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
		j.det = NewDetector()
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
	j.held = append(j.held, heldFrame{rec, dir, append([]byte(nil), hdr...), append([]byte(nil), frame...)})
	if _, done := j.det.Add(dir, frame); done {
		j.decide()
	}
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
	name, src := j.det.Result(), "detected"
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
	held := j.held
	j.held = nil
	for _, h := range held {
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

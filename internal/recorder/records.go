package recorder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

func dirOf(s tap.Stream) cassette.Dir {
	switch s {
	case tap.Stdin:
		return cassette.DirIn
	case tap.Stdout:
		return cassette.DirOut
	}
	return cassette.DirErr
}

func (r *Recorder) conn(c int) *connState {
	cs := r.conns[c]
	if cs == nil {
		cs = &connState{}
		for i := range cs.split {
			mode := r.opts.Framing
			if tap.Stream(i) == tap.Stderr {
				mode = framing.Lines
			}
			cs.split[i].Reset(mode, r.opts.MaxLine)
		}
		r.conns[c] = cs
	}
	return cs
}

// newRecord resets the reusable record.
func (r *Recorder) newRecord(t int64, k cassette.Kind, conn int) {
	r.rec = cassette.Record{T: t, K: k, Conn: conn}
}

// put writes the reusable record.
func (r *Recorder) put() {
	if r.failed.Load() {
		return
	}
	size := len(r.rec.JSON) + len(r.rec.Text) + len(r.rec.B64) + 48
	if err := r.w.Append(&r.rec); err != nil {
		r.fail(err)
		return
	}
	r.putT = max(r.putT, r.rec.T)
	r.stats.Records++
	r.batch += size
}

// flush ends a batch.
func (r *Recorder) flush() {
	if r.batch == 0 || r.failed.Load() {
		return
	}
	r.batch = 0
	r.stats.Flushes++
	if err := r.w.Flush(); err != nil {
		r.fail(err)
	}
}

// fail degrades to forwarding only: nothing more is written, Observe and
// Event return at once, and the queue keeps being drained so that no pump
// stays blocked.
func (r *Recorder) fail(err error) {
	if r.failed.Swap(true) {
		return
	}
	r.warn("cassette", fmt.Sprintf("recording stopped, forwarding continues: %v", err))
	_ = r.w.Close()
	if r.opts.onFail != nil {
		r.opts.onFail()
	}
	for len(r.hold) > 0 {
		it := r.hold.pop()
		r.release(&it)
	}
	r.holdBytes = 0
	r.events = nil
}

// line writes one line (or part of a line) of a stream.
func (r *Recorder) line(conn int, stream tap.Stream, t int64, hdr, payload []byte, eol string, part bool) {
	if stream == tap.Stderr {
		r.newRecord(t, cassette.KindStderr, conn)
		r.rec.D = cassette.DirErr
		r.rec.EOL, r.rec.Part = eol, part
		if out, at, changed := r.redact(payload); changed {
			r.rec.SetPayload(out)
			r.rec.Redacted, r.rec.RedactedAt = true, at
		} else {
			r.rec.SetPayload(payload)
		}
		r.put()
		return
	}
	dir := protocol.FromParent
	if stream == tap.Stdout {
		dir = protocol.FromChild
	}
	// Detection may write a meta record first; the frame's number is
	// known once it was appended.
	// One syntax pass per frame: its answer picks the payload form and
	// spares the validator's Session its own json.Valid, and the index it
	// fills lets classification and redaction skip long values by lookup.
	verbatim := cassette.VerbatimIndexed(payload, &r.vidx)
	r.vidxFor, r.vidxOK = payload, verbatim
	defer func() { r.vidxFor, r.vidxOK = nil, false }()
	var info protocol.Info
	validate, keep := false, false
	r.rawInfoOK = false
	// The header goes to the validator with the message's last record.
	cs := r.conn(conn)
	jobHdr, partial := string(hdr), false
	if part && hdr != nil {
		cs.partHdr[stream%3] = jobHdr
	} else if !part && hdr == nil && cs.partHdr[stream%3] != "" {
		jobHdr, partial = cs.partHdr[stream%3], true
		cs.partHdr[stream%3] = ""
	}
	if !part {
		info, validate, keep = r.judge(conn, t, dir, payload)
	}
	r.newRecord(t, cassette.KindFrame, conn)
	r.rec.D = dirOf(stream)
	r.rec.EOL, r.rec.Part = eol, part
	if hdr != nil {
		r.rec.Hdr = string(hdr)
	}
	r.rec.Kind, r.rec.Method = string(info.Kind), info.Method
	if info.ID != "" {
		r.rec.ID = json.RawMessage(info.ID)
	}
	if out, at, changed := r.redactFrame(payload, verbatim); changed {
		r.rec.SetPayload(out)
		r.rec.Redacted, r.rec.RedactedAt = true, at
		if hdr != nil && !part {
			// The stored message stays self-consistent: its header
			// counts the redacted body (the validator judged the
			// original header and body).
			r.rec.Hdr = string(framing.WithLength(hdr, len(out)))
		}
	} else {
		r.rec.SetPayloadChecked(payload, verbatim)
	}
	m := cs.mark[stream%3]
	if m != nil && !part {
		r.rec.Icpt = m.Action
	}
	r.stats.Frames++
	r.put()
	if m != nil && !part {
		cs.mark[stream%3] = nil
		fn := r.rec.N
		m.T = max(m.T, t)
		defer r.writeIntercept(*m, cs, fn) // after the validation job of this frame
	}
	if r.failed.Load() {
		return
	}
	switch {
	case validate:
		// The validator's Session gets the protocol's own classification
		// (before the response-method fill-in) when the frame is valid
		// JSON, so it neither checks the syntax nor classifies again.
		var frame []byte
		var buf *[]byte
		if len(payload) > valBufMax {
			// A large line assembled from several chunks: the
			// validator takes the splitter's buffer instead of a copy
			// of it (valFree hands it back through valBig).
			frame = cs.split[stream%3].Detach(payload)
			if frame != nil {
				frame = frame[:len(payload)]
			}
		}
		if frame == nil {
			frame, buf = r.valCopy(payload)
		}
		j := valJob{conn: conn, n: r.rec.N, dir: dir, frame: frame, buf: buf, valid: verbatim,
			info: r.rawInfo, hasInfo: verbatim && r.rawInfoOK, hdr: jobHdr, partial: partial}
		if j.hasInfo {
			// The index Verbatim made holds offsets, so it serves the copy
			// as well: the validator need not index the frame again.
			if x := r.indexOf(payload); x != nil {
				j.idx, _ = r.valIdx.Get().(*jsonscan.Index)
				if j.idx == nil {
					j.idx = new(jsonscan.Index)
				}
				j.idx.CopyFrom(x)
			}
		}
		r.queueValidation(j)
	case keep:
		r.detect.Hold(valJob{conn: conn, n: r.rec.N, dir: dir, frame: bytes.Clone(payload), valid: verbatim,
			hdr: jobHdr, partial: partial})
	}
}

// judge classifies a frame and says whether to validate it (validate) or to
// keep it for validation once the protocol is decided (keep). Before the
// protocol is known it feeds the detector; once the detector decides, a meta
// record is written before the frame and the frames kept so far go to the
// validator, in order, ahead of this one.
func (r *Recorder) judge(conn int, t int64, dir protocol.Dir, frame []byte) (info protocol.Info, validate, keep bool) {
	if r.proto == nil && r.detect != nil {
		name, done := r.safeDetect(dir, frame)
		if !done {
			keep = r.detect != nil
			// Classify by the best guess so far; the frame is validated
			// once the protocol is decided.
			if p, err := lookupProtocol(name); err == nil && name != "" {
				return r.classifyBy(p, conn, dir, frame), false, keep
			}
			return protocol.Info{}, false, keep
		}
		held := r.detect.Take()
		if !r.detected(name, t) {
			return protocol.Info{}, false, false
		}
		for _, j := range held {
			r.queueValidation(j)
		}
		return r.classify(conn, dir, frame), r.validating, false
	}
	if r.proto == nil {
		return protocol.Info{}, false, false
	}
	return r.classify(conn, dir, frame), r.validating, false
}

func (r *Recorder) safeDetect(dir protocol.Dir, frame []byte) (name string, done bool) {
	defer func() {
		if p := recover(); p != nil {
			r.warn("detect", fmt.Sprintf("protocol detection failed (%v); frames are recorded unclassified", p))
			r.detect = nil
			name, done = "", false
		}
	}()
	return r.detect.Add(dir, frame)
}

// detected sets the protocol found by detection and writes a meta record
// for it.
func (r *Recorder) detected(name string, t int64) bool {
	p, err := lookupProtocol(name)
	r.detect = nil
	if err != nil {
		r.warn("protocol", fmt.Sprintf("detected protocol %q: %v", name, err))
		return false
	}
	r.setProtocol(p)
	r.newRecord(t, cassette.KindMeta, 0)
	r.rec.Protocol = name
	r.put()
	return true
}

func (r *Recorder) setProtocol(p protocol.Protocol) {
	r.proto = p
	r.protoName = p.Name()
	r.validating = !r.opts.NoValidate
	// From here on the redactor knows the fields the protocol declares not
	// secret; frames before detection ended were redacted by the default
	// rules alone (a guess is not enough to keep a value).
	if r.redactor != nil {
		r.redactor = r.redactor.knowing(protocol.NotSecret(p))
	}
}

// classify returns a frame's kind, method and id. A response gets its
// request's method when the protocol's Classify leaves it empty.
func (r *Recorder) classify(conn int, dir protocol.Dir, frame []byte) (info protocol.Info) {
	return r.classifyBy(r.proto, conn, dir, frame)
}

func (r *Recorder) classifyBy(p protocol.Protocol, conn int, dir protocol.Dir, frame []byte) (info protocol.Info) {
	if !r.classifyOK {
		return info
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.classifyOK = false
				info = protocol.Info{}
				r.warn("classify", fmt.Sprintf("frame classification failed (%s); frames are recorded unclassified from now on", panicLine(p)))
			}
		}()
		info = protocol.ClassifyIndexed(p, dir, frame, r.indexOf(frame))
		r.rawInfo, r.rawInfoOK = info, true
	}()
	if info.ID == "" {
		return info
	}
	cs := r.conn(conn)
	switch info.Kind {
	case protocol.Request:
		m := cs.pending[dir]
		if m == nil || len(m) >= maxPending {
			m = map[string]string{}
			cs.pending[dir] = m
		}
		m[info.ID] = info.Method
	case protocol.Response:
		if m := cs.pending[1-dir]; m != nil {
			if meth, ok := m[info.ID]; ok {
				if info.Method == "" {
					info.Method = meth
				}
				delete(m, info.ID)
			}
		}
	}
	return info
}

// indexOf returns the index cassette.VerbatimIndexed made of frame, or
// nil when it has none (the frame is not the one being written, or not
// valid JSON).
func (r *Recorder) indexOf(frame []byte) *jsonscan.Index {
	if !r.vidxOK || len(frame) == 0 || len(r.vidxFor) != len(frame) || &r.vidxFor[0] != &frame[0] {
		return nil
	}
	return &r.vidx
}

// queueValidation hands a frame to the validator goroutine without ever
// blocking: when the validator is maxValidateBytes behind, validation stops
// for the rest of the session and a violation record says from where.
func (r *Recorder) queueValidation(j valJob) {
	if !r.validating {
		return
	}
	if pend := r.valPend.Load(); pend == 0 || pend+int64(len(j.frame)) <= maxValidateBytes {
		jp, _ := r.jobs.Get().(*valJob)
		if jp == nil {
			jp = new(valJob)
		}
		*jp = j
		select {
		case r.valQ <- jp:
			r.valPend.Add(int64(len(j.frame)))
			return
		default:
			*jp = valJob{}
			r.jobs.Put(jp)
		}
	}
	r.validating = false
	r.stopValidation(j.n, "recorder.validation-stopped", protocol.SevWarning,
		fmt.Sprintf("validation stopped at record %d: the validator fell too far behind the traffic; later frames and the end of the session were not judged (rpctap check judges them all)", j.n))
}

func (r *Recorder) stopValidation(ref uint64, code string, sev protocol.Severity, msg string) {
	if r.valStopped {
		return
	}
	r.valStopped = true
	// The validator ends the sessions still open as incomplete (see
	// validate); it reads valCut after the job queue closed.
	r.valCut.Store(max(ref, 1))
	r.newRecord(r.putT, cassette.KindViolation, 0)
	r.rec.Ref, r.rec.Code, r.rec.Severity, r.rec.Msg = ref, code, string(sev), msg
	r.stats.Violations++
	r.put()
}

// takeResult writes what the validator found.
func (r *Recorder) takeResult(res validationResult) {
	if res.panic != "" {
		r.warn("validator", "protocol validator failed; validation stopped, recording continues: "+res.panic)
		r.validating = false
		r.newRecord(r.putT, cassette.KindEvent, 0)
		r.rec.Ev = cassette.EventWarning
		r.rec.Msg = "protocol validator failed; validation stopped: " + res.panic
		r.put()
		return
	}
	for _, v := range res.v {
		r.newRecord(r.putT, cassette.KindViolation, 0)
		r.rec.Ref = v.Record
		r.rec.Code = v.Code
		r.rec.Severity = string(v.Severity)
		r.rec.Pointer = v.Pointer
		r.rec.Msg = v.Message
		r.stats.Violations++
		r.put()
	}
}

// validate is the validator goroutine. It owns the protocol Sessions (one
// per connection) and sends violations to the writer goroutine; a panic in
// the protocol code stops validation and is reported, never re-raised.
func (r *Recorder) validate() {
	sessions := map[int]*protocol.Session{}
	broken := false
	send := func(res validationResult) { r.results <- res }
	for jp := range r.valQ {
		j := *jp
		*jp = valJob{} // drop its references before the box is reused
		r.jobs.Put(jp)
		if r.opts.validatorWait != nil {
			r.opts.validatorWait()
		}
		r.valPend.Add(-int64(len(j.frame)))
		if broken {
			r.valFree(j)
			continue
		}
		v, perr := r.validateOne(sessions, j)
		r.valFree(j)
		if perr != "" {
			broken = true
			send(validationResult{panic: perr})
			continue
		}
		if len(v) > 0 {
			send(validationResult{v: v})
		}
	}
	if !broken {
		// Sessions still open here lost frames to a validation stop (the
		// connections that ended before it were ended by their end job,
		// queued before the stop): no end-of-session findings for them.
		cut := r.valCut.Load()
		for _, s := range sessions {
			if cut != 0 {
				s.Stopped(cut)
			}
			v, perr := safeEnd(s)
			if perr != "" {
				send(validationResult{panic: perr})
				break
			}
			if len(v) > 0 {
				send(validationResult{v: v})
			}
		}
	}
	send(validationResult{done: true})
}

func (r *Recorder) validateOne(sessions map[int]*protocol.Session, j valJob) (v []protocol.Violation, perr string) {
	defer func() {
		if p := recover(); p != nil {
			perr = panicLine(p)
		}
	}()
	if j.closed {
		if s := sessions[j.conn]; s != nil {
			s.ParentClosed(j.n)
		}
		return nil, ""
	}
	if j.intercepted {
		s := sessions[j.conn]
		if s == nil {
			s = protocol.NewSession(r.proto)
			sessions[j.conn] = s
		}
		s.Intercepted(j.dir, j.frame)
		return nil, ""
	}
	if j.end {
		if s := sessions[j.conn]; s != nil {
			delete(sessions, j.conn)
			return s.End(), ""
		}
		return nil, ""
	}
	if h := r.opts.validatorHook; h != nil {
		return h(j.conn, j.n, j.dir, j.frame), ""
	}
	s := sessions[j.conn]
	if s == nil {
		s = protocol.NewSession(r.proto)
		sessions[j.conn] = s
	}
	if j.hdr != "" {
		s.Framed(j.dir, []byte(j.hdr), !j.partial)
	}
	switch {
	case j.hasInfo && j.idx != nil:
		_, v = s.FrameClassifiedIndexed(j.n, j.dir, j.frame, j.info, j.idx)
	case j.hasInfo:
		_, v = s.FrameClassified(j.n, j.dir, j.frame, j.info)
	case j.valid:
		_, v = s.FrameValidJSON(j.n, j.dir, j.frame)
	default:
		_, v = s.Frame(j.n, j.dir, j.frame)
	}
	return v, ""
}

func safeEnd(s *protocol.Session) (v []protocol.Violation, perr string) {
	defer func() {
		if p := recover(); p != nil {
			perr = panicLine(p)
		}
	}()
	return s.End(), ""
}

// panicLine describes a recovered panic in one line: its value and the
// innermost function of the stack that is not the runtime's.
func panicLine(p any) string {
	where := ""
	for _, l := range strings.Split(string(debug.Stack()), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "github.com/rpctap/rpctap/") && !strings.Contains(l, "recorder.") {
			where = " in " + l
			break
		}
	}
	return fmt.Sprintf("%v%s", p, where)
}

// event writes a process or connection event.
func (r *Recorder) event(it *item) {
	e := it.ev
	cs := r.conn(e.Conn)
	if e.Kind == cassette.EventIntercept {
		switch e.Action {
		case "drop", "take":
			r.writeIntercept(e, cs, 0)
		default:
			cs.mark[e.Stream%3] = &e
		}
		return
	}
	switch e.Kind {
	case cassette.EventGap:
		// A gap reported after the chunks (the sink's gaps that found no
		// room before the end): as any gap.
		r.gap(e.Conn, e.Stream, e.T, e.Bytes, it.boundary)
		return
	case cassette.EventStdinEOF:
		r.skippedGap(e.Conn, cs, tap.Stdin, cs.lastT[tap.Stdin])
		sp := &cs.split[tap.Stdin]
		sp.End(func(h, p []byte, eol string, part bool) {
			r.line(e.Conn, tap.Stdin, cs.lastT[tap.Stdin], h, p, eol, part)
		})
		// Told to the validator at the session's end (the protocol may not
		// be known yet), with this event's record number (set by put).
		defer func() {
			if r.stdinClosed == nil {
				r.stdinClosed = map[int]uint64{}
			}
			r.stdinClosed[e.Conn] = r.rec.N
		}()
	case cassette.EventConnClose:
		// The connection's last lines, then its session-end checks; its
		// state is dropped after the event (socket mode may see many).
		r.endStreams(e.Conn, cs)
		if r.proto != nil && r.validating {
			if n, ok := r.stdinClosed[e.Conn]; ok {
				r.queueValidation(valJob{conn: e.Conn, n: n, closed: true})
				delete(r.stdinClosed, e.Conn)
			}
			r.queueValidation(valJob{conn: e.Conn, end: true})
		}
		defer delete(r.conns, e.Conn)
	}
	r.newRecord(e.T, cassette.KindEvent, e.Conn)
	r.rec.Ev = e.Kind
	r.rec.Argv, r.rec.Cwd = r.portableEvent(e.Argv, e.Cwd)
	r.rec.PID = e.PID
	r.rec.Exit = e.Exit
	r.rec.Signal = e.Signal
	r.rec.Msg = e.Msg
	switch e.Kind {
	case cassette.EventStdinEOF:
		r.rec.D = cassette.DirIn
	}
	r.put()
}

// writeIntercept writes an intercept event; ref is the frame it marks (0:
// none was sent).
func (r *Recorder) writeIntercept(e tap.Event, cs *connState, ref uint64) {
	r.newRecord(e.T, cassette.KindEvent, e.Conn)
	r.rec.Ev = e.Kind
	r.rec.Msg = e.Msg
	r.interceptEvent(e, cs)
	r.rec.Ref = ref
	r.put()
}

// interceptEvent fills the format 1.2 members of an intercept event: what
// was done, how long the frame was held, by which breakpoint or rule, and
// the original, redacted as a frame would be.
func (r *Recorder) interceptEvent(e tap.Event, cs *connState) {
	r.rec.D = dirOf(e.Stream)
	r.rec.Act, r.rec.Held, r.rec.BP = e.Action, e.HeldNs, e.Breakpoint
	if e.Original != nil {
		orig := e.Original
		verbatim := cassette.Verbatim(orig)
		if out, _, changed := r.redactFrame(orig, verbatim); changed {
			orig, verbatim = out, cassette.Verbatim(out)
		}
		if verbatim {
			r.rec.Orig = append(json.RawMessage(nil), orig...)
		} else {
			r.rec.OrigText = string(orig)
		}
		if e.Action == "drop" || e.Action == "take" {
			// The validator learns that the other side never got it
			// (an answer rpctap kept is not a request left unanswered),
			// in its place among the frames.
			j := valJob{conn: e.Conn, dir: protocol.FromParent, frame: bytes.Clone(e.Original), intercepted: true}
			if e.Stream == tap.Stdout {
				j.dir = protocol.FromChild
			}
			switch {
			case r.proto != nil:
				r.queueValidation(j)
			case r.detect != nil:
				r.detect.Hold(j)
			}
		}
	}
}

// holdHeap orders held chunks by Seq: a binary min-heap written out for
// item (container/heap would box every item into an interface, one
// allocation per chunk).
type holdHeap []item

func (h *holdHeap) push(it item) {
	*h = append(*h, it)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].seq <= a[i].seq {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *holdHeap) pop() item {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a[last] = item{}
	a = a[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(a) && a[l].seq < a[m].seq {
			m = l
		}
		if r := l + 1; r < len(a) && a[r].seq < a[m].seq {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// Frame copies for the validator up to valBufMax bytes come from pools by
// size class (256 B, 512 B, ... valBufMax) and go back once validated, so a
// busy session does not allocate (and collect) a copy of every frame. The
// smallest class is 256 B because a validator some thousand small frames
// behind holds that many copies: at a 1 KiB minimum, a session of 100-byte
// notifications took the sink to 22.2-22.5 MiB peak RSS, at 256 B to
// 19.1-19.3 MiB (60 000 frames through record -- cat).
const (
	valBufMin     = 1 << 8
	valBufClasses = 9
	valBufMax     = valBufMin << (valBufClasses - 1) // 64 KiB
)

func valBufClass(n int) int {
	c := 0
	for size := valBufMin; size < n; size <<= 1 {
		c++
	}
	return c
}

// valCopy copies a frame for the validator. buf, when not nil, is the
// pooled buffer holding the copy, for valFree.
func (r *Recorder) valCopy(p []byte) (frame []byte, buf *[]byte) {
	if len(p) > valBufMax {
		select {
		case b := <-r.valBig:
			if cap(b) >= len(p) {
				return append(b[:0], p...), nil
			}
		default:
		}
		return bytes.Clone(p), nil
	}
	c := valBufClass(len(p))
	if v, _ := r.valBufs[c].Get().(*[]byte); v != nil {
		*v = append((*v)[:0], p...)
		return *v, v
	}
	b := make([]byte, len(p), valBufMin<<c)
	copy(b, p)
	return b, &b
}

// valFree returns a validated frame's copy to its pool.
func (r *Recorder) valFree(j valJob) {
	if j.idx != nil {
		r.valIdx.Put(j.idx)
	}
	if j.buf != nil {
		if c := cap(*j.buf); c >= valBufMin && c <= valBufMax && c&(c-1) == 0 {
			r.valBufs[valBufClass(c)].Put(j.buf)
		}
		return
	}
	if c := cap(j.frame); c > valBufMax && c <= keepBigFrame {
		// One large buffer is kept for the next large frame (agent
		// sessions send ~1 MiB frames again and again).
		r.putBig(j.frame)
	}
}

// putBig keeps b as the spare large buffer unless there is one already.
func (r *Recorder) putBig(b []byte) {
	select {
	case r.valBig <- b[:0]:
	default:
	}
}

// getBuf returns a pooled buffer of length n (at most poolBuf) for a chunk.
func (r *Recorder) getBuf(n int) *[]byte {
	c := valBufClass(n)
	if b, _ := r.pool[c].Get().(*[]byte); b != nil {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, valBufMin<<c)
	return &b
}

// putBuf returns a chunk buffer from getBuf to its pool.
func (r *Recorder) putBuf(b *[]byte) {
	if c := cap(*b); c >= valBufMin && c <= poolBuf && c&(c-1) == 0 {
		r.pool[valBufClass(c)].Put(b)
	}
}

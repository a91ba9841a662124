package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

type role uint8

const (
	roleChild  role = iota // we send the recorded "out" frames, the live parent sends "in"
	roleParent             // we send the recorded "in" frames, the live child sends "out"
)

// readQueue is how many complete lines lineReader may hold for the engine.
const readQueue = 64

// estep is a step with the state of one run.
type estep struct {
	step
	mine   bool // the replay sends it (frame, stderr line, stdin close, exit)
	theirs bool // the live side must produce it
	done   bool // sent (mine) or matched (theirs); steps of neither side start done
	waived bool // theirs, parent role: given up on after the timeout, still matchable
	liveT  time.Time
	liveID string // theirs requests: the id the live side used
	norm   any
	idx    int // index in engine.steps
}

// liveLine is one line from the live side.
type liveLine struct {
	raw []byte
	t   time.Time
}

// engine runs one replay. All its state is owned by engineLoop (the
// goroutine that calls run); lineReader only hands it lines.
type engine struct {
	s     *session
	role  role
	o     *options
	ign   ignoreSet
	idKey string
	steps []*estep

	out          io.Writer          // to the live side
	errOut       io.Writer          // recorded stderr (child role)
	closer       func() error       // parent role: closes the child's stdin
	signal       func(string) error // parent role: sends a signal to the child
	sigs         <-chan string      // child role: signals the live parent sent
	start        time.Time
	next         int // index of the next mine step to send
	open         int // index of the first theirs step not done (nor waived)
	issued       map[string]int
	binds        map[string]string
	border       []string // binds keys, longest first
	waived       []int    // theirs steps given up on (parent role), still matchable
	liveEOF      bool
	exited       *Exit // child role: reached the recorded exit
	lastProgress time.Time
	nreports     int

	res  Result
	werr error // first write error
}

func newEngine(rec *Recording, r role, o *options) (*engine, error) {
	s, err := rec.prepare(o.conn, o.connSet, o.protocol)
	if err != nil {
		return nil, err
	}
	pats := append([]string(nil), o.ignores...)
	if !o.noDefaults {
		pats = append(pats, s.d.ignore...)
	}
	ign, err := compileIgnores(pats)
	if err != nil {
		return nil, err
	}
	e := &engine{s: s, role: r, o: o, ign: ign, issued: map[string]int{}, binds: map[string]string{}}
	if s.d.idKeyed() {
		e.idKey = "id"
	}
	hasFrames := false
	for i := range s.steps {
		st := &estep{step: s.steps[i], idx: i}
		switch st.kind {
		case stepFrame:
			hasFrames = true
			fromParent := st.frame.Dir == dirIn
			st.mine = fromParent == (r == roleParent)
			st.theirs = !st.mine
		case stepStderr:
			st.mine = r == roleChild
		case stepEOF, stepSignal:
			st.mine = r == roleParent
			st.theirs = r == roleChild
		case stepExit:
			st.mine = r == roleChild
		}
		st.done = !st.mine && !st.theirs
		e.steps = append(e.steps, st)
	}
	if !hasFrames {
		return nil, fmt.Errorf("%s: %w", rec.Name, ErrEmpty)
	}
	e.res.Cassette = rec.Name
	e.res.Protocol = s.d.name
	for _, st := range e.steps {
		if st.kind == stepExit {
			e.res.Exit = st.exit
		}
	}
	return e, nil
}

// value decodes f on first use.
func (e *engine) value(f *Frame) any {
	if f.Value == nil && f.json {
		f.Value, _ = decodeJSON(f.Raw)
		if f.Value == nil {
			f.json = false
		}
	}
	return f.Value
}

func (e *engine) normalize(f *Frame) any {
	if v := e.value(f); v != nil {
		return e.ign.normalize(v, e.idKey)
	}
	return string(f.Raw)
}

// norm returns st's normalized frame, computing it on first use.
func (e *engine) norm(st *estep) any {
	if st.norm == nil {
		st.norm = e.normalize(st.frame)
	}
	return st.norm
}

// lineReader is the goroutine type that reads the live side's lines and
// hands them to the engine. It ends at EOF or a read error (closing lines),
// or when done is closed. It blocks in Read until the live side writes or
// closes; a fake child whose parent never closes its stdin leaves it blocked
// until the reader is closed (the Go API closes its pipe; the CLI exits).
type lineReader struct {
	r     io.Reader
	lines chan<- liveLine
	done  <-chan struct{}
	err   error // read error other than EOF; valid after lines is closed
}

func (lr *lineReader) run() {
	defer close(lr.lines)
	br := bufio.NewReaderSize(lr.r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather the rest.
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		} else {
			line = append([]byte(nil), line...)
		}
		if len(line) > 0 {
			t := time.Now()
			line = bytes.TrimSuffix(line, []byte("\n"))
			line = bytes.TrimSuffix(line, []byte("\r"))
			select {
			case lr.lines <- liveLine{raw: line, t: t}:
			case <-lr.done:
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				lr.err = err
			}
			return
		}
	}
}

// run is engineLoop: it reads lines until the session is over. It returns
// when the replayed side has nothing more to do (child role: the recorded
// exit was reached, or the parent closed its stdin and nothing more can
// become due; parent role: every parent frame was sent and the child's
// frames arrived, or it stopped, or the timeout passed), or when ctx ends.
func (e *engine) run(ctx context.Context, in io.Reader) (*Result, error) {
	e.start = time.Now()
	e.lastProgress = e.start
	lines := make(chan liveLine, readQueue)
	done := make(chan struct{})
	lr := &lineReader{r: in, lines: lines, done: done}
	go lr.run()
	defer close(done)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var ctxErr error
loop:
	for {
		wait, finished := e.advance(time.Now())
		if finished || e.werr != nil {
			break
		}
		var tc <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tc = timer.C
		}
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil
				e.liveEOF = true
				e.onEOF(time.Now())
			} else {
				e.onLine(l)
			}
		case sig := <-e.sigs:
			if e.onSignal(sig, time.Now()) {
				break loop
			}
		case <-tc:
		case <-ctx.Done():
			ctxErr = ctx.Err()
			break loop
		}
		if tc != nil && !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
	e.finish()
	if lr.err != nil && e.werr == nil && lines == nil {
		e.werr = fmt.Errorf("reading from the %s: %w", e.liveName(), lr.err)
	}
	res := e.res
	if e.werr != nil {
		return &res, e.werr
	}
	if ctxErr != nil {
		return &res, ctxErr
	}
	if e.o.strict && len(res.Divergences) > 0 {
		return &res, fmt.Errorf("%w: %d divergence(s) from %s", ErrDiverged, len(res.Divergences), res.Cassette)
	}
	return &res, nil
}

func (e *engine) liveName() string {
	if e.role == roleChild {
		return "parent"
	}
	return "child"
}

// blocker returns the index of the first theirs step before i that is
// neither done nor waived, or -1.
func (e *engine) blocker(i int) int {
	for e.open < len(e.steps) && (!e.steps[e.open].theirs || e.steps[e.open].done || e.steps[e.open].waived) {
		e.open++
	}
	if e.open < i {
		return e.open
	}
	return -1
}

// advance sends every mine step that is due and whose time has come. It
// returns how long to wait for the next one (-1: nothing to wait for but the
// live side) and whether the session is over.
func (e *engine) advance(now time.Time) (time.Duration, bool) {
	for {
		for e.next < len(e.steps) && !e.steps[e.next].mine {
			e.next++
		}
		if e.next >= len(e.steps) {
			return e.idleEnd(now)
		}
		i := e.next
		if b := e.blocker(i); b >= 0 {
			if e.role == roleChild {
				if e.liveEOF {
					return -1, true // the parent is gone; nothing more can become due
				}
				return -1, false
			}
			// Parent role: wait for the child at most the timeout.
			if e.liveEOF || now.Sub(e.lastProgress) >= e.o.timeout {
				e.waive(b, i)
				continue
			}
			return e.o.timeout - now.Sub(e.lastProgress), false
		}
		st := e.steps[i]
		if e.o.speed > 0 && i > 0 {
			base := e.start
			for j := i - 1; j >= 0; j-- {
				if t := e.steps[j].liveT; t.After(base) {
					base = t
				}
				if e.steps[j].mine {
					break
				}
			}
			delay := time.Duration(float64(st.t-e.steps[i-1].t) / e.o.speed)
			if due := base.Add(delay); due.After(now) {
				return due.Sub(now), false
			}
		}
		if e.send(st, now) {
			return -1, true
		}
		st.done = true
		st.liveT = now
		e.lastProgress = now
		e.next++
		if e.werr != nil {
			return -1, true
		}
	}
}

// idleEnd decides, once every mine step was sent, whether the session is over.
func (e *engine) idleEnd(now time.Time) (time.Duration, bool) {
	if e.role == roleChild {
		// No recorded exit (a cut-off recording): live on until the parent
		// closes our stdin, answering anything more with refusals.
		return -1, e.liveEOF
	}
	if e.blocker(len(e.steps)) < 0 || e.liveEOF {
		return -1, true
	}
	if w := e.o.timeout - now.Sub(e.lastProgress); w > 0 {
		return w, false
	}
	return -1, true
}

// waive gives up waiting for theirs steps before i (parent role timeout).
func (e *engine) waive(b, i int) {
	for j := b; j < i; j++ {
		st := e.steps[j]
		if st.theirs && !st.done && !st.waived {
			st.waived = true
			e.waived = append(e.waived, j)
			if st.kind == stepFrame && !e.liveEOF {
				e.diverge(Divergence{Kind: Late, Record: st.frame.Record, FrameKind: st.frame.Kind, Method: st.frame.Method,
					Recorded: showFrame(st.frame),
					Message: fmt.Sprintf("the child did not send record #%d (%s %s) within %v; went on without it",
						st.frame.Record, st.frame.Kind, st.frame.Method, e.o.timeout)}, nil)
			}
		}
	}
	e.lastProgress = time.Now()
}

// send performs one mine step. It reports true when the session ends with it.
func (e *engine) send(st *estep, now time.Time) bool {
	switch st.kind {
	case stepExit:
		e.exited = st.exit
		return true
	case stepEOF:
		if e.closer != nil {
			if err := e.closer(); err != nil && e.werr == nil {
				e.werr = fmt.Errorf("closing the child's stdin: %w", err)
			}
		}
		return false
	case stepSignal:
		if e.signal != nil {
			if err := e.signal(st.sig); err != nil && e.werr == nil {
				e.werr = fmt.Errorf("sending %s to the child: %w", st.sig, err)
			}
		}
		return false
	case stepStderr:
		if e.errOut != nil {
			e.errOut.Write(append(append([]byte(nil), st.frame.Raw...), st.eol...))
		}
		return false
	}
	f := st.frame
	raw := f.Raw
	if f.Kind == kindResponse && st.pair >= 0 {
		if live := e.steps[st.pair].liveID; live != "" && live != f.ID {
			raw = replaceMember(raw, "id", []byte(live))
		}
	}
	if len(e.border) > 0 && f.json {
		raw = substitute(raw, e.binds, e.border)
	}
	if f.Kind == kindRequest && f.ID != "" {
		e.issued[f.ID] = st.idx
	}
	buf := make([]byte, 0, len(raw)+len(st.eol))
	buf = append(append(buf, raw...), st.eol...)
	if _, err := e.out.Write(buf); err != nil {
		e.werr = fmt.Errorf("writing to the %s: %w", e.liveName(), err)
		return true
	}
	e.res.Sent++
	return false
}

// onEOF: the live side closed its end.
func (e *engine) onEOF(now time.Time) {
	for _, st := range e.steps {
		if st.kind == stepEOF && st.theirs && !st.done {
			st.done = true
			st.liveT = now
			e.lastProgress = now
			return
		}
	}
}

// onSignal: the live parent sent the fake child a signal. A recorded
// forwarded signal that is pending (within the window) matches it; any other
// signal ends the fake child as the signal's default action would (exit
// status 128+n), reported as a divergence. It returns true when the replay
// ends.
func (e *engine) onSignal(sig string, now time.Time) bool {
	n := 0
	for i := e.open; i < len(e.steps) && n < e.o.window; i++ {
		st := e.steps[i]
		if !st.theirs || st.done {
			continue
		}
		n++
		if st.kind == stepSignal && st.sig == sig {
			st.done = true
			st.liveT = now
			e.lastProgress = now
			return false
		}
	}
	e.diverge(Divergence{Kind: Unexpected, FrameKind: "signal", Method: sig,
		Message: fmt.Sprintf("the parent sent %s, which the recording does not have here; the fake child dies of it", sig)}, nil)
	e.exited = &Exit{Code: 128 + signalNumber(sig), Signal: sig}
	e.res.Exit = e.exited
	return true
}

// onLine matches one live frame.
func (e *engine) onLine(l liveLine) {
	f := &Frame{Raw: l.raw}
	if e.role == roleChild {
		f.Dir = dirIn
	} else {
		f.Dir = dirOut
	}
	// Fast path: a frame byte for byte equal to a pending recorded one
	// matches it under the default matcher without being decoded (the
	// common case, and the one that matters for 1 MiB frames).
	if !e.o.customMatcher {
		n := 0
		for i := e.open; i < len(e.steps) && n < e.o.window; i++ {
			st := e.steps[i]
			if !st.theirs || st.done || st.waived || st.kind != stepFrame {
				continue
			}
			n++
			if bytes.Equal(st.frame.Raw, l.raw) {
				e.acceptSame(i, l.t)
				return
			}
		}
	}
	f.Value, f.json = decodeJSON(l.raw)
	e.s.d.classify(f, f.Dir == dirIn)
	if f.Kind == kindResponse && f.Method == "" && f.ID != "" {
		if i, ok := e.issued[f.ID]; ok && i >= 0 {
			f.Method = e.steps[i].frame.Method
		}
	}
	f.Norm = e.normalize(f)

	// Candidates: the first `window` open theirs steps, plus any waived.
	var cands []int
	for _, i := range e.waived {
		if !e.steps[i].done {
			cands = append(cands, i)
		}
	}
	n := 0
	for i := e.open; i < len(e.steps) && n < e.o.window; i++ {
		st := e.steps[i]
		if !st.theirs || st.done || st.waived || st.kind != stepFrame {
			continue
		}
		n++
		cands = append(cands, i)
	}
	for _, i := range cands {
		st := e.steps[i]
		e.value(st.frame)
		rf := *st.frame
		rf.Norm = e.norm(st)
		if e.o.matcher(f, &rf) {
			e.accept(i, f, l.t)
			return
		}
	}
	// No match. Find the nearest candidate: same call first, fewest
	// differences, earliest; look beyond the window for a report.
	best, bestScore := -1, 0
	inWindow := false
	for pass := 0; pass < 2 && best < 0; pass++ {
		examined := 0
		for i := 0; i < len(e.steps) && examined < 512; i++ {
			st := e.steps[i]
			if !st.theirs || st.done || st.kind != stepFrame {
				continue
			}
			examined++
			if pass == 0 && !sameCall(f, st.frame) {
				continue
			}
			if pass == 1 && st.frame.Kind != f.Kind {
				continue
			}
			sc := diffScore(e.norm(st), f.Norm)
			if best < 0 || sc < bestScore {
				best, bestScore = i, sc
				inWindow = pass == 0 && containsInt(cands, i)
			}
		}
	}
	d := Divergence{Live: showFrame(f), FrameKind: f.Kind, Method: f.Method}
	if best >= 0 {
		rf := e.steps[best].frame
		d.Record = rf.Record
		d.Recorded = showFrame(rf)
		d.Diff = diffValues(e.norm(e.steps[best]), f.Norm, 20)
	}
	// A divergent answer, notification or event (and, for a fake parent,
	// anything the child says) stands in for the recorded one with the same
	// call, so one different frame does not stall the session. A request to
	// a fake child is refused instead, as the spec of the protocol would.
	if inWindow && (e.role == roleParent || f.Kind != kindRequest) && f.Kind != kindText {
		d.Kind = Mismatch
		d.Message = fmt.Sprintf("%s %s differs from record #%d", f.Kind, f.Method, d.Record)
		e.diverge(d, nil)
		e.accept(best, f, l.t)
		return
	}
	d.Kind = Unexpected
	known := false
	for _, st := range e.steps {
		if st.theirs && st.kind == stepFrame && st.frame.Method == f.Method {
			known = true
			break
		}
	}
	what := f.Kind + " " + f.Method
	if f.Kind == kindText {
		what = "a line that is not a JSON frame"
	}
	switch {
	case best >= 0:
		d.Message = fmt.Sprintf("no recorded frame matches %s (nearest: record #%d)", what, d.Record)
	default:
		d.Message = fmt.Sprintf("no recorded frame matches %s (nothing left to match)", what)
	}
	reply := e.s.d.refusal(f, fmt.Sprintf("rpctap %s: %s", e.roleVerb(), d.Message), known)
	if reply != nil {
		d.Reply = string(reply)
	}
	e.diverge(d, reply)
}

func (e *engine) roleVerb() string {
	if e.role == roleChild {
		return "replay"
	}
	return "verify"
}

// acceptSame marks theirs step i matched by a live frame with the same
// bytes: the live id is the recorded one and there is nothing to bind.
func (e *engine) acceptSame(i int, t time.Time) {
	st := e.steps[i]
	st.done = true
	st.liveT = t
	e.lastProgress = t
	e.res.Matched++
	if st.frame.Kind == kindRequest {
		st.liveID = st.frame.ID
	}
}

// accept marks theirs step i matched by live frame f.
func (e *engine) accept(i int, f *Frame, t time.Time) {
	st := e.steps[i]
	st.done = true
	st.liveT = t
	e.lastProgress = t
	e.res.Matched++
	if st.frame.Kind == kindRequest || (st.frame.Kind == kindNotification && f.ID != "") {
		st.liveID = f.ID
	}
	defer func() { st.norm, st.frame.Value = nil, nil }() // matched: free the decoded copy
	if st.frame.json && f.Value != nil && len(e.ign.pats) > 0 {
		before := len(e.binds)
		e.ign.bindings(e.value(st.frame), f.Value, e.binds)
		if len(e.binds) != before || len(e.border) != len(e.binds) {
			e.border = e.border[:0]
			for k := range e.binds {
				e.border = append(e.border, k)
			}
			sort.Slice(e.border, func(a, b int) bool {
				if len(e.border[a]) != len(e.border[b]) {
					return len(e.border[a]) > len(e.border[b])
				}
				return e.border[a] < e.border[b]
			})
		}
	}
}

// diverge records d, reports it and sends reply (if any) to the live side.
func (e *engine) diverge(d Divergence, reply []byte) {
	d.Cassette = e.s.rec.Name
	d.Conn = e.s.conn
	e.res.Divergences = append(e.res.Divergences, d)
	if w := e.o.report; w != nil {
		e.nreports++
		if e.nreports == 1 {
			writeFirst(w, e.o.prog, e.liveName(), d)
		} else {
			writeLater(w, e.o.prog, e.nreports, d)
		}
	}
	if reply != nil {
		if _, err := e.out.Write(append(reply, '\n')); err != nil && e.werr == nil {
			e.werr = fmt.Errorf("writing to the %s: %w", e.liveName(), err)
		}
	}
}

// finish reports recorded frames the live side never sent.
func (e *engine) finish() {
	var missing []*estep
	for _, st := range e.steps {
		if st.theirs && (st.kind == stepFrame || st.kind == stepSignal) && !st.done {
			missing = append(missing, st)
		}
	}
	if len(missing) == 0 {
		return
	}
	w := e.o.report
	e.o.report = nil // one summary instead of a line each
	for _, st := range missing {
		if st.waived {
			continue // reported as late already
		}
		e.diverge(Divergence{Kind: Missing, Record: st.frame.Record, FrameKind: st.frame.Kind, Method: st.frame.Method,
			Recorded: showFrame(st.frame),
			Message:  fmt.Sprintf("the %s never sent record #%d (%s %s)", e.liveName(), st.frame.Record, st.frame.Kind, st.frame.Method)}, nil)
	}
	e.o.report = w
	if w != nil {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s: %d recorded %s frame(s) never sent:", e.o.prog, len(missing), e.liveName())
		for k, st := range missing {
			if k == 8 {
				fmt.Fprintf(&b, " ... (+%d more)", len(missing)-k)
				break
			}
			fmt.Fprintf(&b, " #%d %s", st.frame.Record, st.frame.Method)
			if st.frame.Method == "" {
				fmt.Fprintf(&b, "%s", st.frame.Kind)
			}
			if k < len(missing)-1 && k < 7 {
				b.WriteByte(',')
			}
		}
		b.WriteByte('\n')
		w.Write(b.Bytes())
	}
}

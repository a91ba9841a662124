package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/portable"
	"github.com/rpctap/rpctap/protocol"
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
	late   bool // waived with a Late divergence reported (the child was still there)
	noted  bool // counted by finish
	liveT  time.Time
	liveID string // theirs requests: the id the live side used
	// optional: theirs chatter (a log line, a progress report): matched
	// if it comes, never waited for, not missed if it does not.
	optional bool
	// piece: theirs, a piece of a byte stream (protocol.Wire.Stream: DAP's
	// output event) of stream cat with text; matched by the stream's
	// concatenation (stream.go), never as a frame. claimed: taken by the
	// stream's comparison, not yet covered by live text.
	piece   bool
	claimed bool
	cat     string
	text    string
	norm    any
	idx     int // position in the causal sequence
}

// liveLine is one message from the live side: a line, or the body of a
// Content-Length message (cl).
type liveLine struct {
	raw []byte
	t   time.Time
	cl  bool
}

// engine runs one replay. All its state is owned by engineLoop (the
// goroutine that calls run); lineReader only hands it lines.
type engine struct {
	name  string // cassette name for reports
	conn  int
	d     dialect
	role  role
	o     *options
	ign   ignoreSet
	inv   inventedSet // the protocol's invented numbers (invented.go)
	idKey string
	// liveCL: the live side frames its messages with Content-Length
	// headers, so the replay's own replies (refusals) do too.
	liveCL bool

	// The steps held: steps[k] is step base+k of the causal sequence.
	// Steps before base were finished and let go; steps after the last
	// held one are still in the cassette (sp reads them on demand).
	steps     []*estep
	base      int
	sp        *stepper
	pf        *prefetcher // run: reads steps ahead on its own goroutine
	pfBuf     []*estep    // steps received from pf; pfBuf[pfAt:] not yet held
	pfAt      int
	cut       func(*cassette.TruncatedError)
	srcDone   bool            // sp has no more steps
	heldBytes int             // frame bytes of the held steps
	peakSteps int             // most steps held at once (tests)
	peakBytes int             // most frame bytes held at once (tests)
	foldT     time.Time       // latest liveT of the let-go steps since the last let-go mine step
	known     map[string]bool // methods of the live side's recorded frames read so far
	eofAt     time.Time       // the live side closed its end, not yet matched to a recorded close
	eofOpen   bool
	recEOF    bool // a stdin EOF has been read from the cassette (the steps after it came after the recorded close)
	sigExit   bool // the fake child died of a signal the parent sent
	// streams: the byte streams of Wire.Stream being compared (stream.go).
	streams map[string]*stream
	// lingering: child role, the recorded signals that answered a child
	// still there after its stdin closed (step.linger), pulled so far.
	lingering []*estep
	// stdinClosed: parent role, when the replay closed the child's stdin.
	stdinClosed time.Time
	missing     int // recorded frames of the live side never received (finish)

	out    io.Writer          // to the live side
	errOut io.Writer          // recorded stderr (child role)
	closer func() error       // parent role: closes the child's stdin
	signal func(string) error // parent role: sends a signal to the child
	sigs   <-chan string      // child role: signals the live parent sent
	start  time.Time
	next   int               // index of the next mine step to send
	open   int               // index of the first theirs step not done (nor waived)
	issued map[string]string // ids of requests the replay sent -> their method
	binds  map[string]string
	// nums: the invented numbers learnt from the live side, name+" "+the
	// recorded value -> the live one (inventedSet.learn).
	nums map[string]string
	// portableSeeded: the fixed placeholders of portable cassettes are bound
	// (portable.go).
	portableSeeded bool
	// faults are the rules of WithFaults, with their own hit counts
	// (fault.go); sentFrames counts the frames this side sent.
	faults       []Fault
	sentFrames   int
	border       []string // binds keys, longest first
	waived       []*estep // theirs steps given up on (parent role), still matchable
	liveEOF      bool
	exited       *Exit // child role: reached the recorded exit
	lastProgress time.Time
	nreports     int
	// Stall reports (stall.go): live frames that matched nothing, when the
	// live side last sent a frame, the steps a stall was said for.
	misses    []miss
	lastLive  time.Time
	stallSaid map[int]bool

	res  Result
	werr error  // first write error
	wbuf []byte // send's buffer
}

func newEngine(src Source, r role, o *options) (*engine, error) {
	f, err := src.feed()
	if err != nil {
		return nil, err
	}
	conn := o.conn
	conns := f.conns
	switch {
	case len(conns) == 0:
		f.src.close()
		return nil, fmt.Errorf("%s: %w", f.name, ErrEmpty)
	case !o.connSet && len(conns) > 1:
		f.src.close()
		return nil, fmt.Errorf("%s records %d connections (%s); choose one with --conn", f.name, len(conns), joinInts(conns))
	case !o.connSet:
		conn = conns[0]
	case !containsInt(conns, conn):
		f.src.close()
		return nil, fmt.Errorf("%s has no connection %d (it has %s)", f.name, conn, joinInts(conns))
	}
	proto, own, rs, err := f.start(conn)
	if err != nil {
		return nil, err
	}
	if o.protocol != "" && o.protocol != proto {
		if own || !compatible(o.protocol, proto) {
			rs.close()
			return nil, fmt.Errorf("%s records a %s session, not %s", f.name, proto, o.protocol)
		}
		proto = o.protocol
	}
	d := dialectFor(proto)
	pats := append([]string(nil), o.ignores...)
	if !o.noDefaults {
		pats = append(pats, d.ignore...)
	}
	ign, err := compileIgnores(pats)
	if err != nil {
		rs.close()
		return nil, err
	}
	e := &engine{name: f.name, conn: conn, d: d, role: r, o: o, ign: ign, issued: map[string]string{},
		binds: map[string]string{}, known: map[string]bool{}, sp: newStepper(rs, conn, d, r), cut: f.cut,
		inv: compileInvented(append(append([]protocol.Invented(nil), d.w.Invented...), portableNumbers(f.portable)...)), nums: map[string]string{}}
	if _, ok := f.portable[portable.PID]; ok {
		e.inv.fresh = map[string]string{portable.PID: strconv.Itoa(os.Getpid())}
	}
	if d.idKeyed() {
		e.idKey = d.responseID()
	}
	e.faults = append([]Fault(nil), o.faults...)
	for ph, v := range o.bindings {
		e.binds[ph] = v
	}
	if len(o.bindings) > 0 {
		e.reorderBinds()
	}
	e.res.Cassette = f.name
	e.res.Protocol = d.name
	return e, nil
}

// Look-ahead bounds: a search for a matching or a nearest recorded frame
// (the window, the nearest candidate of a report, a pending signal) reads
// further into the cassette only while the steps held stay under both.
// Reaching the next step to send is never held back by them (see load).
const (
	maxAheadSteps = 4096
	maxAheadBytes = 4 << 20
	maxKnown      = 4096 // methods remembered for the -32601/-32602 choice
	maxListed     = 1000 // missing frames listed in Result.Divergences
)

// at returns held step i (base <= i < base+len(steps)).
func (e *engine) at(i int) *estep { return e.steps[i-e.base] }

// end is the index after the last held step.
func (e *engine) end() int { return e.base + len(e.steps) }

// load makes step i held, reading the cassette on as far as needed. It
// returns false when the sequence ends before i, or, when limited, when
// reading on would pass the look-ahead bounds.
func (e *engine) load(i int, limited bool) bool {
	for i >= e.end() {
		if e.srcDone {
			return false
		}
		if limited && len(e.steps) > 0 && (len(e.steps) >= maxAheadSteps || e.heldBytes >= maxAheadBytes) {
			return false
		}
		st := e.pull()
		if st == nil {
			return false
		}
		st.idx = e.end()
		e.steps = append(e.steps, st)
		if st.frame != nil {
			e.heldBytes += len(st.frame.Raw)
		}
		e.peakSteps = max(e.peakSteps, len(e.steps))
		e.peakBytes = max(e.peakBytes, e.heldBytes)
		if e.eofOpen && st.kind == stepEOF && st.theirs {
			e.eofOpen = false
			st.done = true
			st.liveT = e.eofAt
		}
	}
	return true
}

// pull reads the next step from the cassette and gives it this run's
// state, or returns nil at the end (or where the cassette is damaged).
func (e *engine) pull() *estep {
	st := e.nextStep()
	if st == nil {
		e.srcDone = true
		if e.sp.err != nil && e.werr == nil {
			e.werr = e.sp.err
		}
		if e.sp.cut != nil && e.cut != nil {
			e.cut(e.sp.cut)
		}
		return nil
	}
	r := e.role
	switch st.kind {
	case stepFrame:
		fromParent := st.frame.Dir == dirIn
		st.mine = fromParent == (r == roleParent)
		st.theirs = !st.mine
		st.optional = st.theirs && e.d.chatter(st.frame)
		if st.theirs && e.d.w.Stream.Method != "" && st.frame.Kind == kindEvent && st.frame.Method == e.d.w.Stream.Method {
			st.cat, st.text, st.piece = e.d.w.Stream.Piece(st.frame.Method, e.value(st.frame))
			if st.piece && e.d.w.Stream.IsLog(st.cat) {
				st.piece, st.optional = false, true // the peer's log: chatter
			}
		}
		if st.theirs && e.role == roleParent && e.recEOF && st.frame.Kind == kindText {
			// Bytes from the child that are no message, recorded after
			// its stdin closed: the tail of a last write its exit cut
			// short (gopls's last log line, cut mid-body now and then).
			// Whether a run has one is timing: matched if it comes, never
			// waited for, not missed.
			st.optional = true
		}
		if st.theirs && len(e.known) < maxKnown {
			e.known[st.frame.Method] = true
		}
	case stepStderr:
		st.mine = r == roleChild
	case stepEOF, stepSignal:
		st.mine = r == roleParent
		st.theirs = r == roleChild
		if st.kind == stepEOF {
			e.recEOF = true
		}
		if st.kind == stepSignal && st.linger && st.theirs {
			// The recorded parent sent it because the recorded child
			// lingered after its stdin closed; the fake child does not
			// linger, so the live parent owes it nothing: matched if it
			// comes, never waited for, not missed.
			st.optional = true
			e.lingering = append(e.lingering, st)
		}
	case stepExit:
		st.mine = r == roleChild
		if !e.sigExit {
			e.res.Exit = st.exit
		}
	}
	st.done = !st.mine && !st.theirs
	return st
}

// nextStep takes the next step from the prefetcher, or from the stepper
// directly when there is none.
func (e *engine) nextStep() *estep {
	if e.pf == nil {
		return e.sp.next()
	}
	if e.pfAt == len(e.pfBuf) {
		clear(e.pfBuf)
		e.pfBuf = e.pf.take(e.pfBuf[:0])
		e.pfAt = 0
		if len(e.pfBuf) == 0 {
			return nil
		}
	}
	st := e.pfBuf[e.pfAt]
	e.pfBuf[e.pfAt] = nil
	e.pfAt++
	return st
}

// loadAll reads the whole sequence (Diff and Check work on all of it).
func (e *engine) loadAll() {
	for e.load(e.end(), false) {
	}
}

// trim lets go of the finished steps before both the earliest theirs step
// not done and the next mine step to send. Their frames are dropped; a
// response still reaching its request through pair finds it without them.
func (e *engine) trim() {
	e.skipOpen()
	cut := min(e.open, e.next)
	n := cut - e.base
	if n <= 0 || (n < 64 && n < len(e.steps)/2) {
		return
	}
	for _, st := range e.steps[:n] {
		if st.mine {
			e.foldT = st.liveT
		} else if st.liveT.After(e.foldT) {
			e.foldT = st.liveT
		}
		if st.frame != nil {
			e.heldBytes -= len(st.frame.Raw)
			if !st.waived || st.done {
				st.frame.Raw, st.frame.Value, st.norm = nil, nil, nil
			}
		}
	}
	m := copy(e.steps, e.steps[n:])
	clear(e.steps[m:])
	e.steps = e.steps[:m]
	e.base = cut
	if len(e.waived) > 0 {
		w := e.waived[:0]
		for _, st := range e.waived {
			if !st.done {
				w = append(w, st)
			}
		}
		e.waived = w
	}
}

// skipOpen moves open past held steps that are not theirs or are done or
// waived.
func (e *engine) skipOpen() {
	for e.open < e.end() {
		st := e.at(e.open)
		if st.theirs && !st.done && !st.waived {
			return
		}
		e.open++
	}
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
		n := e.ign.normalize(v, e.idKey)
		if len(e.inv.names) > 0 {
			n, _ = e.inv.mark(n, nil)
		}
		return n
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
	// The live side's framing is detected from its first bytes, as the
	// recorder does: lines, or Content-Length messages (LSP, DAP). Parts
	// of an over-long message are joined: the engine compares whole
	// messages.
	sp := framing.NewSplitter(framing.Auto, 0)
	buf := make([]byte, 64<<10)
	var long []byte
	var out []liveLine
	emit := func(hdr, p []byte, _ string, part bool) {
		if part || long != nil {
			long = append(long, p...)
			if part {
				return
			}
			p, long = long, nil
		} else {
			p = append([]byte(nil), p...)
		}
		out = append(out, liveLine{raw: p, cl: sp.Mode() == framing.ContentLength})
	}
	for {
		n, err := lr.r.Read(buf)
		if n > 0 {
			sp.Feed(buf[:n], emit)
		}
		if err != nil {
			sp.End(emit)
		}
		t := time.Now()
		for _, l := range out {
			l.t = t
			select {
			case lr.lines <- l:
			case <-lr.done:
				return
			}
		}
		out = out[:0]
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
	e.lastLive = e.start
	e.pf = startPrefetch(e.sp, e.o.prefetchNice)
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
		now := time.Now()
		wait, finished := e.advance(now)
		if finished || e.werr != nil {
			break
		}
		e.sayStall(now)
		if s := e.stallWait(now); s >= 0 && (wait < 0 || s < wait) {
			wait = s
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
	if e.o.strict && res.Diverged() {
		return &res, fmt.Errorf("%w: %d divergence(s) from %s", ErrDiverged, len(res.Divergences)+res.Unlisted, res.Cassette)
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
// neither done nor waived, or -1. Steps before i are held.
func (e *engine) blocker(i int) int {
	for e.open < i && e.open < e.end() {
		st := e.at(e.open)
		if st.theirs && !st.done && !st.waived && !st.optional {
			return e.open
		}
		e.open++
	}
	return -1
}

// advance sends every mine step that is due and whose time has come. It
// returns how long to wait for the next one (-1: nothing to wait for but the
// live side) and whether the session is over.
func (e *engine) advance(now time.Time) (time.Duration, bool) {
	for {
		e.trim()
		// Find the next mine step. A fake child stops at the first theirs
		// step not done: nothing after it can be due, and reading on past
		// it would hold every step in between.
		for e.load(e.next, false) {
			st := e.at(e.next)
			if st.mine || (e.role == roleChild && st.theirs && !st.done && !st.waived && !st.optional) {
				break
			}
			e.next++
		}
		if e.werr != nil {
			return -1, true
		}
		if e.next >= e.end() {
			return e.idleEnd(now)
		}
		i := e.next
		if b := e.blocker(i); b >= 0 || !e.at(i).mine {
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
		st := e.at(i)
		if st.kind == stepSignal && st.linger && e.role == roleParent {
			// Sent only to a child that lingers as the recorded one did:
			// one that closed its output (it exited at stdin EOF) is
			// left to end by itself, and one still there gets the
			// signal after the recorded wait (at most the timeout).
			if e.liveEOF {
				st.done = true
				e.next++
				continue
			}
			wait := min(time.Duration(st.lingerGap), e.o.timeout)
			if due := e.stdinClosed.Add(wait); !e.stdinClosed.IsZero() && due.After(now) {
				return due.Sub(now), false
			}
		}
		if e.o.speed > 0 && i > 0 {
			base := e.start
			mine := false
			for j := i - 1; j >= e.base; j-- {
				if t := e.at(j).liveT; t.After(base) {
					base = t
				}
				if e.at(j).mine {
					mine = true
					break
				}
			}
			if !mine && e.foldT.After(base) {
				base = e.foldT
			}
			delay := time.Duration(float64(st.t-st.prevT) / e.o.speed)
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
	if e.blocker(e.end()) < 0 || e.liveEOF {
		return -1, true
	}
	if w := e.o.timeout - now.Sub(e.lastProgress); w > 0 {
		return w, false
	}
	return -1, true
}

// waive gives up waiting for theirs steps before i (parent role timeout).
func (e *engine) waive(b, i int) {
	for j := max(b, e.base); j < i; j++ {
		st := e.at(j)
		if st.theirs && !st.done && !st.waived {
			st.waived = true
			e.waived = append(e.waived, st)
			if st.kind == stepFrame && !e.liveEOF {
				st.late = true
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
		if ex := st.exit; ex.Signal != "" && !e.sigExit {
			for _, l := range e.lingering {
				if !l.done && l.sig == ex.Signal {
					// The recorded child died of a signal its parent sent
					// only because it lingered; the live parent did not
					// send it, so the fake child ends as one that exits at
					// stdin EOF does.
					e.exited = &Exit{Code: 0}
					e.res.Exit = e.exited
					break
				}
			}
		}
		return true
	case stepEOF:
		e.stdinClosed = now
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
	if f.Kind == kindResponse && st.pair != nil {
		if live := st.pair.liveID; live != "" && live != f.ID {
			raw = replaceMember(raw, e.idKey, []byte(live))
		}
	}
	if f.json {
		raw = e.fillPortable(raw)
	}
	if len(e.border) > 0 && f.json {
		raw = substitute(raw, e.binds, e.border)
	}
	if (len(e.nums) > 0 || e.inv.fresh != nil) && f.json {
		raw = e.inv.substitute(raw, e.nums)
	}
	if f.Kind == kindRequest && f.ID != "" {
		e.issued[f.ID] = f.Method
	}
	// One write per frame; the buffer is reused (a Writer must not retain
	// it), unless a huge frame made it large.
	buf := e.frameOut(e.wbuf[:0], raw, st.hdr, st.eol)
	if cap(buf) <= 1<<20 {
		e.wbuf = buf
	}
	e.sentFrames++
	if len(e.faults) > 0 {
		if f := e.faultFor(st, e.sentFrames); f != nil {
			end, err := e.writeFaulty(f, st, buf, raw)
			if err != nil {
				e.werr = fmt.Errorf("writing to the %s: %w", e.liveName(), err)
				return true
			}
			e.res.Sent++
			return end
		}
	}
	if _, err := e.out.Write(buf); err != nil {
		e.werr = fmt.Errorf("writing to the %s: %w", e.liveName(), err)
		return true
	}
	e.res.Sent++
	return false
}

// onEOF: the live side closed its end. The first recorded close not yet
// matched takes it, now or when the replay reads that far.
func (e *engine) onEOF(now time.Time) {
	for i := e.base; i < e.end(); i++ {
		if st := e.at(i); st.kind == stepEOF && st.theirs && !st.done {
			st.done = true
			st.liveT = now
			e.lastProgress = now
			return
		}
	}
	e.eofOpen, e.eofAt = true, now
}

// onSignal: the live parent sent the fake child a signal. A recorded
// forwarded signal that is pending (within the window) matches it; any other
// signal ends the fake child as the signal's default action would (exit
// status 128+n), reported as a divergence. It returns true when the replay
// ends.
func (e *engine) onSignal(sig string, now time.Time) bool {
	e.trim()
	n := 0
	for i := e.open; n < e.o.window && e.load(i, true); i++ {
		st := e.at(i)
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
	e.sigExit = true
	return true
}

// onLine matches one live frame.
// matchSame is onLine's fast path: a frame byte for byte equal to a
// pending recorded one matches it under the default matcher without being
// decoded (the common case, and the one that matters for 1 MiB frames).
func (e *engine) matchSame(l liveLine) bool {
	if e.o.customMatcher {
		return false
	}
	var same *estep
	e.eachInWindow(func(st *estep) bool {
		if bytes.Equal(st.frame.Raw, l.raw) {
			same = st
			return false
		}
		return true
	})
	if same != nil {
		e.acceptSame(same, l.t)
	}
	return same != nil
}

// eachInWindow calls fn with the first `window` recorded frames of the
// live side still to come (not done, not waived), in order, until fn
// returns false.
func (e *engine) eachInWindow(fn func(st *estep) bool) {
	n := 0
	for i := e.open; n < e.o.window && e.load(i, true); i++ {
		st := e.at(i)
		if !st.theirs || st.done || st.waived || st.kind != stepFrame || st.piece {
			continue
		}
		n++
		if !fn(st) {
			return
		}
	}
}

func (e *engine) onLine(l liveLine) {
	e.trim()
	e.lastLive = l.t
	if l.cl {
		e.liveCL = true
	}
	f := &Frame{Raw: l.raw}
	if e.role == roleChild {
		f.Dir = dirIn
	} else {
		f.Dir = dirOut
	}
	if e.livePiece(f, l.t) {
		return
	}
	if e.matchSame(l) {
		return
	}
	f.Value, f.json = decodeJSON(l.raw)
	e.d.classify(f, f.Dir == dirIn)
	if f.Kind == kindResponse && f.Method == "" && f.ID != "" {
		if m, ok := e.issued[f.ID]; ok {
			f.Method = m
		}
	}
	f.Norm = e.normalize(f)

	// Candidates: the first `window` open theirs steps, plus any waived.
	var cands []*estep
	for _, st := range e.waived {
		if !st.done {
			cands = append(cands, st)
		}
	}
	e.eachInWindow(func(st *estep) bool { cands = append(cands, st); return true })
	for _, st := range cands {
		e.value(st.frame)
		rf := *st.frame
		rf.Norm = e.norm(st)
		if e.o.matcher(f, &rf) {
			e.accept(st, f, l.t)
			return
		}
	}
	if e.d.chatter(f) {
		// Chatter that matches no recorded frame: one more log line or
		// progress report than the recording had. Not a difference.
		e.res.Chatter++
		return
	}
	e.onMiss(f, cands, l.t)
}

// nearest finds the recorded frame nearest to f, which matched nothing:
// same call first, fewest differences, earliest; it looks beyond the window
// (as far as the look-ahead bounds let the replay read) for a report.
// inWindow says the nearest is the same call and among the candidates.
func (e *engine) nearest(f *Frame, cands []*estep) (best *estep, inWindow bool) {
	bestScore := 0
	for pass := 0; pass < 2 && best == nil; pass++ {
		examined := 0
		for i := e.base; examined < 512 && e.load(i, true); i++ {
			st := e.at(i)
			if !st.theirs || st.done || st.kind != stepFrame || st.piece {
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
			if best == nil || sc < bestScore {
				best, bestScore = st, sc
				inWindow = pass == 0 && containsStep(cands, st)
			}
		}
	}
	return best, inWindow
}

// onMiss reports a live frame that matched no recorded one: a mismatch
// when it stands in for the nearest recorded call, else an unexpected
// frame (refused in the protocol's own form when it is a request).
func (e *engine) onMiss(f *Frame, cands []*estep, t time.Time) {
	best, inWindow := e.nearest(f, cands)
	d := Divergence{Live: showFrame(f), FrameKind: f.Kind, Method: f.Method}
	if best != nil {
		rf := best.frame
		d.Record = rf.Record
		d.Recorded = showFrame(rf)
		d.Diff = diffValues(e.norm(best), f.Norm, 20)
	}
	// A divergent answer, notification or event (and, for a fake parent,
	// anything the child says) stands in for the recorded one with the same
	// call, so one different frame does not stall the session. A request to
	// a fake child is refused instead, as the spec of the protocol would.
	if inWindow && (e.role == roleParent || f.Kind != kindRequest) && f.Kind != kindText {
		d.Kind = Mismatch
		d.Message = fmt.Sprintf("%s %s differs from record #%d", f.Kind, f.Method, d.Record)
		e.diverge(d, nil)
		e.accept(best, f, t)
		return
	}
	d.Kind = Unexpected
	e.noteMiss(f)
	known := e.known[f.Method]
	what := f.Kind + " " + f.Method
	if f.Kind == kindText {
		what = "a line that is not a JSON frame"
	}
	switch {
	case best != nil:
		d.Message = fmt.Sprintf("no recorded frame matches %s (nearest: record #%d)", what, d.Record)
	default:
		d.Message = fmt.Sprintf("no recorded frame matches %s (nothing left to match)", what)
	}
	reply := e.d.refusal(f, fmt.Sprintf("rpctap %s: %s", e.roleVerb(), d.Message), known)
	if reply != nil {
		d.Reply = string(reply)
	}
	e.diverge(d, reply)
}

func containsStep(xs []*estep, x *estep) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func (e *engine) roleVerb() string {
	if e.role == roleChild {
		return "replay"
	}
	return "verify"
}

// acceptSame marks theirs step st matched by a live frame with the same
// bytes: the live id is the recorded one and there is nothing to bind.
func (e *engine) acceptSame(st *estep, t time.Time) {
	st.done = true
	st.liveT = t
	e.lastProgress = t
	e.res.Matched++
	switch st.frame.Kind {
	case kindRequest:
		st.liveID = st.frame.ID
	case kindResponse:
		delete(e.issued, st.frame.ID)
	}
}

// accept marks theirs step st matched by live frame f.
func (e *engine) accept(st *estep, f *Frame, t time.Time) {
	st.done = true
	st.liveT = t
	e.lastProgress = t
	e.res.Matched++
	if st.frame.Kind == kindRequest || (st.frame.Kind == kindNotification && f.ID != "") {
		st.liveID = f.ID
	}
	if st.frame.Kind == kindResponse {
		delete(e.issued, st.frame.ID)
	}
	defer func() { st.norm, st.frame.Value = nil, nil }() // matched: free the decoded copy
	if st.frame.json && f.Value != nil {
		e.learnPortable(st.frame, f.Value)
		if len(e.inv.names) > 0 {
			e.inv.learn(e.value(st.frame), f.Value, nil, e.nums)
		}
	}
	if st.frame.json && f.Value != nil && len(e.ign.pats) > 0 {
		before := len(e.binds)
		e.ign.bindings(e.value(st.frame), f.Value, e.binds)
		if len(e.binds) != before || len(e.border) != len(e.binds) {
			e.reorderBinds()
		}
	}
}

// frameOut appends one message to dst as the wire carries it: body and
// line ending, or (hdr set: a Content-Length stream) the header block with
// its Content-Length counting this body (ids rewritten, placeholders filled
// in and faults change a body's length), then the body.
func (e *engine) frameOut(dst, body, hdr []byte, eol string) []byte {
	if hdr != nil {
		return append(append(dst, framing.WithLength(hdr, len(body))...), body...)
	}
	return append(append(dst, body...), eol...)
}

// replyHdr is the header of a message the replay makes up (a refusal): a
// Content-Length one when the live side frames its messages so, else nil.
func (e *engine) replyHdr() []byte {
	if e.liveCL {
		return framing.WithLength(nil, 0)
	}
	return nil
}

// diverge records d, reports it and sends reply (if any) to the live side.
func (e *engine) diverge(d Divergence, reply []byte) {
	d.Cassette = e.name
	d.Conn = e.conn
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
		if _, err := e.out.Write(e.frameOut(nil, reply, e.replyHdr(), "\n")); err != nil && e.werr == nil {
			e.werr = fmt.Errorf("writing to the %s: %w", e.liveName(), err)
		}
	}
}

// finish reports recorded frames the live side never sent: the held steps,
// then the rest of the cassette, read through without being held (only
// the first maxListed become Divergences; the rest are counted in
// Result.Unlisted). It also finds the recorded exit. After a write error
// the rest of the cassette is left unread.
func (e *engine) finish() {
	if e.sp.err != nil {
		// The cassette is damaged: the replay stops with that error alone.
		if e.pf != nil {
			e.pf.halt()
		}
		e.sp.src.close()
		return
	}
	e.finishStreams()
	w := e.o.report
	e.o.report = nil // one summary instead of a line each
	var first []*Frame
	note := func(st *estep) {
		if !st.theirs || (st.kind != stepFrame && st.kind != stepSignal) || st.done || st.noted || st.optional {
			return
		}
		st.noted = true
		e.missing++
		if len(first) < 8 {
			first = append(first, st.frame)
		}
		if st.late {
			return // reported as late already
		}
		if len(e.res.Divergences) >= maxListed && e.missing > maxListed {
			e.res.Unlisted++
			return
		}
		e.diverge(Divergence{Kind: Missing, Record: st.frame.Record, FrameKind: st.frame.Kind, Method: st.frame.Method,
			Recorded: showFrame(st.frame),
			Message:  fmt.Sprintf("the %s never sent record #%d (%s %s)", e.liveName(), st.frame.Record, st.frame.Kind, st.frame.Method)}, nil)
	}
	// Steps given up on after the timeout may have been let go of already;
	// a child that closed its output before sending them is not "late".
	for _, st := range e.waived {
		note(st)
	}
	for _, st := range e.steps {
		note(st)
	}
	// The rest of the cassette is read even when writing to the live side
	// failed: a child that died (verify) or a parent that left (replay)
	// without sending what was recorded has diverged, and a write error
	// alone must not hide that.
	for !e.srcDone {
		st := e.pull()
		if st == nil {
			break
		}
		note(st)
	}
	if e.pf != nil {
		e.pf.halt()
	}
	e.sp.src.close()
	e.o.report = w
	if w != nil && e.missing > 0 {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s: %d recorded %s frame(s) never sent:", e.o.prog, e.missing, e.liveName())
		for k, f := range first {
			fmt.Fprintf(&b, " #%d %s", f.Record, f.Method)
			if f.Method == "" {
				fmt.Fprintf(&b, "%s", f.Kind)
			}
			if k < len(first)-1 {
				b.WriteByte(',')
			}
		}
		if e.missing > len(first) {
			fmt.Fprintf(&b, " ... (+%d more)", e.missing-len(first))
		}
		b.WriteByte('\n')
		w.Write(b.Bytes())
	}
}

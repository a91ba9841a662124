package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/deeptap"
	"github.com/rpctap/rpctap/internal/thread"
	"github.com/rpctap/rpctap/protocol"
)

// Source is what a replay plays: a *Recording (in memory, replayable any
// number of times) or a *Stream (a cassette read as the replay advances,
// once).
type Source interface {
	feed() (*feed, error)
}

// feed is one run's view of a Source.
type feed struct {
	name     string
	protocol string // the cassette's own ("" when it does not say)
	conns    []int  // connections carrying frames
	// portable is the header's table of placeholder families (a portable
	// cassette; nil otherwise).
	portable map[string]string
	// lateMeta: meta records read before the replay starts may still name
	// the protocol (a streamed cassette; a Recording has seen them all).
	lateMeta bool
	named    string // start: the protocol the cassette names itself
	src      recordSource
	cut      func(*cassette.TruncatedError) // the stream reached a torn tail
	damage   func() []*cassette.DamageError // the damaged ranges read past so far (nil: none can be)
}

// recordSource yields a cassette's records after the header, in order,
// then io.EOF; a *cassette.TruncatedError ends a cut-off cassette; any
// other error is damage.
type recordSource interface {
	next() (*cassette.Record, error)
	close() error
}

// sliceSource reads a Recording's records.
type sliceSource struct {
	recs []cassette.Record
	i    int
}

func (s *sliceSource) next() (*cassette.Record, error) {
	for s.i < len(s.recs) {
		r := &s.recs[s.i]
		s.i++
		if r.K != cassette.KindHeader {
			return r, nil
		}
	}
	return nil, io.EOF
}

func (s *sliceSource) close() error { return nil }

func (r *Recording) feed() (*feed, error) {
	return &feed{name: r.Name, protocol: r.Protocol, conns: r.Conns(), src: &sliceSource{recs: r.Records}, portable: r.Header.Portable}, nil
}

// prefixSource gives the records read ahead at start-up (and the error
// that ended them, if any), then the rest of the source.
type prefixSource struct {
	pre  []*cassette.Record
	err  error
	rest recordSource
}

func (p *prefixSource) next() (*cassette.Record, error) {
	if len(p.pre) > 0 {
		r := p.pre[0]
		p.pre[0] = nil
		p.pre = p.pre[1:]
		return r, nil
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.rest.next()
}

func (p *prefixSource) close() error { return p.rest.close() }

// Stream is a cassette opened for a streaming replay: its records are read
// with the cassette's streaming reader as the replay advances, and the
// replay keeps only the steps it may still need (see docs/replay.md,
// "Memory"), so memory depends on the matching window and the largest
// frame, not on the length of the session. A Stream is replayed once.
type Stream struct {
	Name   string          // path shown in reports
	Header cassette.Header // record 0
	// Warn, when not nil, is called once with a one-line message when the
	// replay reaches the end of a truncated cassette (no end record, as
	// after a SIGKILL): everything before the cut was replayed. It is also
	// called once for each damaged range the replay reads past (its
	// records are missing from the replay; see Damage). It is called from
	// the goroutine that reads the cassette.
	Warn func(msg string)

	r     *cassette.Reader
	conns []int
	used  bool

	mu     sync.Mutex
	damage []*cassette.DamageError
}

// Damage returns the damaged ranges the replay read past so far: a replay
// that went on past damage did not replay the records lost there, and the
// command says so in its exit status.
func (s *Stream) Damage() []*cassette.DamageError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*cassette.DamageError(nil), s.damage...)
}

func (s *Stream) damaged(d *cassette.DamageError) {
	s.mu.Lock()
	s.damage = append(s.damage, d)
	s.mu.Unlock()
	if s.Warn != nil {
		s.Warn(fmt.Sprintf("%s: %v", s.Name, d))
	}
}

// OpenStream opens the cassette at path for a streaming replay. It reads
// the signature and the header; for a socket-mode cassette it also reads
// the file once to list its connections (bounded memory). What it cannot
// see yet is found as the replay reads on: a cassette with no frames or a
// --protocol that disagrees fails when the replay starts (StartChild,
// RunChild), damage further on stops the replay with an error where it is
// reached, and a cut is replayed as far as it is complete.
func OpenStream(path string) (*Stream, error) {
	r, err := cassette.Open(path)
	if err != nil {
		return nil, describeOpenError(path, err)
	}
	s := &Stream{Name: path, Header: r.Header(), r: r, conns: []int{0}}
	if s.Header.Mode == "socket" {
		if s.conns, err = scanConns(path); err != nil {
			r.Close()
			return nil, err
		}
	}
	return s, nil
}

// scanConns reads a cassette through to list the connections that carry
// frames (socket mode: --conn must name one).
func scanConns(path string) ([]int, error) {
	r, err := cassette.Open(path)
	if err != nil {
		return nil, describeOpenError(path, err)
	}
	defer r.Close()
	seen := map[int]bool{}
	var out []int
	for {
		x, err := r.Next()
		var te *cassette.TruncatedError
		var de *cassette.DamageError
		if err == io.EOF || errors.As(err, &te) {
			break
		}
		if errors.As(err, &de) {
			continue // reported when the replay reaches it
		}
		if err != nil {
			return nil, describeOpenError(path, err)
		}
		if x.K == cassette.KindFrame && !seen[x.Conn] {
			seen[x.Conn] = true
			out = append(out, x.Conn)
		}
	}
	if len(out) == 0 {
		out = []int{0} // "no frames" is reported when the replay starts
	}
	sort.Ints(out)
	return out, nil
}

// Close closes the cassette file. A replay closes it when it ends.
func (s *Stream) Close() error {
	if s.r == nil {
		return nil
	}
	err := s.r.Close()
	s.r = nil
	return err
}

func (s *Stream) feed() (*feed, error) {
	if s.used || s.r == nil {
		return nil, fmt.Errorf("%s: a Stream is replayed once (open it again, or use Open for a Recording)", s.Name)
	}
	s.used = true
	f := &feed{name: s.Name, protocol: s.Header.Protocol, conns: s.conns, lateMeta: true, src: &streamSource{s: s}, damage: s.Damage,
		portable: s.Header.Portable}
	f.cut = func(te *cassette.TruncatedError) {
		if s.Warn != nil {
			s.Warn(fmt.Sprintf("%s is %v; replayed every complete record", s.Name, te))
		}
	}
	return f, nil
}

// streamSource reads the records of a Stream.
type streamSource struct{ s *Stream }

func (ss *streamSource) next() (*cassette.Record, error) {
	if ss.s.r == nil {
		return nil, io.EOF
	}
	for {
		x, err := ss.s.r.Next()
		var de *cassette.DamageError
		if errors.As(err, &de) {
			// Report the range and replay what follows it.
			ss.s.damaged(de)
			continue
		}
		if err != nil {
			var te *cassette.TruncatedError
			if err != io.EOF && !errors.As(err, &te) {
				err = describeOpenError(ss.s.Name, err)
			}
			return nil, err
		}
		if x.K != cassette.KindHeader {
			return x, nil
		}
	}
}

func (ss *streamSource) close() error { return ss.s.Close() }

// Start-up reads before the replay begins only what it needs to name the
// protocol when the cassette's header does not: the frames protocol
// detection looks at, then up to readAheadMeta more records for a meta
// record, and never more than readAheadRecords records or readAheadBytes of
// payload once a frame was found.
const (
	readAheadMeta    = 64
	readAheadRecords = 4096
	readAheadBytes   = 4 << 20
)

// start reads the first records of f for connection conn: enough to know
// the protocol and that there is a frame to replay. It returns the
// protocol (the cassette's, else detected), whether the cassette named it
// (header or meta record), and a source that gives those records again,
// then the rest.
func (f *feed) start(conn int) (proto string, own bool, src recordSource, err error) {
	proto, src, err = f.read(conn)
	return proto, err == nil && f.named != "", src, err
}

func (f *feed) read(conn int) (string, recordSource, error) {
	proto := f.protocol
	p := &prefixSource{rest: f.src}
	var frames []*Frame
	partial := map[cassette.Dir]*Frame{}
	complete, after, held, session := 0, 0, 0, 0
	for {
		if complete > 0 && proto != "" {
			break
		}
		if complete >= protocol.DetectFrames && (!f.lateMeta || after >= readAheadMeta) {
			break
		}
		if complete > 0 && (len(p.pre) >= readAheadRecords || held >= readAheadBytes) {
			break // detect from the frames read so far
		}
		x, err := f.src.next()
		if err != nil {
			p.err = err
			break
		}
		if x.Conn != conn && x.K != cassette.KindEvent && x.K != cassette.KindMeta {
			continue // another connection's: the stepper would skip it
		}
		p.pre = append(p.pre, x)
		held += len(x.Payload())
		if x.Conn == conn && sessionRecord(x) {
			session++
		}
		if complete >= protocol.DetectFrames {
			after++
		}
		switch {
		case x.K == cassette.KindMeta && f.lateMeta && x.Protocol != "":
			proto = x.Protocol
			f.named = proto
		case x.K == cassette.KindFrame && x.Conn == conn && (x.D == dirIn || x.D == dirOut):
			if g := partial[x.D]; g != nil {
				g.Raw = append(g.Raw, x.Payload()...)
			} else {
				g = &Frame{Raw: append([]byte(nil), x.Payload()...)}
				frames = append(frames, g)
				partial[x.D] = g
			}
			if !x.Part {
				delete(partial, x.D)
				complete++
			}
		}
	}
	if len(frames) == 0 && session > 0 && (p.err == nil || p.err == io.EOF || isCut(p.err)) {
		// A session without frames (a child that died at once): it replays
		// its stderr and exit. With no protocol named, it is raw.
		if proto == "" {
			proto = "raw"
		}
		return proto, p, nil
	}
	if len(frames) == 0 {
		f.src.close()
		var te *cassette.TruncatedError
		switch {
		case f.damage != nil && len(f.damage()) > 0:
			// The frames were lost to damage (each range was reported).
			return "", nil, fmt.Errorf("%s: %w (%s)", f.name, ErrEmpty, DamageSummary(f.damage()))
		case p.err == nil || p.err == io.EOF:
			return "", nil, fmt.Errorf("%s: %w", f.name, ErrEmpty)
		case errors.As(p.err, &te):
			return "", nil, fmt.Errorf("%s: %w (%v)", f.name, ErrEmpty, te)
		}
		return "", nil, p.err
	}
	if p.err != nil && p.err != io.EOF {
		var te *cassette.TruncatedError
		if !errors.As(p.err, &te) {
			f.src.close()
			return "", nil, p.err // damage in the first records: refused
		}
	}
	if proto == "" {
		proto = detect(frames)
	} else if f.named == "" {
		f.named = proto
	}
	return proto, p, nil
}

// stepper turns the records of one connection into the causal sequence of
// steps, one at a time: it joins part records, classifies frames with the
// dialect, links responses to their requests, and holds the exit event
// back until everything else was given (see exitLast in docs).
type stepper struct {
	src  recordSource
	conn int
	role role // which side the replay plays: frames only the other side saw (an intercept) are left out
	// peeked is a record (or the error) read ahead by add, given by read
	// before the source's next.
	peeked    *cassette.Record
	peekedErr error
	d         dialect
	queue     []*estep // built steps, in order; the head may wait for its parts
	partial   map[cassette.Dir]*estep
	exit      *estep // the first exit event, given last
	lastT     int64  // t of the latest step other than the held exit
	prevT     int64  // t of the step given last
	given     bool   // a step was given
	open      map[pairKey][]*estep
	ended     bool
	eofT      int64 // t of the parent's stdin close (eofSeen)
	eofSeen   bool
	err       error                    // damage: the replay stops
	cut       *cassette.TruncatedError // the cassette ends in a cut
}

type pairKey struct {
	dir cassette.Dir
	id  string
}

func newStepper(src recordSource, conn int, d dialect, r role) *stepper {
	return &stepper{src: src, conn: conn, d: d, role: r, partial: map[cassette.Dir]*estep{}, open: map[pairKey][]*estep{}}
}

// next returns the next step, or nil at the end of the sequence (sp.err
// tells whether the cassette was damaged there, sp.cut whether it was cut
// off).
func (sp *stepper) next() *estep {
	for {
		if len(sp.queue) > 0 && (sp.ended || !sp.queue[0].parts) {
			st := sp.queue[0]
			sp.queue[0] = nil
			sp.queue = sp.queue[1:]
			sp.finalize(st)
			return sp.give(st)
		}
		if sp.ended {
			if ex := sp.exit; ex != nil {
				// A child writes nothing after it exits: output recorded
				// after the exit event was written before it and read
				// later (the tap drains the pipes after reaping the child).
				sp.exit = nil
				ex.t = max(ex.t, sp.lastT)
				return sp.give(ex)
			}
			return nil
		}
		x, err := sp.read()
		if err != nil {
			sp.ended = true
			var te *cassette.TruncatedError
			switch {
			case err == io.EOF:
			case errors.As(err, &te):
				sp.cut = te
			default:
				sp.err = err
				sp.queue, sp.exit = nil, nil
			}
			sp.src.close()
			continue
		}
		sp.add(x)
	}
}

func (sp *stepper) give(st *estep) *estep {
	if sp.given {
		st.prevT = sp.prevT
	} else {
		st.prevT = st.t
	}
	sp.given = true
	sp.prevT = st.t
	return st
}

func (sp *stepper) push(st step) {
	sp.queue = append(sp.queue, &estep{step: st})
	if st.kind != stepExit {
		sp.lastT = max(sp.lastT, st.t)
	}
}

// read returns the next record: one add read ahead, else the source's.
func (sp *stepper) read() (*cassette.Record, error) {
	if sp.peeked != nil || sp.peekedErr != nil {
		r, err := sp.peeked, sp.peekedErr
		sp.peeked, sp.peekedErr = nil, nil
		return r, err
	}
	return sp.src.next()
}

// original returns the payload the sender wrote of frame rec, which an
// intercepting tap changed (icpt edit or rewrite) on its way: the
// intercept event the recorder writes right after the frame keeps it. It
// reads that record ahead (given again by read); nil when there is none.
// bp is the event's bp: the rules or breakpoint that made the change.
func (sp *stepper) original(rec *cassette.Record) (orig []byte, bp string) {
	x, err := sp.src.next()
	sp.peeked, sp.peekedErr = x, err
	if err != nil || x == nil || x.K != cassette.KindEvent || x.Ev != cassette.EventIntercept || x.Ref != rec.N {
		return nil, ""
	}
	if x.Orig != nil {
		return append([]byte(nil), x.Orig...), x.BP
	}
	if x.OrigText != "" {
		return []byte(x.OrigText), x.BP
	}
	return nil, x.BP
}

// sees reports whether a frame of direction d that only one side had to
// do with (childOnly: the child got it or sent it; else the parent) is a
// step of this replay: the fake child (roleChild) plays against a live
// parent, so it keeps what the parent saw; the fake parent (verify) keeps
// what the child saw.
func (sp *stepper) sees(d cassette.Dir, childOnly bool) bool {
	return childOnly == (sp.role == roleParent)
}

// add turns one record into a step (or part of one).
func (sp *stepper) add(rec *cassette.Record) {
	conn := sp.conn
	if rec.Conn != conn && rec.K != cassette.KindEvent {
		return
	}
	switch rec.K {
	case cassette.KindFrame:
		if rec.D != dirIn && rec.D != dirOut {
			return
		}
		if rec.Icpt == "inject" && !sp.sees(rec.D, rec.D == dirIn) {
			// A frame the user injected: the side it was sent to saw it,
			// the side it seems to come from never sent it.
			return
		}
		if (rec.Icpt == "edit" || rec.Icpt == "rewrite") && !rec.Part {
			// The live side facing this replay is the frame's sender: it
			// sends what it sent then, the original, not what the
			// receiver got. record --deep's own rewrite is undone on both
			// sides: what the agent got names the recording's cassette and
			// directory, so verify would have the real agent start its MCP
			// servers under rpctap record linked to the old cassette (new
			// cassettes joining a finished recording's linked set), and
			// diff would see two recordings of one session differ in them.
			// With other changes (a user's --rewrite rule before it, an
			// edit through the control socket after it) only the deep
			// tap's part is undone.
			orig, bp := sp.original(rec)
			var payload []byte
			switch {
			case orig != nil && (sp.sees(rec.D, rec.D == dirOut) || bp == deeptap.RuleName):
				payload = orig
			case strings.Contains(bp, deeptap.RuleName):
				if u, ok := deeptap.Unwrap(rec.Payload()); ok {
					payload = u
				}
			}
			if payload != nil {
				c := *rec
				c.SetPayload(payload)
				c.Kind, c.Icpt = "", ""
				rec = &c
			}
		}
		if p := sp.partial[rec.D]; p != nil {
			p.frame.Raw = append(p.frame.Raw, rec.Payload()...)
			p.joined = true
			p.eol = rec.EOL
			sp.lastT = max(sp.lastT, rec.T)
			if !rec.Part {
				p.parts = false
				delete(sp.partial, rec.D)
			}
			return
		}
		f := &Frame{Record: rec.N, Dir: rec.D, Raw: payloadOf(rec), json: rec.JSON != nil}
		if !rec.Part && rec.Kind != "" && sp.d.w.RecordedKinds() {
			// The recorder classified this frame with the same rules:
			// keep its answer (finalize then does not scan the frame).
			f.Kind, f.Method, f.ID = kindName(protocol.Kind(rec.Kind)), rec.Method, string(rec.ID)
			if f.Kind == kindResponse || f.ID == "null" {
				f.Method = "" // filled in from the request it answers
			}
			if f.ID == "null" {
				f.ID = ""
			}
			st := step{kind: stepFrame, frame: f, eol: rec.EOL, t: rec.T, stored: true}
			if rec.Hdr != "" {
				st.hdr = []byte(rec.Hdr)
			}
			sp.push(st)
			return
		}
		var hdr []byte
		if rec.Hdr != "" {
			hdr = []byte(rec.Hdr)
		}
		sp.push(step{kind: stepFrame, frame: f, eol: rec.EOL, hdr: hdr, t: rec.T, parts: rec.Part})
		if rec.Part {
			sp.partial[rec.D] = sp.queue[len(sp.queue)-1]
		}
	case cassette.KindStderr:
		sp.push(step{kind: stepStderr, frame: &Frame{Record: rec.N, Dir: cassette.DirErr, Raw: payloadOf(rec)}, eol: rec.EOL, t: rec.T})
	case cassette.KindEvent:
		switch {
		case rec.Ev == cassette.EventIntercept && rec.Conn == conn && (rec.Act == "drop" || rec.Act == "take") &&
			(rec.D == dirIn || rec.D == dirOut):
			// A frame one side sent and the other never got (dropped, or
			// the answer to an injected request, taken off the wire):
			// it is a step only for the engine that plays the receiver's
			// side opposite the live sender.
			orig := []byte(rec.Orig)
			if orig == nil {
				orig = []byte(rec.OrigText)
			}
			if len(orig) == 0 || !sp.sees(rec.D, rec.D == dirOut) {
				return
			}
			f := &Frame{Record: rec.N, Dir: rec.D, Raw: orig, json: rec.Orig != nil}
			sp.push(step{kind: stepFrame, frame: f, eol: "\n", t: rec.T})
		case rec.Ev == cassette.EventStdinEOF && rec.Conn == conn,
			rec.Ev == cassette.EventConnClose && rec.Conn == conn && conn != 0:
			sp.push(step{kind: stepEOF, t: rec.T, frame: &Frame{Record: rec.N, Dir: dirIn, Kind: "eof"}})
			if !sp.eofSeen {
				sp.eofSeen, sp.eofT = true, rec.T
			}
		case rec.Ev == cassette.EventSignal && rec.Conn == conn && rec.Signal != "":
			// Signals are recorded only while the child lives, so one
			// after the stdin close answered a child still there.
			sp.push(step{kind: stepSignal, t: rec.T, sig: rec.Signal, linger: sp.eofSeen, lingerGap: max(rec.T-sp.eofT, 0),
				frame: &Frame{Record: rec.N, Dir: dirIn, Kind: "signal", Method: rec.Signal}})
		case rec.Ev == cassette.EventExit && conn == 0:
			ex := &Exit{}
			if rec.Exit != nil {
				ex.Code = *rec.Exit
			} else if rec.Signal != "" {
				ex.Signal = rec.Signal
				ex.Code = 128 + signalNumber(rec.Signal)
			}
			st := step{kind: stepExit, t: rec.T, exit: ex}
			if sp.exit == nil {
				sp.exit = &estep{step: st}
				return
			}
			sp.push(st)
		}
	}
}

// finalize completes a frame step once all its parts are in: JSON-ness,
// classification, and the link between a response and its request (the
// latest earlier request from the other side with the same id that is not
// yet answered; a response copies the request's method).
func (sp *stepper) finalize(st *estep) {
	if st.kind != stepFrame {
		return
	}
	f := st.frame
	recorded := f.json
	if st.joined {
		recorded = json.Valid(f.Raw)
	}
	f.json = isJSONPayload(f.Raw, recorded)
	st.parts, st.joined = false, false
	if !st.stored || !f.json {
		sp.d.classify(f, f.Dir == dirIn)
	}
	if !sp.d.idKeyed() || f.ID == "" {
		return
	}
	switch f.Kind {
	case kindRequest:
		k := pairKey{f.Dir, f.ID}
		sp.open[k] = append(sp.open[k], st)
	case kindResponse:
		other := dirIn
		if f.Dir == dirIn {
			other = dirOut
		}
		k := pairKey{other, f.ID}
		if q := sp.open[k]; len(q) > 0 {
			req := q[len(q)-1]
			if len(q) == 1 {
				delete(sp.open, k)
			} else {
				sp.open[k] = q[:len(q)-1]
			}
			st.pair = req
			if f.Method == "" {
				f.Method = req.frame.Method
			}
		}
	}
}

// prefetcher is the goroutine type that reads and prepares steps ahead of
// the engine (decompressing, decoding records, classifying), so that a
// reply does not wait for the cassette: while the engine waits for the live
// side, the next steps are made ready. It queues at most prefetchSteps
// steps or prefetchBytes of frames (one step more when a single frame is
// larger); the engine takes the whole queue at once, so at most twice that
// is ahead of the held steps. It owns the stepper until it ends: ended is
// set at the end of the sequence (or once stop was asked), after which the
// stepper's err and cut are the engine's to read. It waits only on the
// cassette file and on the engine taking steps.
type prefetcher struct {
	sp *stepper

	mu      sync.Mutex
	cond    *sync.Cond // the queue changed, or stop was asked
	q       []*estep
	bytes   int  // frame bytes in q
	peak    int  // most frame bytes q held (tests)
	ended   bool // the goroutine is done with the stepper
	stopped bool // the engine wants no more steps
	nice    int  // niceness of the goroutine's thread (0: as it is)
}

const (
	prefetchSteps = 1024
	prefetchBytes = 1 << 20
	prefetchTake  = 32
)

func startPrefetch(sp *stepper, nice int) *prefetcher {
	pf := &prefetcher{sp: sp, nice: nice}
	pf.cond = sync.NewCond(&pf.mu)
	go pf.run()
	return pf
}

func (pf *prefetcher) run() {
	// At the niceness the caller asked (WithPrefetchNice), on a thread of
	// its own that ends with the goroutine (no UnlockOSThread): a niced
	// thread must not be reused. Best effort: where the system refuses, it
	// runs at normal priority.
	if pf.nice != 0 {
		runtime.LockOSThread()
		_ = thread.Nice(pf.nice)
	}
	defer func() {
		pf.mu.Lock()
		pf.ended = true
		pf.cond.Broadcast()
		pf.mu.Unlock()
	}()
	for k := 1; ; k++ {
		st := pf.sp.next()
		if st == nil {
			return
		}
		if k%8 == 0 {
			// Let the engine and the line reader run first if they
			// share this goroutine's P.
			runtime.Gosched()
		}
		n := 0
		if st.frame != nil {
			n = len(st.frame.Raw)
		}
		pf.mu.Lock()
		for (len(pf.q) >= prefetchSteps || pf.bytes >= prefetchBytes) && !pf.stopped {
			pf.cond.Wait()
		}
		if pf.stopped {
			pf.mu.Unlock()
			pf.sp.src.close()
			return
		}
		pf.q = append(pf.q, st)
		pf.bytes += n
		pf.peak = max(pf.peak, pf.bytes)
		if len(pf.q) == 1 {
			pf.cond.Broadcast() // the engine may be waiting for it
		}
		pf.mu.Unlock()
	}
}

// take waits for steps and returns up to prefetchTake of them (appended
// to buf), or buf unchanged at the end of the sequence. Taking a few at a
// time keeps the prefetcher topping the queue up in small steps instead of
// refilling it in one long burst.
func (pf *prefetcher) take(buf []*estep) []*estep {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	for len(pf.q) == 0 && !pf.ended {
		pf.cond.Wait()
	}
	n := min(len(pf.q), prefetchTake)
	for _, st := range pf.q[:n] {
		if st.frame != nil {
			pf.bytes -= len(st.frame.Raw)
		}
	}
	buf = append(buf, pf.q[:n]...)
	m := copy(pf.q, pf.q[n:])
	clear(pf.q[m:])
	pf.q = pf.q[:m]
	pf.cond.Broadcast()
	return buf
}

// halt ends the goroutine and waits for it.
func (pf *prefetcher) halt() {
	pf.mu.Lock()
	pf.stopped = true
	pf.cond.Broadcast()
	for !pf.ended {
		pf.cond.Wait()
	}
	pf.mu.Unlock()
}

func isCut(err error) bool {
	var te *cassette.TruncatedError
	return errors.As(err, &te)
}

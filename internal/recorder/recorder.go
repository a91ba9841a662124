package recorder

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/internal/portable"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

// Tuning. The numbers bound memory and reordering; none of them is a timer.
const (
	// batchBytes: a batch is flushed when the queue goes idle or when this
	// many payload bytes were written since the last flush.
	batchBytes = 64 << 10
	// queueLen: chunks waiting for the writer goroutine. With the tap's
	// 64 KiB reads this bounds queued data to about 512 KiB (the sink's
	// pipes hold up to 1 MiB per stream more, outside the process, in
	// kernel memory that is not the sink's RSS). 64 measured no faster on
	// bench/wire's agent mix than 32, and 32 held 2.7 MB of the sink's
	// 12 MB live heap at its peak.
	queueLen = 8
	// maxHoldChunks and maxHoldBytes bound the reorder hold: chunks that
	// arrived before a chunk with a smaller Seq. Past either bound the hold
	// gives up waiting for the missing Seq and writes what it holds in Seq
	// order; the late chunk, when it comes, is written where it arrives
	// (its T still tells when it was read).
	maxHoldChunks = 4096
	maxHoldBytes  = 4 << 20
	// maxValidateBytes: frames queued for the validator goroutine. Past it
	// the recorder stops validating (and says so in the cassette) rather
	// than slow the recording down. A single larger frame is accepted when
	// nothing else is queued. The validator kept within it on every
	// bench/wire session (no validation-stopped record at 4 MiB).
	maxValidateBytes = 4 << 20
	// valQLen: frames queued for the validator, the other bound beside
	// maxValidateBytes. The queue carries pointers to pooled jobs: a ring
	// of 4096 jobs by value was 608 KiB, all of it resident once 4096
	// frames had passed through it, however few were ever queued at once.
	valQLen = 4096
	// maxPending: remembered request ids per connection and direction, used
	// to give responses their request's method.
	maxPending = 4096
	// poolBuf: chunk copies up to this size come from pools by size class
	// (256 B to 64 KiB), so a queue of small chunks pins little memory.
	poolBuf = valBufMax
)

// Options configure a Recorder. Use the With* functions.
type Options struct {
	// Protocol forces the protocol by name ("acp", "mcp", ...); "" detects it
	// from the first frames.
	Protocol string
	// HeaderProtocol is true when the cassette header already names
	// Protocol, so no meta record is needed for it.
	HeaderProtocol bool
	// SchemaFile judges frames by the user's JSON Schema (protocol
	// "schema"); it overrides Protocol.
	SchemaFile string
	// NoValidate turns validation off (frames are still classified).
	NoValidate bool
	// Redact configures secret redaction (on by default).
	Redact RedactOptions
	// Lossy makes Observe drop a chunk, recording a gap, instead of blocking
	// when the recorder is behind.
	Lossy bool
	// Warn receives the recorder's warnings, one line each, without a
	// trailing newline. Each kind of trouble is reported at most once. The
	// default prints "rpctap: warning: MSG" on stderr.
	Warn func(msg string)
	// MaxLine overrides MaxLine (tests).
	MaxLine int
	// Framing is how stdin and stdout are framed: framing.Auto (the zero
	// value) decides per direction from its first bytes.
	Framing framing.Mode

	// onFail runs after the cassette failed and the warning went out (the
	// sink exits there, so that rpctap stops feeding it at once).
	onFail func()
	// yieldSmall (the sink process) gives the CPU up after each small
	// chunk the writer goroutine took (see Recorder.run).
	yieldSmall bool
	// validatorHook, in tests, replaces the protocol Session's Frame.
	validatorHook func(conn int, n uint64, dir protocol.Dir, frame []byte) []protocol.Violation
	// validatorWait, in tests, runs before the validator takes each job.
	validatorWait func()
}

// RedactOptions configure redaction.
type RedactOptions struct {
	Off  bool     // record secrets as they are
	Keys []string // extra JSON keys whose values are secrets
	// Portable, when set, also replaces the run's values (cwd, $HOME, temp
	// directory, session ids, UUIDs, timestamps, pids) with placeholders
	// (package portable), after the secrets. It is a redaction stage: the
	// live session is never altered.
	Portable *portable.Context `json:"portable,omitempty"`
}

// Option changes Options.
type Option func(*Options)

// WithProtocol forces the protocol; headerHasIt says whether the cassette
// header already names it (then no meta record is written).
func WithProtocol(name string, headerHasIt bool) Option {
	return func(o *Options) { o.Protocol, o.HeaderProtocol = name, headerHasIt }
}

// WithoutValidation keeps classification but skips validation.
func WithoutValidation() Option { return func(o *Options) { o.NoValidate = true } }

// WithRedact sets the redaction options.
func WithRedact(r RedactOptions) Option { return func(o *Options) { o.Redact = r } }

// WithSchema judges frames by the user's JSON Schema in path.
func WithSchema(path string) Option { return func(o *Options) { o.SchemaFile = path } }

// WithLossy prefers forwarding over recording: see Options.Lossy.
func WithLossy() Option { return func(o *Options) { o.Lossy = true } }

// WithWarn sets where warnings go.
func WithWarn(f func(string)) Option { return func(o *Options) { o.Warn = f } }

// WithOptions replaces all options at once.
func WithOptions(opts Options) Option { return func(o *Options) { *o = opts } }

// Recorder records what a tap forwarded into a cassette. It implements
// tap.Observer. Create it with New; it starts its goroutines at once (see the
// package documentation for them and for every way they can block).
type Recorder struct {
	w    Writer
	opts Options

	in      chan item                // Observe/Event -> writer goroutine
	results chan validationResult    // validator goroutine -> writer goroutine
	valQ    chan *valJob             // writer goroutine -> validator goroutine (see jobs)
	jobs    sync.Pool                // *valJob: boxes for valQ
	kick    chan struct{}            // lossy drops waiting in gaps
	hurry   chan struct{}            // the hold is waiting for a chunk: the sink's pipe readers cut their gathering pause short
	done    chan struct{}            // closed when the writer goroutine returned
	maxSeq  atomic.Uint64            // highest Seq handed to Observe
	failed  atomic.Bool              // the cassette Writer failed: drop everything
	valPend atomic.Int64             // bytes queued for the validator
	valCut  atomic.Uint64            // the record at which validation stopped (0: it did not)
	closing sync.Once                //
	closeEr error                    // Close's result, set by the writer goroutine
	warned  sync.Map                 // trouble kind -> struct{}: warn once each
	gapMu   sync.Mutex               //
	gaps    []item                   // lossy drops not yet queued
	pool    [valBufClasses]sync.Pool // *[]byte: chunk copies up to poolBuf, by size class (see getBuf)
	valBufs [valBufClasses]sync.Pool // *[]byte: frame copies for the validator, by size class
	valBig  chan []byte              // one spare copy buffer for frames over valBufMax
	valIdx  sync.Pool                // *jsonscan.Index: copies of frame indexes for the validator

	// Owned by the writer goroutine.
	next      uint64 // next Seq to write
	hold      holdHeap
	holdBytes int
	events    []item // events waiting for the chunks observed before them
	conns     map[int]*connState
	batch     int // payload bytes since the last flush
	rec       cassette.Record
	// hold detects the protocol from the first frames and holds their
	// validation jobs until it is decided (protocol.Holder, the step
	// `rpctap check` shares); nil once decided, or when forced.
	detect     *protocol.Holder[valJob]
	proto      protocol.Protocol
	protoName  string
	classifyOK bool          // false after Classify panicked
	rawInfo    protocol.Info // the last Classify answer, before the response-method fill-in
	rawInfoOK  bool          // rawInfo is for the line being written
	validating bool          // the validator goroutine is being fed
	valStopped bool
	// stdinClosed: the record of each connection's stdin-eof event, told to
	// its Session before the session-end checks (writer goroutine only).
	stdinClosed map[int]uint64
	redactor    redactor
	vidx        jsonscan.Index // value ends of the frame being written (cassette.VerbatimIndexed)
	vidxFor     []byte         // that frame
	vidxOK      bool           // vidx is valid for vidxFor
	lastT       int64          // T of the latest chunk written
	putT        int64          // latest T of any record written: violations found later take it, so T never runs backwards for them
	stats       Stats
}

// Stats are counts for tests and benchmarks.
type Stats struct {
	Records    uint64 // records written (not counting the header)
	Frames     uint64 // frame records
	Violations uint64 // violation records
	Gaps       uint64 // gap events (lossy drops)
	Late       uint64 // chunks written out of Seq order because the hold overflowed
	Flushes    uint64 // batches
}

type itemKind uint8

const (
	itemChunk itemKind = iota
	itemEvent
	itemGap // a chunk dropped in lossy mode: stands in for its Seq
	itemClose
)

type item struct {
	kind   itemKind
	conn   int
	stream tap.Stream
	seq    uint64
	t      int64
	data   []byte
	buf    *[]byte // pooled backing of data, returned after use
	ev     tap.Event
	after  uint64 // events: the highest Seq observed before the event
	bytes  int64  // gaps
	// boundary: the gap's bytes ended a message (their last byte was a
	// newline), so the stream resumes at a message (framing.Splitter.Lost).
	boundary bool
	// lost, for a chunk: bytes of its stream and connection dropped just
	// before it that no gap item stands for (the sink's overflowed gaps);
	// lostBoundary as boundary for them.
	lost         int64
	lostBoundary bool
}

type connState struct {
	split   [3]framing.Splitter
	lastT   [3]int64             // T of each stream's latest chunk
	partHdr [3]string            // header block of a Content-Length message being recorded in parts
	skipped [3]int64             // bytes passed over after a gap (the rest of the message it cut), not yet in a gap record
	pending [2]map[string]string // per direction: request id -> method, awaiting a response from the other side
	// mark is an intercept event that marks the next frame of its stream
	// (the tap tells it just before it forwards the frame): the frame is
	// written with icpt, the event right after it.
	mark [3]*tap.Event
}

type valJob struct {
	conn  int
	n     uint64
	dir   protocol.Dir
	frame []byte
	buf   *[]byte         // the pooled buffer holding frame (nil: not pooled)
	idx   *jsonscan.Index // where frame's values end (from cassette.VerbatimIndexed; pooled), or nil
	end   bool            // the connection closed: run its session-end checks
	// closed: the parent closed the child's stdin at record n (tells the
	// Session, see protocol.Session.ParentClosed).
	closed bool
	// intercepted: frame never reached the other side (an intercept
	// event's original, dropped or taken); see protocol.Session.Intercepted.
	intercepted bool
	valid       bool // frame is valid JSON (cassette.Verbatim said so): the Session skips its syntax pass
	// info is the protocol's Classify answer for frame (when hasInfo): the
	// Session does not classify again.
	info    protocol.Info
	hasInfo bool
	// hdr is the message's Content-Length header block ("" for a line);
	// partial says frame is only the last part of a message recorded in
	// parts (its length is then not checked against the header).
	hdr     string
	partial bool
}

type validationResult struct {
	v     []protocol.Violation
	panic string // the validator panicked with this
	done  bool   // the validator goroutine is finished
}

// New starts a Recorder writing to w, which has already written the cassette
// header. The Recorder owns w from now on and closes it in Close.
func New(w Writer, opts ...Option) *Recorder {
	r := &Recorder{
		w:          w,
		in:         make(chan item, queueLen),
		results:    make(chan validationResult, 16),
		valQ:       make(chan *valJob, valQLen),
		kick:       make(chan struct{}, 1),
		hurry:      make(chan struct{}, 3),
		valBig:     make(chan []byte, 1),
		done:       make(chan struct{}),
		next:       1,
		conns:      map[int]*connState{},
		classifyOK: true,
	}
	for _, o := range opts {
		o(&r.opts)
	}
	if r.opts.MaxLine <= 0 {
		r.opts.MaxLine = MaxLine
	}
	if r.opts.Warn == nil {
		r.opts.Warn = func(msg string) { fmt.Fprintf(os.Stderr, "rpctap: warning: %s\n", msg) }
	}
	r.redactor = newRedactor(r.opts.Redact)
	if r.opts.SchemaFile != "" {
		p, err := protocol.FromSchemaFile(r.opts.SchemaFile)
		if err != nil {
			r.warn("protocol", fmt.Sprintf("%v; frames are recorded unclassified", err))
		} else {
			r.setProtocol(p)
		}
	} else if r.opts.Protocol != "" {
		p, err := lookupProtocol(r.opts.Protocol)
		if err != nil {
			r.warn("protocol", fmt.Sprintf("%v; frames are recorded unclassified", err))
		} else {
			r.setProtocol(p)
		}
	} else {
		r.detect = protocol.NewHolder[valJob]()
	}
	go r.validate()
	go r.run()
	return r
}

// Observe queues a copy of c for recording. It blocks while the queue is full
// (lossless), or drops the chunk and records a gap (lossy). It never fails.
// Seq numbers must start at 1 and leave no holes: the recorder writes chunks
// in Seq order and holds a chunk until every smaller Seq has arrived (see
// maxHoldChunks for the bound).
func (r *Recorder) Observe(c tap.Chunk) {
	if r.failed.Load() {
		return
	}
	for {
		m := r.maxSeq.Load()
		if c.Seq <= m || r.maxSeq.CompareAndSwap(m, c.Seq) {
			break
		}
	}
	it := item{kind: itemChunk, conn: c.Conn, stream: c.Stream, seq: c.Seq, t: c.T}
	if len(c.Data) <= poolBuf {
		it.buf = r.getBuf(len(c.Data))
		it.data = (*it.buf)[:copy(*it.buf, c.Data)]
	} else {
		it.data = append([]byte(nil), c.Data...)
	}
	r.enqueue(it)
}

// observeOwned is Observe for a chunk whose data the caller hands over
// (the sink reads straight into pooled buffers).
func (r *Recorder) observeOwned(it item) {
	if r.failed.Load() {
		r.release(&it)
		return
	}
	for {
		m := r.maxSeq.Load()
		if it.seq <= m || r.maxSeq.CompareAndSwap(m, it.seq) {
			break
		}
	}
	r.enqueue(it)
}

func (r *Recorder) enqueue(it item) {
	if r.opts.Lossy && it.kind == itemChunk {
		select {
		case r.in <- it:
		case <-r.done:
			r.release(&it)
		default:
			r.dropChunk(it)
		}
		return
	}
	select {
	case r.in <- it:
	case <-r.done:
		r.release(&it)
	}
}

// dropChunk records that a chunk was forwarded but not recorded (lossy).
func (r *Recorder) dropChunk(it item) {
	g := item{kind: itemGap, conn: it.conn, stream: it.stream, seq: it.seq, t: it.t, bytes: int64(len(it.data)),
		boundary: len(it.data) > 0 && it.data[len(it.data)-1] == '\n'}
	r.release(&it)
	r.gapMu.Lock()
	r.gaps = append(r.gaps, g)
	r.gapMu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Event queues a process or connection event. It is written after every
// chunk that was handed to Observe before it, and after every chunk the tap
// read before it (e.Seq), even if that chunk reaches Observe later (the
// forward-then-observe mode).
func (r *Recorder) Event(e tap.Event) {
	if r.failed.Load() {
		return
	}
	r.enqueueEvent(e, max(e.Seq, r.maxSeq.Load()))
}

func (r *Recorder) enqueueEvent(e tap.Event, after uint64) {
	r.enqueueItem(item{kind: itemEvent, ev: e, after: after, t: e.T, conn: e.Conn})
}

// enqueueItem queues an event item (waiting for room, never dropped).
func (r *Recorder) enqueueItem(it item) {
	select {
	case r.in <- it:
	case <-r.done:
	}
}

// Close writes what is held, the last incomplete lines, the session-end
// violations and the end record, and closes the cassette Writer. It returns
// the Writer's error, if any (after a failure was already warned about, it
// returns nil: the session is not to be failed for it).
func (r *Recorder) Close() error {
	r.closing.Do(func() {
		select {
		case r.in <- item{kind: itemClose}:
		case <-r.done:
		}
		<-r.done
	})
	return r.closeEr
}

// Stats returns the recorder's counts; call it after Close.
func (r *Recorder) Stats() Stats {
	<-r.done
	return r.stats
}

// Failed reports whether recording stopped because the cassette failed.
func (r *Recorder) Failed() bool { return r.failed.Load() }

func (r *Recorder) release(it *item) {
	if it.buf != nil {
		r.putBuf(it.buf)
		it.buf, it.data = nil, nil
	}
}

// warn reports a trouble once per kind.
func (r *Recorder) warn(kind, msg string) {
	if _, dup := r.warned.LoadOrStore(kind, struct{}{}); !dup {
		r.opts.Warn(msg)
	}
}

// yieldBelow: in the sink, after each chunk smaller than this the writer
// goroutine yields the CPU (sched_yield). A session of small frames then
// interleaves the sink's work with the parent, the child and the tap instead
// of holding a core for a whole batch while one of them waits to be
// scheduled. Measured with bench/wire, A/B in one run (7 repetitions, three
// runs): 200-byte round trips back to back, record's p99 274 -> 104, 120 -> 76
// and 133 -> 112 us, p99.9 600 -> 184, 465 -> 173 and 561 -> 164 us;
// interleaved round trips and the agent mix and stream's throughput within
// the noise (mix 103 -> 103 and 101 -> 100 MB/s). Bulk transfers come in large
// chunks and do not yield (yielding after every chunk cost up to 9 % on the
// stream in one run).
const yieldBelow = 16 << 10

// run is the writer goroutine.
func (r *Recorder) run() {
	defer close(r.done)
	if r.proto != nil && !r.opts.HeaderProtocol {
		// A forced protocol the header does not name: say it first.
		r.newRecord(0, cassette.KindMeta, 0)
		r.rec.Protocol = r.protoName
		r.put()
		r.flush()
	}
	for {
		select {
		case it := <-r.in:
			if r.takeIn(it) {
				return
			}
		case res := <-r.results:
			r.takeResult(res)
		case <-r.kick:
		}
		// Drain what is already queued without blocking, then flush: the
		// batch ends when the queue goes idle.
	drain:
		for {
			r.takeGaps()
			select {
			case it := <-r.in:
				if r.takeIn(it) {
					return
				}
			case res := <-r.results:
				r.takeResult(res)
			default:
				break drain
			}
			if r.batch >= batchBytes {
				r.flush()
			}
		}
		r.flush()
	}
}

// takeIn is take for an item from the queue, yielding the CPU after a small
// chunk in the sink (see yieldBelow).
func (r *Recorder) takeIn(it item) bool {
	small := r.opts.yieldSmall && it.kind == itemChunk && len(it.data) < yieldBelow
	if r.take(it) {
		return true
	}
	if small {
		yieldCPU()
	}
	return false
}

// take handles one queued item; it returns true after Close finished.
func (r *Recorder) take(it item) bool {
	switch it.kind {
	case itemClose:
		r.finish()
		return true
	case itemEvent:
		if r.failed.Load() {
			return false
		}
		r.events = append(r.events, it)
		r.releaseHeld()
	default: // chunk or gap
		if r.failed.Load() {
			r.release(&it)
			return false
		}
		if it.seq < r.next {
			// Late: the hold gave up on it already.
			r.stats.Late++
			r.write(&it)
			return false
		}
		if it.seq == r.next && len(r.hold) == 0 {
			// In order, nothing held: no detour through the hold.
			for r.releaseEvents(false) {
			}
			r.next++
			r.write(&it)
			r.releaseHeld()
			return false
		}
		r.hold.push(it)
		r.holdBytes += len(it.data)
		r.releaseHeld()
		if len(r.hold) > 0 {
			r.hurryReaders()
		}
	}
	return false
}

// hurryReaders wakes the sink's pipe readers from their gathering pause
// (drainReader.pause): the chunk the hold waits for is in the pipe of one
// of them, and every chunk held meanwhile is memory (on the agent mix, a
// 900 KB prompt read while the other pipe's reader slept held up to 4 MB).
// A token left over makes one later pause short, nothing more.
func (r *Recorder) hurryReaders() {
	for range cap(r.hurry) {
		select {
		case r.hurry <- struct{}{}:
		default:
			return
		}
	}
}

func (r *Recorder) takeGaps() {
	r.gapMu.Lock()
	g := r.gaps
	r.gaps = nil
	r.gapMu.Unlock()
	for _, it := range g {
		r.take(it)
	}
}

// releaseHeld writes held chunks and events as far as Seq order allows.
func (r *Recorder) releaseHeld() {
	for {
		if r.releaseEvents(false) {
			continue
		}
		if len(r.hold) == 0 {
			return
		}
		top := r.hold[0]
		switch {
		case top.seq <= r.next:
		case len(r.hold) > maxHoldChunks || r.holdBytes > maxHoldBytes:
			r.next = top.seq // give up waiting for the missing Seq
		default:
			return
		}
		it := r.hold.pop()
		r.holdBytes -= len(it.data)
		if it.seq == r.next {
			r.next++
		}
		r.write(&it)
	}
}

// releaseEvents writes the first waiting event if every chunk observed before
// it was written (or all, when force). It reports whether it wrote one.
func (r *Recorder) releaseEvents(force bool) bool {
	if len(r.events) == 0 {
		return false
	}
	e := r.events[0]
	if !force && e.after >= r.next {
		return false
	}
	r.events = r.events[1:]
	r.write(&e)
	return true
}

// finish runs in the writer goroutine when Close is called.
func (r *Recorder) finish() {
	r.takeGaps()
	for len(r.hold) > 0 {
		it := r.hold.pop()
		r.holdBytes -= len(it.data)
		for r.releaseEvents(false) {
		}
		if it.seq >= r.next {
			r.next = it.seq + 1
		}
		r.write(&it)
	}
	for r.releaseEvents(true) {
	}
	for conn, cs := range r.conns {
		r.endStreams(conn, cs)
	}
	if r.detect != nil && r.proto == nil && r.stats.Frames > 0 {
		held := r.detect.Take()
		if r.detected(r.detect.Result(), r.lastT) {
			for _, j := range held {
				r.queueValidation(j)
			}
		}
	}
	for conn, n := range r.stdinClosed {
		r.queueValidation(valJob{conn: conn, n: n, closed: true})
	}
	// Let the validator finish: it sends the session-end violations and then
	// done. The writer keeps reading results meanwhile, so the validator
	// never blocks for good.
	close(r.valQ)
	for res := range r.results {
		r.takeResult(res)
		if res.done {
			break
		}
	}
	if r.failed.Load() {
		return
	}
	if err := r.w.Close(); err != nil {
		r.fail(err)
		return
	}
}

// endStreams writes the incomplete last lines of a connection's streams.
func (r *Recorder) endStreams(conn int, cs *connState) {
	for s := range cs.split {
		stream := tap.Stream(s)
		r.skippedGap(conn, cs, stream, cs.lastT[stream])
		cs.split[s].End(func(h, p []byte, eol string, part bool) {
			r.line(conn, stream, cs.lastT[stream], h, p, eol, part)
		})
		if m := cs.mark[s]; m != nil {
			// The marked frame never came (its forwarding failed).
			cs.mark[s] = nil
			r.writeIntercept(*m, cs, 0)
		}
	}
}

// write turns one released item into records.
func (r *Recorder) write(it *item) {
	defer r.release(it)
	if r.failed.Load() {
		return
	}
	switch it.kind {
	case itemChunk:
		cs := r.conn(it.conn)
		r.lastT = it.t
		t, conn, stream := it.t, it.conn, it.stream
		if it.lost > 0 {
			r.gap(conn, stream, t, it.lost, it.lostBoundary)
		}
		cs.lastT[stream%3] = it.t
		sp := &cs.split[stream%3]
		data := it.data
		if sp.Resyncing() {
			// The rest of a message a gap cut: counted, never a frame.
			n := sp.Skip(data)
			cs.skipped[stream%3] += int64(n)
			data = data[n:]
			if !sp.Resyncing() {
				r.skippedGap(conn, cs, stream, t)
			}
		}
		if len(data) > 0 && data[len(data)-1] != '\n' && sp.Pending() == 0 {
			// A line goes on past this chunk: the splitter will hold
			// it; let it start in the large buffer the validator gave
			// back, if there is one (see line: big lines travel from
			// the splitter to the validator and back without a copy).
			select {
			case b := <-r.valBig:
				if !sp.Offer(b) {
					r.putBig(b)
				}
			default:
			}
		}
		sp.Feed(data, func(h, p []byte, eol string, part bool) {
			r.line(conn, stream, t, h, p, eol, part)
		})
	case itemGap:
		r.gap(it.conn, it.stream, it.t, it.bytes, it.boundary)
	case itemEvent:
		r.event(it)
	}
}

// gap records that n bytes of a stream were forwarded but not recorded. The
// splitter drops the start of the message they cut (counted in the same gap
// record) and passes over its rest after them (skippedGap), so no frame
// joins bytes from both sides of the gap.
func (r *Recorder) gap(conn int, stream tap.Stream, t int64, n int64, boundary bool) {
	cs := r.conn(conn)
	dropped := cs.split[stream%3].Lost(n, boundary, func(h, p []byte, eol string, part bool) {
		r.line(conn, stream, cs.lastT[stream%3], h, p, eol, part)
	})
	n += int64(dropped) + cs.skipped[stream%3]
	cs.skipped[stream%3] = 0
	r.stats.Gaps++
	r.newRecord(t, cassette.KindEvent, conn)
	r.rec.Ev = cassette.EventGap
	r.rec.D = dirOf(stream)
	r.rec.Bytes = n
	r.put()
}

// skippedGap records the bytes the splitter passed over after a gap (the
// rest of the message the gap cut) as a gap of their own, at t, the time
// the bytes that ended them were read.
func (r *Recorder) skippedGap(conn int, cs *connState, stream tap.Stream, t int64) {
	n := cs.skipped[stream%3]
	if n == 0 {
		return
	}
	cs.skipped[stream%3] = 0
	r.stats.Gaps++
	r.newRecord(t, cassette.KindEvent, conn)
	r.rec.Ev = cassette.EventGap
	r.rec.D = dirOf(stream)
	r.rec.Bytes = n
	r.put()
}

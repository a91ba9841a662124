// Package replay turns a cassette into a stand-in for one side of a session.
//
// A fake child (NewChild, RunChild) reads what a live parent writes and
// answers with the frames the real child sent during the recording; a fake
// parent (RunParent, used by `rpctap verify`) drives a live child with the
// recorded parent frames and compares what the child says. Both engines work
// over io.Reader and io.Writer and know nothing about processes.
//
// # The causal model
//
// A cassette is a causal sequence. A recorded frame of the replayed side is
// due once every frame the live side sent before it (in the recording) has
// arrived and matched; it is then sent after its recorded delay divided by
// the speed (0 sends at once). Notifications, events and requests the
// replayed side initiated (ACP session/request_permission, fs/*, MCP
// sampling/createMessage, roots/list) replay like any other frame, and the
// live side's answers to them are matched by the id the replay sent.
//
// # Matching
//
// An arriving frame matches the earliest unmatched recorded frame, within
// the window, that the Matcher accepts. The default matcher wants the same
// kind and method/type and bodies equal after the ignore rules; ids are not
// compared (they are mapped instead: a response carries the id the live
// peer used). See docs/replay.md for the ignore syntax and the defaults of
// each protocol.
//
// # Deadlocks
//
// The engine owns one goroutine (engineLoop) that writes to the live peer
// and one (lineReader) that reads from it. Writes block like writes to a
// pipe: a live peer that neither reads what the replay writes nor lets the
// replay read what it writes (both pipes full) deadlocks, exactly as it
// would with the real peer. The reader hands lines to the engine through a
// bounded queue (readQueue lines); beyond that the reader stops reading, so
// the peer's writes block too. A fake child waits for a missing parent frame
// forever (as the real child would); cancel the context, close Stdin or call
// Close to end it. A fake parent waits for a missing child frame at most
// the timeout.
//
// A third goroutine (prefetcher) reads the cassette ahead of the engine
// during a run (see Stream and docs/replay.md, "Memory"); it waits only on
// the file and on the engine taking steps from its bounded queue, and ends
// with the run.
//
// Other places that wait: a Child's Stderr is buffered without bound and
// never blocks the engine; Child.Signal waits until the engine takes the
// signal or the fake child has ended; a Matcher runs on the engine
// goroutine, so one that blocks stalls the replay. RunChild's reader may stay
// blocked in Read on its io.Reader after RunChild returned, until that reader
// is closed or written to (the CLI exits; the Child API closes its pipe).
package replay

import (
	"errors"
	"io"
	"time"
)

// Option configures a replay (go-vcr style).
type Option func(*options)

type options struct {
	speed         float64
	ignores       []string
	noDefaults    bool
	strict        bool
	matcher       Matcher
	window        int
	conn          int
	connSet       bool
	protocol      string
	report        io.Writer
	timeout       time.Duration
	prog          string
	customMatcher bool
	bindings      map[string]string
	faults        []Fault
	prefetchNice  int
}

// defaults returns the default options with opts applied in order.
func defaults(opts ...Option) *options {
	o := &options{speed: 1, window: 16, timeout: 5 * time.Second, prog: "replay", matcher: DefaultMatcher}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// WithBinding fills the placeholder ph of a portable cassette
// ("${RPCTAP_CWD}", "${RPCTAP_SESSION_1}", ...; see rpctap normalize) with
// value, instead of this process's value (cwd, home, temp dir, pid), what
// the live side says, or a fresh one. Use it to pin a made-up value (a
// session id) that a test prints or compares.
func WithBinding(ph, value string) Option {
	return func(o *options) {
		if o.bindings == nil {
			o.bindings = map[string]string{}
		}
		o.bindings[ph] = value
	}
}

// WithPrefetchNice runs the goroutine that reads the cassette ahead of the
// replay on its own OS thread at niceness n (Linux; best effort): decoding
// takes a millisecond or two of CPU at a time, and at a low priority it runs
// when the replay and its peer leave a core idle instead of taking turns
// with them. 0 (the default) leaves the thread as it is. `rpctap replay`
// asks 19.
func WithPrefetchNice(n int) Option { return func(o *options) { o.prefetchNice = n } }

// WithSpeed sets the pacing: 1 (the default) keeps the recorded delays, 2
// halves them, 0 sends every frame as soon as causality allows.
func WithSpeed(speed float64) Option { return func(o *options) { o.speed = max(speed, 0) } }

// WithIgnore adds ignore patterns: JSON pointers into a frame ("/params/cwd")
// whose segments may be "*" (one key or index) or "**" (any depth):
// "/params/**/timestamp". Ignored fields are not compared; their live values
// are substituted for the recorded ones in later replayed frames.
func WithIgnore(patterns ...string) Option {
	return func(o *options) { o.ignores = append(o.ignores, patterns...) }
}

// WithoutDefaultIgnores drops the protocol's default ignore patterns.
func WithoutDefaultIgnores() Option { return func(o *options) { o.noDefaults = true } }

// WithStrict makes any divergence an error from Wait / RunChild / RunParent
// (ErrDiverged); the CLI turns it into a non-zero exit.
func WithStrict(strict bool) Option { return func(o *options) { o.strict = strict } }

// WithMatcher replaces the default matcher.
func WithMatcher(m Matcher) Option {
	return func(o *options) {
		if m != nil {
			o.matcher = m
			o.customMatcher = true
		}
	}
}

// WithWindow sets how many unmatched recorded frames, from the earliest, an
// arriving frame is compared with (default 16): concurrent requests may
// arrive in another order than recorded. 1 forces recorded order.
func WithWindow(n int) Option { return func(o *options) { o.window = max(n, 1) } }

// WithConn picks the connection of a socket-mode cassette.
func WithConn(n int) Option { return func(o *options) { o.conn, o.connSet = n, true } }

// WithProtocol states the protocol; it must agree with the cassette's own
// (a JSON-RPC cassette of unknown protocol may be read as acp, mcp, ...).
func WithProtocol(name string) Option { return func(o *options) { o.protocol = name } }

// WithReport writes the human report (first divergence in full, later ones
// on one line, frames never sent at the end) to w as it happens.
func WithReport(w io.Writer) Option { return func(o *options) { o.report = w } }

// WithTimeout bounds how long a fake parent waits for a recorded child frame
// before it sends the next parent frame anyway (default 5s).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithName sets the program name used in reports ("rpctap replay").
func WithName(prog string) Option { return func(o *options) { o.prog = prog } }

// ErrDiverged is returned (wrapped) in strict mode when the live session
// left the recording.
var ErrDiverged = errors.New("live session diverged from the cassette")

// Result is what a replay found.
type Result struct {
	Cassette string
	Protocol string
	// Exit is the recorded exit of the child (nil when the cassette has
	// none, as after a SIGKILL). A fake child ends with it.
	Exit        *Exit
	Divergences []Divergence
	// Unlisted counts recorded frames the live side never sent beyond the
	// first 1000 listed as Missing divergences (a long session abandoned
	// early); they count as divergences too.
	Unlisted int
	Matched  int // live frames matched to recorded ones
	// Chatter counts live notifications the protocol marks as chatter
	// (protocol.Wire.Chatter: log lines, progress) that matched no
	// recorded frame; they are not divergences.
	Chatter int
	Sent    int // recorded frames sent to the live side
	// Faults lists the faults injected (WithFaults), one line each.
	Faults []string
}

// Diverged reports whether anything differed.
func (r *Result) Diverged() bool { return r != nil && (len(r.Divergences) > 0 || r.Unlisted > 0) }

// CheckIgnore reports whether the ignore patterns are well formed.
func CheckIgnore(patterns ...string) error {
	_, err := compileIgnores(patterns)
	return err
}

// Check reports whether rec can be replayed with opts (frames present, the
// connection exists, the protocol agrees, the ignore patterns are well
// formed) and returns the protocol the replay will use.
func Check(rec *Recording, opts ...Option) (string, error) {
	o := defaults(opts...)
	e, err := newEngine(rec, roleParent, o)
	if err != nil {
		return "", err
	}
	return e.d.name, nil
}

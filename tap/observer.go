// Package tap stands between a parent and a child process (or a Unix socket
// client and its server) and forwards their bytes unchanged, handing a copy of
// every chunk to an Observer after it was forwarded.
//
// Cmd runs a child behind the tap (stdio mode), Proxy serves a Unix socket
// (socket mode). Both forward each read synchronously, one chunk of at most
// ChunkSize in flight per stream, so backpressure passes through and memory
// stays flat; neither splits lines: framing is the observer's business.
// Every chunk carries a global Seq and a monotonic time T taken when its
// read returned, before it was forwarded, so a reply always sorts after the
// frame that provoked it.
//
// The observer sees a chunk right after it was forwarded, or right before
// with ObserveFirst, which `rpctap record` uses with its crash-safe sink
// process: then a parent that SIGKILLs rpctap the instant it reads a reply
// cannot leave that reply out of the recording.
package tap

// Stream names one byte stream the tap forwards.
type Stream uint8

const (
	Stdin  Stream = iota // parent -> child
	Stdout               // child -> parent
	Stderr               // child's stderr -> our stderr
)

func (s Stream) String() string {
	switch s {
	case Stdin:
		return "in"
	case Stdout:
		return "out"
	default:
		return "err"
	}
}

// Chunk is the result of one read on a stream, handed over right after the
// bytes were forwarded (just before, with Cmd.ObserveFirst).
type Chunk struct {
	Conn   int    // socket mode: connection number (1, 2, ...); 0 in stdio mode
	Stream Stream //
	Seq    uint64 // global read order across all streams and connections
	T      int64  // ns since the tap started, taken when the read returned, before forwarding
	Data   []byte // valid only until Observe returns; an observer that keeps it copies it; never modified by the observer (with ObserveFirst it is then forwarded)
}

// Event is a process or connection event. Kind uses the cassette.Event*
// names (start, stdin-eof, signal, exit, gap, conn-open, conn-close, warning).
type Event struct {
	T      int64  // ns since the tap started; never less than the T of a chunk read before the event
	Seq    uint64 // the Seq of the last chunk read before the event (0: none): its place in the read order
	Conn   int
	Kind   string
	Argv   []string
	Cwd    string
	PID    int
	Exit   *int   // exit: the child's exit code when it exited normally
	Signal string // signal: the forwarded signal; exit: the signal the child died of
	Stream Stream // gap: which stream lost bytes
	Bytes  int64  // gap: how many
	Msg    string // warning; signal: why it was not relayed, if it was not

	// intercept (`rpctap record --intercept`, --rewrite): what became of a
	// frame of Stream and why.
	Action     string // forward, edit, drop, timeout, release, inject, take, rewrite
	HeldNs     int64  // how long the frame was held (0: not held)
	Breakpoint string // the breakpoint (or rule) that held or changed it
	Original   []byte // the frame's payload as the other side sent it, when something else (or nothing) was sent instead
}

// Observer receives what the tap forwarded. The tap calls Observe from one
// pump goroutine per stream, so calls for different streams (and
// connections) may be concurrent; calls for one stream are sequential and in
// increasing Seq order. Seq and T order chunks across streams: a chunk read in
// reply to another always has the larger Seq. Event may be called
// concurrently with Observe.
//
// Observe may block: that is how a recorder that cannot keep up slows the
// forwarding (lossless, like tee). It must never fail the session: an
// observer in trouble degrades to forwarding only and says so once. (An
// Observe, Event or Close that panics is switched off by the tap, with one
// warning; the session goes on.) An Observe that never returns stalls its
// stream for good.
type Observer interface {
	Observe(c Chunk)
	Event(e Event)
	// Close is called once, after the child exited and its output was
	// drained (or the grace ran out), and after every Observe and Event
	// returned; also when Start failed. It returns when the recording is
	// finalized.
	Close() error
}

// Package recorder turns the chunks the tap forwarded into cassette records.
//
// A chunk is whatever one read on a stream returned; the recorder cuts each
// (connection, stream) into messages with package framing (lines, or
// Content-Length messages; see MaxLine for the longest it holds whole), classifies every frame with the session's protocol (detected from
// the first frames, or forced), redacts secrets, and hands the records to a
// cassette Writer in the order the tap read their bytes. Validation runs on
// its own goroutine and its findings become violation records after the
// frames they are about.
//
// Two ways to use it:
//
//   - In-process (the Go API, tests): New(w, options...) returns a *Recorder,
//     which implements tap.Observer.
//   - Crash-safe (rpctap record): StartSink starts `rpctap __sink`, a child
//     process that runs a Recorder, and returns a *PipeObserver that writes
//     each forwarded chunk to the sink through pipes with one write system
//     call. If rpctap is killed with SIGKILL, the sink still reads everything
//     already written to the pipes and finalizes the cassette. See pipe.go
//     for the wire format.
//
// # Goroutines and every way they can block
//
// A Recorder runs two goroutines:
//
//   - the writer goroutine (Recorder.run) owns the message splitters, the
//     reorder hold, classification, redaction and the cassette Writer. It
//     blocks only on its queue (idle) and inside the Writer (a slow or hung
//     disk);
//   - the validator goroutine (Recorder.validate) owns the protocol Sessions
//     (one per connection) and sends violations back to the writer; it blocks
//     on its job queue and on the results channel.
//
// The writer never blocks on the validator (it stops validating, once and
// with a note in the cassette, when the validator falls more than
// maxValidateBytes behind), and it reads results in every pass of its loop,
// so validator -> writer is the only blocking edge and no cycle exists. At
// Close the writer closes the job queue and reads results until the
// validator says it is done. Observe blocks only while the writer's queue is
// full, that is while the cassette Writer is slower than the traffic
// (lossless backpressure, like tee); a Writer stuck forever in a write system
// call (a hung network file system) therefore stalls forwarding too, as tee
// would. Once the cassette failed, the writer keeps draining its queue and
// Observe returns at once, so no pump stays blocked. Nothing waits on a
// timer; a batch is flushed as soon as the queue is empty.
//
// The main process (PipeObserver) adds:
//
//   - the status reader goroutine (sinkProc.readStatus): reads the sink's
//     status pipe to its end and prints the one warning; it blocks only on
//     that read, and ends when the sink exits;
//   - in lossy mode, a pipe tail writer goroutine (wirePipe.writeTail) per
//     partly written message: it waits for room in the pipe holding no lock,
//     then takes the pipe's mutex only to clear its tail.
//
// Observe holds one pipe's mutex while it writes (waiting for room in
// lossless mode); Event holds the ctl pipe's; a lossy gap is queued under
// the data pipe's mutex, then the gap mutex (addGap), and sent under the
// gap mutex, then the ctl pipe's (sendGaps), always in that order; the ctl
// pipe never waits for room while a data pipe's mutex is held (lossy writes
// do not wait), and no path takes two data pipes' mutexes.
//
// The sink process (SinkMain) runs a Recorder plus four pipe reader
// goroutines (sinkReader), one per pipe, which block on their pipe (idle) or
// on the Recorder's queue (backpressure that reaches rpctap through the full
// pipe). A chunk reader also waits, in an eventGate, for the ctl reader to
// queue the events written before that chunk; the ctl reader never waits for
// the chunk readers and opens the gate for good when ctl ends, so this wait
// closes no cycle. It exits when all four pipes reached their end, which happens when
// rpctap closes them or dies, and after the Recorder's Close returned.
package recorder

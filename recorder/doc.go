// Package recorder turns the chunks the tap forwarded into cassette records.
//
// A chunk is whatever one read on a stream returned; the recorder cuts each
// (connection, stream) into lines (see MaxLine for the longest it holds
// whole), classifies every frame with the session's protocol (detected from
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
// # Goroutines
//
// A Recorder runs two goroutines:
//
//   - the writer goroutine (Recorder.run) owns the line splitters, the
//     reorder hold, classification, redaction and the cassette Writer;
//   - the validator goroutine (Recorder.validate) owns the protocol Session
//     (one per connection) and sends violations back to the writer.
//
// The writer never blocks on the validator (it stops validating, once and
// with a note in the cassette, when the validator falls more than
// maxValidateBytes behind), so the only blocking edge between them is
// validator -> writer, which cannot close a cycle. Observe blocks only while
// the writer's queue is full, that is while the cassette Writer is slower than
// the traffic (lossless backpressure, like tee); a writer stuck forever in a
// write system call (a hung network file system) therefore stalls forwarding
// too, as tee would. Nothing waits on a timer; a batch is flushed as soon as
// the queue is empty.
package recorder

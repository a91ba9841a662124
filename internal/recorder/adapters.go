package recorder

// Adapters to the packages the recorder depends on that are written in
// parallel (protocol detection, redaction, the cassette writer). Each is one
// small function so that switching to the final API touches one place.

import (
	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
)

// Writer is what the recorder needs from a cassette writer. *cassette.Writer
// implements it; tests pass writers that fail.
//
// Append numbers r (sets r.N: the header is 0, then 1, 2, ...) and encodes
// it; it must not keep r (or the slices it points to) after it returns.
// Flush must push everything appended so far to the operating system (one
// batch: the crash-safety point). Close writes the end record and closes the
// file.
type Writer interface {
	Append(r *cassette.Record) error
	Flush() error
	Close() error
}

// detector guesses the protocol from the first frames.
type detector interface {
	// add looks at one more frame and returns the protocol's name once it is
	// decided.
	add(dir protocol.Dir, frame []byte) (name string, done bool)
	// result is the best guess when the session ends before add decided.
	result() string
}

type protoDetector struct{ d *protocol.Detector }

func newDetector() detector { return protoDetector{protocol.NewDetector()} }

func (p protoDetector) add(dir protocol.Dir, frame []byte) (string, bool) { return p.d.Add(dir, frame) }
func (p protoDetector) result() string                                    { return p.d.Result() }

// lookupProtocol returns the rules for a protocol name.
func lookupProtocol(name string) (protocol.Protocol, error) { return protocol.Lookup(name) }

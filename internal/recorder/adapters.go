package recorder

// Adapters to the packages the recorder depends on (redaction, the cassette
// writer, the protocol registry). Each is one
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

// lookupProtocol returns the rules for a protocol name.
func lookupProtocol(name string) (protocol.Protocol, error) { return protocol.Lookup(name) }

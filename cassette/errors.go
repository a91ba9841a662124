package cassette

import (
	"errors"
	"fmt"
)

// ErrNotCassette is returned for a file that does not start with the rpctap
// signature frame: another program's file, or plain zstd.
var ErrNotCassette = errors.New("not an rpctap cassette")

// ErrEmpty is returned for an empty file. Create writes the signature and
// the header before it returns, so even a session killed at once leaves a
// non-empty cassette; an empty file is not one.
var ErrEmpty = errors.New("empty file, not an rpctap cassette")

// TruncatedError reports that a cassette ends without its end record: the
// recorder was killed (kill -9 is a normal way for a session to end), the
// disk filled up, or the file is still being written. Everything before the
// cut was returned; it is a warning, not a failure.
type TruncatedError struct {
	// Records is how many complete records were read, the header included;
	// the last one is number Records-1.
	Records uint64
	// Offset is where the complete data ends in the file.
	Offset int64
	// Torn is true when the file ends inside a zstd frame (the last write
	// was cut or is still in progress), false when it ends between frames.
	Torn bool
}

func (e *TruncatedError) Error() string {
	if e.Records == 0 {
		return "truncated before the header record"
	}
	return fmt.Sprintf("truncated after record %d", e.Records-1)
}

// CorruptError reports data that cannot be a cassette written by rpctap:
// a damaged block, a bad checksum, a line that is not a record.
type CorruptError struct {
	Offset int64  // file offset of the zstd frame (or structure) at fault
	After  uint64 // records read before the fault (the last good one is After-1)
	Reason string
}

func (e *CorruptError) Error() string {
	if e.After == 0 {
		return fmt.Sprintf("corrupt cassette at byte %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("corrupt cassette at byte %d, after record %d: %s", e.Offset, e.After-1, e.Reason)
}

// VersionError reports a cassette written in a newer major format version.
type VersionError struct {
	Major, Minor int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("cassette format %d.%d is newer than this rpctap understands (%d.x)", e.Major, e.Minor, VersionMajor)
}

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

// DamageError reports a damaged range of a cassette that the streaming
// reader skipped: a zstd frame that does not decode (a flipped bit, a bad
// checksum), an index frame that does not validate, or lines that are not
// records. Reader.Next returns it once per range, before the first record
// after the range (or before the error that ends the file), and then goes
// on: it is not sticky. The records before and after the range are
// returned as usual; a caller that shows or checks records reports it and
// calls Next again, one that cannot work with a hole stops.
//
// The reader finds where to go on by looking, from the byte after the
// damaged one, for the first valid index frame (its CRC and its own offset
// check out: it says how many records the frame before it held) or the
// first zstd frame that decodes and starts with the next record number or
// a later one. Consecutive damaged frames make one range.
type DamageError struct {
	Offset int64  // file offset of the first damaged frame (or structure)
	End    int64  // where the damage ends: the offset of the first good frame after it
	First  uint64 // number of the first record lost (the one expected at Offset)
	Lost   uint64 // records lost: the next record read is number First+Lost
	// ToEnd is true when nothing after Offset could be read and the end
	// record was not seen: every record from First on is lost, and how
	// many there were is unknown (Lost is 0).
	ToEnd  bool
	Reason string // what was wrong with the first damaged frame
}

func (e *DamageError) Error() string {
	var lost string
	switch {
	case e.ToEnd:
		lost = fmt.Sprintf("every record from %d on is lost (the damage runs to the end of the file)", e.First)
	case e.Lost == 0:
		lost = "no record lost"
	case e.Lost == 1:
		lost = fmt.Sprintf("1 record lost (%d)", e.First)
	default:
		lost = fmt.Sprintf("%d records lost (%d-%d)", e.Lost, e.First, e.First+e.Lost-1)
	}
	return fmt.Sprintf("damaged cassette: bytes %d-%d unreadable (%s): %s", e.Offset, e.End-1, e.Reason, lost)
}

// Unwrap makes a DamageError also a *CorruptError for callers written
// before the reader could go on past damage: they stop there, as before.
func (e *DamageError) Unwrap() error {
	return &CorruptError{Offset: e.Offset, After: e.First, Reason: e.Reason}
}

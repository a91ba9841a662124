package replay

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/rpctap/rpctap/cassette"
)

// Open reads the cassette at path into memory for replay (verify and diff
// use it; OpenStream reads it as the replay advances instead, with memory
// that does not grow with the session).
//
// A cassette without its end record (the recorder was killed, as when a
// parent SIGKILLs its child, or the tail of the file is torn) is replayed as
// far as it is complete: Recording.Complete is false and Truncated says
// where it stops. A damaged range (a frame that does not decode) is read
// past: Recording.Damage lists each, with the records it lost, and the
// records around it are there. Everything else that is wrong is an error:
// a missing or unreadable file, an empty file, a file that is not a
// cassette, a cassette from a newer rpctap, damage in its header, or a
// cassette with no frames.
func Open(path string) (*Recording, error) {
	r, err := cassette.Open(path)
	if err != nil {
		return nil, describeOpenError(path, err)
	}
	defer r.Close()
	rec := &Recording{Name: path, Header: r.Header(), Protocol: r.Header().Protocol}
	for {
		x, err := r.Next()
		if err == io.EOF {
			break
		}
		var de *cassette.DamageError
		if errors.As(err, &de) {
			rec.Damage = append(rec.Damage, de)
			continue
		}
		var te *cassette.TruncatedError
		if errors.As(err, &te) {
			rec.Truncated = te.Error()
			break
		}
		if err != nil {
			return nil, describeOpenError(path, err)
		}
		if x.K != cassette.KindHeader {
			rec.add(x)
		}
	}
	if len(rec.Conns()) == 0 && len(rec.Damage) > 0 {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrEmpty, rec.Damage[0])
	}
	if len(rec.Conns()) == 0 {
		if rec.Truncated != "" {
			return nil, fmt.Errorf("%s: %w (%s)", path, ErrEmpty, rec.Truncated)
		}
		return nil, fmt.Errorf("%s: %w", path, ErrEmpty)
	}
	return rec, nil
}

// DamageSummary says in a few words how damaged a cassette is: how many
// ranges, how many records lost. Each range is reported on its own first.
func DamageSummary(ds []*cassette.DamageError) string {
	var lost uint64
	toEnd := false
	for _, d := range ds {
		lost += d.Lost
		toEnd = toEnd || d.ToEnd
	}
	ranges := "1 damaged range"
	if len(ds) != 1 {
		ranges = fmt.Sprintf("%d damaged ranges", len(ds))
	}
	if toEnd {
		return ranges + ", records lost to the end of the file"
	}
	if lost == 1 {
		return ranges + ", 1 record lost"
	}
	return fmt.Sprintf("%s, %d records lost", ranges, lost)
}

// describeOpenError turns the cassette reader's errors into one line that
// names the file.
func describeOpenError(path string, err error) error {
	var te *cassette.TruncatedError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", path)
	case errors.Is(err, cassette.ErrEmpty):
		return fmt.Errorf("%s: empty file, not a cassette", path)
	case errors.Is(err, cassette.ErrNotCassette):
		return fmt.Errorf("%s: not an rpctap cassette", path)
	case errors.As(err, &te):
		return fmt.Errorf("%s: %v (nothing to replay)", path, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

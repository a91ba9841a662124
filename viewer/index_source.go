package viewer

import (
	"github.com/rpctap/rpctap/cassette"
)

// IndexSource adapts a cassette.Index (random access by record number,
// a bounded cache of decoded frames) to Source.
type IndexSource struct {
	X *cassette.Index
}

// OpenCassette opens the cassette at path for viewing. The error is the
// Index's: a missing, foreign, empty, corrupt-at-the-start or newer file.
func OpenCassette(path string) (*IndexSource, error) {
	x, err := cassette.OpenIndex(path)
	if err != nil {
		return nil, err
	}
	return &IndexSource{X: x}, nil
}

// ConcurrentSafe implements ConcurrentSafe: an Index has its own lock.
func (s *IndexSource) ConcurrentSafe() bool { return true }

// Len implements Source.
func (s *IndexSource) Len() int { return int(s.X.Count()) }

// Records implements Source.
func (s *IndexSource) Records(from, n int) ([]cassette.Record, error) {
	if from < 0 {
		n += from
		from = 0
	}
	if n <= 0 {
		return nil, nil
	}
	recs, err := s.X.Records(uint64(from), n)
	if len(recs) > 0 && recs[0].N == 0 && recs[0].Header == nil {
		h := s.X.Header()
		recs[0].Header = &h
	}
	return recs, err
}

// Refresh implements Source.
func (s *IndexSource) Refresh() error {
	_, err := s.X.Refresh()
	return err
}

// Ended implements Ender.
func (s *IndexSource) Ended() bool { return s.X.Ended() }

// Truncated implements Ender: the cut of a cassette whose recorder was
// killed (or that is still being written), or the damage found after the
// last good record.
func (s *IndexSource) Truncated() string {
	if err := s.X.TailError(); err != nil {
		return err.Error()
	}
	if t := s.X.Truncated(); t != nil {
		return t.Error()
	}
	return ""
}

// Close releases the file.
func (s *IndexSource) Close() error { return s.X.Close() }

// FrameSpan implements FrameSpanner from the index's frame table.
func (s *IndexSource) FrameSpan(n int) (first, count int, ok bool) {
	for _, f := range s.X.Frames() {
		if uint64(n) >= f.First && uint64(n) < f.First+f.Count {
			return int(f.First), int(f.Count), true
		}
	}
	return 0, 0, false
}

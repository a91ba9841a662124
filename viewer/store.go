package viewer

import (
	"sync"

	"github.com/rpctap/rpctap/cassette"
)

// Store is the viewer's model: an append-only view of a Source with row
// summaries for the table, and an Analysis (pairing, violation marks,
// stats) that a background scan brings up to date in steps. It is safe
// for concurrent use: the UI reads rows while the scan and the follower
// run in other goroutines.
//
// Memory: the Source's cache of decoded batches, a few pages of rows, and
// the Analysis (see there); never the whole cassette.
type Store struct {
	srcMu sync.Mutex // serialises calls into the Source
	src   Source

	mu       sync.Mutex
	n        int // records visible (a snapshot of src.Len)
	an       *Analysis
	classify *Classifier
	protocol string
	pages    map[int][]Row // page number -> rows; a small cache
	order    []int         // pages in the order they were cached
	err      error         // last error from the Source
}

const (
	pageRows  = 256
	maxPages  = 64 // rows cached: 16384, a few screens in each direction
	scanBatch = 2048
)

// NewStore wraps src. It reads the header for the protocol name.
func NewStore(src Source) *Store {
	s := &Store{src: src, pages: map[int][]Row{}}
	s.n = src.Len()
	if hdr, err := src.Records(0, 1); err == nil && len(hdr) == 1 && hdr[0].Header != nil {
		s.protocol = hdr[0].Header.Protocol
	}
	s.classify = NewClassifier(s.protocol)
	s.an = NewAnalysis(s.classify)
	return s
}

// Protocol is the protocol named by the header ("" when unknown).
func (s *Store) Protocol() string { return s.protocol }

// Len is the number of records visible.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Err returns the last error the Source reported, if any.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Ended reports whether the cassette was closed cleanly.
func (s *Store) Ended() bool {
	if e, ok := s.src.(Ender); ok {
		s.srcMu.Lock()
		defer s.srcMu.Unlock()
		return e.Ended()
	}
	return false
}

// Truncated returns the Source's truncation message, if any.
func (s *Store) Truncated() string {
	if e, ok := s.src.(Ender); ok {
		s.srcMu.Lock()
		defer s.srcMu.Unlock()
		return e.Truncated()
	}
	return ""
}

// Refresh asks the Source for new records and reports how many appeared.
// The last, partial page of rows is dropped from the cache so it is rebuilt.
func (s *Store) Refresh() (int, error) {
	s.srcMu.Lock()
	err := s.src.Refresh()
	n := s.src.Len()
	s.srcMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
	}
	added := n - s.n
	if added > 0 {
		delete(s.pages, s.n/pageRows)
		s.n = n
	}
	return max(added, 0), err
}

// Records returns decoded records [from, from+n) as the Source has them.
func (s *Store) Records(from, n int) ([]cassette.Record, error) {
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	recs, err := s.src.Records(from, n)
	if err != nil {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}
	return recs, err
}

// Record returns record i, classified when the recorder left it bare.
func (s *Store) Record(i int) (cassette.Record, bool) {
	recs, err := s.Records(i, 1)
	if err != nil || len(recs) == 0 {
		return cassette.Record{}, false
	}
	r := recs[0]
	s.classify.Fill(&r)
	return r, true
}

// Row returns the summary of record i (zero Row and false when out of
// range or unreadable). Pairing and violation marks are as far as the
// analysis has got.
func (s *Store) Row(i int) (Row, bool) {
	s.mu.Lock()
	if i < 0 || i >= s.n {
		s.mu.Unlock()
		return Row{}, false
	}
	p := i / pageRows
	page, ok := s.pages[p]
	s.mu.Unlock()
	if !ok || i-p*pageRows >= len(page) {
		page = s.loadPage(p)
	}
	if i-p*pageRows >= len(page) {
		return Row{}, false
	}
	row := page[i-p*pageRows]
	s.mu.Lock()
	s.annotate(&row)
	s.mu.Unlock()
	if row.Kind == "response" && row.Method == "" && row.Paired && row.Pair < row.N {
		if req, ok := s.Row(int(row.Pair)); ok {
			row.Method = req.Method
		}
	}
	return row, true
}

func (s *Store) loadPage(p int) []Row {
	from := p * pageRows
	start := max(from-1, 0) // one more for the first delta
	recs, err := s.Records(start, from+pageRows-start)
	if err != nil {
		return nil
	}
	rows := make([]Row, 0, pageRows)
	prevT := int64(0)
	for i := range recs {
		r := recs[i]
		if int(r.N) < from && start < from {
			prevT = r.T
			continue
		}
		s.classify.Fill(&r)
		rows = append(rows, Summarize(&r, prevT))
		prevT = r.T
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pages[p]; !ok {
		s.order = append(s.order, p)
	}
	s.pages[p] = rows
	for len(s.order) > maxPages {
		delete(s.pages, s.order[0])
		s.order = s.order[1:]
	}
	return rows
}

// annotate adds what the analysis knows; s.mu must be held.
func (s *Store) annotate(row *Row) {
	if row.K != cassette.KindFrame {
		return
	}
	row.Violations = len(s.an.Violations(row.N))
	if partner, lat, ok := s.an.Pair(row.N); ok {
		row.Paired, row.Pair = true, partner
		if row.Kind == "response" {
			row.Latency = lat
		}
	}
}

// Scan advances the analysis by up to max records and reports whether it
// has caught up with the records visible.
func (s *Store) Scan(max int) bool {
	s.mu.Lock()
	from := int(s.an.Next())
	n := s.n
	s.mu.Unlock()
	if from >= n {
		return true
	}
	count := min(max, n-from)
	for count > 0 {
		step := min(count, scanBatch)
		recs, err := s.Records(from, step)
		if err != nil || len(recs) == 0 {
			return true
		}
		s.mu.Lock()
		for i := range recs {
			s.an.Add(&recs[i])
		}
		s.mu.Unlock()
		from += len(recs)
		count -= len(recs)
	}
	return from >= n
}

// Scanned is how many records the analysis has seen.
func (s *Store) Scanned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.an.Next())
}

// Pair returns record i's paired request or response, if known.
func (s *Store) Pair(i int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _, ok := s.an.Pair(uint64(i))
	return int(p), ok
}

// Violations returns the violation records about record i.
func (s *Store) Violations(i int) []cassette.Record {
	s.mu.Lock()
	ns := append([]uint64(nil), s.an.Violations(uint64(i))...)
	s.mu.Unlock()
	var out []cassette.Record
	for _, n := range ns {
		if r, ok := s.Record(int(n)); ok {
			out = append(out, r)
		}
	}
	return out
}

// Stats returns the statistics of the records scanned so far.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.an.Stats()
}

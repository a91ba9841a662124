package viewer

import (
	"slices"
	"sort"
	"sync"

	"github.com/rpctap/rpctap/cassette"
)

// View is the list of record positions the frame list shows: every record,
// or the ones a Filter picked. A filtered view grows in steps (Store.Fill)
// so the first matches show while the rest of a large cassette is read.
type View struct {
	mu      sync.Mutex
	filter  Filter
	pos     []int
	scanned int // records examined (unused for the unfiltered view)
}

// NewView returns a view for f; an inactive filter means every record.
func NewView(f Filter) *View { return &View{filter: f} }

// Filter returns the view's filter.
func (v *View) Filter() Filter { return v.filter }

// All reports whether the view shows every record.
func (v *View) All() bool { return !v.filter.Active() }

// Len is the number of rows.
func (v *View) Len(s *Store) int {
	if v.All() {
		return s.Len()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.pos)
}

// At returns the record position of row i.
func (v *View) At(i int) int {
	if v.All() {
		return i
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if i < 0 || i >= len(v.pos) {
		return -1
	}
	return v.pos[i]
}

// RowOf returns the row showing record pos, or the first row after it
// (len when none), and whether pos itself is shown.
func (v *View) RowOf(s *Store, pos int) (int, bool) {
	if v.All() {
		n := s.Len()
		return min(pos, n), pos < n
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	i := sort.SearchInts(v.pos, pos)
	return i, i < len(v.pos) && v.pos[i] == pos
}

// Progress returns how many records the filter has examined.
func (v *View) Progress() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.scanned
}

// Fill examines up to budget more records for a filtered view and
// reports whether it has caught up with the store. A violations-only view
// is rebuilt from what the analysis has found so far (violations are few);
// it is done once the analysis has caught up.
func (s *Store) Fill(v *View, budget int) bool {
	if v.All() {
		return true
	}
	if v.filter.ViolationsOnly {
		s.mu.Lock()
		var cand []int
		for _, ref := range s.an.ViolationRefs() {
			cand = append(cand, int(ref))
			for _, n := range s.an.Violations(ref) {
				cand = append(cand, int(n))
			}
		}
		caught := int(s.an.Next()) >= s.n
		scanned := int(s.an.Next())
		s.mu.Unlock()
		slices.Sort(cand)
		cand = slices.Compact(cand)
		var pos []int
		for _, p := range cand {
			if r, ok := s.Record(p); ok && v.filter.Match(&r, s.matchInfo(r.N, true)) {
				pos = append(pos, p)
			}
		}
		v.mu.Lock()
		v.pos, v.scanned = pos, scanned
		v.mu.Unlock()
		return caught
	}
	v.mu.Lock()
	from := v.scanned
	v.mu.Unlock()
	n := s.Len()
	end := min(from+budget, n)
	for from < end {
		step := min(end-from, scanBatch)
		recs, err := s.Records(from, step)
		if err != nil || len(recs) == 0 {
			return true
		}
		var add []int
		for i := range recs {
			r := recs[i]
			s.classify.Fill(&r)
			if v.filter.Match(&r, s.matchInfo(r.N, false)) {
				add = append(add, int(r.N))
			}
		}
		from += len(recs)
		v.mu.Lock()
		v.pos = append(v.pos, add...)
		v.scanned = from
		v.mu.Unlock()
	}
	return from >= n
}

// Search looks for the next row after row `from` (or before it when back)
// in v whose record matches f, examining at most budget records. done is
// false when the budget ran out first; call again from the returned row to
// go on.
func (s *Store) Search(v *View, f *Filter, from int, back bool, budget int) (row int, found, done bool) {
	n := v.Len(s)
	i := from + 1
	if back {
		i = from - 1
	}
	examined := 0
	for i >= 0 && i < n {
		lo, hi := i, min(i+scanBatch, n)
		if back {
			lo, hi = max(i-scanBatch+1, 0), i+1
		}
		recs := s.rowRecords(v, lo, hi)
		if len(recs) != hi-lo {
			return i, false, true
		}
		for j := range recs {
			k := j
			if back {
				k = len(recs) - 1 - j
			}
			r := recs[k]
			s.classify.Fill(&r)
			if f.Match(&r, s.matchInfo(r.N, false)) {
				return lo + k, true, true
			}
			examined++
			if examined >= budget {
				return lo + k, false, false
			}
		}
		i = hi
		if back {
			i = lo - 1
		}
	}
	return -1, false, true
}

// rowRecords returns the records of rows [lo, hi) of v.
func (s *Store) rowRecords(v *View, lo, hi int) []cassette.Record {
	if v.All() {
		recs, _ := s.Records(lo, hi-lo)
		return recs
	}
	out := make([]cassette.Record, 0, hi-lo)
	for row := lo; row < hi; row++ {
		recs, err := s.Records(v.At(row), 1)
		if err != nil || len(recs) == 0 {
			break
		}
		out = append(out, recs[0])
	}
	return out
}

// matchInfo is what the analysis knows of record n for a filter (viol:
// the caller knows it has violations).
func (s *Store) matchInfo(n uint64, viol bool) MatchInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := MatchInfo{Violations: viol || len(s.an.Violations(n)) > 0, Protocol: s.protocol}
	if m.Protocol == "" {
		m.Protocol = s.an.stats.Protocol
	}
	partner, lat, paired := s.an.Pair(n)
	s.mu.Unlock()
	if paired && partner < n {
		m.Latency = lat
		if r, ok := s.Record(int(partner)); ok {
			m.Method = r.Method
			if m.Method == "" {
				s.classify.Fill(&r)
				m.Method = r.Method
			}
		}
	}
	s.mu.Lock()
	return m
}

package viewer

import (
	"runtime"
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
	scanMu sync.Mutex // one Scan at a time
	srcMu  sync.Mutex // serialises calls into a Source that is not ConcurrentSafe
	src    Source
	safe   bool

	mu       sync.Mutex
	n        int // records visible (a snapshot of src.Len)
	an       *Analysis
	classify *Classifier
	protocol string
	pages    map[int][]Row // page number -> rows; a small cache
	order    []int         // pages in the order they were cached
	err      error         // last error from the Source
	ended    bool          // cached Ender answers, updated by Refresh
	trunc    string
	nearby   map[uint64]nearPair // pairs found around rows the analysis has not reached
}

type nearPair struct {
	partner uint64
	lat     int64
	ok      bool
}

// nearbyWindow bounds how far pairNearby looks for a partner.
const nearbyWindow = 4096

// ConcurrentSafe is implemented by sources whose methods may be called
// from several goroutines at once (cassette.Index is); the Store then does
// not serialise them, so the UI never waits for the background scan's
// reads.
type ConcurrentSafe interface{ ConcurrentSafe() bool }

func (s *Store) lockSrc() {
	if !s.safe {
		s.srcMu.Lock()
	}
}

func (s *Store) unlockSrc() {
	if !s.safe {
		s.srcMu.Unlock()
	}
}

const (
	pageRows  = 256
	maxPages  = 64 // rows cached: 16384, a few screens in each direction
	scanBatch = 512
)

// NewStore wraps src. It reads the header for the protocol name.
func NewStore(src Source) *Store {
	s := &Store{src: src, pages: map[int][]Row{}, nearby: map[uint64]nearPair{}}
	if c, ok := src.(ConcurrentSafe); ok && c.ConcurrentSafe() {
		s.safe = true
	}
	s.n = src.Len()
	s.ended, s.trunc = enderState(src)
	// The header names the protocol when it was forced; otherwise the
	// recorder writes a meta record once it has detected it, early on.
	// The records read before damage count (a linked cassette damaged
	// early in a merged set: without them the title named no protocol,
	// or the last linked cassette's, mcp, for an ACP agent's).
	{
		recs, _ := src.Records(0, 64)
		for _, r := range recs {
			if r.Header != nil && r.Header.Protocol != "" {
				s.protocol = r.Header.Protocol
				break
			}
			if r.K == cassette.KindMeta && r.Protocol != "" {
				s.protocol = r.Protocol
				break
			}
		}
	}
	s.classify = NewClassifier(s.protocol)
	s.an = NewAnalysis(s.classify)
	return s
}

// Protocol is the protocol named by the header or found in a meta record
// ("" when unknown).
func (s *Store) Protocol() string {
	if s.protocol != "" {
		return s.protocol
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.an.stats.Protocol
}

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
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// Truncated returns the Source's truncation message, if any.
func (s *Store) Truncated() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trunc
}

func enderState(src Source) (bool, string) {
	if e, ok := src.(Ender); ok {
		return e.Ended(), e.Truncated()
	}
	return false, ""
}

// Refresh asks the Source for new records and reports how many appeared.
// The last, partial page of rows is dropped from the cache so it is rebuilt.
func (s *Store) Refresh() (int, error) {
	s.lockSrc()
	err := s.src.Refresh()
	n := s.src.Len()
	ended, trunc := enderState(s.src)
	s.unlockSrc()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended, s.trunc = ended, trunc
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
	s.lockSrc()
	recs, err := s.src.Records(from, n)
	s.unlockSrc()
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

// KindUnreadable marks rows whose record could not be decoded (a damaged
// cassette); their Label says why.
const KindUnreadable cassette.Kind = "unreadable"

// FrameSpanner is implemented by sources that can say which records share
// the compressed frame holding record n, so that damage skips a frame at a
// time.
type FrameSpanner interface {
	FrameSpan(n int) (first, count int, ok bool)
}

func (s *Store) loadPage(p int) []Row {
	from := p * pageRows
	s.mu.Lock()
	end := min(from+pageRows, s.n)
	s.mu.Unlock()
	pos := max(from-1, 0) // one more for the first delta
	proto := s.Protocol()
	rows := make([]Row, 0, pageRows)
	prevT := int64(0)
	for pos < end {
		recs, err := s.Records(pos, end-pos)
		for i := range recs {
			r := recs[i]
			if int(r.N) >= from {
				s.classify.Fill(&r)
				rows = append(rows, s.summarize(proto, &r, prevT))
			}
			prevT = r.T
		}
		pos += len(recs)
		if err == nil {
			if len(recs) == 0 {
				break
			}
			continue
		}
		// Damage: show what cannot be read, skip its frame, go on.
		skip := pos + 1
		if fs, ok := s.src.(FrameSpanner); ok {
			if first, count, ok := fs.FrameSpan(pos); ok && first+count > pos {
				skip = first + count
			}
		}
		for ; pos < min(skip, end); pos++ {
			if pos >= from {
				rows = append(rows, Row{N: uint64(pos), T: prevT, K: KindUnreadable, Label: "unreadable: " + err.Error()})
			}
		}
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

// summarize is Summarize, with where the record comes from when the
// Source merges linked cassettes (its protocol's summary, its server and
// the tool call enclosing it).
func (s *Store) summarize(proto string, r *cassette.Record, prevT int64) Row {
	o, ok := s.src.(Originer)
	if !ok {
		return Summarize(proto, r, prevT)
	}
	from := o.Origin(int(r.N), r)
	if from.Protocol != "" {
		proto = from.Protocol
	}
	row := Summarize(proto, r, prevT)
	row.Origin, row.File, row.Tool = from.Server, from.File, from.Tool
	return row
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
	s.scanMu.Lock() // one scan at a time: each record is added once
	defer s.scanMu.Unlock()
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
		if len(recs) == 0 {
			if err == nil {
				return true
			}
			// Damage: skip the frame that cannot be read and go on.
			skip := from + 1
			if fs, ok := s.src.(FrameSpanner); ok {
				if first, n, ok := fs.FrameSpan(from); ok && first+n > from {
					skip = first + n
				}
			}
			s.mu.Lock()
			s.an.Skip(uint64(skip))
			s.mu.Unlock()
			count -= skip - from
			from = skip
			continue
		}
		// Classify outside the lock (it is the costly part), then add.
		cl := make([]cassette.Record, len(recs))
		for i := range recs {
			cl[i] = recs[i]
			s.classify.Fill(&cl[i])
		}
		s.mu.Lock()
		for i := range cl {
			s.an.Add(&cl[i])
		}
		s.mu.Unlock()
		// Let the UI at the locks between batches: the scan is background work.
		runtime.Gosched()
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
	p, _, ok := s.an.Pair(uint64(i))
	reached := uint64(i) < s.an.Next()
	s.mu.Unlock()
	if ok || reached {
		return int(p), ok
	}
	row, found := s.Row(i)
	if !found || row.K != cassette.KindFrame {
		return 0, false
	}
	p, _, ok = s.pairNearby(row)
	return int(p), ok
}

// pairNearby pairs a row that the analysis has not reached yet (a jump to
// the end of a large cassette) by looking at up to nearbyWindow records
// around it: a response's request is the nearest earlier request from the
// other direction on the same connection with the same id (or, without
// ids, the same method); a request's response is the first later such
// response, unless the same id is reused first. On well-formed sessions
// this is what the analysis finds; it stops being used once the analysis
// gets there.
func (s *Store) pairNearby(row Row) (uint64, int64, bool) {
	s.mu.Lock()
	if np, ok := s.nearby[row.N]; ok {
		s.mu.Unlock()
		return np.partner, np.lat, np.ok
	}
	n := s.n
	s.mu.Unlock()
	same := func(r *cassette.Record) bool {
		if r.K != cassette.KindFrame || r.Conn != row.Conn || r.Part {
			return false
		}
		if row.ID != "" {
			return string(r.ID) == row.ID
		}
		return len(r.ID) == 0 && r.Method == row.Method
	}
	var res nearPair
	final := true
	const chunk = 256
	switch row.Kind {
	case "response":
		// Backwards, a chunk at a time: the request is usually close.
	back:
		for hi := int(row.N); hi > 0 && int(row.N)-hi < nearbyWindow; hi -= chunk {
			lo := max(0, hi-chunk)
			recs, _ := s.Records(lo, hi-lo)
			for i := len(recs) - 1; i >= 0; i-- {
				r := recs[i]
				s.classify.Fill(&r)
				if !same(&r) {
					continue
				}
				if r.D != row.Dir && r.Kind == "request" {
					res = nearPair{partner: r.N, lat: row.T - r.T, ok: true}
					break back
				}
				if r.D == row.Dir && r.Kind == "response" {
					break back // an earlier response with this id took the request
				}
			}
		}
	case "request":
		final = int(row.N)+1+nearbyWindow <= n // else a later record may still answer it
	fwd:
		for lo := int(row.N) + 1; lo < n && lo-int(row.N) <= nearbyWindow; lo += chunk {
			recs, _ := s.Records(lo, chunk)
			if len(recs) == 0 {
				break
			}
			for i := range recs {
				r := recs[i]
				s.classify.Fill(&r)
				if !same(&r) {
					continue
				}
				if r.D != row.Dir && r.Kind == "response" {
					res = nearPair{partner: r.N, lat: r.T - row.T, ok: true}
					break fwd
				}
				if r.D == row.Dir && r.Kind == "request" {
					final = true
					break fwd // the id was reused: this request was never answered
				}
			}
		}
	}
	if res.ok || final {
		s.mu.Lock()
		if len(s.nearby) > 8192 {
			clear(s.nearby)
		}
		s.nearby[row.N] = res
		s.mu.Unlock()
	}
	return res.partner, res.lat, res.ok
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
// ValidationStopped is the record at which the recorder stopped validating
// (0: it did not, as far as the records analysed so far tell): the stored
// findings are partial.
func (s *Store) ValidationStopped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.an.stats.ValidationStopped
}

func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.an.Stats()
}

// RowsAt returns the rows of the given record positions, taking the
// analysis lock once (the table asks for a screenful at a time).
func (s *Store) RowsAt(pos []int) []Row {
	rows := make([]Row, len(pos))
	ok := make([]bool, len(pos))
	// Look the pages up under one lock; load the missing ones after.
	pages := map[int][]Row{}
	s.mu.Lock()
	n := s.n
	for _, p := range pos {
		if p >= 0 && p < n {
			if page, cached := s.pages[p/pageRows]; cached {
				pages[p/pageRows] = page
			}
		}
	}
	s.mu.Unlock()
	for i, p := range pos {
		if p < 0 || p >= n {
			continue
		}
		pg := p / pageRows
		page, cached := pages[pg]
		if !cached || p-pg*pageRows >= len(page) {
			page = s.loadPage(pg)
			pages[pg] = page
		}
		if p-pg*pageRows < len(page) {
			rows[i], ok[i] = page[p-pg*pageRows], true
		}
	}
	s.mu.Lock()
	for i := range rows {
		if ok[i] {
			s.annotate(&rows[i])
		}
	}
	s.mu.Unlock()
	scanned := uint64(s.Scanned())
	for i := range rows {
		r := &rows[i]
		if ok[i] && !r.Paired && r.N >= scanned && r.K == cassette.KindFrame && (r.Kind == "request" || r.Kind == "response") {
			if p, lat, found := s.pairNearby(*r); found {
				r.Paired, r.Pair = true, p
				if r.Kind == "response" {
					r.Latency = lat
				}
			}
		}
		if ok[i] && r.Kind == "response" && r.Method == "" && r.Paired && r.Pair < r.N {
			if req, found := s.Row(int(r.Pair)); found {
				r.Method = req.Method
			}
		}
		if !ok[i] {
			r.N = ^uint64(0)
		}
	}
	return rows
}

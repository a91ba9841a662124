package viewer

import (
	"sort"

	"github.com/rpctap/rpctap/cassette"
)

// Analysis is the incremental, pure part of the Store: fed records in order
// (Add), it pairs requests with responses, collects violation marks and
// accumulates statistics. Memory: 24 bytes per request and per response,
// one entry per violation and per request in flight, and a bounded
// histogram per method; decoded records are not kept.
type Analysis struct {
	classify *Classifier
	next     uint64 // the record number Add expects next

	inflight map[pairKey][]pending
	reqs     pairTable // requests in record order; Partner 0 = unanswered so far
	resps    pairTable // responses in record order; Partner 0 = no matching request
	viol     map[uint64][]uint64

	stats Stats
}

// pairKey identifies a request in flight: the direction it travelled, its
// connection, and its id (verbatim) — or, for protocols whose commands may
// carry no id (opi, pi), its method, matched first in first out.
type pairKey struct {
	conn int
	dir  cassette.Dir
	id   string
	byM  bool
}

type pending struct {
	n      uint64
	t      int64
	method string
	idx    int // into reqs
}

type pairEntry struct {
	N, Partner uint64
	Lat        int64 // responses: ns since the request
}

// pairTable is an append-only table of pair entries kept in fixed chunks,
// so that growing it never copies (nor briefly doubles) what it holds.
type pairTable struct {
	chunks [][]pairEntry
	n      int
}

const pairChunk = 1 << 14

func (t *pairTable) add(e pairEntry) int {
	if t.n%pairChunk == 0 {
		t.chunks = append(t.chunks, make([]pairEntry, 0, pairChunk))
	}
	c := &t.chunks[len(t.chunks)-1]
	*c = append(*c, e)
	t.n++
	return t.n - 1
}

func (t *pairTable) at(i int) *pairEntry { return &t.chunks[i/pairChunk][i%pairChunk] }

// validationStopped is the code of the violation the recorder stores when
// it stops validating.
const validationStopped = "recorder.validation-stopped"

// NewAnalysis returns an empty analysis; classify may be nil when records
// are known to be classified.
func NewAnalysis(classify *Classifier) *Analysis {
	return &Analysis{classify: classify, inflight: map[pairKey][]pending{}, viol: map[uint64][]uint64{},
		stats: Stats{Methods: map[string]*MethodStats{}}}
}

// Next is the number of the record Add expects next (all before it were added).
func (a *Analysis) Next() uint64 { return a.next }

func opposite(d cassette.Dir) cassette.Dir {
	if d == cassette.DirIn {
		return cassette.DirOut
	}
	return cassette.DirIn
}

func keyOf(r *cassette.Record, dir cassette.Dir) pairKey {
	if len(r.ID) > 0 && string(r.ID) != "null" {
		return pairKey{conn: r.Conn, dir: dir, id: string(r.ID)}
	}
	return pairKey{conn: r.Conn, dir: dir, id: r.Method, byM: true}
}

// Skip moves past records that cannot be read (a damaged frame): the next
// record Add expects is n.
func (a *Analysis) Skip(n uint64) {
	if n > a.next {
		a.next = n
	}
}

// Add feeds the next record. Records must come in order, each once.
func (a *Analysis) Add(rec *cassette.Record) {
	r := *rec
	a.classify.Fill(&r)
	a.next = r.N + 1
	st := &a.stats
	st.Records++
	if st.Records == 1 || r.T > st.Duration {
		st.Duration = r.T
	}
	switch r.K {
	case cassette.KindStderr:
		st.Stderr++
		return
	case cassette.KindEvent:
		st.Events++
		return
	case cassette.KindViolation:
		st.Violations++
		if r.Code == validationStopped && st.ValidationStopped == 0 {
			st.ValidationStopped = max(r.Ref, 1)
		}
		a.viol[r.Ref] = append(a.viol[r.Ref], r.N)
		return
	case cassette.KindEnd:
		st.Ended = true
		return
	case cassette.KindMeta:
		if r.Protocol != "" {
			st.Protocol = r.Protocol
		}
		return
	case cassette.KindFrame:
	default:
		return
	}
	if r.Part {
		return // the continuation record carries no envelope of its own
	}
	st.Frames++
	if r.D == cassette.DirIn {
		st.In++
	} else {
		st.Out++
	}
	method := r.Method
	switch r.Kind {
	case "request":
		k := keyOf(&r, r.D)
		idx := a.reqs.add(pairEntry{N: r.N})
		a.inflight[k] = append(a.inflight[k], pending{n: r.N, t: r.T, method: r.Method, idx: idx})
	case "response":
		k := keyOf(&r, opposite(r.D))
		q := a.inflight[k]
		e := pairEntry{N: r.N}
		if len(q) > 0 {
			p := q[0]
			if len(q) == 1 {
				delete(a.inflight, k)
			} else {
				a.inflight[k] = q[1:]
			}
			e.Partner, e.Lat = p.n, r.T-p.t
			req := a.reqs.at(p.idx)
			req.Partner, req.Lat = r.N, r.T-p.t
			if method == "" {
				method = p.method
			}
			a.methodStats(method).Latency.Add(r.T - p.t)
		} else {
			st.Orphans++
		}
		a.resps.add(e)
	}
	if method == "" {
		method = "(" + r.Kind + ")"
	}
	ms := a.methodStats(method)
	if r.D == cassette.DirIn {
		ms.In++
	} else {
		ms.Out++
	}
	if r.Kind == "request" {
		ms.Requests++
	}
}

func (a *Analysis) methodStats(m string) *MethodStats {
	ms := a.stats.Methods[m]
	if ms == nil {
		ms = &MethodStats{Method: m}
		a.stats.Methods[m] = ms
	}
	return ms
}

// Pair returns the record paired with record n (a request's response or a
// response's request), if any, and the latency between them.
func (a *Analysis) Pair(n uint64) (partner uint64, latency int64, ok bool) {
	for _, tab := range []*pairTable{&a.reqs, &a.resps} {
		i := sort.Search(tab.n, func(i int) bool { return tab.at(i).N >= n })
		if i < tab.n && tab.at(i).N == n {
			e := tab.at(i)
			return e.Partner, e.Lat, e.Partner != 0
		}
	}
	return 0, 0, false
}

// Violations returns the numbers of the violation records about record n.
func (a *Analysis) Violations(n uint64) []uint64 { return a.viol[n] }

// ViolationRefs returns, sorted, the records that have violations.
func (a *Analysis) ViolationRefs() []uint64 {
	refs := make([]uint64, 0, len(a.viol))
	for n := range a.viol {
		refs = append(refs, n)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i] < refs[j] })
	return refs
}

// Stats returns a snapshot of the statistics so far, with the requests
// still unanswered (at the end of a closed cassette: never answered).
func (a *Analysis) Stats() Stats {
	s := a.stats
	s.Methods = make(map[string]*MethodStats, len(a.stats.Methods))
	for k, v := range a.stats.Methods {
		c := *v
		c.Latency = v.Latency.Clone()
		s.Methods[k] = &c
	}
	s.Unanswered = nil
	for _, q := range a.inflight {
		for _, p := range q {
			s.Unanswered = append(s.Unanswered, Unanswered{N: p.n, T: p.t, Method: p.method})
		}
	}
	sort.Slice(s.Unanswered, func(i, j int) bool { return s.Unanswered[i].N < s.Unanswered[j].N })
	return s
}

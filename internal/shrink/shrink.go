// Package shrink reduces a failing cassette to a small one that still fails.
//
// A cassette is cut into units that can be left out together without
// breaking causality: a request with its response (and, when the response
// never came, the request alone), each notification or event, each stderr
// line. Process events (start, stdin EOF, exit, signals), the header and meta
// records are kept in every candidate; violation records are dropped (they
// name record numbers that no longer exist; `rpctap check` finds them again).
// The unit holding the session's first frame (the handshake in ACP, MCP, LSP
// and the event protocols) and every frame the recorder classified as a
// handshake are pinned: a candidate without them would fail for a reason of
// its own.
//
// Reduction is Zeller and Hildebrandt's ddmin over the units: try halves,
// then the complements of ever finer chunks, keeping any candidate that still
// fails, until no single unit can be removed. The predicate ("does this
// candidate still fail?") is the caller's: rpctap runs verify against a real
// child, a real parent against replay, check for a code, or a user command.
package shrink

import (
	"fmt"
	"strings"

	"github.com/rpctap/rpctap/cassette"
)

// Unit is a group of records (indexes into the cassette's records) that is
// kept or left out as a whole.
type Unit struct {
	Records []int
	Pinned  bool   // always kept (the handshake)
	Label   string // "in request initialize #1", for reports
}

// Plan is a cassette cut into units.
type Plan struct {
	Recs  []cassette.Record // every record of the cassette, header first
	Fixed []int             // records every candidate keeps (header, events, meta)
	Units []Unit
}

// pendingKey names a request awaiting its response: the direction it
// travelled and its id (or, for requests without an id that are answered by
// name, its method).
type pendingKey struct {
	dir cassette.Dir
	key string
}

// NewPlan cuts recs (as read from a cassette, header first) into units,
// using the kind, method and id the recorder stored with each frame.
func NewPlan(recs []cassette.Record) *Plan {
	p := &Plan{Recs: recs}
	pending := map[pendingKey][]int{} // -> unit indexes, oldest first
	firstFrame := true
	for i := range recs {
		r := &recs[i]
		switch r.K {
		case cassette.KindFrame:
		case cassette.KindStderr:
			p.Units = append(p.Units, Unit{Records: []int{i}, Label: "stderr line #" + fmt.Sprint(r.N)})
			continue
		case cassette.KindViolation, cassette.KindEnd:
			continue
		default: // header, events, meta
			p.Fixed = append(p.Fixed, i)
			continue
		}
		if r.Part {
			// The rest of an over-long line follows in the next record of
			// the same direction: keep the parts with the unit that ends
			// the line (appended below when it arrives).
			if len(p.Units) > 0 && p.lastOpenPart(r) >= 0 {
				u := p.lastOpenPart(r)
				p.Units[u].Records = append(p.Units[u].Records, i)
				continue
			}
			p.Units = append(p.Units, Unit{Records: []int{i}, Label: label(r)})
			continue
		}
		if u := p.lastOpenPart(r); u >= 0 {
			// The end of a line whose parts opened unit u.
			p.Units[u].Records = append(p.Units[u].Records, i)
			p.classifyInto(u, r, pending)
			continue
		}
		pinned := firstFrame || r.Kind == "handshake"
		firstFrame = false
		if r.Kind == "response" {
			if k, ok := responseKey(r); ok {
				if q := pending[k]; len(q) > 0 {
					u := q[0]
					pending[k] = q[1:]
					p.Units[u].Records = append(p.Units[u].Records, i)
					continue
				}
			}
		}
		p.Units = append(p.Units, Unit{Records: []int{i}, Pinned: pinned, Label: label(r)})
		if r.Kind == "request" {
			k := requestKey(r)
			pending[k] = append(pending[k], len(p.Units)-1)
		}
	}
	return p
}

// lastOpenPart returns the unit whose last record is a Part of the same
// direction and connection as r, or -1.
func (p *Plan) lastOpenPart(r *cassette.Record) int {
	for u := len(p.Units) - 1; u >= 0; u-- {
		rs := p.Units[u].Records
		last := &p.Recs[rs[len(rs)-1]]
		if last.K == cassette.KindFrame && last.D == r.D && last.Conn == r.Conn {
			if last.Part {
				return u
			}
			return -1
		}
	}
	return -1
}

// classifyInto registers unit u as a pending request when r, the record that
// completes an over-long line, is one.
func (p *Plan) classifyInto(u int, r *cassette.Record, pending map[pendingKey][]int) {
	if r.Kind == "request" {
		k := requestKey(r)
		pending[k] = append(pending[k], u)
	}
}

func requestKey(r *cassette.Record) pendingKey {
	if len(r.ID) > 0 && string(r.ID) != "null" {
		return pendingKey{r.D, "id:" + string(r.ID)}
	}
	return pendingKey{r.D, "m:" + r.Method}
}

// responseKey names the request a response answers: the same id (or, for a
// response without one, the same method) sent the other way.
func responseKey(r *cassette.Record) (pendingKey, bool) {
	other := cassette.DirIn
	if r.D == cassette.DirIn {
		other = cassette.DirOut
	}
	if len(r.ID) > 0 && string(r.ID) != "null" {
		return pendingKey{other, "id:" + string(r.ID)}, true
	}
	if r.Method != "" {
		return pendingKey{other, "m:" + r.Method}, true
	}
	return pendingKey{}, false
}

func label(r *cassette.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.D, r.Kind)
	if r.Method != "" {
		b.WriteString(" " + r.Method)
	}
	fmt.Fprintf(&b, " #%d", r.N)
	return b.String()
}

// Candidate returns the records of a cassette holding the fixed records and
// the units listed in keep (indexes into p.Units; pinned units are added),
// in their recorded order, numbered afresh from 1 by the writer.
func (p *Plan) Candidate(keep []int) []cassette.Record {
	take := make([]bool, len(p.Recs))
	for _, i := range p.Fixed {
		take[i] = true
	}
	for u := range p.Units {
		if p.Units[u].Pinned {
			for _, i := range p.Units[u].Records {
				take[i] = true
			}
		}
	}
	for _, u := range keep {
		for _, i := range p.Units[u].Records {
			take[i] = true
		}
	}
	var out []cassette.Record
	for i, ok := range take {
		if ok {
			out = append(out, p.Recs[i])
		}
	}
	return out
}

// Free lists the units ddmin may leave out (every unit that is not pinned).
func (p *Plan) Free() []int {
	var free []int
	for u := range p.Units {
		if !p.Units[u].Pinned {
			free = append(free, u)
		}
	}
	return free
}

// Fails reports whether the candidate made of the given units still fails.
// An error stops the reduction (the predicate itself broke).
type Fails func(units []int) (bool, error)

// Stats says what a reduction did.
type Stats struct {
	Runs int // predicate calls, cached ones not counted
}

// DDMin returns a 1-minimal subset of units for which fails is true (no
// single unit of it can be removed), given that fails(units) is true. It
// stops early, returning the smallest failing set found so far, after
// maxRuns predicate calls (0: no limit).
func DDMin(units []int, fails Fails, maxRuns int) ([]int, Stats, error) {
	var st Stats
	cache := map[string]bool{}
	test := func(set []int) (bool, error) {
		k := fmt.Sprint(set)
		if v, ok := cache[k]; ok {
			return v, nil
		}
		st.Runs++
		v, err := fails(set)
		if err != nil {
			return false, err
		}
		cache[k] = v
		return v, nil
	}
	// Some failures need only the pinned records (the handshake): one run
	// tells, and spares the whole search.
	if ok, err := test(nil); err != nil {
		return units, st, err
	} else if ok {
		return nil, st, nil
	}
	cur := append([]int(nil), units...)
	n := 2
	for len(cur) >= 2 {
		if maxRuns > 0 && st.Runs >= maxRuns {
			break
		}
		chunks := split(cur, n)
		reduced := false
		// Try each chunk alone, then each complement.
		for _, c := range chunks {
			ok, err := test(c)
			if err != nil {
				return cur, st, err
			}
			if ok {
				cur, n, reduced = c, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				comp := complement(chunks, i)
				ok, err := test(comp)
				if err != nil {
					return cur, st, err
				}
				if ok {
					cur, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(cur) {
				break
			}
			n = min(2*n, len(cur))
		}
	}
	return cur, st, nil
}

// split cuts s into n chunks of nearly equal size, in order.
func split(s []int, n int) [][]int {
	var out [][]int
	start := 0
	for i := 0; i < n; i++ {
		end := start + (len(s)-start)/(n-i)
		out = append(out, s[start:end])
		start = end
	}
	return out
}

func complement(chunks [][]int, skip int) []int {
	var out []int
	for i, c := range chunks {
		if i != skip {
			out = append(out, c...)
		}
	}
	return out
}

package viewer

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/linked"
)

// Origin says where a record of a LinkedSource comes from: the parent
// (zero Origin) or a linked cassette, with the parent's tool call that
// encloses it in time.
type Origin struct {
	Server   string // the linked cassette's server name ("" for the parent)
	File     string // its file name
	Protocol string // its protocol (mcp)
	Tool     string // the enclosing ACP tool call's id ("" for none)
	Title    string // and its title
}

// Originer is implemented by sources that merge linked cassettes: Origin
// says where the record at position pos (r, as Records returned it) comes
// from.
type Originer interface {
	Origin(pos int, r *cassette.Record) Origin
}

// linkPart is one cassette of a LinkedSource.
type linkPart struct {
	src    *IndexSource
	name   string       // its file name
	child  linked.Child // zero for the parent
	server string       // its name on the timeline (the child's server, numbered when two share it)
	link   linked.Link
	merged uint64 // records placed in runs
	conn   int    // the connection its records get (pairing is per connection)
	runs   []int  // indexes into LinkedSource.runs, in order
	// asked is when each request toward the server (by its id, verbatim)
	// was read: its answer belongs to the tool call the request went to,
	// even when it comes back within Slack of another call's start.
	asked map[string]int64
}

// run is count consecutive records of one part, first at position pos.
type run struct {
	pos   int
	part  int
	first uint64
	count int
}

// LinkedSource is the one timeline of a cassette and the cassettes linked
// to it (`record --deep`: the MCP servers an ACP agent spawned): their
// records merged in wall-clock order (each header's created plus each
// record's t), numbered by position, with the linked records' times put on
// the parent's clock. A linked record gets a connection of its own
// (negative, so that it is never a real one) so that pairing stays within
// its cassette, and its references (violations, intercept events) point
// at positions.
//
// Memory: one run per switch between cassettes in the merged order, and
// the linked.Map (an entry per session and per tool call); records are
// read through each cassette's index. When followed (Refresh), records
// that arrive are merged among themselves and appended: a linked record
// that arrives after later records of another cassette is shown after
// them. New linked cassettes are looked for at most once a second.
type LinkedSource struct {
	mu       sync.Mutex
	path     string
	parts    []*linkPart
	runs     []run
	total    int
	m        *linked.Map
	mapped   uint64
	seen     map[string]bool
	lastLook time.Time
	openErrs []string // linked cassettes that could not be opened
	// lookEvery is how often Refresh looks for new linked cassettes.
	lookEvery time.Duration
}

// Link returns the one timeline of the cassette at path, already open as
// parent, and the cassettes linked to it; nil when none is and none can
// come (a parent recorded without --deep, or one that ended). The caller
// keeps parent (Close does not close it).
func Link(path string, parent *IndexSource) *LinkedSource {
	seen := map[string]bool{}
	kids, err := linked.Children(path, seen)
	if err != nil || len(kids) == 0 && (!parent.X.Header().Deep || parent.Ended()) {
		return nil
	}
	s := &LinkedSource{path: path, parts: []*linkPart{{src: parent, name: filepath.Base(path)}}, m: linked.NewMap(parent.X.Header()), seen: seen, lastLook: time.Now(), lookEvery: time.Second}
	for _, k := range kids {
		s.addChild(k)
	}
	s.extend()
	return s
}

func (s *LinkedSource) addChild(k linked.Child) {
	src, err := OpenCassette(k.Path)
	if err != nil {
		s.openErrs = append(s.openErrs, fmt.Sprintf("%s: %v", filepath.Base(k.Path), err))
		return
	}
	p := &linkPart{src: src, name: filepath.Base(k.Path), child: k, conn: -len(s.parts), server: k.Server()}
	// Servers of one name are told apart: started again by another
	// request (a session/load hands the same servers again) by that
	// request's id, mcp-1@4; claiming the same request too (a copy) by a
	// number, files#2.
	same, again := 1, false
	for _, q := range s.parts[1:] {
		if q.child.Server() == p.server {
			if string(q.child.Header.Parent.Request) == string(k.Header.Parent.Request) {
				same++
			} else {
				again = true
			}
		}
	}
	if again {
		p.server += "@" + string(k.Header.Parent.Request)
	}
	if same > 1 {
		p.server = fmt.Sprintf("%s#%d", p.server, same)
	}
	s.parts = append(s.parts, p)
}

// Linked lists the linked cassettes' server names, in the order found.
// A linked cassette that could not be opened is not among them (Truncated
// names it).
func (s *LinkedSource) Linked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.parts[1:] {
		out = append(out, p.server)
	}
	return out
}

// TitleSuffix implements Titled: the linked cassettes' names, as they
// are found (a live parent's grow).
func (s *LinkedSource) TitleSuffix() string {
	if l := s.Linked(); len(l) > 0 {
		return " + linked " + strings.Join(l, ", ")
	}
	return ""
}

// Titled is implemented by sources that add to the title bar's name.
type Titled interface{ TitleSuffix() string }

// Paths are the linked cassettes' paths, in the order of Linked.
func (s *LinkedSource) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.parts[1:] {
		out = append(out, p.child.Path)
	}
	return out
}

type placed struct {
	t    int64
	part int
	n    uint64
}

// extend feeds the parent's new records to the map, then places every
// part's new records; s.mu held (or not yet shared).
func (s *LinkedSource) extend() {
	par := s.parts[0]
	plen := uint64(par.src.Len())
	for s.mapped < plen {
		recs, err := par.src.X.Records(s.mapped, hubBatch)
		for i := range recs {
			s.m.Add(&recs[i])
		}
		s.mapped += uint64(len(recs))
		if err != nil || len(recs) == 0 {
			// Damage: the map goes on after it, as far as it can.
			s.mapped++
		}
	}
	for _, p := range s.parts[1:] {
		p.link = s.m.Link(p.child)
	}
	var kids []placed
	for i, p := range s.parts[1:] {
		n := uint64(p.src.Len())
		for from := p.merged; from < n; {
			recs, err := p.src.X.Records(from, hubBatch)
			for _, r := range recs {
				kids = append(kids, placed{t: r.T + p.link.Offset, part: i + 1, n: r.N})
				if r.K == cassette.KindFrame && r.D == cassette.DirIn && r.Kind == "request" && len(r.ID) > 0 {
					if p.asked == nil {
						p.asked = map[string]int64{}
					}
					p.asked[string(r.ID)] = r.T + p.link.Offset // on the parent's clock, as Records gives it
				}
			}
			from += uint64(len(recs))
			if err != nil || len(recs) == 0 {
				// An unreadable record still has its place (the Store
				// shows it as unreadable), at the time of the one before.
				t := int64(0)
				if len(kids) > 0 {
					t = kids[len(kids)-1].t
				}
				kids = append(kids, placed{t: t, part: i + 1, n: from})
				from++
			}
		}
	}
	sort.SliceStable(kids, func(i, j int) bool { return kids[i].t < kids[j].t })
	for _, k := range kids {
		// The parent's records up to this one's time come first.
		at := min(max(par.src.X.FindTime(k.t+1), par.merged), plen)
		if at > par.merged {
			s.place(0, par.merged, int(at-par.merged))
		}
		s.place(k.part, k.n, 1)
	}
	if plen > par.merged {
		s.place(0, par.merged, int(plen-par.merged))
	}
}

// place appends count records of part from first.
func (s *LinkedSource) place(part int, first uint64, count int) {
	p := s.parts[part]
	if l := len(s.runs) - 1; l >= 0 && s.runs[l].part == part && s.runs[l].first+uint64(s.runs[l].count) == first {
		s.runs[l].count += count
	} else {
		s.runs = append(s.runs, run{pos: s.total, part: part, first: first, count: count})
		p.runs = append(p.runs, len(s.runs)-1)
	}
	s.total += count
	p.merged = first + uint64(count)
}

// ConcurrentSafe implements ConcurrentSafe: the source has its own lock
// and the indexes theirs.
func (s *LinkedSource) ConcurrentSafe() bool { return true }

// Len implements Source.
func (s *LinkedSource) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// runAt is the index of the run holding position pos; s.mu held.
func (s *LinkedSource) runAt(pos int) int {
	return sort.Search(len(s.runs), func(i int) bool { return s.runs[i].pos+s.runs[i].count > pos })
}

// posOf is the position of record n of part, -1 when not placed; s.mu held.
func (s *LinkedSource) posOf(part int, n uint64) int {
	p := s.parts[part]
	i := sort.Search(len(p.runs), func(i int) bool {
		r := s.runs[p.runs[i]]
		return r.first+uint64(r.count) > n
	})
	if i == len(p.runs) {
		return -1
	}
	r := s.runs[p.runs[i]]
	if n < r.first {
		return -1
	}
	return r.pos + int(n-r.first)
}

// Records implements Source.
func (s *LinkedSource) Records(from, n int) ([]cassette.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from = max(from, 0)
	var out []cassette.Record
	for i := s.runAt(from); i < len(s.runs) && len(out) < n; i++ {
		rn := s.runs[i]
		skip := max(from-rn.pos, 0)
		want := min(rn.count-skip, n-len(out))
		p := s.parts[rn.part]
		recs, err := p.src.Records(int(rn.first)+skip, want)
		for _, r := range recs {
			r.N = uint64(rn.pos + int(r.N-rn.first))
			if rn.part != 0 {
				r.T += p.link.Offset
				r.Conn = p.conn
			}
			if r.Ref != 0 {
				if at := s.posOf(rn.part, r.Ref); at >= 0 {
					r.Ref = uint64(at)
				}
			}
			out = append(out, r)
		}
		if err != nil {
			if rn.part != 0 {
				err = fmt.Errorf("linked %s: %w", p.server, err)
			}
			return out, err
		}
		if len(recs) < want {
			return out, fmt.Errorf("%s: record %d not readable", p.name, int(rn.first)+skip+len(recs))
		}
		from = rn.pos + rn.count
	}
	return out, nil
}

// Origin implements Originer.
func (s *LinkedSource) Origin(pos int, r *cassette.Record) Origin {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.runAt(pos)
	if i >= len(s.runs) || s.runs[i].part == 0 {
		return Origin{}
	}
	p := s.parts[s.runs[i].part]
	o := Origin{Server: p.server, File: filepath.Base(p.child.Path), Protocol: p.child.Header.Protocol}
	if r != nil && r.K == cassette.KindFrame {
		t, toServer := r.T, r.D == cassette.DirIn
		if at, ok := p.asked[string(r.ID)]; ok && !toServer && r.Kind == "response" && len(r.ID) > 0 {
			t, toServer = at, true // where its request went
		}
		if tc := s.m.Enclosing(p.link.Session, t, toServer); tc != nil {
			o.Tool, o.Title = tc.ID, tc.Title
		}
	}
	return o
}

// Refresh implements Source: each cassette's new records, and linked
// cassettes that appeared (looked for at most once a second).
func (s *LinkedSource) Refresh() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, p := range s.parts {
		if err := p.src.Refresh(); err != nil {
			errs = append(errs, err)
		}
	}
	if time.Since(s.lastLook) >= s.lookEvery {
		s.lastLook = time.Now()
		if kids, err := linked.Children(s.path, s.seen); err == nil {
			for _, k := range kids {
				s.addChild(k)
			}
		}
	}
	s.extend()
	return errors.Join(errs...)
}

// Ended implements Ender: every cassette of the set has its end record.
func (s *LinkedSource) Ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.parts {
		if !p.src.Ended() {
			return false
		}
	}
	return true
}

// Truncated implements Ender: the parent's cut, else the first linked
// cassette's, named.
func (s *LinkedSource) Truncated() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.parts[0].src.Truncated(); t != "" {
		return t
	}
	for _, p := range s.parts[1:] {
		if t := p.src.Truncated(); t != "" {
			return "linked " + p.server + ": " + t
		}
	}
	if len(s.openErrs) > 0 {
		return "linked " + strings.Join(s.openErrs, "; ")
	}
	return ""
}

// TailError is the first cassette's damage after its last good record,
// nil when none is damaged so.
func (s *LinkedSource) TailError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.parts {
		if err := p.src.X.TailError(); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the linked cassettes (not the parent: Link's caller's).
func (s *LinkedSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, p := range s.parts[1:] {
		errs = append(errs, p.src.Close())
	}
	return errors.Join(errs...)
}

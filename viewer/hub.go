package viewer

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rpctap/rpctap/cassette"
)

// Session is one cassette of a directory as the session hub lists it.
type Session struct {
	CassetteFile
	Protocol string
	Command  string    // what was recorded: the child's command line, the socket, or the imported log
	Start    time.Time // the header's created time (the file's mtime if unreadable)
	Duration int64     // ns from the start to the last record
	Frames   int
	Errors   int // violations stored at record time, by severity
	Warnings int
	// State is "live" (no end record yet: a recording in progress), "ended",
	// "cut" (no end record, its child gone and nothing written for 5 s: the
	// recorder was killed), or "damaged: ..." (unreadable from its start, or
	// damaged after its last good record).
	State string
	// Parent is the file name of the cassette this one is linked to
	// (record --deep: an MCP server its ACP agent spawned), Server its
	// mcpServers name; "" when not linked.
	Parent, Server string
	// Depth is how far under its parent List put it (0: a top row), Note
	// why a linked cassette is not under its parent ("parent X is not in
	// this directory", a cycle).
	Depth int
	Note  string
}

// hubEntry is what the scanner knows of one file: the index it keeps open
// while the file is live, and the counts of the records read so far, so
// that a live cassette costs only its new records on each refresh.
type hubEntry struct {
	size   int64
	mod    time.Time
	x      *cassette.Index
	next   uint64 // the first record not counted yet
	s      Session
	pid    int  // the child's, from the start event
	exited bool // an exit event was read
}

// hubScanner lists the cassettes of a directory with their summaries. It
// is safe for use by one goroutine at a time.
type hubScanner struct {
	mu      sync.Mutex
	entries map[string]*hubEntry
	closed  bool // after Close, List keeps no index open
}

func newHubScanner() *hubScanner { return &hubScanner{entries: map[string]*hubEntry{}} }

// hubBatch is how many records a refresh reads at a time.
const hubBatch = 1024

// List returns the cassettes of dir, newest first. Files that are not
// cassettes (no rpctap signature, empty, hidden, directories) are left out.
func (h *hubScanner) List(dir string) ([]Session, error) {
	files, err := ListCassettes(dir)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var out []Session
	for _, f := range files {
		seen[f.Path] = true
		if s, ok := h.scan(f); ok {
			out = append(out, s)
		}
	}
	for p, e := range h.entries {
		if !seen[p] || h.closed {
			if e.x != nil {
				e.x.Close()
			}
			delete(h.entries, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.After(out[j].Start)
		}
		return out[i].Name > out[j].Name
	})
	return groupLinked(out), nil
}

// groupLinked puts each linked session right under its parent, oldest
// first, one Depth deeper; sessions are otherwise in the order given
// (newest first). A session whose parent is not in the list, names
// itself, or is part of a cycle of parents is a top row with a Note.
func groupLinked(ss []Session) []Session {
	byName := make(map[string]int, len(ss))
	for i, s := range ss {
		byName[s.Name] = i
	}
	par := make([]int, len(ss))
	for i := range ss {
		par[i] = -1
		p := ss[i].Parent
		if p == "" {
			continue
		}
		j, ok := byName[p]
		switch {
		case !ok:
			ss[i].Note = "parent " + p + " is not in this directory"
		case j == i:
			ss[i].Note = "names itself as its parent"
		default:
			par[i] = j
		}
	}
	// A cycle of parents has no top: each of its sessions becomes one.
	var cyclic []int
	for i := range ss {
		j := par[i]
		for steps := 0; j >= 0 && j != i && steps < len(ss); steps++ {
			j = par[j]
		}
		if j == i {
			cyclic = append(cyclic, i)
		}
	}
	for _, i := range cyclic {
		par[i] = -1
		ss[i].Note = "its parents form a cycle"
	}
	kids := make([][]int, len(ss))
	for i := len(ss) - 1; i >= 0; i-- { // oldest first under a parent
		if par[i] >= 0 {
			kids[par[i]] = append(kids[par[i]], i)
		}
	}
	out := make([]Session, 0, len(ss))
	var walk func(i, depth int)
	walk = func(i, depth int) {
		s := ss[i]
		s.Depth = depth
		out = append(out, s)
		for _, k := range kids[i] {
			walk(k, depth+1)
		}
	}
	for i := range ss {
		if par[i] < 0 {
			walk(i, 0)
		}
	}
	return out
}

// Close closes the indexes kept open.
func (h *hubScanner) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for p, e := range h.entries {
		if e.x != nil {
			e.x.Close()
		}
		delete(h.entries, p)
	}
}

func (h *hubScanner) scan(f CassetteFile) (Session, bool) {
	e := h.entries[f.Path]
	if e != nil && e.size == f.Size && e.mod.Equal(f.Mod) {
		e.s.CassetteFile = f
		// Unchanged; but a live one whose recorder is gone becomes cut
		// with time alone.
		if e.s.State == "live" && e.cut(f.Mod) {
			e.s.State = "cut"
			if e.x != nil {
				e.x.Close()
				e.x = nil
			}
		}
		return e.s, true
	}
	if e == nil || e.x == nil {
		x, err := cassette.OpenIndex(f.Path)
		if errors.Is(err, cassette.ErrNotCassette) || errors.Is(err, cassette.ErrEmpty) {
			// Not a cassette (or one whose first write has not landed):
			// not a session; looked at again when it changes.
			delete(h.entries, f.Path)
			return Session{}, false
		}
		if err != nil {
			s := Session{CassetteFile: f, Start: f.Mod, State: "damaged: " + err.Error()}
			h.entries[f.Path] = &hubEntry{size: f.Size, mod: f.Mod, s: s}
			return s, true
		}
		e = &hubEntry{x: x, next: 1}
		e.s = headerSession(f, x.Header())
		h.entries[f.Path] = e
	} else if _, err := e.x.Refresh(); err != nil {
		e.s.State = "damaged: " + err.Error()
	}
	e.size, e.mod, e.s.CassetteFile = f.Size, f.Mod, f
	for e.next < e.x.Len() {
		recs, err := e.x.Records(e.next, hubBatch)
		if err != nil || len(recs) == 0 {
			break
		}
		for _, r := range recs {
			switch r.K {
			case cassette.KindFrame:
				if !r.Part {
					e.s.Frames++
				}
			case cassette.KindViolation:
				switch r.Severity {
				case "error":
					e.s.Errors++
				case "warning":
					e.s.Warnings++
				}
			case cassette.KindEvent:
				switch r.Ev {
				case cassette.EventStart:
					e.pid = r.PID
				case cassette.EventExit:
					e.exited = true
				}
			case cassette.KindMeta:
				if r.Protocol != "" {
					e.s.Protocol = r.Protocol
				}
			}
			if r.T > e.s.Duration {
				e.s.Duration = r.T
			}
		}
		e.next += uint64(len(recs))
	}
	switch {
	case strings.HasPrefix(e.s.State, "damaged"):
	case e.x.Ended():
		e.s.State = "ended"
	case e.x.TailError() != nil:
		e.s.State = "damaged: " + e.x.TailError().Error()
	case e.cut(f.Mod):
		e.s.State = "cut"
	default:
		e.s.State = "live"
	}
	if e.s.State != "live" {
		// An ended cassette does not change: its index is closed, and it
		// is read again only if the file does change.
		e.x.Close()
		e.x = nil
	}
	return e.s, true
}

// headerSession fills what the header says.
func headerSession(f CassetteFile, hd cassette.Header) Session {
	s := Session{CassetteFile: f, Protocol: hd.Protocol, Start: f.Mod}
	if hd.Parent != nil {
		s.Parent, s.Server = hd.Parent.Cassette, hd.Parent.Server
	}
	if t, err := time.Parse(time.RFC3339Nano, hd.Created); err == nil {
		s.Start = t
	}
	switch {
	case hd.Imported != nil:
		s.Command = "imported " + hd.Imported.Format
		if hd.Imported.From != "" {
			s.Command += ": " + hd.Imported.From
		}
	case hd.Mode == "socket":
		s.Command = "socket " + hd.Upstream
	case len(hd.Argv) > 0:
		argv := append([]string{filepath.Base(hd.Argv[0])}, hd.Argv[1:]...)
		s.Command = strings.Join(argv, " ")
	}
	return s
}

// cutAfter is how long a cassette without an end record must have been
// left unwritten before the hub calls it cut rather than live: the tap
// writes the child's exit, and the recorder the end record, moments after
// the child dies.
const cutAfter = 5 * time.Second

// cut reports whether a cassette without an end record was left by a
// recorder that is gone: its child has exited or died (the start event's
// pid is not running) and nothing was written for cutAfter. A recording
// in progress, and one without a start event (socket mode), are live.
func (e *hubEntry) cut(mod time.Time) bool {
	if e.pid <= 0 || time.Since(mod) < cutAfter {
		return false
	}
	return e.exited || !processRunning(e.pid)
}

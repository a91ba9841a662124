// Package linked reads the cassettes of a `record --deep` session as one:
// it finds the cassettes linked to a parent (their header's parent names
// it), and follows the parent's ACP frames to say which session each
// linked cassette belongs to (through the id of the request that spawned
// it, docs/cassette-format.md 4.2) and which of that session's tool calls
// encloses a moment of it. The viewer's one timeline and the OTLP export's
// one trace are built on it.
package linked

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
)

// Child is a cassette linked to a parent.
type Child struct {
	Path    string
	Header  cassette.Header
	Created time.Time // the header's created; zero when it cannot be read
}

// Server is the child's name for display: its mcpServers entry's name, or
// its file name when the link names none.
func (c Child) Server() string {
	if c.Header.Parent != nil && c.Header.Parent.Server != "" {
		return c.Header.Parent.Server
	}
	return strings.TrimSuffix(filepath.Base(c.Path), ".cassette")
}

// ReadHeader reads only the signature and header of the cassette at path.
func ReadHeader(path string) (cassette.Header, error) {
	rd, err := cassette.Open(path)
	if err != nil {
		return cassette.Header{}, err
	}
	defer rd.Close()
	return rd.Header(), nil
}

// Children returns the cassettes in parent's directory whose header's
// parent.cassette is parent's file name, oldest first. It reads only each
// file's header; files that are not cassettes (or not readable from their
// start) are not children. A cassette that names itself is not its own
// child; only one level is read (a linked cassette's own children are not),
// so a cycle of parents cannot loop. Seen, when not nil, holds paths
// already known: their headers are not read again (the viewer's follower
// looks for new children every second).
func Children(parent string, seen map[string]bool) ([]Child, error) {
	dir, base := filepath.Dir(parent), filepath.Base(parent)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Child
	for _, e := range ents {
		name := e.Name()
		if name == base || strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, name)
		if seen != nil {
			if seen[p] {
				continue
			}
		}
		h, err := ReadHeader(p)
		if err != nil {
			continue // not a cassette, or not one yet: looked at again later
		}
		if seen != nil {
			seen[p] = true
		}
		if h.Parent == nil || h.Parent.Cassette != base {
			continue
		}
		c := Child{Path: p, Header: h}
		c.Created, _ = time.Parse(time.RFC3339Nano, h.Created)
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

// Tool is one ACP tool call: from the session/update that started it
// (tool_call) to the one that ended it (tool_call_update completed or
// failed), in the parent's time (ns since it started).
type Tool struct {
	Session, ID, Title string
	Start              int64
	End                int64 // -1 while open
	StartRecord        uint64
	Failed             bool
}

// Contains reports whether t (parent time) is within the tool call.
func (t *Tool) Contains(at int64) bool { return at >= t.Start && (t.End < 0 || at <= t.End) }

type spawn struct {
	record  uint64
	t       int64
	method  string
	session string
}

// Map is what a parent cassette says about its linked cassettes: the
// requests that spawned them and the session each resolved to, and the
// tool calls of each session. Feed it the parent's records in order with
// Add (a live parent: as they arrive). Memory: one entry per session/new
// or session/load and per tool call.
type Map struct {
	Created time.Time // the parent's created
	classes protocol.Protocol
	spawns  map[string]*spawn  // request id (compact JSON) -> spawn
	tools   map[string][]*Tool // session -> tool calls in start order
	open    map[string]*Tool   // session NUL tool call id -> open tool call
	prompts map[string]string  // prompt request id -> its session
}

// NewMap returns an empty map for a parent whose header is h.
func NewMap(h cassette.Header) *Map {
	m := &Map{spawns: map[string]*spawn{}, tools: map[string][]*Tool{}, open: map[string]*Tool{}, prompts: map[string]string{}}
	m.Created, _ = time.Parse(time.RFC3339Nano, h.Created)
	m.classes, _ = protocol.Lookup("acp")
	return m
}

// Scan reads the parent cassette at path once (streaming) into a Map. A
// cassette damaged or cut after its header gives what could be read.
func Scan(path string) (*Map, error) {
	rd, err := cassette.Open(path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	m := NewMap(rd.Header())
	for {
		r, err := rd.Next()
		if err != nil {
			var de *cassette.DamageError
			if errors.As(err, &de) && !de.ToEnd {
				continue
			}
			return m, nil // the end, an early end, or damage to the end
		}
		m.Add(r)
	}
}

func compactID(id []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// spawning are the ACP requests whose mcpServers record --deep wraps
// (ACP: session/new and session/load; the unstable session/fork and
// session/resume carry them too).
var spawning = map[string]bool{"session/new": true, "session/load": true, "session/fork": true, "session/resume": true}

// toolCallMark is in every tool_call and tool_call_update update.
var toolCallMark = []byte(`"tool_call`)

// Add feeds the parent's next record.
func (m *Map) Add(r *cassette.Record) {
	if r.K != cassette.KindFrame || r.JSON == nil || r.Part {
		return
	}
	kind, method, id := r.Kind, r.Method, string(r.ID)
	if kind == "" && m.classes != nil {
		info := m.classes.Classify(protocol.DirOf(string(r.D)), r.JSON)
		kind, method, id = string(info.Kind), info.Method, info.ID
	}
	switch {
	case kind == "request" && r.D == cassette.DirIn && spawning[method]:
		s := &spawn{record: r.N, t: r.T, method: method}
		if method == "session/load" || method == "session/resume" {
			// The session is the one named; session/new and session/fork
			// make one, named in their answer.
			s.session = str(r.JSON, "params", "sessionId")
		}
		m.spawns[compactID([]byte(id))] = s
	case kind == "request" && r.D == cassette.DirIn && method == "session/prompt":
		m.prompts[compactID([]byte(id))] = str(r.JSON, "params", "sessionId")
	case kind == "response" && r.D == cassette.DirOut:
		k := compactID([]byte(id))
		if s := m.spawns[k]; s != nil && s.session == "" {
			s.session = str(r.JSON, "result", "sessionId")
		}
		if sess, ok := m.prompts[k]; ok {
			// A turn's end ends the tool calls the agent left open in it,
			// as the OTLP export ends their spans.
			delete(m.prompts, k)
			for key, tc := range m.open {
				if tc.Session == sess {
					tc.End = r.T
					delete(m.open, key)
				}
			}
		}
	case kind == "notification" && r.D == cassette.DirOut && method == "session/update":
		if !bytes.Contains(r.JSON, toolCallMark) {
			return // most updates are streamed chunks: not parsed
		}
		f := protocol.CallFactsOf("acp", method, r.JSON)
		u := f.ToolUpdate
		if u == nil {
			return
		}
		key := f.Conversation + "\x00" + u.ID
		tc := m.open[key]
		if tc == nil {
			if !u.Start {
				return // an update of a call that started before the recording
			}
			tc = &Tool{Session: f.Conversation, ID: u.ID, Title: u.Title, Start: r.T, End: -1, StartRecord: r.N}
			m.open[key] = tc
			m.tools[f.Conversation] = append(m.tools[f.Conversation], tc)
		}
		if u.Title != "" {
			tc.Title = u.Title
		}
		if u.End {
			tc.End, tc.Failed = r.T, u.Failed
			delete(m.open, key)
		}
	}
}

// Link is what the map says of one linked cassette.
type Link struct {
	// Session is the ACP session the cassette's spawning request resolved
	// to: the answer's result.sessionId (session/new, session/fork) or the
	// request's params.sessionId (session/load, session/resume); "" when
	// the parent does not say (the answer is missing).
	Session string
	// SpawnRecord is the record number of the spawning request in the
	// parent; Spawned false when the parent has no such request.
	SpawnRecord uint64
	Spawned     bool
	// Offset is ns to add to the child's record times to put them in the
	// parent's time (the difference of the headers' created times).
	Offset int64
}

// Link resolves a child.
func (m *Map) Link(c Child) Link {
	var l Link
	if !m.Created.IsZero() && !c.Created.IsZero() {
		l.Offset = int64(c.Created.Sub(m.Created))
	}
	if c.Header.Parent == nil {
		return l
	}
	if s := m.spawns[compactID(c.Header.Parent.Request)]; s != nil {
		l.Session, l.SpawnRecord, l.Spawned = s.session, s.record, true
	}
	return l
}

// Slack is how far outside every tool call a moment may be and still be
// put in the nearest one. The taps of a deep recording stamp each frame
// when they read it, and the agent's tap may read a tool_call update a
// little after the server's tap read the tools/call the agent wrote just
// after it: measured up to 0.7 ms on a loaded two-core machine (with
// the cassettes' created and t on one clock; see docs/viewer.md).
const Slack = int64(2 * time.Millisecond)

// Enclosing returns the tool call of session that a linked cassette's
// frame at parent time t belongs to: one that encloses t, give or take
// Slack at each end. When several do (calls back to back, or running at
// once), a frame toward the server (the agent's tools/call) goes to the
// one whose start is nearest, since an agent reports a tool call just
// before it makes it; a frame from the server (its answer, its own
// requests while it works) goes to the one whose end is nearest, since
// the agent reports the call finished once it has the answer (a call
// never reported finished comes last). nil for none. Only the 256 calls
// that started last before t are looked at.
func (m *Map) Enclosing(session string, t int64, toServer bool) *Tool {
	if session == "" {
		return nil
	}
	calls := m.tools[session] // in start order
	i := sort.Search(len(calls), func(i int) bool { return calls[i].Start > t+Slack })
	dist := func(c *Tool) int64 {
		switch {
		case toServer:
			return abs(t - c.Start)
		case c.End < 0:
			return math.MaxInt64
		}
		return abs(c.End - t)
	}
	var best *Tool
	for j := i - 1; j >= 0 && j >= i-256; j-- {
		c := calls[j]
		if c.End >= 0 && c.End < t-Slack {
			continue
		}
		if best == nil || dist(c) < dist(best) {
			best = c // ties: the one started last
		}
	}
	return best
}

func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// str is a string member at a path of a JSON object ("" when absent).
func str(raw []byte, path ...string) string {
	for _, k := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return ""
		}
		raw = obj[k]
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

package linked_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/linked"
	"github.com/rpctap/rpctap/internal/linked/linkedfix"
)

// The set's two MCP cassettes are found from their headers alone, resolve
// to the session the session/new answer named, and each MCP tool call
// falls in the ACP tool call that made it; the server's own log message,
// later, in none.
func TestChildrenAndEnclosing(t *testing.T) {
	dir := t.TempDir()
	set, err := linkedfix.Write(dir, linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Not cassettes, and a cassette of another parent: not children.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, ".hidden.cassette"), []byte("x"), 0o644)
	kids, err := linked.Children(set.Parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 2 || kids[0].Server() != "files" || kids[1].Server() != "git" {
		t.Fatalf("children: %+v", kids)
	}
	if again, _ := linked.Children(set.Files, nil); len(again) != 0 {
		t.Errorf("the files cassette has children: %+v", again)
	}
	m, err := linked.Scan(set.Parent)
	if err != nil {
		t.Fatal(err)
	}
	ms := int64(time.Millisecond)
	for _, c := range []struct {
		kid  int
		t    int64 // the child's own time
		in   bool
		want string
	}{
		{0, (220 - 35) * ms, true, "call_1"},
		{0, (230 - 35) * ms, false, "call_1"},
		{1, (310 - 38) * ms, true, "call_2"},
		{0, (380 - 35) * ms, false, ""},
		{0, (45 - 35) * ms, true, ""},
	} {
		l := m.Link(kids[c.kid])
		if l.Session != "sess-1" || !l.Spawned || l.SpawnRecord != 4 {
			t.Fatalf("link of %s: %+v", kids[c.kid].Server(), l)
		}
		got := ""
		if tc := m.Enclosing(l.Session, c.t+l.Offset, c.in); tc != nil {
			got = tc.ID
		}
		if got != c.want {
			t.Errorf("%s at %dms: in %q, want %q", kids[c.kid].Server(), c.t/ms, got, c.want)
		}
	}
}

// A tool call never reported finished ends with its turn; a session/load
// names its session in its params; an unknown request resolves to none.
func TestMapOpenToolsAndLoad(t *testing.T) {
	m := linked.NewMap(cassette.Header{Created: "2026-11-26T18:00:00Z"})
	ms := int64(time.Millisecond)
	add := func(n uint64, t int64, d cassette.Dir, kind, method, id, js string) {
		r := cassette.NewLineRecord(cassette.KindFrame, d, []byte(js), "\n")
		r.N, r.T, r.Kind, r.Method = n, t*ms, kind, method
		if id != "" {
			r.ID = []byte(id)
		}
		m.Add(&r)
	}
	add(1, 10, cassette.DirIn, "request", "session/load", `"L"`, `{"jsonrpc":"2.0","id":"L","method":"session/load","params":{"sessionId":"old","cwd":"/","mcpServers":[]}}`)
	add(2, 20, cassette.DirIn, "request", "session/prompt", "3", `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"old","prompt":[]}}`)
	add(3, 30, cassette.DirOut, "notification", "session/update", "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","status":"pending"}}}`)
	if tc := m.Enclosing("old", 1000*ms, true); tc == nil || tc.End != -1 {
		t.Fatalf("an open tool call encloses what comes after it: %+v", tc)
	}
	add(4, 50, cassette.DirOut, "response", "", "3", `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`)
	if tc := m.Enclosing("old", 40*ms, false); tc == nil || tc.End != 50*ms {
		t.Errorf("the turn's end ends its open tool call: %+v", tc)
	}
	if tc := m.Enclosing("old", 60*ms, true); tc != nil {
		t.Errorf("after the turn: %+v", tc)
	}
	child := linked.Child{Header: cassette.Header{Parent: &cassette.Parent{Cassette: "p", Request: []byte(` "L" `)}}}
	if l := m.Link(child); l.Session != "old" || l.SpawnRecord != 1 {
		t.Errorf("session/load link: %+v", l)
	}
	child.Header.Parent.Request = []byte("99")
	if l := m.Link(child); l.Spawned || l.Session != "" {
		t.Errorf("unknown request: %+v", l)
	}
}

// session/fork makes a session named in its answer; session/resume names
// the session it resumes.
func TestMapForkResume(t *testing.T) {
	m := linked.NewMap(cassette.Header{Created: "2026-11-26T18:00:00Z"})
	add := func(n uint64, d cassette.Dir, kind, method, id, js string) {
		r := cassette.NewLineRecord(cassette.KindFrame, d, []byte(js), "\n")
		r.N, r.T, r.Kind, r.Method, r.ID = n, int64(n), kind, method, []byte(id)
		m.Add(&r)
	}
	add(1, cassette.DirIn, "request", "session/fork", "5", `{"jsonrpc":"2.0","id":5,"method":"session/fork","params":{"sessionId":"base","cwd":"/","mcpServers":[]}}`)
	add(2, cassette.DirOut, "response", "", "5", `{"jsonrpc":"2.0","id":5,"result":{"sessionId":"forked"}}`)
	add(3, cassette.DirIn, "request", "session/resume", "6", `{"jsonrpc":"2.0","id":6,"method":"session/resume","params":{"sessionId":"old","cwd":"/","mcpServers":[]}}`)
	for id, want := range map[string]string{"5": "forked", "6": "old"} {
		c := linked.Child{Header: cassette.Header{Parent: &cassette.Parent{Cassette: "p", Request: []byte(id)}}}
		if l := m.Link(c); l.Session != want {
			t.Errorf("request %s: session %q, want %q", id, l.Session, want)
		}
	}
}

// Moments at the edges of tool calls, as the taps stamp them: a frame to
// the server just before its call's start (the agent's tool_call update
// read late) goes to that call; between two calls back to back, a frame
// to the server goes to the one starting, one from the server to the one
// ending; beyond Slack, to none.
func TestEnclosingSlack(t *testing.T) {
	m := linked.NewMap(cassette.Header{Created: "2026-11-26T18:00:00Z"})
	ms := int64(time.Millisecond)
	add := func(n uint64, at int64, js string) {
		r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirOut, []byte(js), "\n")
		r.N, r.T, r.Kind, r.Method = n, at, "notification", "session/update"
		m.Add(&r)
	}
	up := func(kind, id, status string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"` + kind + `","toolCallId":"` + id + `","status":"` + status + `"}}}`
	}
	add(1, 10*ms, up("tool_call", "a", "in_progress"))
	add(2, 20*ms, up("tool_call_update", "a", "completed"))
	add(3, 20*ms+ms/10, up("tool_call", "b", "in_progress"))
	add(4, 30*ms, up("tool_call_update", "b", "completed"))
	add(5, 40*ms, up("tool_call", "c", "in_progress")) // never finished
	for _, c := range []struct {
		at   int64
		in   bool
		want string
	}{
		{10*ms - ms/2, true, "a"}, {15 * ms, true, "a"}, {15 * ms, false, "a"},
		{20*ms - ms/4, true, "b"}, {20*ms + ms/4, false, "a"}, {20*ms + ms/2, true, "b"},
		{31 * ms, false, "b"}, {45 * ms, false, "c"}, {45 * ms, true, "c"},
		{7 * ms, true, ""}, {33 * ms, false, ""},
	} {
		got := ""
		if tc := m.Enclosing("s", c.at, c.in); tc != nil {
			got = tc.ID
		}
		if got != c.want {
			t.Errorf("at %.2fms toward the server %v: %q, want %q", float64(c.at)/float64(ms), c.in, got, c.want)
		}
	}
}

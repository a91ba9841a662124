package viewer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/linked/linkedfix"
)

// lineOf is the index of the first line of text containing all of want
// (-1: none).
func lineOf(lines []string, want ...string) int {
	for i, l := range lines {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return i
		}
	}
	return -1
}

func openLinkedSet(t *testing.T, o linkedfix.Options) (linkedfix.Set, *IndexSource, *LinkedSource) {
	t.Helper()
	set, err := linkedfix.Write(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenCassette(set.Parent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ls := Link(set.Parent, p)
	if ls == nil {
		t.Fatal("no linked cassettes found")
	}
	t.Cleanup(func() { ls.Close() })
	return set, p, ls
}

// The ACP cassette and the two MCP cassettes its agent spawned are one
// timeline: each MCP tool call beneath the ACP tool call that made it
// (after its start, before its end, indented), the MCP servers' start-up
// and the files server's late log message in time order marked with their
// server; requests pair within their own cassette (ACP's id 2 and MCP's
// id 2 are different requests); the detail names the server and the
// tool call.
func TestLinkedOneTimeline(t *testing.T) {
	_, _, ls := openLinkedSet(t, linkedfix.Options{})
	if got := strings.Join(ls.Linked(), ","); got != "files,git" {
		t.Fatalf("linked: %s", got)
	}
	h := newHarness(t, ls, Options{})
	h.scr.SetSize(150, 45)
	h.settle()
	text := h.screen()
	lines := strings.Split(text, "\n")
	order := []int{
		lineOf(lines, "→ req", "session/new"),
		lineOf(lines, "■ header files:"),
		lineOf(lines, "→ req", "files: initialize"),
		lineOf(lines, "← resp", "session/new", "30.0ms"),
		lineOf(lines, "tool_call Read README.md"),
		lineOf(lines, "→ req", "  └ files: tools/call", "tool read_file"),
		lineOf(lines, "← resp", "  └ files: tools/call", "10.0ms"),
		lineOf(lines, "tool_call_update completed"),
		lineOf(lines, "tool_call git status"),
		lineOf(lines, "→ req", "  └ git: tools/call"),
		lineOf(lines, "← resp", "  └ git: tools/call"),
		lineOf(lines, "tool_call_update failed"),
		lineOf(lines, "files: notifications/message"),
		lineOf(lines, "← resp", "session/prompt", "300ms"),
	}
	for i, n := range order {
		if n < 0 || i > 0 && n <= order[i-1] {
			t.Fatalf("row %d of the expected order is missing or out of place (%v):\n%s", i, order, text)
		}
	}
	if strings.Contains(lines[order[12]], "└") || strings.Contains(lines[lineOf(lines, "files: tools/list")], "└") {
		t.Errorf("MCP frames outside any tool call are indented:\n%s", text)
	}
	// The detail of the files server's tools/call.
	h.keys("<home>")
	for range order[5] - 2 { // the list's first row is line 2 of the screen
		h.keys("<down>")
	}
	h.keys("<enter>")
	if got := h.screen(); !strings.Contains(got, "from files (20261126T180000Z-files.cassette) in tool call call_1") {
		t.Errorf("the detail does not say where the frame comes from:\n%s", got)
	}
}

// A linked cassette cut off by a killed recorder: its readable records
// are on the timeline, and the title says which one is cut.
func TestLinkedTruncatedChild(t *testing.T) {
	_, _, ls := openLinkedSet(t, linkedfix.Options{CutFiles: true})
	if tr := ls.Truncated(); !strings.HasPrefix(tr, "linked files: ") {
		t.Errorf("Truncated = %q", tr)
	}
	h := newHarness(t, ls, Options{})
	h.scr.SetSize(150, 45)
	h.settle()
	text := h.screen()
	if !strings.Contains(text, "files: initialize") || !strings.Contains(text, "└ git: tools/call") || !strings.Contains(text, "linked files: ") {
		t.Errorf("the cut set:\n%s", text)
	}
}

// A live deep recording: the MCP cassette that appears after the viewer
// opened the ACP one joins the timeline, and positions already shown do
// not move.
func TestLinkedLiveChildAppears(t *testing.T) {
	dir := t.TempDir()
	set, err := linkedfix.Write(t.TempDir(), linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The parent, live: its first 8 records written, no end yet.
	src, _ := OpenCassette(set.Parent)
	all, err := src.X.Records(0, 100)
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(dir, linkedfix.Parent)
	h := *all[0].Header
	w, err := cassette.Create(parent, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	add := func(from, to int) {
		for i := from; i < to; i++ {
			if all[i].K == cassette.KindEnd {
				continue
			}
			r := all[i]
			if err := w.Append(&r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	add(1, 8)
	p, err := OpenCassette(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ls := Link(parent, p)
	if ls == nil {
		t.Fatal("a live deep parent without children yet is not linked")
	}
	defer ls.Close()
	ls.lookEvery = 0
	st := NewStore(ls)
	first, _ := st.Records(0, 8)
	// The files server's cassette appears; the parent goes on.
	b, _ := os.ReadFile(set.Files)
	os.WriteFile(filepath.Join(dir, linkedfix.Files), b, 0o644)
	add(8, len(all))
	if _, err := st.Refresh(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ls.Linked(), ","); got != "files" || ls.TitleSuffix() != " + linked files" {
		t.Fatalf("linked after it appeared: %q, title %q", got, ls.TitleSuffix())
	}
	again, _ := st.Records(0, 8)
	for i := range first {
		if first[i].N != again[i].N || first[i].T != again[i].T || first[i].K != again[i].K {
			t.Fatalf("record at %d moved: %+v then %+v", i, first[i], again[i])
		}
	}
	found := false
	for i := 0; i < st.Len(); i++ {
		if row, ok := st.Row(i); ok && row.Origin == "files" && row.Method == "tools/call" && row.Tool == "call_1" {
			found = true
		}
	}
	if !found {
		t.Errorf("the files server's tools/call is not on the timeline under call_1")
	}
}

// TestLinkedAnswerFollowsRequest: a server's answer belongs to the tool
// call its request went to. The git server answers a request the agent
// made outside any tool call 1 ms before the git tool call starts, inside
// the slack that lets a tools/call read a little early go under its call:
// the answer stays outside, like its request, and the git tools/call and
// its answer stay under the call.
func TestLinkedAnswerFollowsRequest(t *testing.T) {
	_, _, ls := openLinkedSet(t, linkedfix.Options{AnswerNearCall: true})
	h := newHarness(t, ls, Options{})
	h.scr.SetSize(150, 48)
	h.settle()
	text := h.screen()
	lines := strings.Split(text, "\n")
	req := lineOf(lines, "→ req", "git: resources/list")
	resp := lineOf(lines, "← resp", "git: resources/list")
	call := lineOf(lines, "→ req", "  └ git: tools/call")
	answer := lineOf(lines, "← resp", "  └ git: tools/call")
	if req < 0 || resp < 0 || call < 0 || answer < 0 {
		t.Fatalf("rows missing (%d %d %d %d):\n%s", req, resp, call, answer, text)
	}
	if strings.Contains(lines[req], "└") || strings.Contains(lines[resp], "└") {
		t.Errorf("resources/list, asked outside any tool call, is shown under one:\n%s\n%s", lines[req], lines[resp])
	}
}

package viewer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/linked/linkedfix"
)

// writeLinkedCassette writes a small MCP cassette whose header names
// parent (request 1, server).
func writeLinkedCassette(t *testing.T, dir, name, parent, server string, created time.Time) {
	t.Helper()
	h := cassette.Header{Created: created.UTC().Format(time.RFC3339Nano), Protocol: "mcp", Argv: []string{"mcp-" + server},
		Parent: &cassette.Parent{Cassette: parent, Request: []byte("1"), Method: "session/new", Server: server}}
	w, err := cassette.Create(filepath.Join(dir, name), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`), "\n")
	r.T = int64(time.Millisecond)
	if err := w.Append(&r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// hubLines is the hub's screen as lines with runs of blanks made one.
func hubLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return out
}

// The hub lists a deep recording's MCP cassettes right under the ACP
// cassette that spawned them, indented, oldest first, with their server
// names, between the sessions newer and older than it; a linked cassette
// whose parent is not in the directory, and two that name each other,
// are top rows that say so.
func TestHubGroupsLinked(t *testing.T) {
	dir := t.TempDir()
	if _, err := linkedfix.Write(dir, linkedfix.Options{}); err != nil {
		t.Fatal(err)
	}
	writeTestCassette(t, dir, "older.cassette", linkedfix.Start.Add(-time.Hour), []string{"agent-older"}, 1)
	writeTestCassette(t, dir, "newer.cassette", linkedfix.Start.Add(time.Hour), []string{"agent-newer"}, 1)
	writeLinkedCassette(t, dir, "orphan.cassette", "gone.cassette", "lost", linkedfix.Start.Add(2*time.Hour))
	writeLinkedCassette(t, dir, "cyc-a.cassette", "cyc-b.cassette", "a", linkedfix.Start.Add(-2*time.Hour))
	writeLinkedCassette(t, dir, "cyc-b.cassette", "cyc-a.cassette", "b", linkedfix.Start.Add(-3*time.Hour))
	scr := tcell.NewSimulationScreen("UTF-8")
	p := NewPicker(dir, scr)
	defer p.Close()
	scr.SetSize(200, 14)
	p.Draw()
	text := ScreenText(scr)
	lines := hubLines(text)
	at := func(want ...string) int {
		if i := lineOf(lines, want...); i >= 0 {
			return i
		}
		t.Fatalf("no line with %q:\n%s", want, text)
		return -1
	}
	parent := at(linkedfix.Parent, "my-agent --acp")
	if at("orphan.cassette", "lost: mcp-lost (linked: parent gone.cassette is not in this directory)") > at("newer.cassette") ||
		at("newer.cassette") > parent ||
		at("└ "+linkedfix.Files, "files: mcp-files") != parent+1 ||
		at("└ "+linkedfix.Git, "git: mcp-git") != parent+2 ||
		at("older.cassette") != parent+3 {
		t.Errorf("not grouped under the parent, newest first around it:\n%s", text)
	}
	for _, c := range []string{"cyc-a.cassette", "cyc-b.cassette"} {
		if l := lines[at(c)]; !strings.Contains(l, "(linked: its parents form a cycle)") || strings.Contains(l, "└") {
			t.Errorf("a cycle of parents: %s", l)
		}
	}
}

// While the hub runs (its own watcher, as `rpctap view --dir`), the MCP
// server's cassette that a deep recording starts appears under the ACP
// cassette already listed.
func TestHubLinkedAppears(t *testing.T) {
	dir := t.TempDir()
	set, err := linkedfix.Write(t.TempDir(), linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	copyFile := func(from string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(from)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(set.Parent)
	writeTestCassette(t, dir, "older.cassette", linkedfix.Start.Add(-time.Hour), []string{"agent-older"}, 1)
	scr := tcell.NewSimulationScreen("UTF-8")
	p := NewPicker(dir, scr)
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	defer func() {
		scr.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the hub did not stop on q")
		}
	}()
	select {
	case <-p.Started():
	case <-time.After(10 * time.Second):
		t.Fatal("the hub did not start")
	}
	text := func() (s string) { p.Sync(func() { s = ScreenText(scr) }); return s }
	p.Sync(func() { scr.SetSize(200, 10) })
	wait := func(what string, ok func([]string) bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if ok(hubLines(text())) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %s within 15s:\n%s", what, text())
	}
	wait("parent row", func(l []string) bool { return lineOf(l, linkedfix.Parent) >= 0 && lineOf(l, "└") < 0 })
	copyFile(set.Files)
	wait("files row under the parent", func(l []string) bool {
		p := lineOf(l, linkedfix.Parent)
		return p >= 0 && lineOf(l, "└ "+linkedfix.Files, "files: mcp-files") == p+1 && lineOf(l, "older.cassette") == p+2
	})
}

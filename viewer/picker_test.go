package viewer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
)

func TestPickerNewestFirstAndLive(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i, name := range []string{"old.cassette", "mid.cassette", "new.cassette"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Repeat("x", 100*(i+1))), 0o600); err != nil {
			t.Fatal(err)
		}
		mod := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	scr := tcell.NewSimulationScreen("UTF-8")
	p := NewPicker(dir, scr)
	scr.SetSize(100, 12)
	p.Draw()
	text := ScreenText(scr)
	iNew, iMid, iOld := strings.Index(text, "new.cassette"), strings.Index(text, "mid.cassette"), strings.Index(text, "old.cassette")
	if iNew < 0 || !(iNew < iMid && iMid < iOld) {
		t.Fatalf("not newest first:\n%s", text)
	}
	// A cassette appears (the watcher calls Reload): it comes first, and
	// the user's selection stays on the file they had selected.
	p.Key(tcell.NewEventKey(tcell.KeyRune, 'j', tcell.ModNone))
	if err := os.WriteFile(filepath.Join(dir, "live.cassette"), []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Reload()
	p.Draw()
	text = ScreenText(scr)
	if strings.Index(text, "live.cassette") > strings.Index(text, "new.cassette") {
		t.Errorf("the new cassette is not first:\n%s", text)
	}
	if !selectedLine(text, "mid.cassette") {
		t.Errorf("selection did not stay on mid.cassette:\n%s", text)
	}
	p.Key(tcell.NewEventKey(tcell.KeyEnter, 0, tcell.ModNone))
	if got := p.Chosen(); got != filepath.Join(dir, "mid.cassette") {
		t.Errorf("chosen %q", got)
	}
}

func TestPickerEmptyDir(t *testing.T) {
	scr := tcell.NewSimulationScreen("UTF-8")
	dir := filepath.Join(t.TempDir(), "none")
	p := NewPicker(dir, scr)
	scr.SetSize(140, 8)
	p.Draw()
	if text := ScreenText(scr); !strings.Contains(text, "no cassettes in "+dir+" yet") {
		t.Errorf("empty directory not explained:\n%s", text)
	}
	p.Key(tcell.NewEventKey(tcell.KeyRune, 'q', tcell.ModNone))
	if p.Chosen() != "" {
		t.Error("q chose something")
	}
}

// selectedLine reports whether the line containing s is marked selected.
func selectedLine(text, s string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return strings.HasPrefix(l, "▶")
		}
	}
	return false
}

// TestPickerNote: after a chosen file could not be opened, the picker
// says why and has that file selected.
func TestPickerNote(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.cassette", "junk.txt", "b.cassette"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	scr := tcell.NewSimulationScreen("UTF-8")
	p := NewPicker(dir, scr)
	scr.SetSize(120, 10)
	junk := filepath.Join(dir, "junk.txt")
	p.SetNote(junk+": not a cassette (no rpctap header)", junk)
	p.Draw()
	text := ScreenText(scr)
	if !strings.Contains(text, "not a cassette (no rpctap header)") || !strings.Contains(text, "Enter opens another") {
		t.Errorf("the note is not shown:\n%s", text)
	}
	p.Key(tcell.NewEventKey(tcell.KeyEnter, 0, tcell.ModNone))
	if p.Chosen() != junk {
		t.Errorf("the failed file is not selected: Enter chose %q", p.Chosen())
	}
}

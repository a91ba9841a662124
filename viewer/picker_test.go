package viewer

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/rpctap/rpctap/cassette"
)

// writeTestCassette writes a complete cassette of frames frames, created
// at created, and returns its path.
func writeTestCassette(t *testing.T, dir, name string, created time.Time, argv []string, frames int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	w, err := cassette.Create(path, cassette.Header{Created: created.UTC().Format(time.RFC3339Nano), Protocol: "acp", Argv: argv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < frames; i++ {
		r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirIn, []byte(`{"jsonrpc":"2.0","method":"x"}`), "\n")
		r.T = int64(i+1) * int64(time.Second)
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPickerNewestFirstAndLive(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i, name := range []string{"old.cassette", "mid.cassette", "new.cassette"} {
		writeTestCassette(t, dir, name, base.Add(time.Duration(i)*time.Minute), []string{"/usr/bin/agent-" + name[:3], "--acp"}, i+1)
	}
	// Not sessions: another program's file, an empty one, a hidden one.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a cassette"), 0o600)
	os.WriteFile(filepath.Join(dir, "zero.cassette"), nil, 0o600)
	scr := tcell.NewSimulationScreen("UTF-8")
	p := NewPicker(dir, scr)
	defer p.Close()
	scr.SetSize(150, 12)
	p.Draw()
	text := ScreenText(scr)
	iNew, iMid, iOld := strings.Index(text, "new.cassette"), strings.Index(text, "mid.cassette"), strings.Index(text, "old.cassette")
	if iNew < 0 || !(iNew < iMid && iMid < iOld) {
		t.Fatalf("not newest first:\n%s", text)
	}
	if strings.Contains(text, "notes.txt") || strings.Contains(text, "zero.cassette") {
		t.Errorf("files that are not cassettes are listed:\n%s", text)
	}
	if !regexp.MustCompile(`ended\s+acp\s+2\.00s\s+2\s+·\s+·\s+mid\.cassette\s+agent-mid --acp`).MatchString(text) {
		t.Errorf("mid.cassette's row lacks state, protocol, command, duration, frames, errors, warnings:\n%s", text)
	}
	// A cassette appears (the watcher calls Reload): it comes first, and
	// the user's selection stays on the file they had selected.
	p.Key(tcell.NewEventKey(tcell.KeyRune, 'j', tcell.ModNone))
	writeTestCassette(t, dir, "live.cassette", time.Now(), []string{"agent"}, 1)
	p.Reload()
	p.Draw()
	text = ScreenText(scr)
	if i := strings.Index(text, "live.cassette"); i < 0 || i > strings.Index(text, "new.cassette") {
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

// A recording starts, grows and ends while the hub shows it: it is listed
// live with its frames and stored findings so far, then ended; each
// reload reads only the records added since the last one.
func TestHubLiveRecording(t *testing.T) {
	dir := t.TempDir()
	scr := tcell.NewSimulationScreen("UTF-8")
	p := NewPicker(dir, scr)
	defer p.Close()
	scr.SetSize(150, 8)
	p.Draw()
	if !strings.Contains(ScreenText(scr), "no cassettes in") {
		t.Fatalf("empty directory:\n%s", ScreenText(scr))
	}
	path := filepath.Join(dir, "rec.cassette")
	w, err := cassette.Create(path, cassette.Header{Created: time.Now().UTC().Format(time.RFC3339Nano), Argv: []string{"my-agent"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	add := func(n int, t0 int64) {
		for i := 0; i < n; i++ {
			r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), "\n")
			r.T = t0 + int64(i)
			if err := w.Append(&r); err != nil {
				t.Fatal(err)
			}
		}
		v := cassette.Record{K: cassette.KindViolation, T: t0 + int64(n), Ref: 1, Code: "x.y", Severity: "warning"}
		if err := w.Append(&v); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	row := func() string {
		p.Reload()
		p.Draw()
		for _, l := range strings.Split(ScreenText(scr), "\n") {
			if strings.Contains(l, "rec.cassette") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("rec.cassette not listed:\n%s", ScreenText(scr))
		return ""
	}
	add(3, int64(time.Second))
	if r := row(); !strings.Contains(r, "live") || !strings.Contains(r, "1.00s 3 · 1 rec.cassette my-agent") {
		t.Errorf("live row: %s", r)
	}
	if !strings.Contains(ScreenText(scr), "1 sessions (1 live)") {
		t.Errorf("status line:\n%s", ScreenText(scr))
	}
	add(2, int64(2*time.Second))
	if r := row(); !strings.Contains(r, "live") || !strings.Contains(r, "5 · 2 rec.cassette my-agent") {
		t.Errorf("after more records: %s", r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if r := row(); !strings.Contains(r, "ended") || !strings.Contains(r, "5 · 2 rec.cassette") {
		t.Errorf("after the end: %s", r)
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
	for _, name := range []string{"a.cassette", "b.cassette"} {
		writeTestCassette(t, dir, name, time.Now(), []string{"x"}, 1)
	}
	// A cassette damaged from its start is listed (it is one), with why.
	junk := filepath.Join(dir, "junk.cassette")
	good, _ := os.ReadFile(filepath.Join(dir, "a.cassette"))
	os.WriteFile(junk, append(good[:40:40], make([]byte, 200)...), 0o600)
	scr := tcell.NewSimulationScreen("UTF-8")
	p := NewPicker(dir, scr)
	scr.SetSize(120, 10)
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

// A cassette whose recorder was killed (no end record, its child gone,
// nothing written for a while) is listed as cut; the same while its child
// runs is live.
func TestHubCut(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("needs true(1)")
	}
	for name, pid := range map[string]int{"killed.cassette": gone.Process.Pid, "running.cassette": os.Getpid()} {
		p := filepath.Join(dir, name)
		w, err := cassette.Create(p, cassette.Header{Created: time.Now().UTC().Format(time.RFC3339Nano), Argv: []string{"agent"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := cassette.Record{K: cassette.KindEvent, Ev: cassette.EventStart, PID: pid}
		w.Append(&start)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Minute)
		os.Chtimes(p, old, old)
	}
	h := newHubScanner()
	defer h.Close()
	s, err := h.List(dir)
	if err != nil || len(s) != 2 {
		t.Fatalf("%v %v", s, err)
	}
	got := map[string]string{}
	for _, x := range s {
		got[x.Name] = x.State
	}
	if got["killed.cassette"] != "cut" || got["running.cassette"] != "live" {
		t.Errorf("states %v, want killed cut and running live", got)
	}
	// Listed live while recently written, then cut with time alone (the
	// file does not change).
	p := filepath.Join(dir, "killed.cassette")
	h2 := newHubScanner()
	defer h2.Close()
	os.Chtimes(p, time.Now(), time.Now())
	if s, _ := h2.List(dir); stateOf(s, "killed.cassette") != "live" {
		t.Errorf("just written: %q, want live", stateOf(s, "killed.cassette"))
	}
	st, _ := os.Stat(p)
	h2.entries[p].mod = st.ModTime().Add(-time.Minute) // as if a minute passed
	os.Chtimes(p, st.ModTime().Add(-time.Minute), st.ModTime().Add(-time.Minute))
	if s, _ := h2.List(dir); stateOf(s, "killed.cassette") != "cut" {
		t.Errorf("a minute later: %q, want cut", stateOf(s, "killed.cassette"))
	}
}

func stateOf(s []Session, name string) string {
	for _, x := range s {
		if x.Name == name {
			return x.State
		}
	}
	return ""
}

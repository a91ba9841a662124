package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/rpctap/rpctap/viewer"
)

// The session hub on a SimulationScreen, running as `rpctap view --dir`
// runs it (its own fsnotify watcher, no reload by hand), while a real
// `rpctap record` session of the bundled demo agent starts and ends: the
// session appears live, a live one opens followed, and it turns ended.
func TestHubRecordingStartsAndEnds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tapes")
	scr := tcell.NewSimulationScreen("UTF-8")
	p := viewer.NewPicker(dir, scr)
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	defer func() {
		scr.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the hub did not stop on q")
		}
	}()
	select {
	case <-p.Started():
	case <-time.After(10 * time.Second):
		t.Fatal("the hub did not start")
	}
	// The screen is read on the picker's goroutine (tview draws it there).
	text := func() (s string) { p.Sync(func() { s = viewer.ScreenText(scr) }); return s }
	p.Sync(func() { scr.SetSize(150, 10) })
	// rowOf waits for the session's row to show want (a regexp).
	rowOf := func(want string, within time.Duration) string {
		re := regexp.MustCompile(want)
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			for _, l := range strings.Split(text(), "\n") {
				if strings.Contains(l, "demo-agent") && re.MatchString(strings.Join(strings.Fields(l), " ")) {
					return strings.Join(strings.Fields(l), " ")
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %q row within %v:\n%s", want, within, text())
		return ""
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(text(), "no cassettes in") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(text(), "no cassettes in") {
		t.Fatalf("empty hub:\n%s", text())
	}

	// The demo agent streams its answer in chunks 150ms apart: a session
	// of a few seconds.
	cmd := exec.Command("rpctap", "demo-client", "--", "rpctap", "record", "--dir", dir, "--", "rpctap", "demo-agent", "--delay", "150ms")
	cmd.Env = rpctapEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Live, and then (the list follows the recording) with its protocol
	// and its first frames.
	rowOf(" live ", 20*time.Second)
	live := rowOf(` live acp \S+ [1-9]\d* `, 20*time.Second)
	// Opening a live cassette follows it.
	cas, _ := filepath.Glob(filepath.Join(dir, "*.cassette"))
	if len(cas) == 1 {
		if code, screen, errs := viewMain("view", "--dump", "150x8", cas[0]); code != 0 || !strings.Contains(screen, "FOLLOW") {
			t.Errorf("view of the live cassette: exit %d, not followed:\n%s%s", code, screen, errs)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the session: %v\n%s", err, out.String())
	}
	ended := rowOf(" ended acp \\S+ 22 ", 20*time.Second)
	t.Logf("live: %s\nended: %s", live, ended)
}

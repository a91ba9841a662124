package viewer

import (
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
)

// TestRunLoop drives the real tview event loop on a SimulationScreen:
// keys arrive through the screen, new records through the follower, and
// q ends Run.
func TestRunLoop(t *testing.T) {
	all := acpSession()
	src := NewMemSource(all[:10]...)
	scr := tcell.NewSimulationScreen("UTF-8")
	store := NewStore(src)
	app := New(store, Options{Name: "live", Screen: scr, Follow: true,
		Follower: &Follower{Store: store, Interval: 2 * time.Millisecond}})
	scr.SetSize(120, 30)
	done := make(chan error, 1)
	go func() { done <- app.Run() }()

	// onUI runs f on the UI goroutine (where drawing happens), so reading
	// the screen does not race with a draw.
	onUI := func(f func()) {
		ch := make(chan struct{})
		go app.tv.QueueUpdate(func() { f(); close(ch) })
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("UI goroutine did not answer")
		}
	}
	waitUI := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var ok bool
			onUI(func() { app.Draw(); ok = cond() })
			if ok {
				return
			}
			if time.Now().After(deadline) {
				var text string
				onUI(func() { text = ScreenText(scr) })
				t.Fatalf("timed out waiting for %s:\n%s", what, text)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitUI("the first screen", func() bool { return strings.Contains(ScreenText(scr), "session/prompt") })
	waitUI("the selection at the bottom", func() bool { return app.SelectedRecord() == 9 })

	scr.InjectKey(tcell.KeyRune, 'k', tcell.ModNone)
	waitUI("k to move up", func() bool { return app.SelectedRecord() == 8 })

	src.Append(all[10:]...)
	waitUI("the new records", func() bool { return strings.Contains(ScreenText(scr), "end of cassette") })
	var sel int
	onUI(func() { sel = app.SelectedRecord() })
	if sel != 8 {
		t.Errorf("selection moved to #%d while the user had it on #8", sel)
	}

	scr.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end Run")
	}
}

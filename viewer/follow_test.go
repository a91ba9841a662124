package viewer

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// waitFor settles and redraws until cond holds.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.settle()
		h.app.Draw()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFollowKeepsSelection(t *testing.T) {
	all := acpSession()
	src := NewMemSource(all[:8]...)
	h := newHarness(t, src, Options{Follow: true})
	h.app.opts.Follower = &Follower{Store: h.app.store, Interval: 2 * time.Millisecond}
	h.app.startFollower()

	// A concurrent writer appends records one by one.
	var wg sync.WaitGroup
	write := func(from, to int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from; i < to; i++ {
				r := all[i]
				src.Append(r)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	write(8, 12)
	h.waitFor("records 8-11 to appear", func() bool { return h.app.store.Len() == 12 })
	wg.Wait()
	h.waitFor("the selection to follow the bottom", func() bool { return h.selected() == 11 })
	if !strings.Contains(h.screen(), "FOLLOW") {
		t.Error("title bar does not say FOLLOW")
	}

	// The user moves up: the selection stays there while records arrive.
	h.keys("kk")
	if h.selected() != 9 {
		t.Fatalf("after kk selected #%d, want #9", h.selected())
	}
	write(12, 20)
	h.waitFor("records 12-19 to appear", func() bool { return h.app.store.Len() == 20 })
	wg.Wait()
	h.waitFor("the table to grow", func() bool { return h.app.lastRow() == 20 })
	if h.selected() != 9 {
		t.Errorf("selection moved to #%d while following; want it kept on #9", h.selected())
	}
	scr := h.screen()
	if !strings.Contains(scr, "paused") || !strings.Contains(scr, "▶ 9 ") {
		t.Errorf("screen does not show the paused follow with #9 selected:\n%s", scr)
	}
	// The analysis caught up with the new records: #17 pairs with #7.
	if p, ok := h.app.store.Pair(17); !ok || p != 7 {
		t.Errorf("new response #17 paired with %d (%v), want #7", p, ok)
	}

	// G goes back to the bottom and resumes sticking to it.
	h.keys("G")
	write(20, len(all))
	h.waitFor("the rest to appear", func() bool { return h.app.store.Len() == len(all) })
	wg.Wait()
	h.waitFor("the selection to follow the bottom again", func() bool { return h.selected() == len(all)-1 })
}

package viewer

import (
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Follower notices records appended to a cassette: it watches the
// cassette's directory with fsnotify (a file being rewritten or replaced is
// seen as well as one being appended to) and also polls, because inotify
// does not see every filesystem (network mounts, some containers) and a
// writer may be in another mount namespace.
type Follower struct {
	Store *Store
	// Path is the cassette file; empty means poll only (in-memory sources).
	Path string
	// Interval between polls; default 1s with fsnotify, 250ms without.
	Interval time.Duration
}

// Run calls Store.Refresh on every change and added(n) when n records
// appeared (or the cassette was found to have ended), until quit is closed. It runs in its own goroutine; added is
// called from it.
func (f *Follower) Run(quit <-chan struct{}, added func(n int)) {
	interval := f.Interval
	var events <-chan fsnotify.Event
	if f.Path != "" {
		if w, err := fsnotify.NewWatcher(); err == nil {
			defer w.Close()
			if err := w.Add(filepath.Dir(f.Path)); err == nil {
				events = w.Events
				if interval == 0 {
					interval = time.Second
				}
			}
		}
	}
	if interval == 0 {
		interval = 250 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	base := filepath.Base(f.Path)
	for {
		select {
		case <-quit:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if filepath.Base(ev.Name) != base || !ev.Has(fsnotify.Write|fsnotify.Create) {
				continue
			}
		case <-tick.C:
		}
		wasEnded := f.Store.Ended()
		// Also report when only the end state changed: the index may
		// learn that the cassette ended after its end record was read.
		if n, _ := f.Store.Refresh(); n > 0 || f.Store.Ended() != wasEnded {
			added(n)
		}
	}
}

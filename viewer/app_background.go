package viewer

import (
	"time"
)

// The App's background work: following a growing cassette, the analysis
// pass, filling filtered views. Jobs run on their own goroutines (spawn) and
// hand their results to the UI goroutine (post).

// StartFollowing starts reading new records (once) without Run, for an App
// driven headless: the follower hands them over through Settle.
func (a *App) StartFollowing() { a.startFollower() }

// startFollower starts reading new records (once).
func (a *App) startFollower() {
	if !a.followerOn.CompareAndSwap(false, true) {
		return
	}
	f := a.opts.Follower
	if f == nil {
		f = &Follower{Store: a.store, Interval: 250 * time.Millisecond}
	}
	go f.Run(a.quit, a.onNewRecords)
}

// pump hands work finished in the background to the UI goroutine.
func (a *App) pump() {
	for {
		select {
		case f := <-a.updates:
			a.tv.QueueUpdateDraw(f)
		case <-a.quit:
			return
		}
	}
}

// post runs f on the UI goroutine (and redraws). Background jobs call it;
// input handlers never do: they change state directly.
func (a *App) post(f func()) {
	select {
	case a.updates <- f:
	case <-a.quit:
	}
}

// spawn runs f in the background, counted so that tests can wait.
func (a *App) spawn(f func()) {
	a.jobs.Add(1)
	go func() {
		defer a.jobs.Add(-1)
		f()
	}()
}

// onNewRecords is the Follower's callback (its goroutine): records were added.
func (a *App) onNewRecords(added int) {
	a.post(func() { a.recordsAdded() })
}

// recordsAdded updates the UI after the store grew (UI goroutine).
func (a *App) recordsAdded() {
	a.content.invalidate()
	a.kickScan()
	if !a.view.All() {
		a.kickFill(a.view)
	}
	if a.trActive.Load() {
		a.kickTranscript()
	}
	a.keepPosition()
	if a.follow && a.store.Ended() {
		// The recording closed: nothing more will come.
		a.follow, a.sticky = false, false
		a.msg = "the recording ended"
	}
	a.refreshStatus()
}

// keepPosition sticks to the bottom when following and the user has not
// moved away; otherwise it keeps the selected record where it is.
func (a *App) keepPosition() {
	if a.sticky {
		a.selectRow(a.lastRow())
		return
	}
	off, _ := a.table.GetOffset()
	a.table.SetOffset(off, 0)
}

// kickScan brings the analysis up to date in the background.
func (a *App) kickScan() {
	if !a.scanning.CompareAndSwap(false, true) {
		a.scanAgain.Store(true)
		return
	}
	a.spawn(func() {
		for {
			last := time.Now()
			for !a.store.Scan(1 << 15) {
				if a.Done() {
					a.scanning.Store(false)
					return
				}
				if time.Since(last) > 200*time.Millisecond {
					last = time.Now()
					a.post(a.analysisProgress)
				}
			}
			a.post(a.analysisProgress)
			a.scanning.Store(false)
			if !a.scanAgain.Swap(false) || !a.scanning.CompareAndSwap(false, true) {
				return
			}
		}
	})
}

// analysisProgress refreshes what depends on the analysis (UI goroutine).
func (a *App) analysisProgress() {
	a.content.invalidate()
	if a.view.Filter().ViolationsOnly {
		a.kickFill(a.view)
	}
	switch a.mode {
	case modeStats:
		a.showStats()
	}
	if a.detailOpen {
		a.showDetail()
	}
	a.refreshStatus()
}

// kickFill fills a filtered view in the background.
func (a *App) kickFill(v *View) {
	gen := a.fillGen.Add(1)
	a.spawn(func() {
		if v.Filter().NeedsAnalysis() && !v.Filter().ViolationsOnly {
			// Latencies and violations are the analysis's: let it catch
			// up with the records first.
			for a.fillGen.Load() == gen && !a.Done() && !a.store.Scan(1<<15) {
			}
		}
		last := time.Now()
		for a.fillGen.Load() == gen && !a.Done() {
			done := a.store.Fill(v, 1<<15)
			if done || time.Since(last) > 200*time.Millisecond {
				last = time.Now()
				a.post(func() {
					if a.view == v {
						a.content.invalidate()
						if a.sticky {
							a.selectRow(a.lastRow())
						}
					}
				})
			}
			if done || v.Filter().ViolationsOnly {
				return // a violations-only view is refilled as the analysis goes on
			}
		}
	})
}

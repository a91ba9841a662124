package viewer

import (
	"time"
)

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
	if f := a.view.Filter(); f.ViolationsOnly {
		a.kickFill(a.view)
	} else if f.NeedsAnalysis() && a.view.analysed < a.store.Len() && a.store.Scanned() >= a.store.Len() {
		// err and slow> looked at pairs and violations the analysis had
		// not found yet: filter again now that it has caught up.
		a.setView(NewView(f), a.selectedPos())
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

// transcriptWindow is how many records on each side of the selection the
// transcript of a large cassette folds (its text is kept in memory).
const transcriptWindow = 20000

// openTranscript starts folding the window of records around the
// selection (the whole cassette when it is small), unless that window is
// already folded.
func (a *App) openTranscript() {
	n := a.store.Len()
	from, end := 0, -1
	if n > 2*transcriptWindow {
		sel := max(a.selectedPos(), 0)
		from = max(0, min(sel-transcriptWindow, n-2*transcriptWindow))
		if from+2*transcriptWindow < n {
			end = from + 2*transcriptWindow
		}
	}
	a.trMu.Lock()
	same := a.tr != nil && a.trFrom == from && a.trEnd == end
	if !same {
		a.tr, a.trFrom, a.trNext, a.trEnd = &Transcript{}, from, from, end
		a.trGen++
	}
	a.trMu.Unlock()
	a.trActive.Store(end < 0)
	if same {
		a.showTranscript()
		return
	}
	a.text.SetText("folding the transcript…")
	a.kickTranscript()
}

// kickTranscript folds the window's new records in the background.
func (a *App) kickTranscript() {
	a.trMu.Lock()
	gen := a.trGen
	a.trMu.Unlock()
	a.spawn(func() {
		for !a.Done() {
			a.trMu.Lock()
			if gen != a.trGen {
				a.trMu.Unlock()
				return
			}
			limit := a.store.Len()
			if a.trEnd >= 0 {
				limit = a.trEnd
			}
			if a.trNext >= limit {
				a.trMu.Unlock()
				break
			}
			recs, err := a.store.Records(a.trNext, min(scanBatch, limit-a.trNext))
			if err != nil || len(recs) == 0 {
				a.trMu.Unlock()
				break
			}
			for i := range recs {
				a.tr.Add(&recs[i])
			}
			a.trNext += len(recs)
			a.trMu.Unlock()
		}
		a.post(func() {
			if a.mode == modeTranscript {
				a.showTranscript()
			}
		})
	})
}

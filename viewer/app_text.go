package viewer

import (
	"fmt"
	"strconv"
	"strings"
)

// The text pane's views: the transcript and the statistics, whose rows
// act (Enter jumps to a record or filters by a method).

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
		a.tr, a.trFrom, a.trNext, a.trEnd = NewTranscript(a.store.Protocol()), from, from, end
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

func (a *App) showTranscript() {
	a.trMu.Lock()
	s, targets := renderTranscript(a.tr, true)
	a.setTargets(targets)
	if n := a.store.Len(); a.trFrom > 0 || a.trEnd >= 0 && a.trEnd < n {
		end := n
		if a.trEnd >= 0 {
			end = a.trEnd
		}
		s = fmt.Sprintf("[olive]records #%d to #%d, around the selection: a large cassette is folded a window at a time (move in the list and press t again)[-]\n\n", a.trFrom, end-1) + s
	}
	a.trMu.Unlock()
	a.text.SetText(s)
	a.highlightTarget(false)
}

// setTargets replaces the actionable rows of the text pane, keeping the
// highlighted one when it is still there.
func (a *App) setTargets(ids []string) {
	cur := ""
	if a.target >= 0 && a.target < len(a.targets) {
		cur = a.targets[a.target]
	}
	a.targets, a.target = ids, -1
	for i, id := range ids {
		if id == cur {
			a.target = i
		}
	}
}

// highlightTarget shows the highlighted row (scrolling to it when scroll).
func (a *App) highlightTarget(scroll bool) {
	if a.target < 0 || a.target >= len(a.targets) {
		a.text.Highlight()
		return
	}
	a.text.Highlight(a.targets[a.target])
	if scroll {
		a.text.ScrollToHighlight()
	}
}

// moveTarget moves the highlight in the transcript or statistics by d rows.
func (a *App) moveTarget(d int) {
	if len(a.targets) == 0 {
		return
	}
	a.target = min(max(a.target+d, 0), len(a.targets)-1)
	a.highlightTarget(true)
}

// actOnTarget is Enter in the transcript (jump to the entry's record in the
// list) or the statistics (filter the list by the row's method).
func (a *App) actOnTarget() {
	if a.target < 0 || a.target >= len(a.targets) {
		a.msg = "move to a row with ↑ ↓ first"
		return
	}
	id := a.targets[a.target]
	switch id[0] {
	case 'r':
		pos, err := strconv.Atoi(id[1:])
		if err != nil {
			return
		}
		a.setMode(modeList)
		a.jumpTo(pos)
	case 'm':
		i, err := strconv.Atoi(id[1:])
		if err != nil || i >= len(a.statsMethods) {
			return
		}
		f, err := ParseFilter(statsFilter(a.statsMethods[i]))
		if err != nil {
			return
		}
		pos := a.selectedPos()
		a.setMode(modeList)
		a.setView(NewView(f), pos)
		a.kickFill(a.view)
		a.msg = "filtered by " + a.statsMethods[i]
	}
}

func (a *App) showStats() {
	st := a.store.Stats()
	s, methods := renderStats(st, true)
	a.statsMethods = methods
	ids := make([]string, len(methods))
	for i := range methods {
		ids[i] = "m" + strconv.Itoa(i)
	}
	a.setTargets(ids)
	if n := a.store.Len(); st.Records < n {
		s = fmt.Sprintf("[olive]analysed %d of %d records…[-]\n\n", st.Records, n) + s
	}
	a.text.SetText(s)
	a.highlightTarget(false)
}

// statsFilter is the filter for a statistics row: its method exactly
// (m:initialize would also keep notifications/initialized), or for the
// rows of frames that name no method, "(response)" and the like, the
// frames of that kind without one.
func statsFilter(method string) string {
	if strings.HasPrefix(method, "(") && strings.HasSuffix(method, ")") {
		return "kind:" + method[1:len(method)-1] + " m="
	}
	return "m=" + method
}

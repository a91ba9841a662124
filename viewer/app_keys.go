package viewer

import (
	"fmt"
	"os"
	"slices"

	"github.com/gdamore/tcell/v2"
)

// Keys: the App's own key handling, before the focused widget's, and the
// help text that lists them.

// handleKey is the App's input capture. It changes state directly and
// never waits for the UI goroutine (it runs on it).
func (a *App) handleKey(ev *tcell.EventKey) *tcell.EventKey {
	if a.inputKind != "" {
		if ev.Key() == tcell.KeyCtrlU {
			a.input.SetText("")
			return nil
		}
		return ev // the input field has the keys
	}
	if ev.Key() != tcell.KeyRune || ev.Rune() != 'n' && ev.Rune() != 'N' {
		if !a.searching {
			a.msg = ""
		}
	}
	if a.helpOpen {
		switch {
		case ev.Key() == tcell.KeyEscape, ev.Key() == tcell.KeyRune && (ev.Rune() == '?' || ev.Rune() == 'q'):
			a.showHelp(false)
			return nil
		}
		return ev // scroll the help
	}
	if a.hs.open {
		if ev = a.heldKey(ev); ev == nil {
			return nil
		}
	}
	detailFocused := a.detailOpen && a.tv.GetFocus() == a.detail
	switch ev.Key() {
	case tcell.KeyEscape:
		a.backOneLevel()
		return nil
	case tcell.KeyEnter:
		if a.mode == modeList && !detailFocused {
			a.openDetail()
			return nil
		}
		switch a.mode {
		case modeFlows:
			a.showFlow()
			return nil
		case modeTranscript, modeStats:
			a.actOnTarget()
			return nil
		}
	case tcell.KeyDown, tcell.KeyUp:
		if a.mode == modeTranscript || a.mode == modeStats {
			d := 1
			if ev.Key() == tcell.KeyUp {
				d = -1
			}
			a.moveTarget(d)
			return nil
		}
	case tcell.KeyTab, tcell.KeyBacktab:
		if a.mode == modeList && a.detailOpen {
			if detailFocused {
				a.tv.SetFocus(a.table)
			} else {
				a.tv.SetFocus(a.detail)
			}
		}
		return nil
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		a.back()
		return nil
	case tcell.KeyCtrlD, tcell.KeyCtrlU:
		if a.mode == modeList && !detailFocused {
			_, _, _, h := a.table.GetInnerRect()
			row, _ := a.table.GetSelection()
			step := max(h/2, 1)
			if ev.Key() == tcell.KeyCtrlU {
				step = -step
			}
			a.userSelect(min(max(row+step, 1), a.lastRow()))
			return nil
		}
	case tcell.KeyRune:
		return a.handleRune(ev, detailFocused)
	}
	return ev
}

// userSelect moves the selection as a user move.
func (a *App) userSelect(row int) {
	a.table.Select(row, 0) // fires onSelectionChanged as a user move
}

func (a *App) handleRune(ev *tcell.EventKey, detailFocused bool) *tcell.EventKey {
	switch ev.Rune() {
	case 'q':
		if !a.backOneLevel() {
			a.wentBack = a.opts.Back
			a.Stop()
		}
		return nil
	case 'Q':
		a.Stop()
		return nil
	case '?':
		a.showHelp(true)
		return nil
	case '/':
		a.openInput("search", "/", "")
		return nil
	case 'n', 'N':
		a.runSearch(ev.Rune() == 'N')
		return nil
	case 'f':
		a.openInput("filter", "filter: ", a.view.Filter().String())
		return nil
	case 'v':
		a.toggleFilter(func(f *Filter) { f.ViolationsOnly = !f.ViolationsOnly })
		return nil
	case 'c':
		a.toggleFilter(func(f *Filter) { f.HideChunks = !f.HideChunks })
		return nil
	case 'a':
		a.toggleFilter(func(f *Filter) { f.HideAux = !f.HideAux })
		return nil
	case 'd':
		a.dimAux = !a.dimAux
		a.content.invalidate()
		return nil
	case 'o':
		a.toggleMode(modeFlows, modeFlowDetail)
		return nil
	case 't':
		a.toggleMode(modeTranscript)
		return nil
	case 's':
		a.toggleMode(modeStats)
		return nil
	case 'H':
		if a.opts.Control != nil {
			a.showHeld(!a.hs.open)
			a.RefreshControl()
			return nil
		}
	case 'F':
		a.follow = !a.follow
		a.sticky = a.follow
		if a.follow {
			a.selectRow(a.lastRow())
			a.startFollower()
		}
		return nil
	}
	if a.mode != modeList {
		return ev // the text view scrolls with j/k/g/G
	}
	switch ev.Rune() {
	case 'p':
		a.jumpPair()
		return nil
	case 'y':
		a.copyFrame()
		return nil
	case 'w':
		if pos := a.selectedPos(); pos >= 0 {
			name := fmt.Sprintf("rpctap-frame-%d.json", pos)
			if a.opts.WriteDir != "" {
				name = a.opts.WriteDir + string(os.PathSeparator) + name
			}
			a.openInput("write", "write frame to: ", name)
		}
		return nil
	case ' ':
		if !detailFocused {
			return tcell.NewEventKey(tcell.KeyPgDn, 0, tcell.ModNone)
		}
	case 'b':
		if !detailFocused {
			return tcell.NewEventKey(tcell.KeyPgUp, 0, tcell.ModNone)
		}
	}
	return ev
}

// HelpText lists every key.
func HelpText() string {
	return `[yellow::b]Frame list[-:-:-]
  j k ↓ ↑          next / previous record
  g G Home End     first / last record (G at the bottom resumes follow)
  PgDn PgUp space b  page down / up;  Ctrl-D Ctrl-U  half a page
  Enter            open the detail pane (pretty JSON, violations)
  Tab              switch focus between the list and the detail pane
  Esc q            close the detail pane / go back;  q in the list quits
                   (back to the picker when the cassette came from it)
  p                jump to the paired request/response (violation: its frame)
  Backspace        jump back to where p came from
  y                copy the frame to the clipboard (OSC 52)
  w                write the frame to a file
  d                dim stderr lines and process events

[yellow::b]Filter and search[-:-:-]
  f                filter as you type: m:PART m=METHOD dir:in|out kind:K id:ID
                   err slow>100ms chunk v -aux /REGEXP/ free text;
                   ! negates, & or space joins; empty clears
  v                toggle violations only
  c                toggle hiding streamed chunks
  a                toggle hiding stderr, events and cassette records
  /                search (same words as the filter)
  n N              next / previous match

[yellow::b]Views[-:-:-]
  t                transcript: chunks folded into text per turn
                   (↑ ↓ pick an entry, Enter jumps to its record)
  s                statistics: counts, latency p50/p90/p99/max, unanswered
                   (↑ ↓ pick a method, Enter filters the list by it)
  o                flows: a request and its answer (with the chunks that
                   streamed it) per row; Enter opens one; o: frames again
  F                follow new records (like less +F)
  H                attached to a live session (record --intercept): the
                   held frames pane; in it ↑ ↓ pick, f forward, A forward
                   all, x drop, c forward and cancel, e edit inline,
                   E edit in $EDITOR, b add a breakpoint, u remove one,
                   i inject (child|parent JSON), H close
  ?                this help
  Q Ctrl-C         quit
`
}

// toggleMode opens view m, or goes back to the list when m (or one of also,
// views opened from it) is showing.
func (a *App) toggleMode(m mode, also ...mode) {
	if a.mode == m || slices.Contains(also, a.mode) {
		a.setMode(modeList)
		return
	}
	a.setMode(m)
}

// backOneLevel closes what Esc and q close: a flow's detail (back to the
// flows), another view (back to the list), the detail pane. It reports
// false when the list was all there was, where q quits.
func (a *App) backOneLevel() bool {
	switch {
	case a.mode == modeFlowDetail:
		a.setMode(modeFlows)
	case a.mode != modeList:
		a.setMode(modeList)
	case a.detailOpen:
		a.closeDetail()
	default:
		return false
	}
	return true
}

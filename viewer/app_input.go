package viewer

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/safefile"
)

// The bottom line's input (filter as you type, search, write) and the
// actions on the selected frame (copy, write, jump to its pair and back).

func (a *App) openInput(kind, label, text string) {
	a.inputKind = kind
	a.viewBefore = a.view // Esc in the filter bar goes back to it
	a.input.SetLabel(label).SetText(text)
	a.bottom.SwitchToPage("input")
	a.tv.SetFocus(a.input)
}

func (a *App) closeInput() {
	a.inputKind = ""
	a.bottom.SwitchToPage("status")
	a.restoreFocus()
}

// onInputChanged filters as the user types: each text that parses becomes
// the view at once; one that does not shows why in the status line and
// leaves the last good filter in place.
func (a *App) onInputChanged(text string) {
	if a.inputKind != "filter" {
		return
	}
	f, err := ParseFilter(text)
	if err != nil {
		// The status line is hidden while typing: say it in the label.
		a.input.SetLabel("filter (" + tview.Escape(err.Error()) + "): ")
		return
	}
	a.input.SetLabel("filter: ")
	if f.Expr == a.view.Filter().Expr {
		return
	}
	a.setView(NewView(f), a.selectedPos())
}

func (a *App) onInputDone(key tcell.Key) {
	kind, text := a.inputKind, strings.TrimSpace(a.input.GetText())
	a.closeInput()
	if key != tcell.KeyEnter {
		if kind == "filter" && a.viewBefore != nil && a.view != a.viewBefore {
			// Esc cancels: the list followed the typing, now it goes back
			// to the filter in force when the bar opened.
			a.setView(a.viewBefore, a.selectedPos())
		}
		return
	}
	switch kind {
	case "filter":
		f, err := ParseFilter(text)
		if err != nil {
			if a.viewBefore != nil && a.view != a.viewBefore {
				// Keep the filter in force before the bar opened, not a
				// half-typed prefix of the bad expression.
				a.setView(a.viewBefore, a.selectedPos())
			}
			a.msg = err.Error()
			return
		}
		a.setView(NewView(f), a.selectedPos())
	case "search":
		if text == "" {
			return
		}
		f, err := ParseFilter(text)
		if err != nil {
			a.msg = err.Error()
			return
		}
		a.search, a.searchBack = &f, false
		a.runSearch(false)
	case "write":
		a.writeFrame(text)
	default:
		a.controlInput(kind, text)
	}
}

// runSearch looks for the next (or previous) match in the background.
func (a *App) runSearch(back bool) {
	if a.search == nil {
		a.msg = "no search yet: press / first"
		return
	}
	f := *a.search
	gen := a.searchGen.Add(1)
	row, _ := a.table.GetSelection()
	from := row - 1
	v := a.view
	a.searching = true
	a.msg = "searching " + f.Expr + "…"
	a.spawn(func() {
		start, wrapped := from, false
		for a.searchGen.Load() == gen && !a.Done() {
			r, found, done := a.store.Search(v, &f, from, back, 1<<15)
			if !done {
				from = r
				continue
			}
			if !found && !wrapped {
				// Wrap around: from the other end up to where it started.
				wrapped = true
				from = -1
				if back {
					from = v.Len(a.store)
				}
				continue
			}
			if found && wrapped && (!back && r > start || back && r < start) {
				found = false // only the rows already passed are left
			}
			a.post(func() {
				if a.searchGen.Load() != gen || a.view != v {
					return
				}
				a.searching = false
				if !found {
					a.msg = "not found: " + f.Expr
					return
				}
				a.msg = fmt.Sprintf("found %s", f.Expr)
				if wrapped {
					a.msg = fmt.Sprintf("found %s (search wrapped)", f.Expr)
				}
				a.sticky = a.follow && r+1 >= a.lastRow()
				a.selectRow(r + 1)
			})
			return
		}
	})
}

func (a *App) writeFrame(path string) {
	pos := a.selectedPos()
	r, ok := a.store.Record(pos)
	if !ok || path == "" {
		return
	}
	data := append([]byte(nil), Payload(&r)...)
	data = append(data, '\n')
	// The one way rpctap writes a file: a temporary file renamed over a
	// regular one (the old file stays whole on failure), a device or FIFO
	// written directly.
	if err := safefile.Write(path, safefile.Options{}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		a.msg = "write: " + err.Error()
		return
	}
	a.msg = fmt.Sprintf("wrote #%d (%d bytes) to %s", pos, len(data), path)
}

func (a *App) copyFrame() {
	pos := a.selectedPos()
	r, ok := a.store.Record(pos)
	if !ok {
		return
	}
	p := Payload(&r)
	if a.screen != nil {
		a.screen.SetClipboard(p)
	}
	a.msg = fmt.Sprintf("copied #%d (%d bytes) to the clipboard (OSC 52)", pos, len(p))
}

func (a *App) jumpPair() {
	pos := a.selectedPos()
	if pos < 0 {
		return
	}
	r, ok := a.store.Record(pos)
	if ok && r.K == cassette.KindViolation && r.Ref != 0 {
		a.history = append(a.history, pos)
		a.jumpTo(int(r.Ref))
		return
	}
	partner, ok := a.store.Pair(pos)
	if !ok {
		if a.store.Scanned() <= pos {
			a.msg = "still pairing… try again in a moment"
		} else {
			a.msg = fmt.Sprintf("#%d has no paired request or response", pos)
		}
		return
	}
	a.history = append(a.history, pos)
	a.jumpTo(partner)
}

func (a *App) back() {
	if len(a.history) == 0 {
		a.msg = "no jump to go back from"
		return
	}
	pos := a.history[len(a.history)-1]
	a.history = a.history[:len(a.history)-1]
	a.jumpTo(pos)
}

func (a *App) toggleFilter(mod func(f *Filter)) {
	f := a.view.Filter()
	f.Expr = ""
	mod(&f)
	a.setView(NewView(f), a.selectedPos())
}

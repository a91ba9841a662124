package viewer

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
)

// The bottom line: the status line, and above it, while open, the input
// field of the filter bar (filtering as you type), the search and the
// write prompt. The filter expression language is ParseFilter's.

// filterBar is the state of the input line.
type filterBar struct {
	kind string // "filter", "search", "write", "" when closed
	// Filtering as you type: the view when the bar opened (Esc goes back
	// to it), the record selected then (each new filter keeps it in
	// sight), and the text last applied.
	before    *View
	beforePos int
	applied   string
}

func (a *App) openInput(kind, label, text string) {
	a.bar = filterBar{kind: kind, before: a.view, beforePos: a.selectedPos(), applied: text}
	a.input.SetLabel(label).SetText(text)
	a.bottom.ResizeItem(a.input, 1, 0)
	a.layout.ResizeItem(a.bottom, 2, 0)
	a.tv.SetFocus(a.input)
}

func (a *App) closeInput() {
	a.bar.kind = ""
	a.bottom.ResizeItem(a.input, 0, 0)
	a.layout.ResizeItem(a.bottom, 1, 0)
	a.restoreFocus()
}

// onInputChanged filters as the user types: a text that parses is applied
// at once; one that does not leaves the last good filter and says why in
// the status line.
func (a *App) onInputChanged(text string) {
	if a.bar.kind != "filter" {
		return
	}
	text = strings.TrimSpace(text)
	if text == a.bar.applied {
		a.msg = ""
		return
	}
	f, err := ParseFilter(text)
	if err != nil {
		a.msg = err.Error()
		return
	}
	a.msg = ""
	a.bar.applied = text
	a.setView(NewView(f), a.bar.beforePos)
}

func (a *App) onInputDone(key tcell.Key) {
	bar, text := a.bar, strings.TrimSpace(a.input.GetText())
	a.closeInput()
	if key != tcell.KeyEnter {
		if bar.kind == "filter" && a.view != bar.before {
			a.msg = ""
			a.setView(bar.before, a.selectedPos()) // Esc: the filter from before
		}
		return
	}
	switch bar.kind {
	case "filter":
		f, err := ParseFilter(text)
		if err != nil {
			a.msg = err.Error() + " (the filter stays " + quoteFilter(a.view.Filter()) + ")"
			return
		}
		if text != bar.applied {
			a.setView(NewView(f), a.selectedPos())
		}
	case "search":
		if text == "" {
			return
		}
		f, err := ParseFilter(text)
		if err != nil {
			a.msg = err.Error()
			return
		}
		a.search, a.searchText = &f, text
		a.runSearch(false)
	case "write":
		a.writeFrame(text)
	}
}

func quoteFilter(f Filter) string {
	if !f.Active() {
		return "off"
	}
	return f.String()
}

// runSearch looks for the next (or previous) match in the background,
// wrapping around the end (or the start) once.
func (a *App) runSearch(back bool) {
	if a.search == nil {
		a.msg = "no search yet: press / first"
		return
	}
	f, expr := *a.search, a.searchText
	gen := a.searchGen.Add(1)
	row, _ := a.table.GetSelection()
	from := row - 1
	v := a.view
	a.searching = true
	a.msg = "searching " + expr + "…"
	a.spawn(func() {
		wrapped := false
		for a.searchGen.Load() == gen && !a.Done() {
			r, found, done := a.store.Search(v, &f, from, back, 1<<15)
			if !done {
				from = r
				continue
			}
			if !found && !wrapped {
				// Go round: from the other end up to where we started.
				wrapped = true
				from = -1
				if back {
					from = v.Len(a.store)
				}
				continue
			}
			a.post(func() {
				if a.searchGen.Load() != gen || a.view != v {
					return
				}
				a.searching = false
				if !found {
					a.msg = "not found: " + expr
					return
				}
				a.msg = "found " + expr
				if wrapped {
					end := "bottom"
					if back {
						end = "top"
					}
					a.msg = fmt.Sprintf("found %s (wrapped past the %s)", expr, end)
				}
				a.sticky = a.follow && r+1 >= a.lastRow()
				a.selectRow(r + 1)
			})
			return
		}
	})
}

func (a *App) toggleFilter(mod func(f *Filter)) {
	f := a.view.Filter()
	mod(&f)
	a.setView(NewView(f), a.selectedPos())
}

package viewer

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// The flows view (key o): one row per request and its response, with the
// notifications that streamed its answer folded in (Flows), as mitmproxy
// lists flows; Enter opens the flow's request, streamed parts and response
// as one detail, Esc goes back to the flows, o to the frames.

// flowColumns are the flows view's columns.
var flowColumns = []string{"#", "TIME", "", "METHOD/TYPE", "ID", "STREAMED", "LATENCY", "SUMMARY"}

func (a *App) buildFlowTable() {
	a.flowTable = tview.NewTable().SetFixed(1, 0).SetSelectable(true, false).SetSeparator(' ')
	a.flowTable.SetSelectedStyle(tcell.StyleDefault.Background(selectedBG).Foreground(tcell.ColorWhite))
	a.main.AddPage("flows", a.flowTable, true, false)
}

// openFlows folds the cassette into flows in the background and shows them.
func (a *App) openFlows() {
	a.flowTable.Clear()
	a.flowTable.SetCell(0, 0, tview.NewTableCell("grouping frames into flows…").SetSelectable(false))
	gen := a.flowGen.Add(1)
	a.spawn(func() {
		fl := Flows{Pair: func(n uint64) (uint64, bool) {
			p, ok := a.store.Pair(int(n))
			return uint64(p), ok
		}}
		n := a.store.Len()
		for from := 0; from < n && a.flowGen.Load() == gen && !a.Done(); {
			recs, err := a.store.Records(from, scanBatch)
			if err != nil || len(recs) == 0 {
				break
			}
			for i := range recs {
				a.store.classify.Fill(&recs[i])
				fl.Add(&recs[i])
			}
			from += len(recs)
		}
		a.post(func() {
			if a.flowGen.Load() != gen {
				return
			}
			a.flows = fl.List
			a.fillFlowTable()
		})
	})
}

func (a *App) fillFlowTable() {
	t := a.flowTable
	t.Clear()
	for c, h := range flowColumns {
		cell := tview.NewTableCell(h).SetSelectable(false).SetStyle(headerStyle)
		if c == len(flowColumns)-1 {
			cell.SetExpansion(1)
		}
		t.SetCell(0, c, cell)
	}
	for i, f := range a.flows {
		color := colorOut
		arrow := "←"
		if f.Dir == "in" {
			color, arrow = colorIn, "→"
		}
		if f.Error {
			color = colorViolation
		}
		lat := ""
		switch {
		case f.Latency >= 0:
			lat = FormatDuration(f.Latency)
		case f.Kind == "request":
			lat = "…"
		}
		streamed := ""
		if len(f.Streamed) > 0 {
			streamed = fmt.Sprint(len(f.Streamed))
		}
		cells := []*tview.TableCell{
			tview.NewTableCell(fmt.Sprint(f.First)).SetTextColor(colorDim).SetAlign(tview.AlignRight),
			tview.NewTableCell(FormatClock(f.T)).SetTextColor(colorPlain).SetAlign(tview.AlignRight),
			tview.NewTableCell(arrow).SetTextColor(color),
			tview.NewTableCell(tview.Escape(f.Method)).SetTextColor(color).SetMaxWidth(32),
			tview.NewTableCell(tview.Escape(f.ID)).SetTextColor(colorPlain).SetMaxWidth(12),
			tview.NewTableCell(streamed).SetTextColor(colorDim).SetAlign(tview.AlignRight),
			tview.NewTableCell(lat).SetTextColor(colorPlain).SetAlign(tview.AlignRight),
			tview.NewTableCell(tview.Escape(f.Summary)).SetTextColor(color).SetExpansion(1),
		}
		for c, cell := range cells {
			t.SetCell(i+1, c, cell)
		}
	}
	if len(a.flows) > 0 {
		// Start at the flow of the frame selected in the list.
		pos, row := a.selectedPos(), 1
		for i, f := range a.flows {
			if int(f.First) <= pos {
				row = i + 1
			}
		}
		t.Select(row, 0)
	}
	a.refreshStatus()
}

// selectedFlow is the flow under the cursor, or nil.
func (a *App) selectedFlow() *Flow {
	row, _ := a.flowTable.GetSelection()
	if row < 1 || row > len(a.flows) {
		return nil
	}
	return &a.flows[row-1]
}

// showFlow opens the selected flow as one detail: its request, the
// notifications that streamed into it, its response.
func (a *App) showFlow() {
	f := a.selectedFlow()
	if f == nil {
		return
	}
	var b strings.Builder
	part := func(title string, pos uint64) {
		r, ok := a.store.Record(int(pos))
		if !ok {
			return
		}
		a.store.classify.Fill(&r)
		row := Summarize(&r, r.T)
		b.WriteString("[yellow::b]" + title + "[-:-:-]\n")
		b.WriteString(RenderDetail(&r, row, a.store.Violations(int(pos)), true))
		b.WriteString("\n")
	}
	part("request", f.First)
	if n := len(f.Streamed); n > 0 {
		fmt.Fprintf(&b, "[yellow::b]streamed: %d notification(s)[-:-:-]\n", n)
		for i, pos := range f.Streamed {
			if i == 50 {
				fmt.Fprintf(&b, "  … %d more\n", n-i)
				break
			}
			if r, ok := a.store.Record(int(pos)); ok {
				a.store.classify.Fill(&r)
				row := Summarize(&r, r.T)
				fmt.Fprintf(&b, "  #%-6d %s  %s\n", pos, FormatClock(r.T), tview.Escape(row.Summary))
			}
		}
		b.WriteString("\n")
	}
	if f.Response != 0 {
		part(fmt.Sprintf("response (after %s)", FormatDuration(f.Latency)), f.Response)
	} else if f.Kind == "request" {
		b.WriteString("[olive]no response recorded[-]\n")
	}
	a.mode = modeFlowDetail
	a.main.SwitchToPage("text")
	a.text.SetTitle(fmt.Sprintf(" flow #%d %s (Esc: back to the flows) ", f.First, tview.Escape(f.Method)))
	a.setTargets(nil)
	a.text.SetText(b.String()).ScrollToBeginning()
	a.tv.SetFocus(a.text)
}

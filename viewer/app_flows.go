package viewer

import (
	"fmt"
	"sort"
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
		}, Protocol: a.store.Protocol()}
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
	t.SetContent(&flowContent{flows: a.flows})
	if len(a.flows) > 0 {
		// Start at the flow of the frame selected in the list.
		pos := a.selectedPos()
		row := sort.Search(len(a.flows), func(i int) bool { return int(a.flows[i].First) > pos })
		t.Select(max(row, 1), 0)
	}
	a.refreshStatus()
}

// flowContent is the flows table as a virtual tview.TableContent: cells
// are made for the rows on screen only, so a cassette of a million flows
// costs the flows (Flow values), not eight tview cells each.
type flowContent struct {
	tview.TableContentReadOnly
	flows []Flow
}

func (c *flowContent) GetRowCount() int    { return 1 + len(c.flows) }
func (c *flowContent) GetColumnCount() int { return len(flowColumns) }

func (c *flowContent) GetCell(row, col int) *tview.TableCell {
	if col < 0 || col >= len(flowColumns) || row < 0 || row > len(c.flows) {
		return nil
	}
	if row == 0 {
		cell := tview.NewTableCell(flowColumns[col]).SetSelectable(false).SetStyle(headerStyle)
		if col == len(flowColumns)-1 {
			cell.SetExpansion(1)
		}
		return cell
	}
	f := &c.flows[row-1]
	color := colorOut
	arrow := "←"
	if f.Dir == "in" {
		color, arrow = colorIn, "→"
	}
	if f.Error {
		color = colorViolation
	}
	switch col {
	case 0:
		return tview.NewTableCell(fmt.Sprint(f.First)).SetTextColor(colorDim).SetAlign(tview.AlignRight)
	case 1:
		return tview.NewTableCell(FormatClock(f.T)).SetTextColor(colorPlain).SetAlign(tview.AlignRight)
	case 2:
		return tview.NewTableCell(arrow).SetTextColor(color)
	case 3:
		return tview.NewTableCell(tview.Escape(f.Method)).SetTextColor(color).SetMaxWidth(32)
	case 4:
		return tview.NewTableCell(tview.Escape(f.ID)).SetTextColor(colorPlain).SetMaxWidth(12)
	case 5:
		streamed := ""
		if f.StreamedN > 0 {
			streamed = fmt.Sprint(f.StreamedN)
		}
		return tview.NewTableCell(streamed).SetTextColor(colorDim).SetAlign(tview.AlignRight)
	case 6:
		lat := ""
		switch {
		case f.Latency >= 0:
			lat = FormatDuration(f.Latency)
		case f.Kind == "request":
			lat = "…"
		}
		return tview.NewTableCell(lat).SetTextColor(colorPlain).SetAlign(tview.AlignRight)
	}
	return tview.NewTableCell(tview.Escape(f.Summary)).SetTextColor(color).SetExpansion(1)
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
		row := Summarize(a.store.Protocol(), &r, r.T)
		b.WriteString("[yellow::b]" + title + "[-:-:-]\n")
		b.WriteString(RenderDetail(&r, row, a.store.Violations(int(pos)), true))
		b.WriteString("\n")
	}
	part("request", f.First)
	if n := f.StreamedN; n > 0 {
		fmt.Fprintf(&b, "[yellow::b]streamed: %d notification(s)[-:-:-]\n", n)
		for _, pos := range f.Streamed {
			if r, ok := a.store.Record(int(pos)); ok {
				a.store.classify.Fill(&r)
				row := Summarize(a.store.Protocol(), &r, r.T)
				fmt.Fprintf(&b, "  #%-6d %s  %s\n", pos, FormatClock(r.T), tview.Escape(row.Summary))
			}
		}
		if n > len(f.Streamed) {
			fmt.Fprintf(&b, "  … %d more\n", n-len(f.Streamed))
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

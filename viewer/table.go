package viewer

import (
	"slices"
	"sync"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// listContent is a virtual tview.TableContent over a Store and a View:
// it renders only the rows tview asks for, so a cassette of millions of
// records costs what the screen shows. Row 0 is the column header.
type listContent struct {
	tview.TableContentReadOnly
	store *Store
	view  func() *View
	dim   func() bool

	mu    sync.Mutex
	cache map[int][]Cell // rendered rows of the current draw
	lay   listLayout     // the columns shown; set by fit before each draw
}

func newListContent(s *Store, view func() *View, dim func() bool) *listContent {
	return &listContent{store: s, view: view, dim: dim, cache: map[int][]Cell{}, lay: fullLayout()}
}

// invalidate forgets rendered rows (before each draw: the analysis may
// have paired or marked some since).
func (c *listContent) invalidate() {
	c.mu.Lock()
	clear(c.cache)
	c.mu.Unlock()
}

func (c *listContent) GetRowCount() int { return 1 + c.view().Len(c.store) }

func (c *listContent) GetColumnCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lay.cols)
}

var headerStyle = tcell.StyleDefault.Foreground(tcell.ColorYellow).Bold(true)

func (c *listContent) GetCell(row, vcol int) *tview.TableCell {
	c.mu.Lock()
	lay := c.lay
	c.mu.Unlock()
	if vcol < 0 || vcol >= len(lay.cols) {
		return nil
	}
	col := lay.cols[vcol]
	if row == 0 {
		cell := tview.NewTableCell(Columns[col]).SetSelectable(false).SetStyle(headerStyle)
		if alignRight(col) {
			cell.SetAlign(tview.AlignRight)
		}
		if col == colSummary || col == colMethod && !lay.shows(colSummary) {
			cell.SetExpansion(1)
		}
		return cell
	}
	cells := c.rowCells(row - 1)
	if cells == nil {
		return nil
	}
	ce := cells[col]
	if col == colMethod && ce.Text == "" && !lay.shows(colSummary) {
		// No room for the summary: a stderr line or an event says what it
		// is in the method column instead.
		ce = cells[colSummary]
	}
	cell := tview.NewTableCell(tview.Escape(ce.Text)).SetTextColor(ce.Color)
	if ce.Right {
		cell.SetAlign(tview.AlignRight)
	}
	if w := lay.max[col]; w > 0 {
		cell.SetMaxWidth(w)
	}
	if col == colSummary || col == colMethod && !lay.shows(colSummary) {
		cell.SetExpansion(1)
	}
	return cell
}

func alignRight(col int) bool { return col <= colDelta || col == colSize || col == colLatency }

// rowBlock is how many rows the table renders at once on a cache miss.
const rowBlock = 64

func (c *listContent) rowCells(i int) []Cell {
	c.mu.Lock()
	cells, ok := c.cache[i]
	c.mu.Unlock()
	if ok {
		return cells
	}
	// Render a block of rows with one trip to the store.
	v := c.view()
	from := i - i%rowBlock
	var pos []int
	for j := from; j < from+rowBlock; j++ {
		p := v.At(j)
		if p < 0 {
			break
		}
		pos = append(pos, p)
	}
	rows := c.store.RowsAt(pos)
	dim := c.dim()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cache) > 1024 {
		clear(c.cache)
	}
	for k := range rows {
		if rows[k].N == ^uint64(0) {
			continue
		}
		c.cache[from+k] = RowCells(&rows[k], dim)
	}
	return c.cache[i]
}

// ---- column priority

// listLayout is which columns the list shows, in order, and how wide each
// may be (0: as wide as its widest visible cell).
type listLayout struct {
	cols []int
	max  []int // by column (colN…colMark)
}

func (l listLayout) shows(col int) bool { return slices.Contains(l.cols, col) }

// Widths the layout keeps for the columns that shrink.
const (
	methodCap  = 40 // METHOD/TYPE never wider
	idCap      = 16
	summaryMin = 12 // SUMMARY narrower than this is dropped
	methodMin  = 10 // METHOD/TYPE is not shrunk below this; columns are dropped first
)

// dropOrder is the order in which columns go when even METHOD/TYPE at its
// minimum does not fit (SUMMARY went first). #, the arrow, KIND, LATENCY
// and the violation mark always stay: latency is what the list is read for.
var dropOrder = []int{colDelta, colSize, colTime, colID}

func fullLayout() listLayout {
	l := listLayout{max: make([]int, len(Columns))}
	for i := range Columns {
		l.cols = append(l.cols, i)
	}
	l.max[colMethod], l.max[colID] = methodCap, idCap
	return l
}

// fitColumns decides the layout for a table width from the natural width
// of each column (its widest cell among the rows on screen, header
// included): everything when it fits; else SUMMARY is cut, then dropped,
// then METHOD/TYPE shrinks to methodMin, then DELTA, SIZE, TIME and ID go.
// tview separates columns with one space.
//
// methodAlone is METHOD/TYPE's natural width when SUMMARY is shown;
// natural[colMethod] is its width when it also shows what rows without a
// method say (SUMMARY dropped).
func fitColumns(width int, natural []int, methodAlone int) listLayout {
	l := fullLayout()
	natural = slices.Clone(natural)
	fallback := natural[colMethod]
	natural[colMethod] = methodAlone
	nat := func(col int) int {
		if m := l.max[col]; m > 0 && natural[col] > m {
			return m
		}
		return natural[col]
	}
	used := func(skip ...int) int {
		w := 0
		for _, c := range l.cols {
			if !slices.Contains(skip, c) {
				w += nat(c) + 1
			}
		}
		return w
	}
	drop := func(col int) { l.cols = slices.DeleteFunc(l.cols, func(c int) bool { return c == col }) }
	// Room left for METHOD/TYPE and SUMMARY (and their separators).
	room := width - used(colMethod, colSummary)
	switch {
	case room >= nat(colMethod)+1+nat(colSummary)+1:
		return l // everything fits
	case room-nat(colMethod)-2 >= summaryMin:
		l.max[colSummary] = room - nat(colMethod) - 2
		return l
	case room-methodMin-2 >= summaryMin:
		l.max[colMethod] = room - summaryMin - 2
		l.max[colSummary] = summaryMin
		return l
	}
	drop(colSummary)
	natural[colMethod] = fallback
	for _, col := range dropOrder {
		if width-used(colMethod)-1 >= methodMin {
			break
		}
		drop(col)
	}
	l.max[colMethod] = max(1, min(nat(colMethod), width-used(colMethod)-1))
	return l
}

// fit lays the columns out for a table width, measuring the rows from
// row `first` (0-based, after the header) for height rows.
func (c *listContent) fit(width, first, height int) {
	natural := make([]int, len(Columns))
	for col, h := range Columns {
		natural[col] = tview.TaggedStringWidth(h)
	}
	n := c.view().Len(c.store)
	methodAlone := natural[colMethod]
	for i := max(first, 0); i < min(first+height, n); i++ {
		cells := c.rowCells(i)
		for col := range cells {
			natural[col] = max(natural[col], tview.TaggedStringWidth(tview.Escape(cells[col].Text)))
		}
		if len(cells) > colSummary {
			methodAlone = max(methodAlone, tview.TaggedStringWidth(tview.Escape(cells[colMethod].Text)))
			if cells[colMethod].Text == "" {
				natural[colMethod] = max(natural[colMethod], tview.TaggedStringWidth(tview.Escape(cells[colSummary].Text)))
			}
		}
	}
	lay := fitColumns(width, natural, methodAlone)
	c.mu.Lock()
	c.lay = lay
	c.mu.Unlock()
}

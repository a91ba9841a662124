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
	lay   listLayout     // the columns shown; fit sets it before each draw
}

func newListContent(s *Store, view func() *View, dim func() bool) *listContent {
	return &listContent{store: s, view: view, dim: dim, cache: map[int][]Cell{}, lay: fullLayout(methodCap)}
}

// invalidate forgets rendered rows (before each draw: the analysis may
// have paired or marked some since).
func (c *listContent) invalidate() {
	c.mu.Lock()
	clear(c.cache)
	c.mu.Unlock()
}

func (c *listContent) GetRowCount() int { return 1 + c.view().Len(c.store) }

func (c *listContent) GetColumnCount() int { return len(c.layout().cols) }

func (c *listContent) layout() listLayout {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lay
}

var headerStyle = tcell.StyleDefault.Foreground(tcell.ColorYellow).Bold(true)

// GetCell returns the cell at row and shown column vcol (columns dropped
// on a narrow screen are skipped).
func (c *listContent) GetCell(row, vcol int) *tview.TableCell {
	lay := c.layout()
	if vcol < 0 || vcol >= len(lay.cols) {
		return nil
	}
	col := lay.cols[vcol]
	if row == 0 {
		cell := tview.NewTableCell(Columns[col]).SetSelectable(false).SetStyle(headerStyle)
		if alignRight(col) {
			cell.SetAlign(tview.AlignRight)
		}
		if col == colSummary {
			cell.SetExpansion(1)
		}
		return cell
	}
	cells := c.rowCells(row - 1)
	if cells == nil {
		return nil
	}
	ce := cells[col]
	if col == colMethod && ce.Text == "" && lay.summaryInMethod {
		// SUMMARY has no room: a stderr line or an event says what it is
		// in METHOD/TYPE instead.
		ce = cells[colSummary]
	}
	cell := tview.NewTableCell(tview.Escape(ce.Text)).SetTextColor(ce.Color)
	if ce.Right {
		cell.SetAlign(tview.AlignRight)
	}
	switch col {
	case colMethod:
		cell.SetMaxWidth(lay.method)
	case colID:
		cell.SetMaxWidth(idCap)
	case colSummary:
		cell.SetExpansion(1)
	}
	return cell
}

func alignRight(col int) bool { return col <= colDelta || col == colSize || col == colLatency }

// ---- column priority

// The columns the layout drops or shrinks, beside colMethod, colID and
// colSummary (render.go).
const (
	colN       = 0
	colTime    = 1
	colDelta   = 2
	colSize    = 7
	colLatency = 8
)

const (
	methodCap = 40 // METHOD/TYPE is never wider
	methodMin = 12 // METHOD/TYPE shrinks to this before columns are dropped
	idCap     = 16
	// summaryRoom is the least room for SUMMARY before the text of stderr
	// lines and events moves to METHOD/TYPE.
	summaryRoom = 12
)

// dropOrder is the order in which columns go when METHOD/TYPE at methodMin
// and everything before SUMMARY do not fit: #, the arrow, KIND, METHOD/TYPE,
// LATENCY and the violation mark always stay (latency is what the list is
// read for).
var dropOrder = []int{colDelta, colSize, colTime, colID}

// listLayout is the columns the list shows, in order, and the widest
// METHOD/TYPE may be.
type listLayout struct {
	cols            []int
	method          int
	summaryInMethod bool
}

func (l listLayout) shows(col int) bool { return slices.Contains(l.cols, col) }

func fullLayout(method int) listLayout {
	l := listLayout{method: method}
	for i := range Columns {
		l.cols = append(l.cols, i)
	}
	return l
}

// fitColumns lays the columns out for a table width, from the natural
// width of each (its widest cell on screen, header included; for
// METHOD/TYPE, methodAlone without the stderr and event text it may take
// over). SUMMARY, the last column, takes what is left and is cut by
// tview; METHOD/TYPE shrinks from methodCap to methodMin so that
// everything before SUMMARY fits; below that, DELTA, SIZE, TIME and ID go
// in that order. Each column is followed by one space.
func fitColumns(width int, natural []int, methodAlone int) listLayout {
	l := fullLayout(methodCap)
	nat := func(col int) int {
		if col == colID {
			return min(natural[col], idCap)
		}
		return natural[col]
	}
	// before is the width of the shown columns before SUMMARY but METHOD/TYPE.
	before := func() int {
		w := 0
		for _, c := range l.cols {
			if c != colMethod && c != colSummary {
				w += nat(c) + 1
			}
		}
		return w
	}
	for _, col := range dropOrder {
		if width-before()-1 >= methodMin {
			break
		}
		l.cols = slices.DeleteFunc(l.cols, func(c int) bool { return c == col })
	}
	room := width - before() - 1 // for METHOD/TYPE, and SUMMARY after it
	l.method = max(1, min(methodCap, room))
	if room-min(methodAlone, l.method)-1 < summaryRoom {
		l.summaryInMethod = true
	}
	return l
}

// fit lays the columns out for the table's width, measuring the rows
// from row first (0-based, after the header) for height rows.
func (c *listContent) fit(width, first, height int) {
	natural := make([]int, len(Columns))
	for col, h := range Columns {
		natural[col] = tview.TaggedStringWidth(h)
	}
	methodAlone := natural[colMethod]
	n := c.view().Len(c.store)
	for i := max(first, 0); i < min(first+height, n); i++ {
		cells := c.rowCells(i)
		if len(cells) != len(Columns) {
			continue
		}
		for col := range cells {
			natural[col] = max(natural[col], tview.TaggedStringWidth(tview.Escape(cells[col].Text)))
		}
		methodAlone = max(methodAlone, tview.TaggedStringWidth(tview.Escape(cells[colMethod].Text)))
	}
	lay := fitColumns(width, natural, methodAlone)
	c.mu.Lock()
	c.lay = lay
	c.mu.Unlock()
}

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

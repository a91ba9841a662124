package viewer

import (
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
	width func() int // the table's width on screen (nil: assume 120)

	mu    sync.Mutex
	cache map[int][]Cell // rendered rows of the current draw
}

func newListContent(s *Store, view func() *View, dim func() bool) *listContent {
	return &listContent{store: s, view: view, dim: dim, cache: map[int][]Cell{}}
}

// invalidate forgets rendered rows (before each draw: the analysis may
// have paired or marked some since).
func (c *listContent) invalidate() {
	c.mu.Lock()
	clear(c.cache)
	c.mu.Unlock()
}

func (c *listContent) GetRowCount() int { return 1 + c.view().Len(c.store) }

func (c *listContent) GetColumnCount() int { return len(Columns) }

var headerStyle = tcell.StyleDefault.Foreground(tcell.ColorYellow).Bold(true)

func (c *listContent) GetCell(row, col int) *tview.TableCell {
	if col < 0 || col >= len(Columns) {
		return nil
	}
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
	cell := tview.NewTableCell(tview.Escape(ce.Text)).SetTextColor(ce.Color)
	if ce.Right {
		cell.SetAlign(tview.AlignRight)
	}
	switch col {
	case colMethod:
		cell.SetMaxWidth(c.methodWidth())
	case colID:
		cell.SetMaxWidth(16)
	case colSummary:
		cell.SetExpansion(1)
	}
	return cell
}

func alignRight(col int) bool { return col <= 2 || col == 7 || col == 8 }

// fixedWidth is what the columns other than METHOD/TYPE and SUMMARY take
// in a common session, with the space between columns: # (8), TIME (9),
// DELTA (8), arrow (1), KIND (5), ID (4), SIZE (5), LATENCY (7), ! (3).
const fixedWidth = 8 + 9 + 8 + 1 + 5 + 4 + 5 + 7 + 3 + 10

// methodWidth is the widest METHOD/TYPE may be: up to 40 columns, less on
// a narrow screen, so that LATENCY and ! always stay in view (SUMMARY, the
// last column, is what a narrow screen cuts).
func (c *listContent) methodWidth() int {
	w := 120
	if c.width != nil {
		w = c.width()
	}
	return min(40, max(12, w-fixedWidth))
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

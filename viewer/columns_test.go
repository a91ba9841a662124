package viewer

import (
	"strings"
	"testing"
)

// headerLine is the list's column header (the line after the title).
func headerLine(scr string) string { return strings.Split(scr, "\n")[1] }

func TestFitColumns(t *testing.T) {
	// Natural widths as on the ACP session's screen.
	nat := make([]int, len(Columns))
	for c, w := range map[int]int{colN: 2, colTime: 8, colDelta: 7, 3: 1, 4: 9, colMethod: 26,
		colID: 2, colSize: 4, colLatency: 7, 9: 1, colSummary: 45} {
		nat[c] = w
	}
	before := 2 + 8 + 7 + 1 + 9 + 2 + 4 + 7 + 1 + 9 // and a space after each
	for _, c := range []struct {
		width     int
		method    int
		inMethod  bool
		dropped   []int
		described string
	}{
		{before + 1 + 40 + 1 + 45, methodCap, false, nil, "everything fits"},
		{before + 1 + 26 + 1 + 20, methodCap, false, nil, "SUMMARY is cut"},
		{before + 1 + 30, 30, true, nil, "METHOD/TYPE shrinks, no room for SUMMARY"},
		{before + 1 + methodMin, methodMin, true, nil, "METHOD/TYPE at its least"},
		{before + 1 + methodMin - 1, methodMin + 7, true, []int{colDelta}, "DELTA goes first"},
		{30, 30 - (2 + 1 + 9 + 7 + 1 + 5) - 1, true, []int{colDelta, colSize, colTime, colID}, "the essentials"},
	} {
		l := fitColumns(c.width, nat, 26)
		if l.method != c.method || l.summaryInMethod != c.inMethod {
			t.Errorf("%s (width %d): method %d (summary in it %v), want %d (%v)", c.described, c.width, l.method, l.summaryInMethod, c.method, c.inMethod)
		}
		for _, col := range []int{colN, 3, 4, colMethod, colLatency, 9, colSummary} {
			if !l.shows(col) {
				t.Errorf("%s: %q dropped", c.described, Columns[col])
			}
		}
		for _, col := range c.dropped {
			if l.shows(col) {
				t.Errorf("%s: %s still shown", c.described, Columns[col])
			}
		}
		// Everything up to LATENCY and ! fits the width.
		w := 0
		for _, col := range l.cols {
			switch col {
			case colSummary:
			case colMethod:
				w += min(26, l.method) + 1
			default:
				w += nat[col] + 1
			}
		}
		if w > c.width {
			t.Errorf("%s: the columns before SUMMARY need %d, width %d", c.described, w, c.width)
		}
	}
}

// TestNarrowScreenKeepsLatency draws the list at shrinking widths: the
// latencies stay on screen down to 40 columns; a stderr line still says
// what it is when SUMMARY has no room.
func TestNarrowScreenKeepsLatency(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	for _, w := range []int{120, 80, 70, 60, 55, 45, 40} {
		h.scr.SetSize(w, 32)
		scr := h.screen()
		if !strings.Contains(headerLine(scr), "LATENCY") || !strings.Contains(scr, "390ms") || !strings.Contains(scr, "300ms") {
			t.Errorf("width %d: latency not shown:\n%s", w, scr)
		}
		if !strings.Contains(scr, "agent: star") {
			t.Errorf("width %d: the stderr line does not say what it is:\n%s", w, scr)
		}
	}
	h.scr.SetSize(55, 32)
	h.golden("narrow-list")
}

// TestResizeKeepsSelectionVisible selects a row in the middle of a tall
// screen, then makes the screen short: the selected row is still drawn
// (tview brings a selection into view only when it is made).
func TestResizeKeepsSelectionVisible(t *testing.T) {
	b := newRB("acp")
	for i := 1; i <= 200; i++ {
		b.at(ms).in(sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"p%d"}]}}`, i, i))
	}
	h := newHarness(t, NewMemSource(b.recs...), Options{})
	h.scr.SetSize(120, 60)
	h.screen()
	h.keys("<pgdn>")
	for range 40 {
		h.keys("j")
	}
	sel := h.selected()
	h.screen()
	for _, size := range [][2]int{{120, 12}, {80, 8}, {120, 60}} {
		h.scr.SetSize(size[0], size[1])
		scr := h.screen()
		if h.selected() != sel {
			t.Fatalf("resize to %v moved the selection from #%d to #%d", size, sel, h.selected())
		}
		found := false
		for _, l := range strings.Split(scr, "\n") {
			if strings.HasPrefix(l, "▶") && strings.Contains(l, sprintf(`"p%d"`, sel)) {
				found = true
			}
		}
		if !found {
			t.Errorf("after resize to %dx%d the selected row #%d is not on screen:\n%s", size[0], size[1], sel, scr)
		}
	}
}

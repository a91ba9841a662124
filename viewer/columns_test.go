package viewer

import (
	"slices"
	"strings"
	"testing"
)

// screenLines returns the screen's lines, the title bar first.
func screenLines(h *harness) []string { return strings.Split(h.screen(), "\n") }

// headerLine is the list's column header (the line after the title).
func headerLine(h *harness) string { return screenLines(h)[1] }

// TestSummaryColumnTellsUpdatesApart: the session/update rows of the ACP
// session, which looked the same before the SUMMARY column, each say what
// they carry.
func TestSummaryColumnTellsUpdatesApart(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	if !strings.Contains(headerLine(h), "SUMMARY") {
		t.Fatalf("no SUMMARY column: %q", headerLine(h))
	}
	var updates []string
	for _, l := range screenLines(h) {
		if i := strings.Index(l, "session/update"); i >= 0 {
			updates = append(updates, strings.TrimSpace(l[i+len("session/update"):]))
		}
	}
	if len(updates) != 8 {
		t.Fatalf("%d session/update rows on screen, want 8", len(updates))
	}
	if d := len(slices.Compact(slices.Sorted(slices.Values(updates)))); d != len(updates) {
		t.Errorf("%d distinct session/update rows of %d:\n%s", d, len(updates), strings.Join(updates, "\n"))
	}
	for _, want := range []string{`agent_thought_chunk "Looking at"`, `tool_call "Edit main.go" (pending)`, `tool_call_update call_1 (completed)`} {
		if !strings.Contains(h.screen(), want) {
			t.Errorf("list lacks the summary %q", want)
		}
	}
}

func TestFitColumns(t *testing.T) {
	// Natural widths as on the ACP session's screen.
	nat := make([]int, len(Columns))
	for c, w := range map[int]int{colN: 2, colTime: 8, colDelta: 7, colArrow: 1, colKind: 9, colMethod: 26,
		colID: 2, colSummary: 45, colSize: 4, colLatency: 7, colMark: 1} {
		nat[c] = w
	}
	fixed := 2 + 8 + 7 + 1 + 9 + 2 + 4 + 7 + 1 + 9 // and nine separators
	for _, c := range []struct {
		width       int
		summary     bool
		summaryMax  int
		methodMax   int
		dropped     []int
		description string
	}{
		{fixed + 26 + 45 + 2, true, 0, methodCap, nil, "everything fits"},
		{fixed + 26 + 20 + 2, true, 20, methodCap, nil, "summary cut"},
		{fixed + 14 + summaryMin + 2, true, summaryMin, 14, nil, "method shrinks to keep a summary"},
		{fixed + methodMin + 1, false, 0, methodMin, []int{colSummary}, "summary dropped"},
		{fixed - 8 + methodMin + 1, false, 0, methodMin, []int{colSummary, colDelta}, "delta dropped"},
		{30, false, 0, 0, []int{colSummary, colDelta, colSize, colTime, colID}, "the essentials"},
	} {
		l := fitColumns(c.width, nat, 26)
		if l.shows(colSummary) != c.summary {
			t.Errorf("%s (width %d): summary shown %v", c.description, c.width, l.shows(colSummary))
		}
		if c.summary && l.max[colSummary] != c.summaryMax {
			t.Errorf("%s: summary max %d, want %d", c.description, l.max[colSummary], c.summaryMax)
		}
		if c.methodMax > 0 && l.max[colMethod] != c.methodMax {
			t.Errorf("%s: method max %d, want %d", c.description, l.max[colMethod], c.methodMax)
		}
		for _, col := range []int{colN, colArrow, colKind, colLatency, colMark} {
			if !l.shows(col) {
				t.Errorf("%s: %s dropped", c.description, Columns[col])
			}
		}
		for _, col := range c.dropped {
			if l.shows(col) {
				t.Errorf("%s: %s still shown", c.description, Columns[col])
			}
		}
		// What tview will draw (each column and a space) fits the width.
		w := 0
		for _, col := range l.cols {
			eff := nat[col]
			if col == colMethod && !l.shows(colSummary) {
				eff = 26
			}
			if m := l.max[col]; m > 0 {
				eff = min(eff, m)
			}
			w += eff + 1
		}
		if w > c.width {
			t.Errorf("%s: columns need %d, width %d", c.description, w, c.width)
		}
	}
}

// TestNarrowScreenKeepsLatency draws the list at shrinking widths: the
// latency of the prompt's response stays on screen, SUMMARY goes first.
func TestNarrowScreenKeepsLatency(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	for _, w := range []int{120, 90, 70, 55, 40} {
		h.scr.SetSize(w, 32)
		scr := h.screen()
		head := headerLine(h)
		if !strings.Contains(head, "LATENCY") || !strings.Contains(scr, "390ms") || !strings.Contains(scr, "300ms") {
			t.Errorf("width %d: latency not shown:\n%s", w, scr)
		}
		if w <= 70 && strings.Contains(head, "SUMMARY") {
			t.Errorf("width %d: SUMMARY kept before METHOD/TYPE:\n%s", w, scr)
		}
		if w >= 90 && !strings.Contains(head, "SUMMARY") {
			t.Errorf("width %d: SUMMARY dropped with room for it:\n%s", w, scr)
		}
		if w == 70 && !strings.Contains(scr, "agent: starting up") {
			t.Errorf("width %d: a stderr line without SUMMARY does not say what it is:\n%s", w, scr)
		}
	}
	h.scr.SetSize(55, 32)
	h.golden("narrow-list")
}

// TestResizeKeepsSelectionVisible selects a row at the bottom of a tall
// screen, then makes the screen short: the selected row is still drawn.
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

package viewer

import (
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

// partialSession is acpSession cut where the recorder stopped validating
// (it fell behind under a burst): findings stored in the cassette after
// that point are missing, so the viewer must not present them as complete.
func partialSession() []cassette.Record {
	recs := acpSession()
	recs = recs[:len(recs)-1] // the end record goes after the stop
	b := &rb{recs: recs}
	for _, r := range recs {
		b.t = max(b.t, r.T)
	}
	b.add(cassette.Record{K: cassette.KindViolation, Ref: 7, Code: "recorder.validation-stopped", Severity: "warning",
		Msg: "validation stopped at record 7: the validator fell too far behind the traffic"})
	b.end()
	return b.recs
}

// Issue 20 item 8: after recorder.validation-stopped the viewer says, in
// its title line and in the stats summary, that the stored findings are
// partial and how to get them all.
func TestViewerSaysStoredFindingsArePartial(t *testing.T) {
	h := newHarness(t, NewMemSource(partialSession()...), Options{})
	scr := h.screen()
	title := strings.SplitN(scr, "\n", 2)[0]
	if !strings.Contains(title, "findings partial") {
		t.Errorf("title line does not say the stored findings are partial:\n%s", title)
	}
	h.keys("s")
	scr = h.screen()
	if !strings.Contains(scr, "stored findings are partial: validation stopped at record 7") || !strings.Contains(scr, "rpctap check") {
		t.Errorf("stats summary does not say the stored findings are partial:\n%s", scr)
	}

	// A complete cassette claims nothing of the kind.
	h = newHarness(t, NewMemSource(acpSession()...), Options{})
	if scr := h.screen(); strings.Contains(scr, "partial") {
		t.Errorf("a complete cassette's screen says partial:\n%s", scr)
	}
	h.keys("s")
	if scr := h.screen(); strings.Contains(scr, "partial") {
		t.Errorf("a complete cassette's stats say partial:\n%s", scr)
	}
}

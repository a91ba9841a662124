package viewer

import (
	"strings"
	"testing"
)

// TestFilterUnknownKindIsAnError: kind: takes the kinds there are; a typo
// is an error that keeps the filter in force, not an empty list.
func TestFilterUnknownKindIsAnError(t *testing.T) {
	for _, bad := range []string{"kind:bogus", "kind:requests", "!kind:x"} {
		if _, err := ParseFilter(bad); err == nil || !strings.Contains(err.Error(), "kind:") {
			t.Errorf("%q: error %v, want one naming the kinds", bad, err)
		}
	}
	for _, good := range []string{"kind:req", "kind:response", "kind:notif", "kind:event", "kind:handshake", "kind:hello", "kind:invalid", "kind:stderr", "kind:violation", "kind:header", "kind:meta", "kind:end"} {
		if _, err := ParseFilter(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	h.keys("fkind:stderr<enter>")
	h.keys("f<c-u>kind:bogus<enter>")
	if got := h.app.view.Len(h.app.store); got != 2 || h.app.view.Filter().Expr != "kind:stderr" {
		t.Errorf("after kind:bogus: filter %q with %d rows, want kind:stderr kept", h.app.view.Filter().Expr, got)
	}
	if scr := h.screen(); !strings.Contains(scr, "kind:bogus") {
		t.Errorf("the status line does not say what is wrong:\n%s", scr)
	}
}

// TestFilterEscCancels: Esc in the filter bar goes back to the filter in
// force when the bar opened, although the list followed the typing.
func TestFilterEscCancels(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	h.keys("fkind:stderr<enter>")
	h.keys("f<c-u>dir:in")
	if got := h.app.view.Len(h.app.store); got != 5 {
		t.Fatalf("typing dir:in: %d rows, want 5 (as you type)", got)
	}
	h.keys("<esc>")
	if got := h.app.view.Len(h.app.store); got != 2 || h.app.view.Filter().Expr != "kind:stderr" {
		t.Errorf("Esc: filter %q with %d rows, want kind:stderr back", h.app.view.Filter().Expr, got)
	}
	// From no filter, Esc goes back to none.
	h.keys("f<c-u><enter>fdir:out<esc>")
	if !h.app.view.All() {
		t.Errorf("Esc left the typed filter %q", h.app.view.Filter().Expr)
	}
}

package viewer

import (
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

// TestDetailSaysWhereRedacted: the detail pane of a frame whose secrets the
// recorder replaced says so, and where when the record says (format 1.2).
func TestDetailSaysWhereRedacted(t *testing.T) {
	r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":2,"method":"x","params":{"apiKey":"[REDACTED]"}}`), "\n")
	r.Redacted = true
	if got := RenderDetail(&r, Row{}, nil, false); !strings.Contains(got, "secrets in this frame were redacted when it was recorded\n") {
		t.Errorf("an older record's redaction is not shown:\n%s", got)
	}
	r.RedactedAt = []string{"/params/apiKey"}
	if got := RenderDetail(&r, Row{}, nil, false); !strings.Contains(got, "were redacted when it was recorded: /params/apiKey\n") {
		t.Errorf("where the value was replaced is not shown:\n%s", got)
	}
}

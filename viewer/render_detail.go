package viewer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/tview"
	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
)

// maxDetailBytes caps how much of one payload the detail pane pretty
// prints; the rest is left to copy (y) or write (w).
const maxDetailBytes = 256 << 10

// RenderDetail renders the detail pane for one record: a summary line,
// its violations, and the payload (pretty JSON, text, or bytes).
func RenderDetail(r *cassette.Record, row Row, viols []cassette.Record, color bool) string {
	var b strings.Builder
	c := func(tag, s string) string {
		if !color {
			return s
		}
		return tag + tview.Escape(s) + "[-:-:-]"
	}
	head := fmt.Sprintf("#%d  %s  %s (%s)", r.N, Arrow(&row), FormatClock(r.T), signed(row.Delta))
	switch r.K {
	case cassette.KindFrame:
		head += fmt.Sprintf("  %s %s", r.D, row.Kind)
		if row.Method != "" {
			head += "  " + row.Method
		}
		if row.ID != "" {
			head += "  id " + row.ID
		}
		head += "  " + FormatSize(row.Size)
		if row.Origin != "" {
			head += "  from " + row.Origin + " (" + row.File + ")"
			if row.Tool != "" {
				head += " in tool call " + row.Tool
			}
		} else if r.Conn != 0 {
			head += fmt.Sprintf("  conn %d", r.Conn)
		}
	default:
		head += "  " + string(r.K)
	}
	b.WriteString(c("[::b]", head))
	b.WriteByte('\n')
	if row.Paired {
		what := "response"
		if row.Kind == "response" {
			what = "request"
		}
		line := fmt.Sprintf("%s: #%d", what, row.Pair)
		if row.Kind == "response" {
			line += "  latency " + FormatDuration(row.Latency)
		}
		b.WriteString(c("[teal]", line+"  (p: jump, backspace: back)"))
		b.WriteByte('\n')
	} else if row.Kind == "request" {
		b.WriteString(c("[olive]", "no response (yet)"))
		b.WriteByte('\n')
	}
	if r.Redacted {
		msg := "secrets in this frame were redacted when it was recorded"
		if len(r.RedactedAt) > 0 && r.RedactedAt[0] != "" {
			msg += ": " + strings.Join(r.RedactedAt, ", ")
		}
		b.WriteString(c("[gray]", msg))
		b.WriteByte('\n')
	}
	if m := filterexpr.InterceptMark(r); m != "" {
		b.WriteString(c("[fuchsia]", m+" sent by rpctap's intercept ("+r.Icpt+"); the intercept event after it keeps the original"))
		b.WriteByte('\n')
	}
	for _, v := range viols {
		line := fmt.Sprintf("✗ %s %s", v.Severity, v.Code)
		if v.Pointer != "" {
			line += " at " + v.Pointer
		}
		line += ": " + v.Msg
		b.WriteString(c("[red]", line))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	switch r.K {
	case cassette.KindFrame, cassette.KindStderr:
		p := Payload(r)
		more := 0
		if len(p) > maxDetailBytes {
			more = len(p) - maxDetailBytes
			p = p[:maxDetailBytes]
		}
		switch {
		case r.JSON != nil && more == 0:
			b.WriteString(PrettyJSON(p, color))
		case r.B64 != nil || !utf8.Valid(p):
			b.WriteString(c("[olive]", "not UTF-8; hex dump:"))
			b.WriteByte('\n')
			b.WriteString(c("", hexDump(p)))
		default:
			b.WriteString(c("", string(p)))
		}
		b.WriteByte('\n')
		if more > 0 {
			b.WriteString(c("[olive]", fmt.Sprintf("… %d more bytes (y copies, w writes the whole frame)", more)))
			b.WriteByte('\n')
		}
		switch r.EOL {
		case "\r\n":
			b.WriteString(c("[gray]", "line ended with CRLF"))
			b.WriteByte('\n')
		case "":
			if r.K == cassette.KindFrame {
				b.WriteString(c("[gray]", "no newline after this line"))
				b.WriteByte('\n')
			}
		}
		if r.Part {
			b.WriteString(c("[olive]", "the line continues in the next record of this direction"))
			b.WriteByte('\n')
		}
	default:
		// Other records: their fields, as the cassette has them.
		cp := *r
		js, err := json.Marshal(&cp)
		if err == nil {
			if r.Header != nil {
				if h, err := json.Marshal(r.Header); err == nil {
					js = h
				}
			}
			b.WriteString(PrettyJSON(js, color))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func hexDump(p []byte) string {
	var b strings.Builder
	for i := 0; i < len(p); i += 16 {
		end := min(i+16, len(p))
		fmt.Fprintf(&b, "%08x  ", i)
		for j := i; j < i+16; j++ {
			if j < end {
				fmt.Fprintf(&b, "%02x ", p[j])
			} else {
				b.WriteString("   ")
			}
		}
		b.WriteString(" ")
		for _, ch := range p[i:end] {
			if ch < 0x20 || ch >= 0x7f {
				ch = '.'
			}
			b.WriteByte(ch)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

package viewer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
	"github.com/rpctap/rpctap/cassette"
)

// Columns of the frame list, in order.
// SUMMARY comes last, so that a narrow terminal cuts it before LATENCY.
var Columns = []string{"#", "TIME", "DELTA", "", "KIND", "METHOD/TYPE", "ID", "SIZE", "LATENCY", "!", "SUMMARY"}

// Column indices the table treats specially.
const (
	colMethod  = 5
	colID      = 6
	colSummary = 10
)

// Cell is one rendered table cell: text and colour, independent of tview.
type Cell struct {
	Text  string
	Color tcell.Color
	Right bool // right-aligned
	Dim   bool
}

// Colours of the frame list.
var (
	colorIn        = tcell.ColorTeal
	colorOut       = tcell.ColorGreen
	colorErr       = tcell.ColorOlive
	colorEvent     = tcell.ColorPurple
	colorViolation = tcell.ColorRed
	colorPlain     = tcell.ColorSilver
	colorDim       = tcell.ColorGray
)

// Arrow is the direction mark of a row: → parent to child, ← child to
// parent, ! stderr, • process event, ✗ violation record, ■ cassette record.
func Arrow(row *Row) string {
	switch row.K {
	case cassette.KindFrame:
		if row.Dir == cassette.DirIn {
			return "→"
		}
		return "←"
	case cassette.KindStderr:
		return "!"
	case cassette.KindEvent:
		return "•"
	case cassette.KindViolation:
		return "✗"
	}
	return "■"
}

// KindAbbrev shortens a frame kind for the list.
func KindAbbrev(k string) string {
	switch k {
	case "request":
		return "req"
	case "response":
		return "resp"
	case "notification":
		return "notif"
	case "handshake":
		return "hello"
	case "invalid":
		return "INVALID"
	}
	return k
}

// RowCells renders one row of the frame list. dimAux dims stderr lines,
// events and the cassette's own records.
func RowCells(row *Row, dimAux bool) []Cell {
	color := colorPlain
	switch row.K {
	case cassette.KindFrame:
		color = colorOut
		if row.Dir == cassette.DirIn {
			color = colorIn
		}
		if row.Kind == "invalid" {
			color = colorViolation
		}
	case cassette.KindStderr:
		color = colorErr
	case cassette.KindEvent:
		color = colorEvent
	case cassette.KindViolation:
		color = colorViolation
	}
	dim := dimAux && row.K != cassette.KindFrame && row.K != cassette.KindViolation
	// What is not a method (an event's description, a line that is not
	// JSON) goes to SUMMARY, so that METHOD/TYPE is as wide as the
	// methods are.
	kind, method, id, size, lat, summary := "", "", "", "", "", row.Summary
	switch row.K {
	case cassette.KindFrame:
		kind, method, id = KindAbbrev(row.Kind), row.Method, row.ID
		if row.Label != "" && row.Method == "" {
			summary = row.Label
		}
		size = FormatSize(row.Size)
		if row.Kind == "response" && row.Paired {
			lat = FormatDuration(row.Latency)
		}
		if row.Kind == "request" && !row.Paired {
			lat = "…"
		}
	case cassette.KindStderr:
		kind, summary, size = "stderr", row.Label, FormatSize(row.Size)
	default:
		kind, summary = string(row.K), row.Label
	}
	if row.Origin != "" {
		// A linked cassette's record: beneath the tool call that encloses
		// it, indented; else marked with its server.
		prefix := row.Origin + ": "
		if row.Tool != "" {
			prefix = "  └ " + prefix
		}
		method = prefix + method
	}
	mark := ""
	if row.Violations > 0 {
		mark = "✗"
		if row.Violations > 1 {
			mark = fmt.Sprintf("✗%d", row.Violations)
		}
	}
	cells := []Cell{
		{Text: fmt.Sprint(row.N), Color: colorDim, Right: true},
		{Text: FormatClock(row.T), Color: colorPlain, Right: true},
		{Text: signed(row.Delta), Color: colorDim, Right: true},
		{Text: Arrow(row), Color: color},
		{Text: kind, Color: color},
		{Text: method, Color: color},
		{Text: id, Color: colorPlain},
		{Text: size, Color: colorDim, Right: true},
		{Text: lat, Color: colorPlain, Right: true},
		{Text: mark, Color: colorViolation},
		{Text: summary, Color: color},
	}
	if dim {
		for i := range cells {
			cells[i].Color, cells[i].Dim = colorDim, true
		}
	}
	return cells
}

// signed formats a delta with its sign: +1.00ms, -85.5µs (a record
// stamped before the one written ahead of it).
func signed(ns int64) string {
	if ns < 0 {
		return FormatDuration(ns)
	}
	return "+" + FormatDuration(ns)
}

// FormatClock formats ns since start as m:ss.mmm (h:mm:ss.mmm past an hour).
func FormatClock(ns int64) string {
	if ns < 0 {
		return "-" + FormatClock(-ns)
	}
	ms := ns / 1e6
	h, m, s, f := ms/3600000, ms/60000%60, ms/1000%60, ms%1000
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d.%03d", h, m, s, f)
	}
	return fmt.Sprintf("%d:%02d.%03d", m, s, f)
}

// FormatDuration formats ns compactly with three significant digits:
// 850ns, 12.3µs, 4.56ms, 1.20s, 2m03s.
func FormatDuration(ns int64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	var s string
	switch {
	case ns < 1000:
		s = fmt.Sprintf("%dns", ns)
	case ns < 1e6:
		s = sig3(float64(ns)/1e3) + "µs"
	case ns < 1e9:
		s = sig3(float64(ns)/1e6) + "ms"
	case ns < 60e9:
		s = sig3(float64(ns)/1e9) + "s"
	default:
		sec := ns / 1e9
		if sec >= 3600 {
			s = fmt.Sprintf("%dh%02dm", sec/3600, sec/60%60)
		} else {
			s = fmt.Sprintf("%dm%02ds", sec/60, sec%60)
		}
	}
	return neg + s
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// FormatSize formats a byte count: 512B, 1.5K, 12M.
func FormatSize(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1024*1024:
		return sizeUnit(float64(n)/1024) + "K"
	case n < 1024*1024*1024:
		return sizeUnit(float64(n)/(1024*1024)) + "M"
	}
	return sizeUnit(float64(n)/(1024*1024*1024)) + "G"
}

func sizeUnit(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// JSON colours (tview tag names).
const (
	tagKey    = "[#5fafd7]"
	tagString = "[#87af5f]"
	tagNumber = "[#d7af5f]"
	tagLit    = "[#d787d7]"
	tagPunct  = "[#808080]"
	tagReset  = "[-]"
)

// PrettyJSON indents a JSON value by two spaces, keeping its key order and
// number spelling. With color it returns tview colour tags (and escapes
// text that would read as a tag); without, plain text. Input that is not
// valid JSON is returned as it is (escaped when coloured).
func PrettyJSON(raw []byte, color bool) string {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		if color {
			return tview.Escape(string(raw))
		}
		return string(raw)
	}
	src := compact.Bytes()
	var b strings.Builder
	b.Grow(len(src) * 2)
	depth := 0
	emit := func(tag, s string) {
		if color {
			b.WriteString(tag)
			b.WriteString(tview.Escape(s))
			b.WriteString(tagReset)
		} else {
			b.WriteString(s)
		}
	}
	newline := func() {
		b.WriteByte('\n')
		for range depth {
			b.WriteString("  ")
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '{', '[':
			emit(tagPunct, string(c))
			// Keep empty containers on one line.
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				emit(tagPunct, string(src[i+1]))
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			emit(tagPunct, string(c))
		case ',':
			emit(tagPunct, ",")
			newline()
		case ':':
			emit(tagPunct, ":")
			b.WriteByte(' ')
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			s := string(src[i : j+1])
			tag := tagString
			if j+1 < len(src) && src[j+1] == ':' {
				tag = tagKey
			}
			emit(tag, s)
			i = j
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(",:]}", rune(src[j])) {
				j++
			}
			tok := string(src[i:j])
			tag := tagNumber
			if tok == "true" || tok == "false" || tok == "null" {
				tag = tagLit
			}
			emit(tag, tok)
			i = j - 1
		}
	}
	return b.String()
}

package viewer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rivo/tview"
)

// RenderTranscript renders a transcript as text, with tview colour tags
// when color is set.
func RenderTranscript(tr *Transcript, color bool) string {
	s, _ := renderTranscript(tr, color)
	return s
}

// renderTranscript renders a transcript; with color, each turn's heading
// and entry is a tview region named "r<record>" and targets lists the
// regions in order (the rows Enter acts on: it jumps to the record).
func renderTranscript(tr *Transcript, color bool) (string, []string) {
	var b strings.Builder
	var targets []string
	region := func(rec uint64) {
		if color {
			id := fmt.Sprintf("r%d", rec)
			targets = append(targets, id)
			b.WriteString(`["` + id + `"]`)
		}
	}
	endRegion := func() {
		if color {
			b.WriteString(`[""]`)
		}
	}
	tag := func(t, s string) string {
		if !color {
			return s
		}
		return t + tview.Escape(s) + "[-:-:-]"
	}
	if tr == nil || len(tr.Turns) == 0 {
		return "(no turns yet: no prompts or streamed chunks in the frames read so far)\n", nil
	}
	for i, t := range tr.Turns {
		if i > 0 {
			b.WriteByte('\n')
		}
		head := "── before the first prompt (or the turn began earlier)"
		if t.N > 0 {
			head = fmt.Sprintf("── turn %d · %s · #%d at %s", t.N, t.Method, t.Rec, FormatClock(t.T))
			if t.FirstChunk >= 0 {
				head += " · first chunk " + FormatDuration(t.FirstChunk)
			} else {
				head += " · no chunk"
			}
			if t.Done >= 0 {
				head += " · took " + FormatDuration(t.Done)
			} else {
				head += " · open"
			}
		}
		if t.N > 0 {
			region(t.Rec)
		}
		b.WriteString(tag("[yellow::b]", head+" ──"))
		if t.N > 0 {
			endRegion()
		}
		b.WriteByte('\n')
		for _, e := range t.Entries {
			region(e.Rec)
			switch e.Kind {
			case EntryUser:
				b.WriteString(tag("[teal::b]", "> "+e.Text))
			case EntryText:
				b.WriteString(tag("[white]", e.Text))
			case EntryThought:
				b.WriteString(tag("[gray::i]", "(thinking) "+e.Text))
			case EntryTool:
				b.WriteString(tag("[purple]", "⚙ "+e.Text))
			case EntryPermission:
				b.WriteString(tag("[orange]", "? "+e.Text))
			case EntryProgress:
				b.WriteString(tag("[gray]", "· "+e.Text))
			case EntryPlan:
				b.WriteString(tag("[teal]", "☰ "+e.Text))
			case EntryNote:
				b.WriteString(tag("[red]", "! "+e.Text))
			}
			endRegion()
			b.WriteByte('\n')
		}
	}
	return b.String(), targets
}

// RenderStats renders statistics as a text table, with colour tags when
// color is set.
func RenderStats(s Stats, color bool) string {
	out, _ := renderStats(s, color)
	return out
}

// renderStats renders statistics; with color, each method's row is a tview
// region named "m<i>" for methods[i], in order (the rows Enter acts on: it
// filters the list by that method).
func renderStats(s Stats, color bool) (string, []string) {
	var b strings.Builder
	hl := func(str string) string {
		if !color {
			return str
		}
		return "[yellow::b]" + tview.Escape(str) + "[-:-:-]"
	}
	fmt.Fprintf(&b, "records %d · frames %d (→ %d, ← %d) · stderr %d · events %d · violations %d · orphan responses %d · last at %s\n\n",
		s.Records, s.Frames, s.In, s.Out, s.Stderr, s.Events, s.Violations, s.Orphans, FormatClock(s.Duration))
	if s.ValidationStopped != 0 {
		// The recorder judged the frames before this record only, and not
		// the end of the session: say so before anyone counts findings.
		fmt.Fprintf(&b, "%s\n\n", hl(fmt.Sprintf("stored findings are partial: validation stopped at record %d (the recorder fell behind); rpctap check judges the whole session", s.ValidationStopped)))
	}
	names := make([]string, 0, len(s.Methods))
	width := len("METHOD")
	for n := range s.Methods {
		names = append(names, n)
		width = max(width, len(n))
	}
	width = min(width, 48)
	sort.Strings(names)
	b.WriteString(hl(fmt.Sprintf("%-*s %7s %7s %7s %8s %8s %8s %8s", width, "METHOD", "→", "←", "ANSWERED", "P50", "P90", "P99", "MAX")))
	b.WriteByte('\n')
	for i, n := range names {
		m := s.Methods[n]
		if color {
			b.WriteString(fmt.Sprintf(`["m%d"]`, i))
		}
		name := n
		if len(name) > width {
			name = name[:width-1] + "…"
		}
		lat := func(v int64) string {
			if m.Latency.Count() == 0 {
				return "-"
			}
			return FormatDuration(v)
		}
		fmt.Fprintf(&b, "%-*s %7d %7d %8d %8s %8s %8s %8s", width, tview.Escape(name), m.In, m.Out, m.Latency.Count(),
			lat(m.Latency.Percentile(50)), lat(m.Latency.Percentile(90)), lat(m.Latency.Percentile(99)), lat(m.Latency.Max()))
		if color {
			b.WriteString(`[""]`)
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	what := "requests in flight"
	if s.Ended {
		what = "requests never answered"
	}
	if len(s.Unanswered) == 0 {
		b.WriteString(hl(what+": none") + "\n")
		return b.String(), names
	}
	b.WriteString(hl(fmt.Sprintf("%s: %d", what, len(s.Unanswered))) + "\n")
	for i, u := range s.Unanswered {
		if i == 200 {
			fmt.Fprintf(&b, "  … %d more\n", len(s.Unanswered)-i)
			break
		}
		fmt.Fprintf(&b, "  #%-8d %s  %s\n", u.N, FormatClock(u.T), u.Method)
	}
	return b.String(), names
}

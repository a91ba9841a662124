package viewer

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/rpctap/rpctap/cassette"
)

// Filter selects records. The zero Filter matches everything.
//
// Parse reads it from the filter bar, a list of words:
//
//	in, >            frames parent -> child only
//	out, <           frames child -> parent only
//	m:TEXT           method/type contains TEXT
//	v, violations    frames with violations (and violation records)
//	-chunks          hide streamed chunks
//	-aux             hide stderr lines, process events and cassette records
//	/REGEXP/         the payload matches the regular expression
//	anything else    the payload contains it (case-insensitive)
type Filter struct {
	Dir            cassette.Dir
	Method         string
	Text           []string // lower-case words, all must appear
	Regex          *regexp.Regexp
	ViolationsOnly bool
	HideChunks     bool
	HideAux        bool
	Expr           string // what Parse was given
}

// ParseFilter parses the filter bar's text.
func ParseFilter(expr string) (Filter, error) {
	f := Filter{Expr: strings.TrimSpace(expr)}
	for _, w := range strings.Fields(expr) {
		lw := strings.ToLower(w)
		switch {
		case lw == "in" || lw == ">":
			f.Dir = cassette.DirIn
		case lw == "out" || lw == "<":
			f.Dir = cassette.DirOut
		case lw == "v" || lw == "violations":
			f.ViolationsOnly = true
		case lw == "-chunks":
			f.HideChunks = true
		case lw == "-aux":
			f.HideAux = true
		case strings.HasPrefix(lw, "m:") && len(w) > 2:
			f.Method = w[2:]
		case len(w) >= 2 && w[0] == '/' && w[len(w)-1] == '/':
			re, err := regexp.Compile(w[1 : len(w)-1])
			if err != nil {
				return Filter{}, fmt.Errorf("bad regular expression %s: %v", w, err)
			}
			f.Regex = re
		default:
			f.Text = append(f.Text, lw)
		}
	}
	return f, nil
}

// Active reports whether the filter excludes anything.
func (f Filter) Active() bool {
	return f.Dir != "" || f.Method != "" || len(f.Text) > 0 || f.Regex != nil || f.ViolationsOnly || f.HideChunks || f.HideAux
}

// String is a short description for the status line.
func (f Filter) String() string {
	var parts []string
	if f.Expr != "" {
		parts = append(parts, f.Expr)
	} else {
		if f.ViolationsOnly {
			parts = append(parts, "v")
		}
		if f.HideChunks {
			parts = append(parts, "-chunks")
		}
		if f.HideAux {
			parts = append(parts, "-aux")
		}
	}
	return strings.Join(parts, " ")
}

// Match reports whether r (already classified) passes the filter. hasViol
// tells whether the analysis found violations about r.
func (f *Filter) Match(r *cassette.Record, hasViol bool) bool {
	aux := r.K != cassette.KindFrame && r.K != cassette.KindViolation
	if f.HideAux && aux {
		return false
	}
	if f.ViolationsOnly && !hasViol && r.K != cassette.KindViolation {
		return false
	}
	if f.Dir != "" && (r.K != cassette.KindFrame || r.D != f.Dir) {
		return false
	}
	if f.Method != "" && !strings.Contains(strings.ToLower(r.Method), strings.ToLower(f.Method)) {
		return false
	}
	if f.HideChunks && IsChunk(r) {
		return false
	}
	if len(f.Text) > 0 || f.Regex != nil {
		hay := recordText(r)
		if f.Regex != nil && !f.Regex.Match(hay) {
			return false
		}
		if len(f.Text) > 0 {
			low := bytes.ToLower(hay)
			for _, w := range f.Text {
				if !bytes.Contains(low, []byte(w)) {
					return false
				}
			}
		}
	}
	return true
}

// recordText is what free-text filters and searches look at: the payload
// and, for other records, their one-line description.
func recordText(r *cassette.Record) []byte {
	switch r.K {
	case cassette.KindFrame, cassette.KindStderr:
		if r.B64 != nil {
			return []byte(payloadText(r))
		}
		return Payload(r)
	case cassette.KindEvent:
		return []byte(EventText(r))
	case cassette.KindViolation:
		return []byte(r.Code + " " + r.Msg + " " + r.Pointer)
	}
	row := Summarize(r, 0)
	return []byte(row.Label)
}

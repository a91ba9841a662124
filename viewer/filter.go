package viewer

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rpctap/rpctap/cassette"
)

// Filter selects records. The zero Filter matches everything.
//
// ParseFilter reads it from the filter bar: terms separated by spaces or
// `&`, all of which must hold; `!` before a term negates it.
//
//	m:METHOD         the method/type, or one of its /-separated parts,
//	                 starts with METHOD (case-insensitive): m:session/
//	                 m:tools/call m:request_perm
//	dir:in, in, >    frames parent -> child
//	dir:out, out, <  frames child -> parent
//	kind:KIND        request, response, notification, event, handshake,
//	                 invalid (req, resp, notif, hello), or a record kind:
//	                 stderr, event, violation, header, meta, end
//	id:ID            the frame's id, with or without its quotes
//	err              error responses (and failures a protocol reports its
//	                 own way) and frames with violations
//	slow>DURATION    a request or response answered after more than
//	                 DURATION (100ms, 1.5s, 250us)
//	v, violations    frames with violations (and violation records)
//	-chunks          hide streamed chunks
//	-aux             hide stderr lines, process events and cassette records
//	/REGEXP/         the payload matches the regular expression
//	"some text"      the payload contains the text (quotes keep spaces)
//	anything else    the payload contains it (case-insensitive)
type Filter struct {
	Terms []Term // all must hold
	// The toggle keys' conditions (v, c, a), also spelled as words.
	ViolationsOnly bool
	HideChunks     bool
	HideAux        bool
}

// Term is one condition of a filter expression.
type Term struct {
	Neg  bool
	Key  string // m, dir, kind, id, err, slow, re, text
	Arg  string // its argument as written (lower-cased for text)
	src  string // the term as written, for String
	dir  cassette.Dir
	re   *regexp.Regexp
	slow int64 // ns
}

// Facts are what the Store's analysis knows about a record, for the terms
// that need more than the record itself.
type Facts struct {
	Violations bool  // violation records refer to it
	Paired     bool  // a request with its response, or the other way
	Latency    int64 // ns between the two when Paired
	// Failed tells whether the frame reports a failure (protocol.Failed);
	// called only for `err`, nil means no.
	Failed func(r *cassette.Record) bool
	// RequestMethod is a response's request's method when the record does
	// not name it (called only for m:, nil means unknown).
	RequestMethod func() string
}

// ParseFilter parses the filter bar's text. An error names the bad term.
func ParseFilter(expr string) (Filter, error) {
	var f Filter
	words, err := splitTerms(expr)
	if err != nil {
		return Filter{}, err
	}
	for _, w := range words {
		src := w
		neg := false
		for strings.HasPrefix(w, "!") {
			neg, w = !neg, w[1:]
		}
		if w == "" {
			return Filter{}, fmt.Errorf("filter: %q negates nothing", src)
		}
		lw := strings.ToLower(w)
		t := Term{Neg: neg, src: src}
		switch {
		case !neg && (lw == "v" || lw == "violations"):
			f.ViolationsOnly = true
			continue
		case !neg && lw == "-chunks":
			f.HideChunks = true
			continue
		case !neg && lw == "-aux":
			f.HideAux = true
			continue
		case lw == "in" || lw == ">" || lw == "dir:in":
			t.Key, t.Arg, t.dir = "dir", "in", cassette.DirIn
		case lw == "out" || lw == "<" || lw == "dir:out":
			t.Key, t.Arg, t.dir = "dir", "out", cassette.DirOut
		case strings.HasPrefix(lw, "dir:"):
			return Filter{}, fmt.Errorf("filter: %s: dir is in or out", src)
		case strings.HasPrefix(lw, "m:"):
			if len(w) == 2 {
				return Filter{}, fmt.Errorf("filter: %s: m: needs a method", src)
			}
			t.Key, t.Arg = "m", lw[2:]
		case strings.HasPrefix(lw, "kind:"):
			k, ok := kindNames[lw[5:]]
			if !ok {
				return Filter{}, fmt.Errorf("filter: %s: kind is one of request response notification event handshake invalid stderr violation header meta end", src)
			}
			t.Key, t.Arg = "kind", k
		case strings.HasPrefix(lw, "id:"):
			if len(w) == 3 {
				return Filter{}, fmt.Errorf("filter: %s: id: needs an id", src)
			}
			t.Key, t.Arg = "id", strings.Trim(w[3:], `"`)
		case lw == "err" || lw == "error" || lw == "errors":
			t.Key = "err"
		case strings.HasPrefix(lw, "slow>"):
			d, err := time.ParseDuration(strings.ReplaceAll(lw[5:], "µ", "u"))
			if err != nil || d < 0 {
				return Filter{}, fmt.Errorf("filter: %s: slow> needs a duration like 100ms or 1.5s", src)
			}
			t.Key, t.Arg, t.slow = "slow", lw[5:], int64(d)
		case len(w) >= 2 && w[0] == '/' && w[len(w)-1] == '/':
			re, err := regexp.Compile(w[1 : len(w)-1])
			if err != nil {
				return Filter{}, fmt.Errorf("filter: bad regular expression %s: %v", w, err)
			}
			t.Key, t.Arg, t.re = "re", w, re
		default:
			if len(lw) >= 2 && lw[0] == '"' && lw[len(lw)-1] == '"' {
				lw = lw[1 : len(lw)-1]
			}
			t.Key, t.Arg = "text", lw
		}
		f.Terms = append(f.Terms, t)
	}
	return f, nil
}

// kindNames maps what kind: accepts to a frame kind or a record kind.
var kindNames = map[string]string{
	"request": "request", "req": "request",
	"response": "response", "resp": "response",
	"notification": "notification", "notif": "notification",
	"event": "event", "handshake": "handshake", "hello": "handshake",
	"invalid": "invalid",
	"stderr":  "stderr", "violation": "violation", "header": "header", "meta": "meta", "end": "end",
}

// splitTerms splits an expression at spaces and `&`, keeping "quoted
// text" (with its quotes) as one term.
func splitTerms(expr string) ([]string, error) {
	var out []string
	var cur strings.Builder
	quoted := false
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, r := range expr {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case !quoted && (r == ' ' || r == '\t' || r == '&'):
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	if quoted {
		return nil, fmt.Errorf("filter: unclosed quote in %q", expr)
	}
	flush()
	return out, nil
}

// Active reports whether the filter excludes anything.
func (f Filter) Active() bool {
	return len(f.Terms) > 0 || f.ViolationsOnly || f.HideChunks || f.HideAux
}

// NeedsAnalysis reports whether the filter's answer depends on the
// analysis (pairing, violations), so that a filtered view is filled again
// once the analysis has gone further.
func (f Filter) NeedsAnalysis() bool {
	for _, t := range f.Terms {
		if t.Key == "err" || t.Key == "slow" {
			return true
		}
	}
	return false
}

// String is the filter as it can be typed again (the status line, and the
// filter bar's starting text).
func (f Filter) String() string {
	var parts []string
	for _, t := range f.Terms {
		parts = append(parts, t.src)
	}
	if f.ViolationsOnly {
		parts = append(parts, "v")
	}
	if f.HideChunks {
		parts = append(parts, "-chunks")
	}
	if f.HideAux {
		parts = append(parts, "-aux")
	}
	return strings.Join(parts, " ")
}

// Match reports whether r (already classified) passes the filter.
func (f *Filter) Match(r *cassette.Record, x Facts) bool {
	aux := r.K != cassette.KindFrame && r.K != cassette.KindViolation
	if f.HideAux && aux {
		return false
	}
	if f.ViolationsOnly && !x.Violations && r.K != cassette.KindViolation {
		return false
	}
	if f.HideChunks && IsChunk(r) {
		return false
	}
	var low []byte // the payload lower-cased, once
	for i := range f.Terms {
		t := &f.Terms[i]
		if t.match(r, x, &low) == t.Neg {
			return false
		}
	}
	return true
}

func (t *Term) match(r *cassette.Record, x Facts, low *[]byte) bool {
	frame := r.K == cassette.KindFrame
	switch t.Key {
	case "dir":
		return frame && r.D == t.dir
	case "m":
		m := r.Method
		if m == "" && frame && r.Kind == "response" && x.RequestMethod != nil {
			m = x.RequestMethod()
		}
		return methodHasPrefix(m, t.Arg)
	case "kind":
		if frame {
			return r.Kind == t.Arg
		}
		return string(r.K) == t.Arg
	case "id":
		return frame && len(r.ID) > 0 && strings.Trim(string(r.ID), `"`) == t.Arg
	case "err":
		return frame && (x.Violations || x.Failed != nil && r.JSON != nil && x.Failed(r))
	case "slow":
		return frame && x.Paired && x.Latency > t.slow
	case "re":
		return t.re.Match(recordText(r))
	case "text":
		if *low == nil {
			*low = bytes.ToLower(recordText(r))
		}
		return bytes.Contains(*low, []byte(t.Arg))
	}
	return false
}

// methodHasPrefix reports whether method, or the rest of it after one of
// its slashes, starts with prefix (lower case).
func methodHasPrefix(method, prefix string) bool {
	m := strings.ToLower(method)
	for {
		if strings.HasPrefix(m, prefix) {
			return true
		}
		i := strings.IndexByte(m, '/')
		if i < 0 {
			return false
		}
		m = m[i+1:]
	}
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

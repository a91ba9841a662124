package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/internal/portable"
	"github.com/rpctap/rpctap/internal/redact"
)

const (
	dirIn  = cassette.DirIn
	dirOut = cassette.DirOut
)

// Frame is one frame as the matcher sees it: a recorded frame (Record > 0)
// or a live one (Record == 0).
type Frame struct {
	Record uint64       // cassette record number; 0 for a live frame
	Dir    cassette.Dir // "in" (parent -> child) or "out" (child -> parent)
	Raw    []byte       // the line, without its line ending
	// Value is Raw decoded (numbers as json.Number), nil when Raw is not a
	// JSON object or array. Recorded frames are decoded only when a matcher
	// or a report needs them.
	Value any
	// Norm is Value with the id and every ignored path removed: what the
	// default matcher compares. For a non-JSON line it is the line as a string.
	Norm   any
	Kind   string // request, response, notification, event, handshake, text
	Method string // method, type or command; for a response the method of the request it answers
	ID     string // the frame's id as raw JSON ("1", "\"s1\""), "" when it has none

	json bool // Raw is a JSON object or array (Value may not be decoded yet)
}

// Matcher decides whether a live frame is an acceptable stand-in for a
// recorded one. It is called only with frames of the same direction, and
// must be safe to call from the engine goroutine (it should not block).
type Matcher func(live, recorded *Frame) bool

// DefaultMatcher accepts a live frame when kind and method are the same,
// the bodies are equal after the ignore rules (ids are never compared), and,
// for a response, the id is the one the recorded response carried (the
// replayed side issued that id, so the live peer must echo it).
func DefaultMatcher(live, recorded *Frame) bool {
	if live.Kind != recorded.Kind || live.Method != recorded.Method {
		return false
	}
	if live.Kind == kindResponse && live.ID != recorded.ID && recorded.ID != "" {
		return false
	}
	return Equal(live.Norm, recorded.Norm)
}

// sameCall is the looser test used to pick the nearest candidate and to
// accept a divergent answer: same kind and method (and id for responses).
func sameCall(live, recorded *Frame) bool {
	if live.Kind != recorded.Kind || live.Method != recorded.Method {
		return false
	}
	if live.Kind == kindResponse && recorded.ID != "" && live.ID != recorded.ID {
		return false
	}
	return true
}

// decodeJSON decodes b keeping numbers as json.Number; ok is false when b is
// not a single JSON object or array.
func decodeJSON(b []byte) (any, bool) {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || (b[i] != '{' && b[i] != '[') {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if dec.More() {
		return nil, false
	}
	return v, true
}

// Equal compares two decoded JSON values. Objects compare without regard to
// key order; numbers compare by value (1 equals 1.0). The string
// "[REDACTED]" (redact.Placeholder: a secret the recorder replaced before
// writing the cassette) equals any value, so a live secret matches it.
//
// A string holding placeholders of a portable cassette (${RPCTAP_CWD},
// ${RPCTAP_SESSION_1}, ...) equals any string it fits, each placeholder
// standing for one or more characters (portable.Match); a string that is one
// placeholder also equals any number (a process id, an epoch time).
func Equal(a, b any) bool {
	if a == any(redact.Placeholder) || b == any(redact.Placeholder) {
		return true
	}
	if s, ok := a.(string); ok && portable.HasPlaceholder(s) {
		return placeholderEqual(s, b)
	}
	if s, ok := b.(string); ok && portable.HasPlaceholder(s) {
		return placeholderEqual(s, a)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, ok1 := new(big.Float).SetString(string(x))
		fy, ok2 := new(big.Float).SetString(string(y))
		return ok1 && ok2 && fx.Cmp(fy) == 0
	default:
		return a == b
	}
}

func placeholderEqual(pattern string, v any) bool {
	switch x := v.(type) {
	case string:
		return portable.Match(pattern, x, nil)
	case json.Number:
		return portable.IsPlaceholder(pattern)
	}
	return false
}

// Ignore rules.
//
// A pattern is a JSON pointer into a frame ("/params/cwd") whose segments
// may be "*" (any one key or index) or "**" (any number of segments,
// including none): "/params/**/timestamp" drops every "timestamp" member at
// any depth under params. "~1" and "~0" escape "/" and "~" as in RFC 6901.
// A pattern matches a member or element and everything under it.
type ignoreSet struct {
	pats [][]string
}

func compileIgnores(pats []string) (ignoreSet, error) {
	var s ignoreSet
	for _, p := range pats {
		if p == "" || p[0] != '/' {
			return s, fmt.Errorf("ignore pattern %q: must start with / (a JSON pointer such as /params/cwd)", p)
		}
		segs := strings.Split(p[1:], "/")
		for i, sg := range segs {
			segs[i] = strings.ReplaceAll(strings.ReplaceAll(sg, "~1", "/"), "~0", "~")
		}
		s.pats = append(s.pats, segs)
	}
	return s, nil
}

// matches reports whether path is matched by one of the patterns.
func (s ignoreSet) matches(path []string) bool {
	for _, p := range s.pats {
		if globMatch(p, path) {
			return true
		}
	}
	return false
}

// couldMatchBelow reports whether some pattern could match a path that
// starts with prefix (so the walk must go on below it).
func (s ignoreSet) couldMatchBelow(prefix []string) bool {
	for _, p := range s.pats {
		if prefixMatch(p, prefix) {
			return true
		}
	}
	return false
}

func globMatch(pat, path []string) bool {
	if len(pat) == 0 {
		return len(path) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(path); i++ {
			if globMatch(pat[1:], path[i:]) {
				return true
			}
		}
		return false
	}
	if len(path) == 0 || (pat[0] != "*" && pat[0] != path[0]) {
		return false
	}
	return globMatch(pat[1:], path[1:])
}

// prefixMatch: can pat match some extension of prefix?
func prefixMatch(pat, prefix []string) bool {
	if len(prefix) == 0 {
		return true
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "**" {
		return true
	}
	if pat[0] != "*" && pat[0] != prefix[0] {
		return false
	}
	return prefixMatch(pat[1:], prefix[1:])
}

// normalize returns a copy of v without the members the ignore set matches
// and without the top-level members in drop (the id).
func (s ignoreSet) normalize(v any, drop string) any {
	if m, ok := v.(map[string]any); ok && drop != "" {
		if _, has := m[drop]; has {
			c := make(map[string]any, len(m))
			for k, x := range m {
				if k != drop {
					c[k] = x
				}
			}
			v = c
		}
	}
	if len(s.pats) == 0 {
		return v
	}
	n, _ := s.walk(v, nil)
	return n
}

// walk returns v without the ignored members and whether it changed
// anything (v itself is never modified).
func (s ignoreSet) walk(v any, path []string) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		var c map[string]any
		for k, e := range x {
			p := append(path[:len(path):len(path)], k)
			if s.matches(p) {
				if c == nil {
					c = copyMap(x)
				}
				delete(c, k)
				continue
			}
			if !s.couldMatchBelow(p) {
				continue
			}
			if n, changed := s.walk(e, p); changed {
				if c == nil {
					c = copyMap(x)
				}
				c[k] = n
			}
		}
		if c != nil {
			return c, true
		}
		return x, false
	case []any:
		var c []any
		for i, e := range x {
			p := append(path[:len(path):len(path)], strconv.Itoa(i))
			if s.matches(p) {
				// An ignored element compares as null, keeping positions.
				if c == nil {
					c = append([]any(nil), x...)
				}
				c[i] = nil
				continue
			}
			if !s.couldMatchBelow(p) {
				continue
			}
			if n, changed := s.walk(e, p); changed {
				if c == nil {
					c = append([]any(nil), x...)
				}
				c[i] = n
			}
		}
		if c != nil {
			return c, true
		}
		return x, false
	}
	return v, false
}

func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// bindings collects the values of ignored string fields: the recorded value
// and the live one found at the same path. Replay substitutes the live value
// for the recorded one in the frames it sends afterwards, so that a session
// id the real child made up (verify) or a cwd the live parent sent (replay)
// flows back the way it would in a real session.
func (s ignoreSet) bindings(rec, live any, out map[string]string) {
	s.bindWalk(rec, live, nil, false, out)
}

func (s ignoreSet) bindWalk(rec, live any, path []string, under bool, out map[string]string) {
	if !under && len(path) > 0 && s.matches(path) {
		under = true
	}
	switch r := rec.(type) {
	case string:
		l, ok := live.(string)
		if under && ok && l != r && len(r) >= 3 {
			out[r] = l
		}
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return
		}
		for k, rv := range r {
			lv, ok := l[k]
			if !ok {
				continue
			}
			p := append(path[:len(path):len(path)], k)
			if !under && !s.couldMatchBelow(p) {
				continue
			}
			s.bindWalk(rv, lv, p, under, out)
		}
	case []any:
		l, ok := live.([]any)
		if !ok {
			return
		}
		for i := range r {
			if i >= len(l) {
				break
			}
			p := append(path[:len(path):len(path)], strconv.Itoa(i))
			if !under && !s.couldMatchBelow(p) {
				continue
			}
			s.bindWalk(r[i], l[i], p, under, out)
		}
	}
}

// substitute replaces, in the raw JSON frame b, every string token whose
// value is a key of binds by the bound value. It works on bytes so that the
// rest of the frame is sent exactly as recorded.
func substitute(b []byte, binds map[string]string, order []string) []byte {
	for _, from := range order {
		to := binds[from]
		pat := mustJSON(from)
		if !bytes.Contains(b, pat) {
			continue
		}
		b = bytes.ReplaceAll(b, pat, mustJSON(to))
	}
	return b
}

// PathDiff is one difference between a recorded and a live frame.
type PathDiff struct {
	Path     string `json:"path"`               // JSON pointer ("" for the whole frame)
	Recorded string `json:"recorded,omitempty"` // compact JSON, "" when absent
	Live     string `json:"live,omitempty"`     // compact JSON, "" when absent
}

// diffValues lists the differences between rec and live (both normalized),
// at most limit entries, paths sorted.
func diffValues(rec, live any, limit int) []PathDiff {
	var out []PathDiff
	diffWalk(rec, live, "", &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func diffWalk(rec, live any, path string, out *[]PathDiff) {
	switch r := rec.(type) {
	case map[string]any:
		if l, ok := live.(map[string]any); ok {
			keys := make([]string, 0, len(r)+len(l))
			for k := range r {
				keys = append(keys, k)
			}
			for k := range l {
				if _, ok := r[k]; !ok {
					keys = append(keys, k)
				}
			}
			for _, k := range keys {
				p := path + "/" + escapePtr(k)
				rv, rok := r[k]
				lv, lok := l[k]
				switch {
				case !lok:
					*out = append(*out, PathDiff{Path: p, Recorded: short(redactValue(k, rv))})
				case !rok:
					*out = append(*out, PathDiff{Path: p, Live: short(redactValue(k, lv))})
				case isSecretKey(k):
					if !Equal(rv, lv) {
						*out = append(*out, PathDiff{Path: p, Recorded: `"` + redactedMark + `"`, Live: `"` + redactedMark + `"`})
					}
				default:
					diffWalk(rv, lv, p, out)
				}
			}
			return
		}
	case []any:
		if l, ok := live.([]any); ok {
			n := max(len(r), len(l))
			for i := 0; i < n; i++ {
				p := path + "/" + strconv.Itoa(i)
				switch {
				case i >= len(l):
					*out = append(*out, PathDiff{Path: p, Recorded: short(redactValue("", r[i]))})
				case i >= len(r):
					*out = append(*out, PathDiff{Path: p, Live: short(redactValue("", l[i]))})
				default:
					diffWalk(r[i], l[i], p, out)
				}
			}
			return
		}
	}
	if !Equal(rec, live) {
		*out = append(*out, PathDiff{Path: path, Recorded: short(redactValue("", rec)), Live: short(redactValue("", live))})
	}
}

func escapePtr(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// diffScore is how far apart two frames are, for choosing the nearest candidate.
func diffScore(rec, live any) int {
	var out []PathDiff
	diffWalk(rec, live, "", &out)
	return len(out)
}

func short(v any) string {
	var s string
	if str, ok := v.(string); ok {
		s = string(mustJSON(str))
	} else {
		s = string(mustJSON(v))
	}
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

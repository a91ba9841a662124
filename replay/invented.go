package replay

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/protocol"
)

// inventedSet holds the members whose number a peer makes up
// (protocol.Wire.Invented): a DAP thread id, stack frame id, variables or
// source handle. Numbers cannot be carried by value as the strings of
// ignored fields are (thread 1 and line 1 would collide), so they are
// carried by field: compared only as "a number", learnt from the frame
// that matched (name + recorded value -> live value), and put in place of
// the recorded value, at a field of the same name, in the frames the
// replay sends afterwards.
type inventedSet struct {
	pats  ignoreSet
	names []string // names[i] is what pats.pats[i] holds
	// fresh: the value sent for a name no live frame gave one for yet
	// (a portable cassette's ${RPCTAP_PID}: this process's id).
	fresh map[string]string
}

func compileInvented(inv []protocol.Invented) inventedSet {
	var s inventedSet
	for _, v := range inv {
		p, err := compileIgnores([]string{v.Path})
		if err != nil {
			continue // the protocol's own table: a test keeps it valid
		}
		s.pats.pats = append(s.pats.pats, p.pats...)
		s.names = append(s.names, v.Name)
	}
	return s
}

// nameAt returns what the member at path holds, "" when it is not invented.
func (s inventedSet) nameAt(path []string) string {
	for i, p := range s.pats.pats {
		if globMatch(p, path) {
			return s.names[i]
		}
	}
	return ""
}

// inventedNumber stands, in a normalized frame, for a number a peer made up:
// it equals any other standing for the same name, and nothing else.
type inventedNumber struct{ name string }

func (n inventedNumber) MarshalJSON() ([]byte, error) {
	return json.Marshal("<" + n.name + ": any number but 0>")
}

// isZero: 0 is DAP's "none" (a variablesReference of 0: no children), not
// a made-up value, and compares as itself.
func isZero(n json.Number) bool {
	return strings.Trim(string(n), "0.-") == "" && !strings.ContainsAny(string(n), "eE")
}

// mark returns v with every invented number (other than 0) replaced by its
// inventedNumber, and whether it changed anything (v is not modified).
func (s inventedSet) mark(v any, path []string) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		if len(path) > 0 && !isZero(x) {
			if name := s.nameAt(path); name != "" {
				return inventedNumber{name}, true
			}
		}
	case map[string]any:
		var c map[string]any
		for k, e := range x {
			p := append(path[:len(path):len(path)], k)
			if !s.pats.couldMatchBelow(p) {
				continue
			}
			if n, changed := s.mark(e, p); changed {
				if c == nil {
					c = copyMap(x)
				}
				c[k] = n
			}
		}
		if c != nil {
			return c, true
		}
	case []any:
		var c []any
		for i, e := range x {
			p := append(path[:len(path):len(path)], strconv.Itoa(i))
			if !s.pats.couldMatchBelow(p) {
				continue
			}
			if n, changed := s.mark(e, p); changed {
				if c == nil {
					c = append([]any(nil), x...)
				}
				c[i] = n
			}
		}
		if c != nil {
			return c, true
		}
	}
	return v, false
}

// learn adds to nums, for each invented number of rec (a recorded frame's
// value) that live (the frame that matched it) holds at the same place,
// name+" "+recorded -> live.
func (s inventedSet) learn(rec, live any, path []string, nums map[string]string) {
	switch r := rec.(type) {
	case json.Number:
		l, ok := live.(json.Number)
		if ok && len(path) > 0 && !isZero(r) {
			if name := s.nameAt(path); name != "" {
				nums[name+" "+string(r)] = string(l)
			}
		}
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return
		}
		for k, rv := range r {
			lv, ok := l[k]
			p := append(path[:len(path):len(path)], k)
			if ok && s.pats.couldMatchBelow(p) {
				s.learn(rv, lv, p, nums)
			}
		}
	case []any:
		l, ok := live.([]any)
		if !ok {
			return
		}
		for i := 0; i < len(r) && i < len(l); i++ {
			p := append(path[:len(path):len(path)], strconv.Itoa(i))
			if s.pats.couldMatchBelow(p) {
				s.learn(r[i], l[i], p, nums)
			}
		}
	}
}

// substitute returns frame (valid JSON) with each invented number that nums
// has a live value for replaced by it; every other byte is kept.
func (s inventedSet) substitute(frame []byte, nums map[string]string) []byte {
	w := &numWriter{b: frame, s: s, nums: nums}
	if end := w.value(0, nil); end < 0 || w.out == nil {
		return frame // unchanged (or not JSON after all: left alone)
	}
	return append(w.out, frame[w.last:]...)
}

// numWriter walks a JSON text by bytes, keeping the path, and copies it to
// out with the bound invented numbers replaced (out stays nil until one is).
type numWriter struct {
	b    []byte
	s    inventedSet
	nums map[string]string
	out  []byte
	last int // b[last:] not copied to out yet
}

// value reads the value starting at or after i (whitespace first) and
// returns the index after it, -1 when b is not JSON there.
func (w *numWriter) value(i int, path []string) int {
	b := w.b
	i = jsonscan.SkipWS(b, i)
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '{':
		i = jsonscan.SkipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			end := stringEnd(b, i)
			if end < 0 {
				return -1
			}
			var key string
			if json.Unmarshal(b[i:end], &key) != nil {
				return -1
			}
			i = jsonscan.SkipWS(b, end)
			if i >= len(b) || b[i] != ':' {
				return -1
			}
			if i = w.value(i+1, append(path[:len(path):len(path)], key)); i < 0 {
				return -1
			}
			i = jsonscan.SkipWS(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == '}' {
				return i + 1
			}
			if b[i] != ',' {
				return -1
			}
			i = jsonscan.SkipWS(b, i+1)
		}
	case c == '[':
		i = jsonscan.SkipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for n := 0; ; n++ {
			if i = w.value(i, append(path[:len(path):len(path)], strconv.Itoa(n))); i < 0 {
				return -1
			}
			i = jsonscan.SkipWS(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == ']' {
				return i + 1
			}
			if b[i] != ',' {
				return -1
			}
			i++
		}
	case c == '"':
		return stringEnd(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		end := i + 1
		for end < len(b) && strings.IndexByte("0123456789.eE+-", b[end]) >= 0 {
			end++
		}
		if name := w.s.nameAt(path); name != "" && !isZero(json.Number(b[i:end])) {
			key := name + " " + string(b[i:end])
			to, ok := w.nums[key]
			if v, f := w.s.fresh[name]; !ok && f {
				to, ok = v, true
				w.nums[key] = v // the same value wherever it appears again
			}
			if ok && to != string(b[i:end]) {
				w.out = append(append(w.out, b[w.last:i]...), to...)
				w.last = end
			}
		}
		return end
	default: // true, false, null
		end := i
		for end < len(b) && b[end] >= 'a' && b[end] <= 'z' {
			end++
		}
		if end == i {
			return -1
		}
		return end
	}
}

// stringEnd returns the index after the JSON string starting at b[i] ('"'),
// -1 when it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

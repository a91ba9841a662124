package redact

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// Where a replaced value sits, found after the walk: only frames that carry
// a secret-like value pay for it (the walk itself keeps no path, so frames
// without one cost what they did).

// dropPublic removes from spans the values at a public field of the
// frame's method.
func (r *Redactor) dropPublic(b []byte, spans []span) []span {
	method := ""
	if m, ok := topMember(b, "method"); ok && b[m] == '"' {
		if e, ok := jsonscan.SkipString(b, m); ok {
			method = string(b[m:e])
		}
	}
	starts := make([]int, len(spans))
	for i, s := range spans {
		starts[i] = s.start
	}
	paths := pathsTo(b, starts)
	kept := spans[:0]
	for _, s := range spans {
		if segs, ok := paths[s.start]; !ok || !r.isPublic(segs, method) {
			kept = append(kept, s)
		}
	}
	return kept
}

func (r *Redactor) isPublic(segs []string, method string) bool {
	for _, p := range r.public {
		if p.method != "" && p.method != method || len(p.segs) != len(segs) {
			continue
		}
		same := true
		for i := range segs {
			if segs[i] != p.segs[i] {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// topMember returns the start of the value of member name of the object b
// holds, if b is an object with such a member (the last one wins, as in
// encoding/json).
func topMember(b []byte, name string) (int, bool) {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	found, at := false, 0
	i = jsonscan.SkipWS(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke, ok := jsonscan.SkipString(b, i)
		if !ok {
			return 0, false
		}
		k, ok := keyText(b[i:ke])
		if !ok {
			return 0, false
		}
		i = jsonscan.SkipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		vs := jsonscan.SkipWS(b, i+1)
		ve, ok := jsonscan.SkipValue(b, vs)
		if !ok {
			return 0, false
		}
		if k == name {
			found, at = true, vs
		}
		i = jsonscan.SkipWS(b, ve)
		if i >= len(b) || b[i] != ',' {
			break
		}
		i = jsonscan.SkipWS(b, i+1)
	}
	return at, found
}

// pathsTo returns the reference tokens (member names and array indexes)
// leading from the root of the JSON text b to the value starting at each
// offset of targets; an offset where no value starts is left out. One walk
// for all of them: a frame with many secrets costs one pass, not one per
// secret.
func pathsTo(b []byte, targets []int) map[int][]string {
	t := append([]int(nil), targets...)
	sort.Ints(t)
	p := pather{b: b, targets: t, out: make(map[int][]string, len(t))}
	p.value(jsonscan.SkipWS(b, 0))
	return p.out
}

type pather struct {
	b       []byte
	targets []int // sorted; targets[k:] are still to be found
	k       int
	path    []string
	out     map[int][]string
}

// value walks the value at i, descending only where a target lies, and
// returns the index after it.
func (p *pather) value(i int) (int, bool) {
	for p.k < len(p.targets) && p.targets[p.k] < i {
		p.k++ // not the start of a value
	}
	for p.k < len(p.targets) && p.targets[p.k] == i {
		p.out[i] = append([]string{}, p.path...)
		p.k++
	}
	e, ok := jsonscan.SkipValue(p.b, i)
	if !ok || p.k >= len(p.targets) || p.targets[p.k] >= e || (p.b[i] != '{' && p.b[i] != '[') {
		return e, ok
	}
	obj := p.b[i] == '{'
	j := jsonscan.SkipWS(p.b, i+1)
	for n := 0; j < e && p.k < len(p.targets) && p.targets[p.k] < e; n++ {
		seg := strconv.Itoa(n)
		if obj {
			if p.b[j] != '"' {
				break
			}
			ke, ok := jsonscan.SkipString(p.b, j)
			if !ok {
				break
			}
			if seg, ok = keyText(p.b[j:ke]); !ok {
				break
			}
			j = jsonscan.SkipWS(p.b, ke)
			if j >= e || p.b[j] != ':' {
				break
			}
			j = jsonscan.SkipWS(p.b, j+1)
		}
		p.path = append(p.path, seg)
		ve, ok := p.value(j)
		p.path = p.path[:len(p.path)-1]
		if !ok {
			break
		}
		j = jsonscan.SkipWS(p.b, ve)
		if j >= e || p.b[j] != ',' {
			break
		}
		j = jsonscan.SkipWS(p.b, j+1)
	}
	return e, true
}

// keyText is the text of the JSON string raw (quotes included).
func keyText(raw []byte) (string, bool) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// parsePointer splits a JSON pointer into its unescaped reference tokens.
func parsePointer(p string) ([]string, bool) {
	if p == "" {
		return nil, true
	}
	if p[0] != '/' {
		return nil, false
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		segs[i] = unescapeToken.Replace(s)
	}
	return segs, true
}

// RFC 6901: "~1" is "/", "~0" is "~" (a single pass, so "~01" is "~1").
var (
	unescapeToken = strings.NewReplacer("~1", "/", "~0", "~")
	escapeToken   = strings.NewReplacer("~", "~0", "/", "~1")
)

// formatPointer joins reference tokens into a JSON pointer.
func formatPointer(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(escapeToken.Replace(s))
	}
	return b.String()
}

package redact

import (
	"bytes"
	"encoding/json"
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
	kept := spans[:0]
	for _, s := range spans {
		if !r.isPublic(b, s.start, method) {
			kept = append(kept, s)
		}
	}
	return kept
}

func (r *Redactor) isPublic(b []byte, at int, method string) bool {
	segs, ok := pathTo(b, at)
	if !ok {
		return false
	}
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

// pathTo returns the reference tokens (member names and array indexes)
// leading from the root of the JSON text b to the value starting at
// target; ok is false when no value starts there.
func pathTo(b []byte, target int) (segs []string, ok bool) {
	i := jsonscan.SkipWS(b, 0)
	for i != target {
		if i >= len(b) || i > target {
			return nil, false
		}
		open := b[i]
		if open != '{' && open != '[' {
			return nil, false
		}
		i = jsonscan.SkipWS(b, i+1)
		next := -1
		for n := 0; i < len(b) && next < 0; n++ {
			seg := strconv.Itoa(n)
			if open == '{' {
				if b[i] != '"' {
					return nil, false
				}
				ke, ok := jsonscan.SkipString(b, i)
				if !ok {
					return nil, false
				}
				if seg, ok = keyText(b[i:ke]); !ok {
					return nil, false
				}
				i = jsonscan.SkipWS(b, ke)
				if i >= len(b) || b[i] != ':' {
					return nil, false
				}
				i = jsonscan.SkipWS(b, i+1)
			}
			ve, ok := jsonscan.SkipValue(b, i)
			if !ok {
				return nil, false
			}
			if i <= target && target < ve {
				segs, next = append(segs, seg), i
				break
			}
			i = jsonscan.SkipWS(b, ve)
			if i >= len(b) || b[i] != ',' {
				return nil, false
			}
			i = jsonscan.SkipWS(b, i+1)
		}
		if next < 0 {
			return nil, false
		}
		i = next
	}
	return segs, true
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
		segs[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
	}
	return segs, true
}

// formatPointer joins reference tokens into a JSON pointer.
func formatPointer(segs []string) string {
	var b strings.Builder
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(esc.Replace(s))
	}
	return b.String()
}

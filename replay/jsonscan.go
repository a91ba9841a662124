package replay

// A tiny scanner over the top level of a JSON object. Replay rewrites ids in
// recorded frames by splicing bytes, so that everything else in a frame
// (key order, spacing, escapes) reaches the peer exactly as recorded. The
// skipping itself is internal/jsonscan, shared with redact.

import (
	"bytes"
	"encoding/json"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// memberSpan finds the top-level member key in the JSON object b and returns
// the byte offsets of its value [vs, ve) and of the whole member including a
// separating comma [ms, me) (for deletion). ok is false when b is not an
// object or has no such member.
func memberSpan(b []byte, key string) (vs, ve, ms, me int, ok bool) {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i = jsonscan.SkipWS(b, i+1)
	prevEnd := -1 // end of the previous member's value
	for i < len(b) && b[i] != '}' {
		if b[i] != '"' {
			return
		}
		ke, good := jsonscan.SkipString(b, i)
		if !good {
			return
		}
		k := b[i+1 : ke-1]
		start := i
		j := jsonscan.SkipWS(b, ke)
		if j >= len(b) || b[j] != ':' {
			return
		}
		j = jsonscan.SkipWS(b, j+1)
		end, good := jsonscan.SkipValue(b, j)
		if !good {
			return
		}
		if string(k) == key {
			vs, ve = j, end
			// Member span for deletion: take the following comma when
			// there is one, else the preceding one.
			n := jsonscan.SkipWS(b, end)
			if n < len(b) && b[n] == ',' {
				ms, me = start, jsonscan.SkipWS(b, n+1)
			} else if prevEnd >= 0 {
				ms, me = prevEnd, end
			} else {
				ms, me = start, end
			}
			ok = true
			return
		}
		prevEnd = end
		i = jsonscan.SkipWS(b, end)
		if i < len(b) && b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
		}
	}
	return
}

// memberRaw returns the raw bytes of top-level member key, or nil.
func memberRaw(b []byte, key string) []byte {
	vs, ve, _, _, ok := memberSpan(b, key)
	if !ok {
		return nil
	}
	return b[vs:ve]
}

// replaceMember returns a copy of b with the value of top-level member key
// replaced by val. When val is nil the member is removed. When the member is
// absent and val is not nil, it is added first in the object.
func replaceMember(b []byte, key string, val []byte) []byte {
	vs, ve, ms, me, ok := memberSpan(b, key)
	if !ok {
		if val == nil {
			return b
		}
		i := jsonscan.SkipWS(b, 0)
		if i >= len(b) || b[i] != '{' {
			return b
		}
		out := make([]byte, 0, len(b)+len(key)+len(val)+4)
		out = append(out, b[:i+1]...)
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, '"', ':')
		out = append(out, val...)
		rest := b[i+1:]
		if j := jsonscan.SkipWS(rest, 0); j < len(rest) && rest[j] != '}' {
			out = append(out, ',')
		}
		return append(out, rest...)
	}
	if val == nil {
		out := make([]byte, 0, len(b))
		out = append(out, b[:ms]...)
		return append(out, b[me:]...)
	}
	out := make([]byte, 0, len(b)-(ve-vs)+len(val))
	out = append(out, b[:vs]...)
	out = append(out, val...)
	return append(out, b[ve:]...)
}

// mustJSON encodes v without HTML escaping; v is always encodable here.
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

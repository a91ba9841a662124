// Package jsonscan holds the byte-level JSON scanning helpers that replay
// (id splicing) and redact (secret spans) share: skip white space, a string
// or a whole value without decoding it. They never read out of bounds and
// do not validate the grammar of literals; callers that need validity check
// it first (json.Valid) or treat ok=false as "leave the bytes alone".
package jsonscan

import "bytes"

// SkipWS returns the index of the first byte at or after i that is not JSON
// white space (len(b) when there is none).
func SkipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SkipString returns the index just past the string starting at b[i] == '"'.
// It jumps from quote to quote with a vectorised search; a quote preceded by
// an odd run of backslashes is escaped and the search goes on after it. So
// each byte is looked at about once however many escapes the string holds
// (searching for the quote again after every escape makes escape-dense text,
// such as source code with a \n on every line, quadratic between quotes).
// ok is false when the string is not closed.
func SkipString(b []byte, i int) (end int, ok bool) {
	i++
	for i <= len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false
		}
		q := i + j
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1, true
		}
		i = q + 1
	}
	return 0, false
}

// SkipValue returns the index just past the JSON value starting at b[i].
// Objects and arrays are skipped by counting brackets outside strings; a
// literal (number, true, false, null) runs up to the next delimiter. It
// checks nesting and strings, not the grammar of literals.
func SkipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, ok := SkipString(b, j)
				if !ok {
					return 0, false
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			j++
		}
		return j, j > i
	}
}

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
	// Most strings a walk meets are keys, ids and enum values of a few
	// bytes: a plain loop over the first ones costs less than setting up
	// the vectorised search. It stops at the first backslash, so the search
	// below never has an escape behind its start to account for.
	for n := min(len(b), i+shortString); i < n; i++ {
		if c := b[i]; c == '"' {
			return i + 1, true
		} else if c == '\\' {
			break
		}
	}
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

// shortString: SkipString looks at this many bytes one by one before it
// searches; SkipShortString gives up after them.
const shortString = 32

// SkipShortString is SkipString for a string that closes within its first
// bytes without an escape; done is false (and end, ok meaningless) for any
// other string, which the caller skips another way.
func SkipShortString(b []byte, i int) (end int, ok, done bool) {
	i++
	for n := min(len(b), i+shortString); i < n; i++ {
		if c := b[i]; c == '"' {
			return i + 1, true, true
		} else if c == '\\' {
			return 0, false, false
		}
	}
	return 0, false, false
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

// Index remembers where the objects, arrays and long strings of one JSON
// text end, so that code walking the same text several times (a shape
// checker descending into nested objects looks at each member value once
// per level) skips a value with a lookup instead of scanning it again.
// Build costs about one SkipValue pass over the text.
//
// End agrees with SkipValue (and SkipString) on every input, valid JSON or
// not: an entry is made only where the one forward scan saw a value start,
// and the scan from there is the one SkipValue would do. Where Index knows
// nothing, callers scan as before.
type Index struct {
	start []int32 // offsets of value starts, increasing
	end   []int32 // offset just past each value; -1: never closed
	stack []int32 // open containers during Build (positions in start)
}

// MinIndexedString is the shortest string (quotes included) Build records;
// shorter ones are cheaper to scan than to look up.
const MinIndexedString = 48

// Build indexes b, forgetting any earlier text. Texts longer than 2 GiB are
// not indexed.
func (x *Index) Build(b []byte) {
	x.start, x.end, x.stack = x.start[:0], x.end[:0], x.stack[:0]
	if len(b) >= 1<<31-1 {
		return
	}
	for i := 0; i < len(b); {
		switch b[i] {
		case '"':
			e, ok := SkipString(b, i)
			if !ok {
				return // unclosed: every later value start is inside it
			}
			x.String(i, e)
			i = e
			continue
		case '{', '[':
			x.Open(i)
		case '}', ']':
			// SkipValue counts depth without matching bracket kinds, and
			// so does this: a close ends the innermost open container.
			x.Close(i + 1)
		}
		i++
	}
}

// Reset forgets the text (keeping the memory).
func (x *Index) Reset() { x.start, x.end, x.stack = x.start[:0], x.end[:0], x.stack[:0] }

// A scanner that checks a JSON text anyway (cassette.Verbatim) can fill an
// Index as a by-product with Open, Close and String, calling them in the
// order the values start (Reset first). Such an index is only as good as
// that scanner's verdict: use it only for text the scanner accepted.

// Open records a non-empty object or array starting at i.
func (x *Index) Open(i int) {
	x.stack = append(x.stack, int32(len(x.start)))
	x.start = append(x.start, int32(i))
	x.end = append(x.end, -1)
}

// Close records that the innermost open container ends just before end.
func (x *Index) Close(end int) {
	if n := len(x.stack); n > 0 {
		x.end[x.stack[n-1]] = int32(end)
		x.stack = x.stack[:n-1]
	}
}

// String records a string spanning [start, end) (kept if at least
// MinIndexedString long).
func (x *Index) String(start, end int) {
	if end-start >= MinIndexedString {
		x.start = append(x.start, int32(start))
		x.end = append(x.end, int32(end))
	}
}

// CopyFrom makes x a copy of y (reusing x's memory).
func (x *Index) CopyFrom(y *Index) {
	x.start = append(x.start[:0], y.start...)
	x.end = append(x.end[:0], y.end...)
	x.stack = x.stack[:0]
}

// Cursor looks values up in increasing order of their start in amortized
// constant time (a walk from the front of the text); a lookup behind the
// previous one falls back to a binary search.
type Cursor struct {
	x *Index
	k int
}

// Cursor returns a cursor at the start of the text.
func (x *Index) Cursor() Cursor { return Cursor{x: x} }

// End is Index.End.
func (c *Cursor) End(i int) (int, bool) {
	x := c.x
	if x == nil {
		return 0, false
	}
	if c.k > 0 && c.k <= len(x.start) && int(x.start[c.k-1]) >= i {
		return x.End(i)
	}
	for c.k < len(x.start) && int(x.start[c.k]) < i {
		c.k++
	}
	if c.k < len(x.start) && int(x.start[c.k]) == i && x.end[c.k] >= 0 {
		return int(x.end[c.k]), true
	}
	return 0, false
}

// End returns the index just past the value that starts at offset i of the
// indexed text, if Build recorded it.
func (x *Index) End(i int) (int, bool) {
	s := x.start
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(s[m]) < i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s) && int(s[lo]) == i && x.end[lo] >= 0 {
		return int(x.end[lo]), true
	}
	return 0, false
}

package cassette

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// Verbatim reports whether a line (without its line ending) may be embedded
// as-is as the "json" payload of a record: it is one valid JSON value
// (RFC 8259, nesting at most 10000 deep, as encoding/json accepts), its
// strings are valid UTF-8, it contains no newline and it neither starts nor
// ends with white space. It is the rule SetPayload applies, in one pass over
// the bytes; a caller that already called it may hand the answer to
// SetPayloadChecked instead of paying for the pass twice.
func Verbatim(p []byte) bool { return verbatim(p, nil) }

// VerbatimIndexed is Verbatim that also fills x (reset first) with where
// the frame's objects, arrays and long string values end, so that later
// walks of the same frame (classification, redaction) skip them by lookup
// instead of scanning them again. x means something only when the answer
// is true.
func VerbatimIndexed(p []byte, x *jsonscan.Index) bool {
	x.Reset()
	return verbatim(p, x)
}

func verbatim(p []byte, x *jsonscan.Index) bool {
	if len(p) == 0 || isSpace(p[0]) || isSpace(p[len(p)-1]) {
		return false
	}
	var stackArr [64]byte
	stack := stackArr[:0] // '{' or '[' per open container
	i := 0
	for {
		// A value starts at i (white space skipped).
		i = skipSpaceNoNL(p, i)
		if i >= len(p) {
			return false
		}
		switch c := p[i]; {
		case c == '{':
			if len(stack) >= maxJSONDepth {
				return false
			}
			start := i
			i = skipSpaceNoNL(p, i+1)
			if i < len(p) && p[i] == '}' {
				i++
				break
			}
			if x != nil {
				x.Open(start)
			}
			stack = append(stack, '{')
			var ok bool
			if i, ok = objectKey(p, i); !ok {
				return false
			}
			continue
		case c == '[':
			if len(stack) >= maxJSONDepth {
				return false
			}
			start := i
			i = skipSpaceNoNL(p, i+1)
			if i < len(p) && p[i] == ']' {
				i++
				break
			}
			if x != nil {
				x.Open(start)
			}
			stack = append(stack, '[')
			continue
		case c == '"':
			start := i
			var ok bool
			if i, ok = scanString(p, i+1); !ok {
				return false
			}
			if x != nil {
				x.String(start, i)
			}
		case c == '-' || c >= '0' && c <= '9':
			var ok bool
			if i, ok = scanNumber(p, i); !ok {
				return false
			}
		case c == 't':
			if !hasLit(p, i, "true") {
				return false
			}
			i += 4
		case c == 'f':
			if !hasLit(p, i, "false") {
				return false
			}
			i += 5
		case c == 'n':
			if !hasLit(p, i, "null") {
				return false
			}
			i += 4
		default:
			return false
		}
		// A value ended at i: close containers or go on to the next value.
		for {
			i = skipSpaceNoNL(p, i)
			if len(stack) == 0 {
				return i == len(p)
			}
			if i >= len(p) {
				return false
			}
			top := stack[len(stack)-1]
			c := p[i]
			if c == ',' {
				i++
				if top == '{' {
					var ok bool
					if i, ok = objectKey(p, skipSpaceNoNL(p, i)); !ok {
						return false
					}
				}
				break
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				stack = stack[:len(stack)-1]
				i++
				if x != nil {
					x.Close(i)
				}
				continue
			}
			return false
		}
	}
}

// maxJSONDepth is encoding/json's nesting limit: Valid refuses deeper input.
const maxJSONDepth = 10000

// objectKey scans `"key" :` at i and returns the index after the colon.
func objectKey(p []byte, i int) (int, bool) {
	if i >= len(p) || p[i] != '"' {
		return i, false
	}
	i, ok := scanString(p, i+1)
	if !ok {
		return i, false
	}
	i = skipSpaceNoNL(p, i)
	if i >= len(p) || p[i] != ':' {
		return i, false
	}
	return i + 1, true
}

// skipSpaceNoNL skips JSON white space other than '\n', which a verbatim
// payload may not contain; a '\n' stops the skip and then fails the caller's
// next check.
func skipSpaceNoNL(p []byte, i int) int {
	for i < len(p) {
		switch p[i] {
		case ' ', '\t', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func hasLit(p []byte, i int, lit string) bool {
	return len(p)-i >= len(lit) && string(p[i:i+len(lit)]) == lit
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special8 marks (with the byte's top bit) the bytes of x (little-endian
// load) that need a look in a string: '"', '\\', control characters and
// non-ASCII bytes. A borrow can mark a byte above a marked one too, never one
// below, so the lowest mark is exact.
func special8(x uint64) uint64 {
	q := x ^ ('"' * lsb)
	b := x ^ ('\\' * lsb)
	special := (q - lsb) &^ q // a zero byte in q
	special |= (b - lsb) &^ b
	special |= x - 0x20*lsb // a byte below 0x20
	special |= x            // a byte >= 0x80
	return special & msb
}

// scanString scans a string whose opening quote is at i-1 and returns the
// index after its closing quote. It checks escapes, control characters and
// UTF-8.
func scanString(p []byte, i int) (int, bool) {
	for {
		for i+8 <= len(p) {
			if m := special8(binary.LittleEndian.Uint64(p[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8 // the first byte to look at
				break
			}
			i += 8
		}
		if i >= len(p) {
			return i, false
		}
		c := p[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(p) {
				return i, false
			}
			switch p[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(p) {
					return i, false
				}
				for _, h := range p[i+2 : i+6] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(p[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func scanNumber(p []byte, i int) (int, bool) {
	if p[i] == '-' {
		i++
	}
	if i >= len(p) {
		return i, false
	}
	switch c := p[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i = digits(p, i+1)
	default:
		return i, false
	}
	if i < len(p) && p[i] == '.' {
		j := digits(p, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		j := digits(p, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(p []byte, i int) int {
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	return i
}

package jsonschema

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// A doc is one JSON text parsed into a flat table of values. Validation
// parses every frame into a doc that is reused from frame to frame, so a
// frame costs no allocation once the tables have grown to its size.
type doc struct {
	b    []byte  // the text
	un   []byte  // unescaped strings (values with esc set point here)
	v    []val   // values; v[0] is the top-level one
	kids []int32 // children of arrays (value indices) and objects (key, value pairs)
	tmp  []int32 // children being collected
}

type kind uint8

const (
	kNull kind = iota
	kBool
	kNum
	kStr
	kArr
	kObj
)

var kindNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

// val is one JSON value. For a string, [s, e) is its content in doc.b
// (doc.un when esc); for a number, its literal in doc.b; for an array or
// object, its children in doc.kids (objects: key, value, key, value...).
type val struct {
	k    kind
	t    bool // the boolean
	esc  bool
	s, e int32
	n    float64
}

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

var errSyntax = errors.New("not JSON")

func (d *doc) reset(b []byte) {
	d.b, d.un, d.v, d.kids, d.tmp = b, d.un[:0], d.v[:0], d.kids[:0], d.tmp[:0]
}

// parse parses b into d; the top-level value is d.v[0].
func (d *doc) parse(b []byte) error {
	d.reset(b)
	i, err := d.value(skipWS(b, 0), 0)
	if err != nil {
		return err
	}
	if skipWS(b, i) != len(b) {
		return errSyntax
	}
	return nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func (d *doc) value(i, depth int) (int, error) {
	b := d.b
	if i >= len(b) || depth > maxDepth {
		return 0, errSyntax
	}
	idx := len(d.v)
	d.v = append(d.v, val{})
	switch c := b[i]; {
	case c == '{' || c == '[':
		close := byte('}')
		k := kObj
		if c == '[' {
			close, k = ']', kArr
		}
		mark := len(d.tmp)
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == close {
			i++
		} else {
			for {
				if k == kObj {
					if i >= len(b) || b[i] != '"' {
						return 0, errSyntax
					}
					d.tmp = append(d.tmp, int32(len(d.v)))
					j, err := d.value(i, depth+1)
					if err != nil {
						return 0, err
					}
					i = skipWS(b, j)
					if i >= len(b) || b[i] != ':' {
						return 0, errSyntax
					}
					i = skipWS(b, i+1)
				}
				d.tmp = append(d.tmp, int32(len(d.v)))
				j, err := d.value(i, depth+1)
				if err != nil {
					return 0, err
				}
				i = skipWS(b, j)
				if i < len(b) && b[i] == ',' {
					i = skipWS(b, i+1)
					continue
				}
				if i < len(b) && b[i] == close {
					i++
					break
				}
				return 0, errSyntax
			}
		}
		s := len(d.kids)
		d.kids = append(d.kids, d.tmp[mark:]...)
		d.tmp = d.tmp[:mark]
		d.v[idx] = val{k: k, s: int32(s), e: int32(len(d.kids))}
		return i, nil
	case c == '"':
		return d.str(idx, i)
	case c == 't' && hasLit(b, i, "true"):
		d.v[idx] = val{k: kBool, t: true}
		return i + 4, nil
	case c == 'f' && hasLit(b, i, "false"):
		d.v[idx] = val{k: kBool}
		return i + 5, nil
	case c == 'n' && hasLit(b, i, "null"):
		return i + 4, nil
	case c == '-' || c >= '0' && c <= '9':
		j, ok := numberEnd(b, i)
		if !ok {
			return 0, errSyntax
		}
		f, err := strconv.ParseFloat(unsafe.String(&b[i], j-i), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, errSyntax
		}
		d.v[idx] = val{k: kNum, s: int32(i), e: int32(j), n: f}
		return j, nil
	}
	return 0, errSyntax
}

func hasLit(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// numberEnd checks the JSON number grammar from b[i] and returns its end.
func numberEnd(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false
		}
	}
	return i, true
}

// str parses the string at b[i] == '"' into d.v[idx].
func (d *doc) str(idx, i int) (int, error) {
	b := d.b
	j := i + 1
	for ; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			d.v[idx] = val{k: kStr, s: int32(i + 1), e: int32(j)}
			if !utf8.Valid(b[i+1 : j]) {
				d.unescape(idx, i+1)
			}
			return j + 1, nil
		}
		if c == '\\' {
			return d.unescape(idx, i+1)
		}
		if c < 0x20 {
			return 0, errSyntax
		}
	}
	return 0, errSyntax
}

// unescape decodes the string whose content starts at b[i] into d.un, as
// encoding/json does (invalid UTF-8 and lone surrogates become U+FFFD).
func (d *doc) unescape(idx, i int) (int, error) {
	b := d.b
	s := len(d.un)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.v[idx] = val{k: kStr, esc: true, s: int32(s), e: int32(len(d.un))}
			return i + 1, nil
		case c < 0x20:
			return 0, errSyntax
		case c == '\\':
			if i+1 >= len(b) {
				return 0, errSyntax
			}
			i += 2
			switch b[i-1] {
			case '"', '\\', '/':
				d.un = append(d.un, b[i-1])
			case 'b':
				d.un = append(d.un, '\b')
			case 'f':
				d.un = append(d.un, '\f')
			case 'n':
				d.un = append(d.un, '\n')
			case 'r':
				d.un = append(d.un, '\r')
			case 't':
				d.un = append(d.un, '\t')
			case 'u':
				r, ok := hex4(b, i)
				if !ok {
					return 0, errSyntax
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(b, i+2); ok && i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if p := utf16.DecodeRune(r, r2); p != utf8.RuneError {
							r = p
							i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				d.un = utf8.AppendRune(d.un, r)
			default:
				return 0, errSyntax
			}
		case c < utf8.RuneSelf:
			d.un = append(d.un, c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			d.un = utf8.AppendRune(d.un, r)
			i += n
		}
	}
	return 0, errSyntax
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// text is the content of string value i, or the literal of number i.
func (d *doc) text(i int32) []byte {
	v := &d.v[i]
	if v.esc {
		return d.un[v.s:v.e]
	}
	return d.b[v.s:v.e]
}

// length is the number of elements or members of value i.
func (d *doc) length(i int32) int {
	v := &d.v[i]
	if v.k == kObj {
		return int(v.e-v.s) / 2
	}
	return int(v.e - v.s)
}

// elem is the index of array i's element n; member returns object i's
// member n as key and value indices.
func (d *doc) elem(i int32, n int) int32 { return d.kids[int(d.v[i].s)+n] }
func (d *doc) member(i int32, n int) (int32, int32) {
	j := int(d.v[i].s) + 2*n
	return d.kids[j], d.kids[j+1]
}

// isInt says whether value i is a number with no fractional part.
func (d *doc) isInt(i int32) bool {
	v := &d.v[i]
	return v.k == kNum && !math.IsInf(v.n, 0) && v.n == math.Trunc(v.n)
}

// equal compares two values as JSON Schema does: numbers by value,
// objects regardless of member order.
func equal(a *doc, ai int32, b *doc, bi int32) bool {
	va, vb := &a.v[ai], &b.v[bi]
	if va.k != vb.k {
		return false
	}
	switch va.k {
	case kNull:
		return true
	case kBool:
		return va.t == vb.t
	case kNum:
		return va.n == vb.n
	case kStr:
		return string(a.text(ai)) == string(b.text(bi))
	case kArr:
		n := a.length(ai)
		if n != b.length(bi) {
			return false
		}
		for k := range n {
			if !equal(a, a.elem(ai, k), b, b.elem(bi, k)) {
				return false
			}
		}
		return true
	}
	n := a.length(ai)
	if n != b.length(bi) {
		return false
	}
outer:
	for k := range n {
		ka, xa := a.member(ai, k)
		for m := range n {
			kb, xb := b.member(bi, m)
			if string(a.text(ka)) == string(b.text(kb)) {
				if !equal(a, xa, b, xb) {
					return false
				}
				continue outer
			}
		}
		return false
	}
	return true
}

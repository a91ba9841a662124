package protocol

// A small declarative shape checker for the JSON-RPC family (acp, mcp).
// Shapes are written in Go from the protocol catalogues. They check the raw
// bytes of params and results with the scanner of jsonutil.go, without
// decoding into Go values: numbers keep their exact text, and validation
// costs one pass over the frame plus a few lookups.
//
// Codes: PREFIX.missing-field, PREFIX.wrong-type, PREFIX.bad-value (enum,
// const or range). Unknown fields are always allowed.

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

type shapeChecker struct {
	prefix string
	vs     []Violation
	ptr    []byte      // JSON pointer of the value being checked
	x      *frameIndex // skips values of the frame being checked; nil: scan
}

func (c *shapeChecker) add(kind, format string, a ...any) {
	c.vs = append(c.vs, Violation{Code: c.prefix + "." + kind, Severity: SevError, Pointer: string(c.ptr), Message: fmt.Sprintf(format, a...)})
}

// addAt reports a violation at an explicit pointer.
func (c *shapeChecker) addAt(kind, ptr, format string, a ...any) {
	c.vs = append(c.vs, Violation{Code: c.prefix + "." + kind, Severity: SevError, Pointer: ptr, Message: fmt.Sprintf(format, a...)})
}

// here names the current location for messages.
func (c *shapeChecker) here() string {
	if len(c.ptr) == 0 {
		return "the value"
	}
	return string(c.ptr)
}

// push appends one reference token to the pointer and returns the length
// to restore with pop.
func (c *shapeChecker) push(tok []byte) int {
	n := len(c.ptr)
	c.ptr = append(c.ptr, '/')
	escape := false
	for _, b := range tok {
		if b == '~' || b == '/' {
			escape = true
			break
		}
	}
	if !escape {
		c.ptr = append(c.ptr, tok...)
		return n
	}
	for _, b := range tok {
		switch b {
		case '~':
			c.ptr = append(c.ptr, '~', '0')
		case '/':
			c.ptr = append(c.ptr, '~', '1')
		default:
			c.ptr = append(c.ptr, b)
		}
	}
	return n
}

func (c *shapeChecker) pushIndex(i int) int {
	n := len(c.ptr)
	c.ptr = strconv.AppendInt(append(c.ptr, '/'), int64(i), 10)
	return n
}

func (c *shapeChecker) pop(n int) { c.ptr = c.ptr[:n] }

// shape is one JSON type description. check works on the raw bytes of a
// value that is valid JSON (the Session checks syntax first); on malformed
// input it reports wrong types but never panics.
type shape interface {
	check(c *shapeChecker, raw []byte)
	describe() string // for messages: "string", "object", "ContentBlock"
}

// kindOf names the JSON type of raw, telling integers from other numbers.
func kindOf(raw []byte) string {
	t := jsonType(raw)
	if t == "number" && isInteger(raw) {
		return "integer"
	}
	if t == "" {
		return "nothing"
	}
	return t
}

// forEachElement calls fn for each element of the JSON array raw. It
// reports whether raw looked like a well-formed array.
func forEachElement(raw []byte, fn func(i int, v []byte)) bool {
	return forEachElementIn(nil, raw, fn)
}

// forEachElementIn is forEachElement skipping elements through x (nil: by
// scanning them).
func forEachElementIn(x *frameIndex, raw []byte, fn func(i int, v []byte)) bool {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return true
	}
	for n := 0; ; n++ {
		e, ok := x.skip(raw, i)
		if !ok {
			return false
		}
		fn(n, raw[i:e])
		i = skipWS(raw, e)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipWS(raw, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
}

// rawStringIs reports whether raw is the JSON string s (without allocating
// for strings that have no escapes).
func rawStringIs(raw []byte, s string) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == s
	}
	v, ok := rawString(raw)
	return ok && v == s
}

// hasBackslash reports whether a (short) key holds an escape.
func hasBackslash(k []byte) bool {
	for _, c := range k {
		if c == '\\' {
			return true
		}
	}
	return false
}

// keyIs compares a raw object key (as forEachMember gives it, escapes
// intact) with name.
func keyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key) == name
	}
	v, ok := rawString(append(append([]byte{'"'}, key...), '"'))
	return ok && v == name
}

// scalar shapes
type scalarShape int

const (
	jString scalarShape = iota
	jBoolean
	jNumber
	jInteger
	jAnything
	jAnyObject
	jAnyArray
)

func (s scalarShape) describe() string {
	return [...]string{"string", "boolean", "number", "integer", "any value", "object", "array"}[s]
}

func (s scalarShape) check(c *shapeChecker, raw []byte) {
	t := jsonType(raw)
	ok := false
	switch s {
	case jString:
		ok = t == "string"
	case jBoolean:
		ok = t == "boolean"
	case jNumber:
		ok = t == "number"
	case jInteger:
		ok = t == "number" && isInteger(raw)
	case jAnything:
		ok = t != ""
	case jAnyObject:
		ok = t == "object"
	case jAnyArray:
		ok = t == "array"
	}
	if !ok {
		c.add("wrong-type", "%s must be %s, got %s", c.here(), s.describe(), kindOf(raw))
	}
}

// uintShape is an integer in [0, max].
type uintShape struct{ max float64 }

// The shape constructors (jUint, jNullable, jEnum, jArrayOf, must, may,
// jObj, jPlain, jTagged, jAnyOf) are //go:noinline. They run only in the
// package's initialisation, which builds every protocol's catalogue from
// some thousands of their calls; inlined there, each call site added its
// own code and inlining tables to the binary: 400 KB of the static binary
// (373 KB of it .gopclntab), which every rpctap process maps at startup
// (docs/performance.md, "Startup"). Not inlined, they cost some
// nanoseconds each, once per process.
//
//go:noinline
func jUint(max float64) shape { return uintShape{max} }

func (u uintShape) describe() string { return "non-negative integer" }
func (u uintShape) check(c *shapeChecker, raw []byte) {
	if jsonType(raw) != "number" || !isInteger(raw) {
		c.add("wrong-type", "%s must be a non-negative integer, got %s", c.here(), kindOf(raw))
		return
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || f > u.max {
		c.add("bad-value", "%s is %s, out of range 0..%.0f", c.here(), raw, u.max)
	}
}

const (
	maxU16 = 65535
	maxU32 = 4294967295
	maxU64 = 18446744073709551615
)

type nullableShape struct{ s shape }

// jNullable allows null besides s ("X or null" in the catalogues).
//
//go:noinline
func jNullable(s shape) shape { return nullableShape{s} }

func (n nullableShape) describe() string { return n.s.describe() + " or null" }
func (n nullableShape) check(c *shapeChecker, raw []byte) {
	if jsonType(raw) == "null" {
		return
	}
	n.s.check(c, raw)
}

type enumShape struct{ values []string }

// jEnum is a string with one of values.
//
//go:noinline
func jEnum(values ...string) shape { return enumShape{values} }

func (e enumShape) describe() string { return "one of " + quoteList(e.values) }
func (e enumShape) check(c *shapeChecker, raw []byte) {
	if jsonType(raw) != "string" {
		c.add("wrong-type", "%s must be a string (%s), got %s", c.here(), e.describe(), kindOf(raw))
		return
	}
	for _, x := range e.values {
		if rawStringIs(raw, x) {
			return
		}
	}
	c.add("bad-value", "%s is %s, want %s", c.here(), excerpt(raw, 60), e.describe())
}

type arrayShape struct{ item shape }

// jArrayOf is an array whose items all have shape item.
//
//go:noinline
func jArrayOf(item shape) shape { return arrayShape{item} }

func (a arrayShape) describe() string { return "array of " + a.item.describe() }
func (a arrayShape) check(c *shapeChecker, raw []byte) {
	if jsonType(raw) != "array" {
		c.add("wrong-type", "%s must be an array, got %s", c.here(), kindOf(raw))
		return
	}
	forEachElementIn(c.x, raw, func(i int, v []byte) {
		n := c.pushIndex(i)
		a.item.check(c, v)
		c.pop(n)
	})
}

type field struct {
	name     string
	s        shape
	required bool
}

//go:noinline
func must(name string, s shape) field { return field{name, s, true} }

//go:noinline
func may(name string, s shape) field { return field{name, s, false} }

// objShape is an object with known fields; unknown fields are allowed.
type objShape struct {
	name   string
	fields []field
	extra  []shape // further constraints on the same object (allOf), e.g. a tagged part
}

var metaField = may("_meta", jNullable(jAnyObject))

// jObj is an object with the ACP/MCP "_meta" field (object or null) plus fields.
//
//go:noinline
func jObj(name string, fields ...field) *objShape {
	return &objShape{name: name, fields: append([]field{metaField}, fields...)}
}

// jPlain is an object without a declared "_meta".
//
//go:noinline
func jPlain(name string, fields ...field) *objShape { return &objShape{name: name, fields: fields} }

// with adds constraints that apply to the same object (allOf).
func (o *objShape) with(s ...shape) *objShape { o.extra = append(o.extra, s...); return o }

func (o *objShape) describe() string {
	if o.name != "" {
		return o.name + " object"
	}
	return "object"
}

func (o *objShape) check(c *shapeChecker, raw []byte) {
	if jsonType(raw) != "object" {
		c.add("wrong-type", "%s must be %s, got %s", c.here(), o.describe(), kindOf(raw))
		return
	}
	var seen uint64 // bit i: field i present (objects here have fewer than 64 fields)
	forEachMemberIn(c.x, raw, func(k, v []byte) bool {
		plain := !hasBackslash(k) // keyIs without its search per field
		for i := range o.fields {
			if name := o.fields[i].name; plain && string(k) == name || !plain && keyIs(k, name) {
				seen |= 1 << uint(i)
				n := c.push(k)
				o.fields[i].s.check(c, v)
				c.pop(n)
				break
			}
		}
		return true
	})
	for i, f := range o.fields {
		if f.required && seen&(1<<uint(i)) == 0 {
			what := "object"
			if o.name != "" {
				what = o.name
			}
			n := c.push([]byte(f.name))
			c.add("missing-field", "%s is missing required field %q (%s)", what, f.name, f.s.describe())
			c.pop(n)
		}
	}
	for _, s := range o.extra {
		s.check(c, raw)
	}
}

// taggedShape is a union told apart by a string tag field (serde's
// internally tagged enums: ContentBlock "type", SessionUpdate
// "sessionUpdate"). The variant shapes see the whole object.
type taggedShape struct {
	name     string
	tag      string
	variants map[string]shape
	order    []string
}

//go:noinline
func jTagged(name, tag string, variants map[string]shape) shape {
	t := &taggedShape{name: name, tag: tag, variants: variants}
	for k := range variants {
		t.order = append(t.order, k)
	}
	sort.Strings(t.order)
	return t
}

func (t *taggedShape) describe() string { return t.name }
func (t *taggedShape) check(c *shapeChecker, raw []byte) {
	if jsonType(raw) != "object" {
		c.add("wrong-type", "%s must be a %s object, got %s", c.here(), t.name, kindOf(raw))
		return
	}
	tv := memberOfIn(c.x, raw, t.tag)
	n := c.push([]byte(t.tag))
	defer c.pop(n)
	if tv == nil {
		c.add("missing-field", "%s is missing its tag %q (one of %s)", t.name, t.tag, quoteList(t.order))
		return
	}
	var vs shape
	var s string
	var ok bool
	if len(tv) >= 2 && tv[0] == '"' && tv[len(tv)-1] == '"' && bytes.IndexByte(tv, '\\') < 0 {
		// The common case: no escapes, look up without a string copy.
		vs, ok = t.variants[string(tv[1:len(tv)-1])]
		if !ok {
			s = string(tv[1 : len(tv)-1])
		}
	} else {
		if s, ok = rawString(tv); !ok {
			c.add("wrong-type", "%s tag %q must be a string, got %s", t.name, t.tag, kindOf(tv))
			return
		}
		vs, ok = t.variants[s]
	}
	if !ok {
		c.add("bad-value", "unknown %s %q %q; want one of %s", t.name, t.tag, s, quoteList(t.order))
		return
	}
	c.pop(n)
	vs.check(c, raw)
}

// anyOfShape passes when at least one alternative passes (JSON Schema
// anyOf, serde's untagged enums). When none does it reports the findings of
// the alternative that came closest.
type anyOfShape struct {
	name string
	alts []shape
}

//go:noinline
func jAnyOf(name string, alts ...shape) shape { return anyOfShape{name, alts} }

func (a anyOfShape) describe() string { return a.name }
func (a anyOfShape) check(c *shapeChecker, raw []byte) {
	var best []Violation
	for i, alt := range a.alts {
		sub := shapeChecker{prefix: c.prefix, ptr: append([]byte(nil), c.ptr...), x: c.x}
		alt.check(&sub, raw)
		if len(sub.vs) == 0 {
			return
		}
		if i == 0 || len(sub.vs) < len(best) {
			best = sub.vs
		}
	}
	if len(best) > 0 {
		best[0].Message = fmt.Sprintf("%s matches no form of %s: %s", c.here(), a.name, best[0].Message)
	}
	c.vs = append(c.vs, best...)
}

// constShape is a fixed string.
type constShape string

func (k constShape) describe() string { return strconv.Quote(string(k)) }
func (k constShape) check(c *shapeChecker, raw []byte) {
	if !rawStringIs(raw, string(k)) {
		c.add("bad-value", "%s must be %q", c.here(), string(k))
	}
}

func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

package protocol

// A small declarative shape checker for the JSON-RPC family (acp, mcp).
// Shapes are written in Go from the protocol catalogues; values are decoded
// with encoding/json (UseNumber, so integers stay exact) only in Validate,
// never in Classify.
//
// Codes: PREFIX.missing-field, PREFIX.wrong-type, PREFIX.bad-value (enum,
// const or range). Unknown fields are always allowed.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

type shapeChecker struct {
	prefix string
	vs     []Violation
}

func (c *shapeChecker) add(kind, ptr, format string, a ...any) {
	c.vs = append(c.vs, Violation{Code: c.prefix + "." + kind, Severity: SevError, Pointer: ptr, Message: fmt.Sprintf(format, a...)})
}

// shape is one JSON type description.
type shape interface {
	check(c *shapeChecker, v any, ptr string)
	describe() string // for messages: "string", "object", "ContentBlock"
}

// decodeJSON decodes raw with numbers kept as json.Number.
func decodeJSON(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func typeOfValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
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

func (s scalarShape) check(c *shapeChecker, v any, ptr string) {
	ok := false
	switch s {
	case jString:
		_, ok = v.(string)
	case jBoolean:
		_, ok = v.(bool)
	case jNumber:
		_, ok = v.(json.Number)
	case jInteger:
		n, isNum := v.(json.Number)
		ok = isNum && numberIsInteger(n)
	case jAnything:
		ok = true
	case jAnyObject:
		_, ok = v.(map[string]any)
	case jAnyArray:
		_, ok = v.([]any)
	}
	if !ok {
		c.add("wrong-type", ptr, "%s must be %s, got %s", ptrName(ptr), s.describe(), typeOfValue(v))
	}
}

func numberIsInteger(n json.Number) bool {
	if _, err := n.Int64(); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(string(n), 10, 64); err == nil {
		return true
	}
	f, err := n.Float64()
	return err == nil && !math.IsInf(f, 0) && f == math.Trunc(f)
}

// uintShape is an integer in [0, max].
type uintShape struct{ max float64 }

func jUint(max float64) shape { return uintShape{max} }

func (u uintShape) describe() string { return "non-negative integer" }
func (u uintShape) check(c *shapeChecker, v any, ptr string) {
	n, ok := v.(json.Number)
	if !ok || !numberIsInteger(n) {
		c.add("wrong-type", ptr, "%s must be a non-negative integer, got %s", ptrName(ptr), typeOfValue(v))
		return
	}
	f, _ := n.Float64()
	if f < 0 || f > u.max {
		c.add("bad-value", ptr, "%s is %s, out of range 0..%.0f", ptrName(ptr), n, u.max)
	}
}

const (
	maxU16 = 65535
	maxU32 = 4294967295
	maxU64 = 18446744073709551615
)

type nullableShape struct{ s shape }

// jNullable allows null besides s ("X or null" in the catalogues).
func jNullable(s shape) shape { return nullableShape{s} }

func (n nullableShape) describe() string { return n.s.describe() + " or null" }
func (n nullableShape) check(c *shapeChecker, v any, ptr string) {
	if v == nil {
		return
	}
	n.s.check(c, v, ptr)
}

type enumShape struct{ values []string }

// jEnum is a string with one of values.
func jEnum(values ...string) shape { return enumShape{values} }

func (e enumShape) describe() string { return "one of " + quoteList(e.values) }
func (e enumShape) check(c *shapeChecker, v any, ptr string) {
	s, ok := v.(string)
	if !ok {
		c.add("wrong-type", ptr, "%s must be a string (%s), got %s", ptrName(ptr), e.describe(), typeOfValue(v))
		return
	}
	for _, x := range e.values {
		if s == x {
			return
		}
	}
	c.add("bad-value", ptr, "%s is %q, want %s", ptrName(ptr), s, e.describe())
}

type arrayShape struct{ item shape }

// jArrayOf is an array whose items all have shape item.
func jArrayOf(item shape) shape { return arrayShape{item} }

func (a arrayShape) describe() string { return "array of " + a.item.describe() }
func (a arrayShape) check(c *shapeChecker, v any, ptr string) {
	arr, ok := v.([]any)
	if !ok {
		c.add("wrong-type", ptr, "%s must be an array, got %s", ptrName(ptr), typeOfValue(v))
		return
	}
	for i, x := range arr {
		a.item.check(c, x, ptr+"/"+strconv.Itoa(i))
	}
}

type field struct {
	name     string
	s        shape
	required bool
}

func must(name string, s shape) field { return field{name, s, true} }
func may(name string, s shape) field  { return field{name, s, false} }

// objShape is an object with known fields; unknown fields are allowed.
type objShape struct {
	name   string
	fields []field
	extra  []shape // further constraints on the same object (allOf), e.g. a tagged part
}

var metaField = may("_meta", jNullable(jAnyObject))

// jObj is an object with the ACP/MCP "_meta" field (object or null) plus fields.
func jObj(name string, fields ...field) *objShape {
	return &objShape{name: name, fields: append([]field{metaField}, fields...)}
}

// jPlain is an object without a declared "_meta".
func jPlain(name string, fields ...field) *objShape { return &objShape{name: name, fields: fields} }

// with adds constraints that apply to the same object (allOf).
func (o *objShape) with(s ...shape) *objShape { o.extra = append(o.extra, s...); return o }

func (o *objShape) describe() string {
	if o.name != "" {
		return o.name + " object"
	}
	return "object"
}

func (o *objShape) check(c *shapeChecker, v any, ptr string) {
	m, ok := v.(map[string]any)
	if !ok {
		c.add("wrong-type", ptr, "%s must be %s, got %s", ptrName(ptr), o.describe(), typeOfValue(v))
		return
	}
	for _, f := range o.fields {
		fv, present := m[f.name]
		fp := ptr + "/" + pointerEscape(f.name)
		if !present {
			if f.required {
				what := "object"
				if o.name != "" {
					what = o.name
				}
				c.add("missing-field", fp, "%s is missing required field %q (%s)", what, f.name, f.s.describe())
			}
			continue
		}
		f.s.check(c, fv, fp)
	}
	for _, s := range o.extra {
		s.check(c, v, ptr)
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

func jTagged(name, tag string, variants map[string]shape) shape {
	t := &taggedShape{name: name, tag: tag, variants: variants}
	for k := range variants {
		t.order = append(t.order, k)
	}
	sort.Strings(t.order)
	return t
}

func (t *taggedShape) describe() string { return t.name }
func (t *taggedShape) check(c *shapeChecker, v any, ptr string) {
	m, ok := v.(map[string]any)
	if !ok {
		c.add("wrong-type", ptr, "%s must be a %s object, got %s", ptrName(ptr), t.name, typeOfValue(v))
		return
	}
	tp := ptr + "/" + pointerEscape(t.tag)
	tv, present := m[t.tag]
	if !present {
		c.add("missing-field", tp, "%s is missing its tag %q (one of %s)", t.name, t.tag, quoteList(t.order))
		return
	}
	s, ok := tv.(string)
	if !ok {
		c.add("wrong-type", tp, "%s tag %q must be a string, got %s", t.name, t.tag, typeOfValue(tv))
		return
	}
	vs, ok := t.variants[s]
	if !ok {
		c.add("bad-value", tp, "unknown %s %q %q; want one of %s", t.name, t.tag, s, quoteList(t.order))
		return
	}
	vs.check(c, v, ptr)
}

// anyOfShape passes when at least one alternative passes (JSON Schema
// anyOf, serde's untagged enums). When none does it reports the findings of
// the alternative that came closest.
type anyOfShape struct {
	name string
	alts []shape
}

func jAnyOf(name string, alts ...shape) shape { return anyOfShape{name, alts} }

func (a anyOfShape) describe() string { return a.name }
func (a anyOfShape) check(c *shapeChecker, v any, ptr string) {
	var best []Violation
	for i, alt := range a.alts {
		sub := shapeChecker{prefix: c.prefix}
		alt.check(&sub, v, ptr)
		if len(sub.vs) == 0 {
			return
		}
		if i == 0 || len(sub.vs) < len(best) {
			best = sub.vs
		}
	}
	if len(best) > 0 {
		best[0].Message = fmt.Sprintf("%s matches no form of %s: %s", ptrName(ptr), a.name, best[0].Message)
	}
	c.vs = append(c.vs, best...)
}

// constShape is a fixed string.
type constShape string

func (k constShape) describe() string { return strconv.Quote(string(k)) }
func (k constShape) check(c *shapeChecker, v any, ptr string) {
	if s, ok := v.(string); !ok || s != string(k) {
		c.add("bad-value", ptr, "%s must be %q", ptrName(ptr), string(k))
	}
}

// ref lets recursive or later-defined shapes be referenced.
type refShape struct {
	name string
	s    *shape
}

func jRef(name string, s *shape) shape                      { return refShape{name, s} }
func (r refShape) describe() string                         { return r.name }
func (r refShape) check(c *shapeChecker, v any, ptr string) { (*r.s).check(c, v, ptr) }

func ptrName(ptr string) string {
	if ptr == "" {
		return "the value"
	}
	return ptr
}

func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

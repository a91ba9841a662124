// Package jsonschema validates JSON texts against a JSON Schema of draft
// 2020-12 or draft-07, compiled once from one file.
//
// It is rpctap's own (a general-purpose validator linked into every rpctap
// process cost 0.5 MB of binary and 0.7 MiB of resident memory at startup;
// docs/performance.md, "Startup"). What it implements: every assertion and
// applicator keyword of both drafts, unevaluatedProperties and
// unevaluatedItems, $ref, $dynamicRef/$dynamicAnchor, $anchor, $id and
// JSON-pointer references (with ~0, ~1 and percent escapes) inside the
// file, and boolean schemas. What it does not: references to other files
// or URLs (refused by Compile), "format" and the content keywords
// (annotations only), and ECMA-262 regular expressions: "pattern" and
// "patternProperties" are Go's RE2 syntax, which has no back-references or
// look-arounds (a schema using them is refused); docs/protocols.md
// ("schema") lists where RE2 and ECMA-262 read the same pattern
// differently (\s, ".").
//
// A third-party validator checks it in the tests (differential and fuzz
// tests against github.com/santhosh-tekuri/jsonschema/v6, and the upstream
// ACP schemas), never in the binary.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The "$schema" values of the drafts implemented.
const (
	Draft2020 = "https://json-schema.org/draft/2020-12/schema"
	Draft07   = "http://json-schema.org/draft-07/schema#"
)

// Schema is a compiled schema. It is safe for concurrent use.
type Schema struct {
	root  *node
	rest  *node            // the root with its properties accepting anything
	props map[string]*node // the root's properties, for per-member errors
	track bool             // the schema uses unevaluated*: annotations are collected
	dyn   map[string]*node // $dynamicAnchor "resource#name" -> schema
	nodes map[string]*node // every compiled schema, by JSON pointer in the file
	pool  sync.Pool        // *state
}

type node struct {
	loc     string // JSON pointer in the file ("" for the root)
	boolean int8   // 1: true schema, -1: false schema
	d7      bool
	res     string // the resource URI when this schema has an $id (or is the root)

	ref     *node
	dynRef  *node
	dynName string // $dynamicRef to a $dynamicAnchor of this name

	types     uint8 // bit per kind; bit 7: integer
	constDoc  *doc  // const's value is constDoc.v[0]
	enumDoc   *doc  // enum's array is enumDoc.v[0]
	num       [4]float64
	numSet    [4]bool // minimum, maximum, exclusiveMinimum, exclusiveMaximum
	multOf    float64
	multRat   *big.Rat
	minLen    int64
	maxLen    int64
	pattern   *regexp.Regexp
	patSrc    string
	minItems  int64
	maxItems  int64
	unique    bool
	prefix    []*node
	items     *node
	contains  *node
	minCont   int64
	maxCont   int64
	uneItems  *node
	minProps  int64
	maxProps  int64
	required  []string
	props     map[string]*node
	propNames []string // props' keys, sorted
	patProps  []patProp
	addProps  *node
	depReq    map[string][]string
	depReqK   []string
	depSch    map[string]*node
	depSchK   []string
	propNamer *node
	uneProps  *node
	allOf     []*node
	anyOf     []*node
	oneOf     []*node
	not       *node
	ifS       *node
	thenS     *node
	elseS     *node
}

type patProp struct {
	re  *regexp.Regexp
	src string
	s   *node
}

const intBit = 1 << 7

const (
	nMin = iota
	nMax
	nXMin
	nXMax
)

// Compile compiles the schema in raw. base is the file's URI, against
// which relative references resolve. Errors are one line.
func Compile(raw []byte, base string) (*Schema, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	c := &compiler{
		top:       top,
		resources: map[string]string{},
		anchors:   map[string]string{},
		dynamic:   map[string]string{},
		bases:     map[string]string{},
		resOf:     map[string]string{},
		nodes:     map[string]*node{},
	}
	draft := Draft2020
	if m, ok := top.(map[string]any); ok {
		if s, ok := m["$schema"]; ok {
			str, _ := s.(string)
			switch str {
			case Draft2020:
			case Draft07, "https://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema":
				draft = Draft07
			default:
				return nil, fmt.Errorf("$schema %q is not supported (rpctap accepts JSON Schema draft 2020-12 and draft-07)", s)
			}
		}
	}
	c.d7 = draft == Draft07
	b, err := normURI(base)
	if err != nil {
		return nil, fmt.Errorf("base URI %q: %v", base, err)
	}
	if err := c.scan(top, "", b, true); err != nil {
		return nil, err
	}
	root, err := c.compile("")
	if err != nil {
		return nil, err
	}
	s := &Schema{root: root, track: c.uneval, dyn: map[string]*node{}, nodes: c.nodes}
	for key, ptr := range c.dynamic {
		if s.dyn[key], err = c.compile(ptr); err != nil {
			return nil, err
		}
	}
	for len(c.todo) > 0 { // references met while compiling the anchors
		f := c.todo[0]
		c.todo = c.todo[1:]
		if err := f(); err != nil {
			return nil, err
		}
	}
	if root.boolean == 0 && len(root.props) >= 2 {
		rest := *root
		rest.props = make(map[string]*node, len(root.props))
		for k := range root.props {
			rest.props[k] = trueNode
		}
		s.rest, s.props = &rest, root.props
	}
	s.pool.New = func() any { return new(state) }
	return s, nil
}

var trueNode = &node{boolean: 1}

type compiler struct {
	top       any
	d7        bool
	resources map[string]string // resource URI -> pointer
	anchors   map[string]string // "URI#name" -> pointer
	dynamic   map[string]string // "URI#name" -> pointer, $dynamicAnchor
	bases     map[string]string // pointer of every schema scanned -> its base URI
	resOf     map[string]string // pointer of a resource -> its URI
	nodes     map[string]*node
	todo      []func() error
	uneval    bool
}

func normURI(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// Keywords whose values are schemas, maps of schemas, or arrays of them.
var (
	oneSchema = []string{"additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "items"}
	mapSchema = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
	arrSchema = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)

// validAnchor: ^[A-Za-z_][-A-Za-z0-9._]*$ (the meta-schema's pattern;
// checked by hand, not by a regexp compiled at every process's start).
func validAnchor(s string) bool {
	for i, c := range []byte(s) {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// scan walks the schemas of the document, recording base URIs,
// resources ($id) and anchors, before anything is compiled (a reference
// may point forward).
func (c *compiler) scan(v any, ptr, base string, isRoot bool) error {
	m, ok := v.(map[string]any)
	if !ok {
		c.bases[ptr] = base
		return nil
	}
	_, hasRef := m["$ref"]
	if id, ok := m["$id"].(string); ok && !(c.d7 && hasRef) {
		u, err := resolve(base, id)
		if err != nil {
			return fmt.Errorf("$id %q at %s: %v", id, locName(ptr), err)
		}
		if c.d7 && strings.HasPrefix(id, "#") {
			c.anchors[base+"#"+u.Fragment] = ptr
		} else {
			if u.Fragment != "" {
				if !c.d7 {
					return fmt.Errorf("$id %q at %s: an $id has no fragment in draft 2020-12 (use $anchor)", id, locName(ptr))
				}
			}
			frag := u.Fragment
			u.Fragment, u.RawFragment = "", ""
			base = u.String()
			c.resources[base] = ptr
			c.resOf[ptr] = base
			if frag != "" {
				c.anchors[base+"#"+frag] = ptr
			}
		}
	}
	if isRoot {
		if _, ok := c.resOf[ptr]; !ok {
			c.resources[base] = ptr
			c.resOf[ptr] = base
		}
	}
	c.bases[ptr] = base
	if !c.d7 {
		for _, kw := range []string{"$anchor", "$dynamicAnchor"} {
			a, ok := m[kw]
			if !ok {
				continue
			}
			s, _ := a.(string)
			if !validAnchor(s) {
				return fmt.Errorf("%s at %s: %v is not a valid anchor name", kw, locName(ptr), a)
			}
			c.anchors[base+"#"+s] = ptr
			if kw == "$dynamicAnchor" {
				c.dynamic[base+"#"+s] = ptr
			}
		}
		if _, ok := m["unevaluatedProperties"]; ok {
			c.uneval = true
		}
		if _, ok := m["unevaluatedItems"]; ok {
			c.uneval = true
		}
	}
	for _, kw := range oneSchema {
		if sub, ok := m[kw]; ok && isSchemaValue(sub) {
			if err := c.scan(sub, ptr+"/"+escapeToken(kw), base, false); err != nil {
				return err
			}
		}
	}
	for _, kw := range mapSchema {
		if mm, ok := m[kw].(map[string]any); ok {
			for _, k := range sortedKeys(mm) {
				if isSchemaValue(mm[k]) {
					if err := c.scan(mm[k], ptr+"/"+escapeToken(kw)+"/"+escapeToken(k), base, false); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, kw := range arrSchema {
		if a, ok := m[kw].([]any); ok {
			for i, sub := range a {
				if err := c.scan(sub, ptr+"/"+kw+"/"+strconv.Itoa(i), base, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func isSchemaValue(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func resolve(base, ref string) (*url.URL, error) {
	b, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	return b.ResolveReference(r), nil
}

func locName(ptr string) string {
	if ptr == "" {
		return "root"
	}
	return ptr
}

// at returns the value at a JSON pointer of the document.
func (c *compiler) at(ptr string) (any, bool) {
	v := c.top
	if ptr == "" {
		return v, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = unescapeToken(tok)
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// baseOf is the base URI of the schema at ptr: the scanned one, else that
// of its nearest scanned ancestor.
func (c *compiler) baseOf(ptr string) string {
	for p := ptr; ; {
		if b, ok := c.bases[p]; ok {
			return b
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return c.bases[""]
		}
		p = p[:i]
	}
}

// resolveRef turns a reference found in the schema at ptr into the
// pointer of its target. A dynamic reference also returns the anchor name
// it may be re-bound to.
func (c *compiler) resolveRef(from, ref string) (string, *url.URL, error) {
	ptr := from
	u, err := resolve(c.baseOf(ptr), ref)
	if err != nil {
		return "", nil, fmt.Errorf("$ref %q at %s: %v", ref, locName(ptr), err)
	}
	frag := u.Fragment
	v := *u
	v.Fragment, v.RawFragment = "", ""
	res, ok := c.resources[v.String()]
	if !ok {
		return "", nil, fmt.Errorf("$ref %q at %s: cannot resolve remote schema %s (rpctap loads no other file or URL: move the definitions under $defs)", ref, locName(ptr), v.String())
	}
	switch {
	case frag == "":
		ptr = res
	case strings.HasPrefix(frag, "/"):
		ptr = res + frag
	default:
		a, ok := c.anchors[v.String()+"#"+frag]
		if !ok {
			return "", nil, fmt.Errorf("$ref %q at %s: no anchor %q in the schema", ref, locName(ptr), frag)
		}
		ptr = a
	}
	if _, ok := c.at(ptr); !ok {
		return "", nil, fmt.Errorf("$ref %q at %s: nothing at %s in the schema", ref, locName(from), locName(ptr))
	}
	return ptr, &v, nil
}

// compile compiles the schema at ptr, once.
func (c *compiler) compile(ptr string) (*node, error) {
	if n, ok := c.nodes[ptr]; ok {
		return n, nil
	}
	v, ok := c.at(ptr)
	if !ok {
		return nil, fmt.Errorf("no schema at %s", locName(ptr))
	}
	n := &node{loc: ptr, d7: c.d7, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minCont: -1, maxCont: -1, minProps: -1, maxProps: -1}
	c.nodes[ptr] = n
	switch x := v.(type) {
	case bool:
		n.boolean = -1
		if x {
			n.boolean = 1
		}
		return n, nil
	case map[string]any:
		n.res = c.resOf[ptr]
		if err := c.keywords(n, x); err != nil {
			return nil, err
		}
		return n, nil
	}
	return nil, fmt.Errorf("the schema at %s is %s, not an object or a boolean", locName(ptr), jsonTypeName(v))
}

func jsonTypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		_ = x
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// keywords fills n from the schema object m, checking each keyword's value
// as the draft's meta-schema does.
func (c *compiler) keywords(n *node, m map[string]any) error {
	ptr := n.loc
	bad := func(kw, want string) error {
		return fmt.Errorf("%s at %s: %s, want %s", kw, locName(ptr), jsonTypeName(m[kw]), want)
	}
	sub := func(kw string) (*node, error) {
		v, ok := m[kw]
		if !ok {
			return nil, nil
		}
		if !isSchemaValue(v) {
			return nil, bad(kw, "a schema (an object or a boolean)")
		}
		return c.compile(ptr + "/" + escapeToken(kw))
	}
	subs := func(kw string) ([]*node, error) {
		v, ok := m[kw]
		if !ok {
			return nil, nil
		}
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			return nil, bad(kw, "a non-empty array of schemas")
		}
		out := make([]*node, len(a))
		for i, x := range a {
			if !isSchemaValue(x) {
				return nil, fmt.Errorf("%s/%d at %s: %s, want a schema", kw, i, locName(ptr), jsonTypeName(x))
			}
			var err error
			if out[i], err = c.compile(ptr + "/" + kw + "/" + strconv.Itoa(i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	subMap := func(kw string) (map[string]*node, []string, error) {
		v, ok := m[kw]
		if !ok {
			return nil, nil, nil
		}
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, nil, bad(kw, "an object of schemas")
		}
		out := make(map[string]*node, len(mm))
		keys := sortedKeys(mm)
		for _, k := range keys {
			if !isSchemaValue(mm[k]) {
				return nil, nil, fmt.Errorf("%s/%s at %s: %s, want a schema", kw, k, locName(ptr), jsonTypeName(mm[k]))
			}
			var err error
			if out[k], err = c.compile(ptr + "/" + escapeToken(kw) + "/" + escapeToken(k)); err != nil {
				return nil, nil, err
			}
		}
		return out, keys, nil
	}
	count := func(kw string, dst *int64) error {
		v, ok := m[kw]
		if !ok {
			return nil
		}
		num, ok := v.(json.Number)
		f, err := num.Float64()
		if !ok || err != nil || f < 0 || f != math.Trunc(f) {
			return bad(kw, "a non-negative integer")
		}
		*dst = int64(min(f, math.MaxInt64/2))
		return nil
	}
	strs := func(kw string, v any) ([]string, error) {
		a, ok := v.([]any)
		if !ok {
			return nil, bad(kw, "an array of strings")
		}
		out := make([]string, len(a))
		for i, x := range a {
			s, ok := x.(string)
			if !ok {
				return nil, bad(kw, "an array of strings")
			}
			out[i] = s
		}
		return out, nil
	}
	var err error

	// $schema on a sub-schema: only the root's draft is honoured.
	if v, ok := m["$schema"]; ok {
		if _, ok := v.(string); !ok {
			return bad("$schema", "a string")
		}
	}
	if v, ok := m["$id"]; ok {
		if _, ok := v.(string); !ok {
			return bad("$id", "a string")
		}
	}
	if v, ok := m["$ref"]; ok {
		ref, ok := v.(string)
		if !ok {
			return bad("$ref", "a string")
		}
		target, _, err := c.resolveRef(ptr, ref)
		if err != nil {
			return err
		}
		if n.ref, err = c.compile(target); err != nil {
			return err
		}
		if c.d7 {
			// draft-07: "All other properties in a "$ref" object MUST be ignored."
			return c.defs(m, ptr)
		}
	}
	if v, ok := m["$dynamicRef"]; ok && !c.d7 {
		ref, ok := v.(string)
		if !ok {
			return bad("$dynamicRef", "a string")
		}
		target, _, err := c.resolveRef(ptr, ref)
		if err != nil {
			return err
		}
		if n.dynRef, err = c.compile(target); err != nil {
			return err
		}
		// Dynamic only when the target is the $dynamicAnchor the fragment names.
		if u, err := url.Parse(ref); err == nil && u.Fragment != "" && !strings.HasPrefix(u.Fragment, "/") {
			if tm, ok := mapAt(c, target); ok && tm["$dynamicAnchor"] == u.Fragment {
				n.dynName = u.Fragment
			}
		}
	}
	if err := c.defs(m, ptr); err != nil {
		return err
	}

	if v, ok := m["type"]; ok {
		var names []string
		if s, ok := v.(string); ok {
			names = []string{s}
		} else if names, err = strs("type", v); err != nil || len(names) == 0 {
			return bad("type", "a type name or an array of them")
		}
		for _, t := range names {
			switch t {
			case "integer":
				n.types |= intBit
			default:
				i := slices.Index(kindNames[:], t)
				if i < 0 {
					return fmt.Errorf("type at %s: %q is not a JSON Schema type", locName(ptr), t)
				}
				n.types |= 1 << i
			}
		}
	}
	if v, ok := m["const"]; ok {
		if n.constDoc, err = docOf(v); err != nil {
			return err
		}
	}
	if v, ok := m["enum"]; ok {
		if _, ok := v.([]any); !ok {
			return bad("enum", "an array")
		}
		if n.enumDoc, err = docOf(v); err != nil {
			return err
		}
	}
	for i, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if v, ok := m[kw]; ok {
			num, ok := v.(json.Number)
			f, err := num.Float64()
			if !ok || err != nil {
				return bad(kw, "a number")
			}
			n.num[i], n.numSet[i] = f, true
		}
	}
	if v, ok := m["multipleOf"]; ok {
		num, ok := v.(json.Number)
		f, err := num.Float64()
		if !ok || err != nil || f <= 0 {
			return bad("multipleOf", "a number greater than 0")
		}
		n.multOf = f
		if f != math.Trunc(f) || f >= 1<<53 {
			n.multRat, _ = new(big.Rat).SetString(num.String())
		}
	}
	if err := count("minLength", &n.minLen); err != nil {
		return err
	}
	if err := count("maxLength", &n.maxLen); err != nil {
		return err
	}
	if v, ok := m["pattern"]; ok {
		s, ok := v.(string)
		if !ok {
			return bad("pattern", "a string")
		}
		if n.pattern, err = compileRE(s); err != nil {
			return fmt.Errorf("pattern at %s: %v", locName(ptr), err)
		}
		n.patSrc = s
	}

	// arrays
	if err := count("minItems", &n.minItems); err != nil {
		return err
	}
	if err := count("maxItems", &n.maxItems); err != nil {
		return err
	}
	if v, ok := m["uniqueItems"]; ok {
		if n.unique, ok = v.(bool); !ok {
			return bad("uniqueItems", "a boolean")
		}
	}
	if c.d7 {
		if _, ok := m["items"].([]any); ok {
			if n.prefix, err = subs("items"); err != nil {
				return err
			}
			if n.items, err = sub("additionalItems"); err != nil {
				return err
			}
		} else if n.items, err = sub("items"); err != nil {
			return err
		}
	} else {
		if _, ok := m["items"].([]any); ok {
			return fmt.Errorf("items at %s: an array of schemas is prefixItems in draft 2020-12", locName(ptr))
		}
		if n.prefix, err = subs("prefixItems"); err != nil {
			return err
		}
		if n.items, err = sub("items"); err != nil {
			return err
		}
		if n.uneItems, err = sub("unevaluatedItems"); err != nil {
			return err
		}
		if err := count("minContains", &n.minCont); err != nil {
			return err
		}
		if err := count("maxContains", &n.maxCont); err != nil {
			return err
		}
	}
	if n.contains, err = sub("contains"); err != nil {
		return err
	}

	// objects
	if err := count("minProperties", &n.minProps); err != nil {
		return err
	}
	if err := count("maxProperties", &n.maxProps); err != nil {
		return err
	}
	if v, ok := m["required"]; ok {
		if n.required, err = strs("required", v); err != nil {
			return err
		}
	}
	if n.props, n.propNames, err = subMap("properties"); err != nil {
		return err
	}
	if v, ok := m["patternProperties"]; ok {
		pm, ok := v.(map[string]any)
		if !ok {
			return bad("patternProperties", "an object of schemas")
		}
		for _, k := range sortedKeys(pm) {
			re, err := compileRE(k)
			if err != nil {
				return fmt.Errorf("patternProperties at %s: %v", locName(ptr), err)
			}
			if !isSchemaValue(pm[k]) {
				return fmt.Errorf("patternProperties/%s at %s: %s, want a schema", k, locName(ptr), jsonTypeName(pm[k]))
			}
			s, err := c.compile(ptr + "/patternProperties/" + escapeToken(k))
			if err != nil {
				return err
			}
			n.patProps = append(n.patProps, patProp{re: re, src: k, s: s})
		}
	}
	if n.addProps, err = sub("additionalProperties"); err != nil {
		return err
	}
	if n.propNamer, err = sub("propertyNames"); err != nil {
		return err
	}
	depReq := func(kw string, v any, allowSchemas bool) error {
		dm, ok := v.(map[string]any)
		if !ok {
			return bad(kw, "an object")
		}
		for _, k := range sortedKeys(dm) {
			switch x := dm[k].(type) {
			case []any:
				names, err := strs(kw, x)
				if err != nil {
					return err
				}
				if n.depReq == nil {
					n.depReq = map[string][]string{}
				}
				n.depReq[k] = names
				n.depReqK = append(n.depReqK, k)
			case map[string]any, bool:
				if !allowSchemas {
					return fmt.Errorf("%s/%s at %s: %s, want an array of strings", kw, k, locName(ptr), jsonTypeName(x))
				}
				s, err := c.compile(ptr + "/" + kw + "/" + escapeToken(k))
				if err != nil {
					return err
				}
				if n.depSch == nil {
					n.depSch = map[string]*node{}
				}
				n.depSch[k] = s
				n.depSchK = append(n.depSchK, k)
			default:
				return fmt.Errorf("%s/%s at %s: %s, want an array of strings", kw, k, locName(ptr), jsonTypeName(x))
			}
		}
		return nil
	}
	if c.d7 {
		if v, ok := m["dependencies"]; ok {
			if err := depReq("dependencies", v, true); err != nil {
				return err
			}
		}
	} else {
		if v, ok := m["dependentRequired"]; ok {
			if err := depReq("dependentRequired", v, false); err != nil {
				return err
			}
		}
		if n.depSch, n.depSchK, err = subMap("dependentSchemas"); err != nil {
			return err
		}
		if n.uneProps, err = sub("unevaluatedProperties"); err != nil {
			return err
		}
	}

	// applicators
	if n.allOf, err = subs("allOf"); err != nil {
		return err
	}
	if n.anyOf, err = subs("anyOf"); err != nil {
		return err
	}
	if n.oneOf, err = subs("oneOf"); err != nil {
		return err
	}
	if n.not, err = sub("not"); err != nil {
		return err
	}
	if n.ifS, err = sub("if"); err != nil {
		return err
	}
	if n.thenS, err = sub("then"); err != nil {
		return err
	}
	if n.elseS, err = sub("else"); err != nil {
		return err
	}
	return nil
}

// defs checks that $defs and definitions hold schemas (compiled when
// referenced).
func (c *compiler) defs(m map[string]any, ptr string) error {
	for _, kw := range []string{"$defs", "definitions"} {
		v, ok := m[kw]
		if !ok {
			continue
		}
		dm, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s at %s: %s, want an object of schemas", kw, locName(ptr), jsonTypeName(v))
		}
		for _, k := range sortedKeys(dm) {
			if !isSchemaValue(dm[k]) {
				return fmt.Errorf("%s/%s at %s: %s, want a schema", kw, k, locName(ptr), jsonTypeName(dm[k]))
			}
			p := ptr + "/" + escapeToken(kw) + "/" + escapeToken(k)
			c.todo = append(c.todo, func() error { _, err := c.compile(p); return err })
		}
	}
	return nil
}

func mapAt(c *compiler, ptr string) (map[string]any, bool) {
	v, ok := c.at(ptr)
	m, ok2 := v.(map[string]any)
	return m, ok && ok2
}

func compileRE(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a regular expression rpctap accepts (Go RE2 syntax: no back-references or look-arounds): %v", s, err)
	}
	return re, nil
}

// docOf parses a schema value (const, enum) into a doc.
func docOf(v any) (*doc, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := new(doc)
	if err := d.parse(b); err != nil {
		return nil, err
	}
	return d, nil
}

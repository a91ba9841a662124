package jsonschema

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is one reason a value is invalid.
type Error struct {
	// Pointer is the instance location (a JSON pointer) of the failing
	// value when the schema's path names it (properties, prefixItems, the
	// draft-07 items array), otherwise of the nearest enclosing object or
	// array (an element under items, a member under additionalProperties
	// or patternProperties, ...).
	Pointer string
	// Message is the failing keyword and what is wrong, then "(schema
	// LOCATION)", the JSON pointer in the file of the schema holding the
	// keyword ("root" for the root).
	Message string
}

func (e Error) Error() string { return e.Message }

// maxDepth of schemas entered while validating one value: deeper is a
// reference loop that consumes no input ({"$ref": "#"}), reported as an
// error rather than a stack overflow.
const maxSchemaDepth = 2000

// state is the scratch of one validation, reused through Schema.pool.
type state struct {
	d      doc
	s      *Schema
	err    *Error
	quiet  int      // > 0: inside anyOf, oneOf, not, if, contains: failures are not reported
	path   []step   // instance location
	frozen int      // > 0: the location stopped at a container (see Error.Pointer)
	scope  []string // resources entered: the dynamic scope of $dynamicRef
	bits   []uint64 // evaluated-member/element sets (unevaluated*), bump-allocated
	depth  int
	loop   bool // the depth limit was met
	order  []int32
}

type step struct {
	key int32 // the member's key value; -1 for an array element
	idx int
}

// evs is a set of evaluated members or elements of one object or array,
// bits [off, off+n) of state.bits; off < 0 when annotations are not
// collected.
type evs struct{ off, n int32 }

var noEval = evs{off: -1}

func (st *state) newEval(vi int32) evs {
	if !st.s.track {
		return noEval
	}
	k := st.d.v[vi].k
	if k != kObj && k != kArr {
		return noEval
	}
	n := int32((st.d.length(vi) + 63) / 64)
	off := int32(len(st.bits))
	for range n {
		st.bits = append(st.bits, 0)
	}
	return evs{off, n}
}

func (st *state) child(e evs) evs {
	if e.off < 0 {
		return e
	}
	off := int32(len(st.bits))
	for range e.n {
		st.bits = append(st.bits, 0)
	}
	return evs{off, e.n}
}

func (st *state) mark(e evs, i int) {
	if e.off >= 0 {
		st.bits[int(e.off)+i/64] |= 1 << (i % 64)
	}
}

func (st *state) marked(e evs, i int) bool {
	return st.bits[int(e.off)+i/64]&(1<<(i%64)) != 0
}

func (st *state) merge(dst, src evs) {
	if dst.off >= 0 {
		for i := range dst.n {
			st.bits[dst.off+i] |= st.bits[src.off+i]
		}
	}
}

// Validate validates the JSON text inst. It returns nil when the schema
// accepts it, and an error when inst is not JSON.
//
// The validator stops at the first failure. So that an object with several
// bad members reports each, when the root schema has two or more
// properties and rejects an object, the root is validated again with its
// properties accepting anything (one error for the root's own keywords),
// then each member the properties name against its schema, in member-name
// order: one error for each that fails. When none fails, the first failure
// is the one error.
func (s *Schema) Validate(inst []byte) ([]Error, error) {
	st := s.pool.Get().(*state)
	defer s.pool.Put(st)
	st.s = s
	if err := st.d.parse(inst); err != nil {
		return nil, err
	}
	first := st.run(s.root, 0, nil)
	if first == nil {
		return nil, nil
	}
	var out []Error
	if s.rest != nil && st.d.v[0].k == kObj {
		if e := st.run(s.rest, 0, nil); e != nil {
			out = append(out, *e)
		}
		st.order = st.order[:0]
		for j := range st.d.length(0) {
			k, _ := st.d.member(0, j)
			if s.props[string(st.d.text(k))] != nil {
				st.order = append(st.order, int32(j))
			}
		}
		slices.SortStableFunc(st.order, func(a, b int32) int {
			ka, _ := st.d.member(0, int(a))
			kb, _ := st.d.member(0, int(b))
			return bytes.Compare(st.d.text(ka), st.d.text(kb))
		})
		for _, j := range st.order {
			k, v := st.d.member(0, int(j))
			if e := st.run(s.props[string(st.d.text(k))], v, &step{key: k}); e != nil {
				out = append(out, *e)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, *first)
	}
	return out, nil
}

// run validates value vi against n, from the root's dynamic scope, with
// the instance location at the root or one member under it.
func (st *state) run(n *node, vi int32, at *step) *Error {
	st.err, st.quiet, st.frozen, st.depth, st.loop = nil, 0, 0, 0, false
	st.path, st.scope, st.bits = st.path[:0], st.scope[:0], st.bits[:0]
	if at != nil {
		st.path = append(st.path, *at)
		st.scope = append(st.scope, st.s.root.res)
	}
	if st.validate(n, vi, st.newEval(vi)) && !st.loop {
		return nil
	}
	if st.err == nil { // cannot happen: every failure path reports
		return &Error{Message: "invalid (schema root)"}
	}
	return st.err
}

func (st *state) loud() bool { return st.quiet == 0 && st.err == nil }

// fail records the first failure; call it only when st.loud().
func (st *state) fail(n *node, format string, args ...any) bool {
	var p strings.Builder
	for _, s := range st.path {
		p.WriteByte('/')
		if s.key >= 0 {
			k := string(st.d.text(s.key))
			p.WriteString(strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))
		} else {
			p.WriteString(strconv.Itoa(s.idx))
		}
	}
	st.err = &Error{Pointer: p.String(), Message: fmt.Sprintf(format, args...) + " (schema " + locName(n.loc) + ")"}
	return false
}

// enter and leave move the instance location to a member or element: named
// (the schema path says which: properties, prefixItems) or not (the
// location then stays at the container).
func (st *state) enter(named bool, key int32, idx int) {
	if named && st.frozen == 0 {
		st.path = append(st.path, step{key, idx})
	} else {
		st.frozen++
	}
}

func (st *state) leave(named bool) {
	if named && st.frozen == 0 {
		st.path = st.path[:len(st.path)-1]
	} else {
		st.frozen--
	}
}

// desc describes value vi for a message.
func (st *state) desc(vi int32) string {
	v := &st.d.v[vi]
	switch v.k {
	case kNull:
		return "null"
	case kBool:
		return strconv.FormatBool(v.t)
	case kNum:
		return string(st.d.text(vi))
	case kStr:
		s := string(st.d.text(vi))
		if len(s) > 60 {
			s = s[:57] + "..."
		}
		return strconv.Quote(s)
	case kArr:
		return "an array"
	}
	return "an object"
}

func (st *state) typeName(vi int32) string {
	if st.d.isInt(vi) {
		return "integer"
	}
	return kindNames[st.d.v[vi].k]
}

func (n *node) typeList() string {
	var names []string
	for i, k := range kindNames {
		if n.types&(1<<i) != 0 {
			names = append(names, k)
		}
	}
	if n.types&intBit != 0 {
		names = append(names, "integer")
	}
	return strings.Join(names, " or ")
}

// validate validates value vi against n. On success the members or
// elements of vi that n evaluated are marked in ev; on failure ev is left
// in no particular state (the caller discards it).
func (st *state) validate(n *node, vi int32, ev evs) bool {
	switch n.boolean {
	case 1:
		return true
	case -1:
		if st.loud() {
			st.fail(n, "false: no value is allowed here")
		}
		return false
	}
	if st.depth >= maxSchemaDepth {
		// A loop of references that consumes no input: the value is
		// rejected whatever branch (not, anyOf) met it.
		if !st.loop {
			st.loop, st.err = true, nil
			st.fail(n, "$ref: schemas nested %d deep without consuming the value (a reference loop)", st.depth)
		}
		return false
	}
	st.depth++
	scoped := n.res != "" && (len(st.scope) == 0 || st.scope[len(st.scope)-1] != n.res)
	if scoped {
		st.scope = append(st.scope, n.res)
	}
	var ok bool
	if (n.uneProps != nil || n.uneItems != nil) && ev.off >= 0 {
		// unevaluated* see what this schema and its in-place subschemas
		// evaluated, not what its siblings did.
		local := st.child(ev)
		if ok = st.keywords(n, vi, local); ok {
			st.merge(ev, local)
		}
	} else {
		ok = st.keywords(n, vi, ev)
	}
	if scoped {
		st.scope = st.scope[:len(st.scope)-1]
	}
	st.depth--
	return ok
}

func (st *state) keywords(n *node, vi int32, ev evs) bool {
	d := &st.d
	v := &d.v[vi]
	if n.ref != nil && !st.validate(n.ref, vi, ev) {
		return false
	}
	if n.d7 && n.ref != nil {
		return true
	}
	if n.dynRef != nil {
		target := n.dynRef
		if n.dynName != "" {
			for _, r := range st.scope {
				if x := st.s.dyn[r+"#"+n.dynName]; x != nil {
					target = x
					break
				}
			}
		}
		if !st.validate(target, vi, ev) {
			return false
		}
	}
	if n.types != 0 && n.types&(1<<v.k) == 0 && !(n.types&intBit != 0 && d.isInt(vi)) {
		if st.loud() {
			if k := v.k; k == kArr || k == kObj {
				st.fail(n, "type: got %s, want %s", kindNames[k], n.typeList())
			} else {
				st.fail(n, "type: %s is %s, want %s", st.desc(vi), st.typeName(vi), n.typeList())
			}
		}
		return false
	}
	if n.constDoc != nil && !equal(d, vi, n.constDoc, 0) {
		if st.loud() {
			st.fail(n, "const: %s is not the value the schema requires", st.desc(vi))
		}
		return false
	}
	if n.enumDoc != nil {
		found := false
		for k := range n.enumDoc.length(0) {
			if equal(d, vi, n.enumDoc, n.enumDoc.elem(0, k)) {
				found = true
				break
			}
		}
		if !found {
			if st.loud() {
				st.fail(n, "enum: %s is not one of %s", st.desc(vi), n.enumDoc.b)
			}
			return false
		}
	}
	switch v.k {
	case kNum:
		if !st.number(n, vi) {
			return false
		}
	case kStr:
		if !st.str(n, vi) {
			return false
		}
	case kArr:
		if !st.array(n, vi, ev) {
			return false
		}
	case kObj:
		if !st.object(n, vi, ev) {
			return false
		}
	}
	return st.applicators(n, vi, ev)
}

func (st *state) number(n *node, vi int32) bool {
	x := st.d.v[vi].n
	for i, kw := range [...]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if !n.numSet[i] {
			continue
		}
		lim := n.num[i]
		var bad bool
		var rel string
		switch i {
		case nMin:
			bad, rel = x < lim, "less than"
		case nMax:
			bad, rel = x > lim, "greater than"
		case nXMin:
			bad, rel = x <= lim, "not greater than"
		case nXMax:
			bad, rel = x >= lim, "not less than"
		}
		if bad {
			if st.loud() {
				st.fail(n, "%s: %s is %s %s", kw, st.desc(vi), rel, strconv.FormatFloat(lim, 'g', -1, 64))
			}
			return false
		}
	}
	if n.multOf != 0 && !st.multipleOf(n, vi) {
		if st.loud() {
			st.fail(n, "multipleOf: %s is not a multiple of %s", st.desc(vi), strconv.FormatFloat(n.multOf, 'g', -1, 64))
		}
		return false
	}
	return true
}

// multipleOf decides in float64 when both numbers are integers it holds
// exactly, and exactly on the decimal literals otherwise (0.3 is a
// multiple of 0.1).
func (st *state) multipleOf(n *node, vi int32) bool {
	x := st.d.v[vi].n
	if math.IsInf(x, 0) {
		return false
	}
	if n.multRat == nil && x == math.Trunc(x) && math.Abs(x) < 1<<53 {
		return math.Mod(x, n.multOf) == 0
	}
	xr, ok := new(big.Rat).SetString(string(st.d.text(vi)))
	if !ok {
		return false
	}
	m := n.multRat
	if m == nil {
		m = new(big.Rat).SetFloat64(n.multOf)
	}
	return xr.Quo(xr, m).IsInt()
}

func (st *state) str(n *node, vi int32) bool {
	s := st.d.text(vi)
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := int64(utf8.RuneCount(s))
		if n.minLen >= 0 && l < n.minLen {
			if st.loud() {
				st.fail(n, "minLength: %s has %d characters, fewer than %d", st.desc(vi), l, n.minLen)
			}
			return false
		}
		if n.maxLen >= 0 && l > n.maxLen {
			if st.loud() {
				st.fail(n, "maxLength: %s has %d characters, more than %d", st.desc(vi), l, n.maxLen)
			}
			return false
		}
	}
	if n.pattern != nil && !n.pattern.Match(s) {
		if st.loud() {
			st.fail(n, "pattern: %s does not match %q", st.desc(vi), n.patSrc)
		}
		return false
	}
	return true
}

func (st *state) array(n *node, vi int32, ev evs) bool {
	d := &st.d
	l := d.length(vi)
	if n.minItems >= 0 && int64(l) < n.minItems {
		if st.loud() {
			st.fail(n, "minItems: %d items, fewer than %d", l, n.minItems)
		}
		return false
	}
	if n.maxItems >= 0 && int64(l) > n.maxItems {
		if st.loud() {
			st.fail(n, "maxItems: %d items, more than %d", l, n.maxItems)
		}
		return false
	}
	if n.unique {
		for i := range l {
			for j := i + 1; j < l; j++ {
				if equal(d, d.elem(vi, i), d, d.elem(vi, j)) {
					if st.loud() {
						st.fail(n, "uniqueItems: items %d and %d are equal", i, j)
					}
					return false
				}
			}
		}
	}
	for i, s := range n.prefix {
		if i >= l {
			break
		}
		e := d.elem(vi, i)
		st.enter(true, -1, i)
		ok := st.validate(s, e, st.newEval(e))
		st.leave(true)
		if !ok {
			return false
		}
		st.mark(ev, i)
	}
	if n.items != nil {
		for i := len(n.prefix); i < l; i++ {
			e := d.elem(vi, i)
			st.enter(false, -1, i)
			ok := st.validate(n.items, e, st.newEval(e))
			st.leave(false)
			if !ok {
				return false
			}
			st.mark(ev, i)
		}
	}
	if n.contains != nil {
		found := 0
		st.quiet++
		for i := range l {
			e := d.elem(vi, i)
			if st.validate(n.contains, e, st.newEval(e)) {
				found++
				st.mark(ev, i)
			}
		}
		st.quiet--
		lo := int64(1)
		if n.minCont >= 0 {
			lo = n.minCont
		}
		if int64(found) < lo {
			if st.loud() {
				if n.minCont >= 0 {
					st.fail(n, "minContains: %d items match contains, fewer than %d", found, lo)
				} else {
					st.fail(n, "contains: no item matches")
				}
			}
			return false
		}
		if n.maxCont >= 0 && int64(found) > n.maxCont {
			if st.loud() {
				st.fail(n, "maxContains: %d items match contains, more than %d", found, n.maxCont)
			}
			return false
		}
	}
	return true
}

// has says whether object vi has a member named name.
func (st *state) has(vi int32, name string) bool {
	d := &st.d
	for j := range d.length(vi) {
		k, _ := d.member(vi, j)
		if string(d.text(k)) == name {
			return true
		}
	}
	return false
}

func (st *state) object(n *node, vi int32, ev evs) bool {
	d := &st.d
	l := d.length(vi)
	if n.minProps >= 0 && int64(l) < n.minProps {
		if st.loud() {
			st.fail(n, "minProperties: %d properties, fewer than %d", l, n.minProps)
		}
		return false
	}
	if n.maxProps >= 0 && int64(l) > n.maxProps {
		if st.loud() {
			st.fail(n, "maxProperties: %d properties, more than %d", l, n.maxProps)
		}
		return false
	}
	for _, r := range n.required {
		if !st.has(vi, r) {
			if st.loud() {
				st.fail(n, "required: missing property %q", r)
			}
			return false
		}
	}
	for _, k := range n.depReqK {
		if !st.has(vi, k) {
			continue
		}
		for _, r := range n.depReq[k] {
			if !st.has(vi, r) {
				if st.loud() {
					kw := "dependentRequired"
					if n.d7 {
						kw = "dependencies"
					}
					st.fail(n, "%s: property %q requires property %q", kw, k, r)
				}
				return false
			}
		}
	}
	if n.props != nil || n.patProps != nil || n.addProps != nil || n.propNamer != nil {
		for j := range l {
			k, x := d.member(vi, j)
			name := d.text(k)
			if n.propNamer != nil {
				st.enter(false, k, 0)
				ok := st.validate(n.propNamer, k, noEval)
				st.leave(false)
				if !ok {
					if st.err != nil && st.loud2() {
						st.err.Message = fmt.Sprintf("propertyNames: %s: %s", strconv.Quote(string(name)), st.err.Message)
					}
					return false
				}
			}
			matched := false
			if s := n.props[string(name)]; s != nil {
				matched = true
				st.enter(true, k, 0)
				ok := st.validate(s, x, st.newEval(x))
				st.leave(true)
				if !ok {
					return false
				}
			}
			for _, pp := range n.patProps {
				if pp.re.Match(name) {
					matched = true
					st.enter(false, k, 0)
					ok := st.validate(pp.s, x, st.newEval(x))
					st.leave(false)
					if !ok {
						return false
					}
				}
			}
			if !matched && n.addProps != nil {
				if n.addProps.boolean == -1 {
					if st.loud() {
						st.fail(n, "additionalProperties: property %q is not allowed", name)
					}
					return false
				}
				st.enter(false, k, 0)
				ok := st.validate(n.addProps, x, st.newEval(x))
				st.leave(false)
				if !ok {
					return false
				}
				matched = true
			}
			if matched {
				st.mark(ev, j)
			}
		}
	}
	for _, k := range n.depSchK {
		if st.has(vi, k) && !st.validate(n.depSch[k], vi, ev) {
			return false
		}
	}
	return true
}

// loud2 says whether the error just recorded may be amended: it was
// recorded by this validation outside any quiet branch.
func (st *state) loud2() bool { return st.quiet == 0 }

func (st *state) applicators(n *node, vi int32, ev evs) bool {
	for _, s := range n.allOf {
		if !st.validate(s, vi, ev) {
			return false
		}
	}
	if n.anyOf != nil {
		any := false
		st.quiet++
		for _, s := range n.anyOf {
			c := st.child(ev)
			if st.validate(s, vi, c) {
				any = true
				st.merge(ev, c)
				if ev.off < 0 {
					break
				}
			}
		}
		st.quiet--
		if !any {
			if st.loud() {
				st.fail(n, "anyOf: %s matches none of the %d schemas", st.desc(vi), len(n.anyOf))
			}
			return false
		}
	}
	if n.oneOf != nil {
		var match []int
		st.quiet++
		for i, s := range n.oneOf {
			c := st.child(ev)
			if st.validate(s, vi, c) {
				match = append(match, i)
				if len(match) == 1 {
					st.merge(ev, c)
				} else {
					break
				}
			}
		}
		st.quiet--
		if len(match) != 1 {
			if st.loud() {
				if len(match) == 0 {
					st.fail(n, "oneOf: %s matches none of the %d schemas", st.desc(vi), len(n.oneOf))
				} else {
					st.fail(n, "oneOf: %s matches more than one schema (%d and %d)", st.desc(vi), match[0], match[1])
				}
			}
			return false
		}
	}
	if n.not != nil {
		st.quiet++
		ok := st.validate(n.not, vi, st.child(ev))
		st.quiet--
		if ok {
			if st.loud() {
				st.fail(n, "not: %s matches the schema it must not", st.desc(vi))
			}
			return false
		}
	}
	if n.ifS != nil && (n.thenS != nil || n.elseS != nil || ev.off >= 0) {
		c := st.child(ev)
		st.quiet++
		ok := st.validate(n.ifS, vi, c)
		st.quiet--
		if ok {
			st.merge(ev, c)
			if n.thenS != nil && !st.validate(n.thenS, vi, ev) {
				return false
			}
		} else if n.elseS != nil && !st.validate(n.elseS, vi, ev) {
			return false
		}
	}
	if n.uneItems != nil && ev.off >= 0 && st.d.v[vi].k == kArr {
		for i := range st.d.length(vi) {
			if st.marked(ev, i) {
				continue
			}
			e := st.d.elem(vi, i)
			st.enter(false, -1, i)
			ok := st.validate(n.uneItems, e, st.newEval(e))
			st.leave(false)
			if !ok {
				if n.uneItems.boolean == -1 && st.err != nil && st.loud2() {
					st.err.Message = fmt.Sprintf("unevaluatedItems: item %d is not allowed (schema %s)", i, locName(n.loc))
				}
				return false
			}
			st.mark(ev, i)
		}
	}
	if n.uneProps != nil && ev.off >= 0 && st.d.v[vi].k == kObj {
		for j := range st.d.length(vi) {
			if st.marked(ev, j) {
				continue
			}
			k, x := st.d.member(vi, j)
			if n.uneProps.boolean == -1 {
				if st.loud() {
					st.fail(n, "unevaluatedProperties: property %q is not allowed", st.d.text(k))
				}
				return false
			}
			st.enter(false, k, 0)
			ok := st.validate(n.uneProps, x, st.newEval(x))
			st.leave(false)
			if !ok {
				return false
			}
			st.mark(ev, j)
		}
	}
	return true
}

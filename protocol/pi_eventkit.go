package protocol

// Shared toolkit of the four event-style protocols (synaps, brainwires, opi,
// pi): a cheap top-level scanner for Classify and a small declarative shape
// checker for Validate. It lives in a pi_* file only because files in this
// package are owned by name prefix; nothing in it is pi-specific.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ---------------------------------------------------------------------------
// Cheap scanning (Classify)
// ---------------------------------------------------------------------------

// evTop is what Classify needs from a frame's top level. Byte slices point
// into the frame; strings are only built for the tag.
type evTop struct {
	typ     string // value of "type" when it is a JSON string
	hasType bool   // "type" present (of any JSON type)
	id      []byte // raw value of "id" ("" absent)
	command string // value of "command" when it is a JSON string
	method  string // value of "method" when it is a JSON string (pi extension_ui_request)
	keys    uint32 // bit set of interesting keys seen (evKey*)
}

// Interesting top-level keys for sniffing untagged frames.
const (
	evKeyVersion = 1 << iota
	evKeyIsReattach
	evKeyAccepted
	evKeySessionID
	evKeySessionToken
	evKeyError
	evKeySuccess
	evKeyProtocolVersion
	evKeySchemaVersion
	evKeyJSONRPC
	evKeyMethod
)

func evKeyBit(k []byte) uint32 {
	switch string(k) { // no allocation: the compiler optimises string(bytes) in a switch
	case "version":
		return evKeyVersion
	case "is_reattach":
		return evKeyIsReattach
	case "accepted":
		return evKeyAccepted
	case "session_id":
		return evKeySessionID
	case "session_token":
		return evKeySessionToken
	case "error":
		return evKeyError
	case "success":
		return evKeySuccess
	case "protocol_version":
		return evKeyProtocolVersion
	case "schema_version":
		return evKeySchemaVersion
	case "jsonrpc":
		return evKeyJSONRPC
	case "method":
		return evKeyMethod
	}
	return 0
}

// evScanTop scans the top-level members of a JSON object with the package's
// scanner. ok is false when the frame is not (lexically) a JSON object;
// values are skipped, not validated in depth (Validate checks fully).
func evScanTop(b []byte) (t evTop, ok bool) {
	var it memberIter
	if !it.start(b) {
		return t, false
	}
	for {
		key, val, more := it.next()
		if !more {
			return t, it.ok
		}
		switch string(key) {
		case "type":
			t.hasType = true
			if s, sok := internString(val); sok {
				t.typ = s
			}
		case "id":
			t.id = val
		case "command":
			if s, sok := internString(val); sok {
				t.command = s
			}
		case "method":
			t.keys |= evKeyMethod
			if s, sok := rawString(val); sok {
				t.method = s
			}
		default:
			t.keys |= evKeyBit(key)
		}
	}
}

// evNames interns the type and command names of the four catalogues so
// that Classify allocates no string for them. Built on first use from the
// catalogues registered by internNames (at init), so that building them
// is not paid by every rpctap process at start.
var evNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	for _, table := range evTables {
		t := table()
		for _, m := range []map[string][]fld{t.in, t.out} {
			for k := range m {
				names[k] = k
			}
		}
	}
	return names
})

var evTables []func() *evTable

func internNames(tables ...func() *evTable) { evTables = append(evTables, tables...) }

// internString is rawString with known names returned without allocating.
func internString(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		if s, ok := evNames()[string(raw[1:len(raw)-1])]; ok {
			return s, true
		}
	}
	return rawString(raw)
}

// memberIter walks the members of a raw JSON object without a callback (so
// nothing escapes to the heap), with the package scanner's skip functions.
type memberIter struct {
	b  []byte
	i  int
	ok bool // the object was well-formed up to where the walk stopped
}

func (it *memberIter) start(b []byte) bool {
	it.b, it.ok = b, false
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	it.i = skipWS(b, i+1)
	if it.i < len(b) && b[it.i] == '}' {
		it.i = -1 // empty object
		it.ok = true
	}
	return true
}

// next returns the next member; more is false at the end (it.ok says
// whether the object closed properly) or on malformed input.
func (it *memberIter) next() (key, val []byte, more bool) {
	b, i := it.b, it.i
	if i < 0 || i >= len(b) || b[i] != '"' {
		return nil, nil, false
	}
	ke, ok := skipString(b, i)
	if !ok {
		return nil, nil, false
	}
	key = b[i+1 : ke-1]
	i = skipWS(b, ke)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, false
	}
	i = skipWS(b, i+1)
	ve, ok := skipValue(b, i)
	if !ok {
		return nil, nil, false
	}
	val = b[i:ve]
	i = skipWS(b, ve)
	switch {
	case i < len(b) && b[i] == ',':
		it.i = skipWS(b, i+1)
	case i < len(b) && b[i] == '}':
		it.i, it.ok = -1, true
	default:
		it.i = len(b) // malformed: stop after this member
	}
	return key, val, true
}

// evTopValue returns the raw value of a top-level key, nil when absent.
func evTopValue(b []byte, name string) []byte {
	var it memberIter
	if !it.start(b) {
		return nil
	}
	for {
		k, v, more := it.next()
		if !more {
			return nil
		}
		if string(k) == name {
			return v
		}
	}
}

// ---------------------------------------------------------------------------
// Shape checking (Validate)
// ---------------------------------------------------------------------------

type vkind uint8

const (
	vAny vkind = iota
	vString
	vBool
	vUint   // non-negative integer (Rust u64/u32/usize)
	vInt    // integer (Rust i64)
	vNumber // any JSON number (f64)
	vArray
	vObject
	vEnum   // string out of a fixed set
	vTagged // object discriminated by a tag field
	vOneOf  // one of several shapes (serde externally tagged enums)
	vConst  // an exact integer value
)

// vt describes the JSON shape of a value.
type vt struct {
	kind   vkind
	elem   *vt      // vArray
	fields []fld    // vObject
	enum   []string // vEnum
	tag    string   // vTagged
	vars   map[string][]fld
	also   map[string]*vt // vTagged: a further shape the same object must have, per tag value
	alts   []*vt          // vOneOf
	ival   int64          // vConst
	name   string
}

// fld is one member of an object shape.
type fld struct {
	name string
	t    *vt
	opt  bool // may be absent
	null bool // may be null
}

var (
	tString = &vt{kind: vString, name: "string"}
	tBool   = &vt{kind: vBool, name: "boolean"}
	tUint   = &vt{kind: vUint, name: "non-negative integer"}
	tInt    = &vt{kind: vInt, name: "integer"}
	tNumber = &vt{kind: vNumber, name: "number"}
	tAny    = &vt{kind: vAny, name: "any JSON value"}
	tObjAny = &vt{kind: vObject, name: "object"}
)

// Catalogue constructors, run at init: //go:noinline for the binary's
// size (see jUint in jsonrpc_shape.go).
//
//go:noinline
func tArr(e *vt) *vt { return &vt{kind: vArray, elem: e, name: "array of " + e.name} }

//go:noinline
func tObj(fs ...fld) *vt { return &vt{kind: vObject, fields: fs, name: "object"} }

//go:noinline
func tEnum(vals ...string) *vt {
	return &vt{kind: vEnum, enum: vals, name: "one of " + strings.Join(quoteAll(vals), ", ")}
}
func tOneOf(name string, a ...*vt) *vt { return &vt{kind: vOneOf, alts: a, name: name} }
func tTagged(tag string, vars map[string][]fld) *vt {
	return &vt{kind: vTagged, tag: tag, vars: vars, name: "object tagged by " + strconv.Quote(tag)}
}

// req: required, not null. opt: may be absent (not null). optNull: may be
// absent or null (serde Option). reqNull: required, may be null.
//
//go:noinline
func req(n string, t *vt) fld { return fld{name: n, t: t} }

//go:noinline
func opt(n string, t *vt) fld { return fld{name: n, t: t, opt: true} }

//go:noinline
func optNull(n string, t *vt) fld { return fld{name: n, t: t, opt: true, null: true} }
func reqNull(n string, t *vt) fld { return fld{name: n, t: t, null: true} }

func quoteAll(v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = strconv.Quote(s)
	}
	return out
}

// evChecker is an event-style protocol (synaps, brainwires, opi, pi): its
// shape rules run on a checker, whose code prefix is the protocol's name.
type evChecker interface {
	Name() string
	check(c *checker, dir Dir, frame []byte, info Info)
}

// validJSONValidator is implemented by protocols whose Validate would
// check the frame's JSON syntax again. The Session, which has already run
// json.Valid on the frame, calls validateValidJSON instead; the result is
// the same as Validate's for valid JSON.
type validJSONValidator interface {
	validateValidJSON(dir Dir, frame []byte, info Info) []Violation
}

// evValidate runs p's shape rules on one frame; validJSON says the caller
// has already found frame to be valid JSON.
func evValidate(p evChecker, validJSON bool, dir Dir, frame []byte, info Info) []Violation {
	c := newChecker(p.Name())
	defer c.release()
	c.validJSON = validJSON
	p.check(c, dir, frame, info)
	return c.out
}

// checker accumulates violations for one frame.
type checker struct {
	p         string // code prefix: "synaps", "opi", ...
	validJSON bool   // the frame is known to be valid JSON (the Session checked it)
	out       []Violation
	arena     []member
	pooled    *[]member
}

// arenas recycles the member buffers of checkers between frames.
var arenas = sync.Pool{New: func() any { b := make([]member, 0, 64); return &b }}

// newChecker returns a checker with a pooled member arena; call release
// when done with everything that points into the frame's members.
func newChecker(prefix string) *checker {
	a := arenas.Get().(*[]member)
	return &checker{p: prefix, arena: (*a)[:0], pooled: a}
}

func (c *checker) release() {
	if c.pooled != nil && cap(c.arena) <= 4096 {
		clear(c.arena[:cap(c.arena)]) // drop references into the frame
		*c.pooled = c.arena[:0]
		arenas.Put(c.pooled)
	}
	c.pooled = nil
}

func (c *checker) add(sev Severity, code, ptr, msg string) {
	c.out = append(c.out, Violation{Code: c.p + "." + code, Severity: sev, Pointer: ptr, Message: msg})
}

func ptrJoin(base, name string) string {
	name = strings.ReplaceAll(name, "~", "~0")
	name = strings.ReplaceAll(name, "/", "~1")
	return base + "/" + name
}

// member is one member of a JSON object: the raw key (escapes left as they
// are) and the raw value.
type member struct{ key, val []byte }

// robj is a JSON object as its list of raw members: the shape checker walks
// the frame's bytes instead of decoding it into maps (several times faster
// and allocation-light). A key written with escapes ("typ\u0065") is not
// matched by name; no encoder writes plain ASCII names that way.
type robj []member

func (o robj) get(name string) ([]byte, bool) {
	for i := len(o) - 1; i >= 0; i-- { // the last duplicate wins, as in encoding/json
		if string(o[i].key) == name {
			return o[i].val, true
		}
	}
	return nil, false
}

func (o robj) has(name string) bool { _, ok := o.get(name); return ok }

// str returns a member's string value; ok is false when absent or not a string.
func (o robj) str(name string) (string, bool) {
	v, ok := o.get(name)
	if !ok {
		return "", false
	}
	return rawString(v)
}

// boolean returns a member's value when it is true or false.
func (o robj) boolean(name string) (val, ok bool) {
	v, present := o.get(name)
	switch {
	case !present:
		return false, false
	case string(v) == "true":
		return true, true
	case string(v) == "false":
		return false, true
	}
	return false, false
}

// isNull reports whether a member is absent or null.
func (o robj) isNull(name string) bool {
	v, ok := o.get(name)
	return !ok || string(v) == "null"
}

// members lists the members of a raw JSON object; ok is false when raw is
// not one.
func members(raw []byte) (robj, bool) {
	all, ok := appendMembers(nil, raw)
	return robj(all), ok
}

// appendMembers appends the members of raw to dst; ok is false when raw is
// not a JSON object.
func appendMembers(dst []member, raw []byte) ([]member, bool) {
	var it memberIter
	if !it.start(raw) {
		return dst, false
	}
	for {
		k, v, more := it.next()
		if !more {
			break
		}
		dst = append(dst, member{k, v})
	}
	return dst, it.ok
}

// members of an object inside the frame being checked, from the checker's
// arena: one growing buffer per frame instead of a slice per object. A
// parent's members stay valid while its children append: they only write
// past the parent's end, or into a new array after a reallocation.
func (c *checker) members(raw []byte) (robj, bool) {
	start := len(c.arena)
	all, ok := appendMembers(c.arena, raw)
	if !ok {
		c.arena = all[:start]
		return nil, false
	}
	c.arena = all
	return robj(all[start:len(all):len(all)]), true
}

func isNullRaw(v []byte) bool { return string(v) == "null" }

// rawIsInt reports whether raw is the integer n (written without fraction
// or exponent).
func rawIsInt(raw []byte, n int64) bool {
	x, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && x == n
}

// fields checks the members of obj against fs.
func (c *checker) fields(obj robj, fs []fld, ptr, what string) {
	for _, f := range fs {
		v, present := obj.get(f.name)
		if !present {
			if !f.opt {
				c.add(SevError, "missing-field", ptrJoin(ptr, f.name), fmt.Sprintf("%s: required field %q (%s) is missing", what, f.name, f.t.name))
			}
			continue
		}
		if isNullRaw(v) {
			if !f.null {
				c.add(SevError, "wrong-type", ptrJoin(ptr, f.name), fmt.Sprintf("%s: field %q is null, expected %s", what, f.name, f.t.name))
			}
			continue
		}
		if f.t.kind == vAny || scalarOK(v, f.t) {
			continue // the common case builds no pointer
		}
		c.value(v, f.t, ptrJoin(ptr, f.name), what)
	}
}

// scalarOK is the allocation-free fast path: true when v is a valid value
// of a scalar shape. False means "check fully" (containers, or a problem).
func scalarOK(v []byte, t *vt) bool {
	switch t.kind {
	case vString:
		return len(v) > 0 && v[0] == '"'
	case vBool:
		return string(v) == "true" || string(v) == "false"
	case vNumber:
		return jsonType(v) == "number"
	case vUint, vInt, vConst:
		if jsonType(v) != "number" || bytes.IndexAny(v, ".eE") >= 0 {
			return false
		}
		switch t.kind {
		case vUint:
			return v[0] != '-'
		case vConst:
			return rawIsInt(v, t.ival)
		}
		return true
	case vEnum:
		if len(v) < 2 || v[0] != '"' {
			return false
		}
		inner := v[1 : len(v)-1]
		for _, e := range t.enum {
			if string(inner) == e {
				return true
			}
		}
	}
	return false
}

// value checks one (non-null) raw value against t.
func (c *checker) value(v []byte, t *vt, ptr, what string) {
	wrong := func() {
		c.add(SevError, "wrong-type", ptr, fmt.Sprintf("%s: %s is %s, expected %s", what, ptrOrFrame(ptr), jsonType(v), t.name))
	}
	switch t.kind {
	case vAny:
	case vString:
		if jsonType(v) != "string" {
			wrong()
		}
	case vBool:
		if jsonType(v) != "boolean" {
			wrong()
		}
	case vNumber:
		if jsonType(v) != "number" {
			wrong()
		}
	case vUint, vInt, vConst:
		if jsonType(v) != "number" {
			wrong()
			return
		}
		if bytes.IndexAny(v, ".eE") >= 0 {
			// serde_json refuses a float (1.0, 1e3) for an integer field.
			c.add(SevError, "wrong-type", ptr, fmt.Sprintf("%s: %s is %s, expected %s", what, ptrOrFrame(ptr), v, t.name))
			return
		}
		if t.kind == vUint && v[0] == '-' {
			c.add(SevError, "invalid-value", ptr, fmt.Sprintf("%s: %s is %s, expected a non-negative integer", what, ptrOrFrame(ptr), v))
			return
		}
		if t.kind == vConst && !rawIsInt(v, t.ival) {
			c.add(SevError, "invalid-value", ptr, fmt.Sprintf("%s: %s is %s, expected %d", what, ptrOrFrame(ptr), v, t.ival))
		}
	case vEnum:
		s, ok := rawString(v)
		if !ok {
			wrong()
			return
		}
		for _, e := range t.enum {
			if s == e {
				return
			}
		}
		c.add(SevError, "invalid-value", ptr, fmt.Sprintf("%s: %s is %q, expected %s", what, ptrOrFrame(ptr), s, t.name))
	case vArray:
		if jsonType(v) != "array" {
			wrong()
			return
		}
		if t.elem.kind == vAny {
			return
		}
		forEachElement(v, func(i int, e []byte) {
			if scalarOK(e, t.elem) {
				return
			}
			p := ptr + "/" + strconv.Itoa(i)
			if isNullRaw(e) {
				c.add(SevError, "wrong-type", p, fmt.Sprintf("%s: %s is null, expected %s", what, p, t.elem.name))
				return
			}
			c.value(e, t.elem, p, what)
		})
	case vObject:
		o, ok := c.members(v)
		if !ok {
			wrong()
			return
		}
		c.fields(o, t.fields, ptr, what)
	case vTagged:
		o, ok := c.members(v)
		if !ok {
			wrong()
			return
		}
		c.tagged(o, t, ptr, what)
	case vOneOf:
		// Delegate to the one alternative of the value's JSON kind, so that
		// "smart" against "Smart"|... reads as a bad enum value, not a type.
		var match *vt
		n := 0
		for _, a := range t.alts {
			if kindAccepts(a.kind, v) {
				match = a
				n++
			}
		}
		if n == 1 {
			c.value(v, match, ptr, what)
			return
		}
		for _, a := range t.alts {
			sub := checker{p: c.p}
			sub.value(v, a, ptr, what)
			if len(sub.out) == 0 {
				return
			}
		}
		wrong()
	}
}

// tagged checks an object discriminated by t.tag.
func (c *checker) tagged(o robj, t *vt, ptr, what string) {
	tp := ptrJoin(ptr, t.tag)
	tv, present := o.get(t.tag)
	if !present {
		c.add(SevError, "missing-field", tp, fmt.Sprintf("%s: %s has no %q tag", what, ptrOrFrame(ptr), t.tag))
		return
	}
	ts, ok := rawString(tv)
	if !ok {
		c.add(SevError, "wrong-type", tp, fmt.Sprintf("%s: tag %q is %s, expected string", what, t.tag, jsonType(tv)))
		return
	}
	fs, known := t.vars[ts]
	if !known {
		c.add(SevError, "invalid-value", tp, fmt.Sprintf("%s: unknown %s %q (known: %s)", what, t.tag, ts, strings.Join(sortedKeys(t.vars), ", ")))
		return
	}
	// messages name the innermost tag; the pointer says where it sits
	c.fields(o, fs, ptr, ts)
	if more := t.also[ts]; more != nil && more.kind == vTagged {
		c.tagged(o, more, ptr, ts)
	}
}

// kindAccepts reports whether a raw value's JSON kind fits a shape kind.
func kindAccepts(k vkind, v []byte) bool {
	switch jsonType(v) {
	case "string":
		return k == vString || k == vEnum || k == vAny
	case "boolean":
		return k == vBool || k == vAny
	case "number":
		return k == vNumber || k == vInt || k == vUint || k == vConst || k == vAny
	case "array":
		return k == vArray || k == vAny
	case "object":
		return k == vObject || k == vTagged || k == vAny
	}
	return k == vAny
}

func ptrOrFrame(ptr string) string {
	if ptr == "" {
		return "the frame"
	}
	return ptr
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// object checks that frame is one valid JSON object and returns its
// members; otherwise it reports prefix.invalid-json / prefix.not-object and
// returns nil, false. (The Session reports non-JSON frames itself and does
// not call Validate on them; direct callers get the same verdict here. The
// syntax check is skipped when the Session has made it already.)
func (c *checker) object(frame []byte) (robj, bool) {
	if c.arena == nil {
		c.arena = make([]member, 0, 16)
	}
	if !c.validJSON && !json.Valid(frame) {
		c.add(SevError, "invalid-json", "", "frame is not valid JSON: "+excerpt(frame, 60))
		return nil, false
	}
	o, ok := c.members(frame)
	if !ok {
		c.add(SevError, "not-object", "", "frame is JSON "+jsonType(frame)+", expected an object")
		return nil, false
	}
	return o, true
}

// evTable is the message catalogue of a protocol tagged by a "type" member:
// the field lists per type value, per direction.
type evTable struct {
	in, out map[string][]fld
	// unknownIn/unknownOut override the code suffix and severity of an
	// unknown type per direction (default "unknown-type", error).
	unknownIn, unknownOut evUnknown
}

type evUnknown struct {
	code string
	sev  Severity
}

// top decodes frame, checks the tag and the fields of its type and returns
// the decoded object and its type ("" when the frame could not be judged by
// type).
func (c *checker) top(dir Dir, frame []byte, tab *evTable) (robj, string) {
	o, ok := c.object(frame)
	if !ok {
		return nil, ""
	}
	tv, present := o.get("type")
	if !present {
		c.add(SevError, "missing-type", "/type", `frame has no "type" member`)
		return o, ""
	}
	ts, ok := rawString(tv)
	if !ok {
		c.add(SevError, "wrong-type", "/type", `"type" is `+jsonType(tv)+", expected string")
		return o, ""
	}
	mine, other, side, otherSide, unk := tab.in, tab.out, "parent", "child", tab.unknownIn
	if dir == FromChild {
		mine, other, side, otherSide, unk = tab.out, tab.in, "child", "parent", tab.unknownOut
	}
	if unk.code == "" {
		unk = evUnknown{"unknown-type", SevError}
	}
	fs, known := mine[ts]
	if !known {
		if _, theirs := other[ts]; theirs {
			c.add(SevError, "wrong-direction", "/type", fmt.Sprintf("%q is sent by the %s, but this frame came from the %s", ts, otherSide, side))
		} else {
			c.add(unk.sev, unk.code, "/type", fmt.Sprintf("unknown %s message type %q from the %s", c.p, ts, side))
		}
		return o, ""
	}
	c.fields(o, fs, "", ts)
	return o, ts
}

// evRawIsString reports whether a raw value is a JSON string.
func evRawIsString(v []byte) bool { return jsonType(v) == "string" }

// evChildInfo classifies a frame of the child in the event protocols whose
// child opens with a handshake event and answers commands with a
// "response" naming the command (synaps, opi): info.Method is the frame's
// type on entry.
func evChildInfo(info Info, handshake, command string) Info {
	switch info.Method {
	case handshake:
		info.Kind = Handshake
	case "response":
		info.Kind = Response
		info.Method = command
	default:
		info.Kind = Event
	}
	return info
}

// streamEvents builds the variants of an assistant stream-event union as pi
// and opi send them: for each content channel (prefix "text_", ...) a
// PREFIXstart, PREFIXdelta and PREFIXend event with the given fields, plus
// the variants in more (which win over the generated ones).
func streamEvents(prefixes []string, start, delta, end []fld, more map[string][]fld) map[string][]fld {
	out := make(map[string][]fld, 3*len(prefixes)+len(more))
	for _, p := range prefixes {
		out[p+"start"], out[p+"delta"], out[p+"end"] = start, delta, end
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

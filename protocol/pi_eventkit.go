package protocol

// Shared toolkit of the four event-style protocols (synaps, brainwires, opi,
// pi): a cheap top-level scanner for Classify and a small declarative shape
// checker for Validate. It lives in a pi_* file only because files in this
// package are owned by name prefix; nothing in it is pi-specific.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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
// values are skipped, not validated in depth (Validate decodes fully).
func evScanTop(b []byte) (t evTop, ok bool) {
	ok = forEachMember(b, func(key, val []byte) bool {
		switch string(key) {
		case "type":
			t.hasType = true
			if s, sok := rawString(val); sok {
				t.typ = s
			}
		case "id":
			t.id = val
		case "command":
			if s, sok := rawString(val); sok {
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
		return true
	})
	return t, ok
}

// evTopValue returns the raw value of a top-level key, nil when absent.
func evTopValue(b []byte, name string) []byte {
	var out []byte
	forEachMember(b, func(k, v []byte) bool {
		if string(k) == name {
			out = v
			return false
		}
		return true
	})
	return out
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

func tArr(e *vt) *vt     { return &vt{kind: vArray, elem: e, name: "array of " + e.name} }
func tObj(fs ...fld) *vt { return &vt{kind: vObject, fields: fs, name: "object"} }
func tEnum(vals ...string) *vt {
	return &vt{kind: vEnum, enum: vals, name: "one of " + strings.Join(quoteAll(vals), ", ")}
}
func tOneOf(name string, a ...*vt) *vt { return &vt{kind: vOneOf, alts: a, name: name} }
func tTagged(tag string, vars map[string][]fld) *vt {
	return &vt{kind: vTagged, tag: tag, vars: vars, name: "object tagged by " + strconv.Quote(tag)}
}

// req: required, not null. opt: may be absent (not null). optNull: may be
// absent or null (serde Option). reqNull: required, may be null.
func req(n string, t *vt) fld     { return fld{name: n, t: t} }
func opt(n string, t *vt) fld     { return fld{name: n, t: t, opt: true} }
func optNull(n string, t *vt) fld { return fld{name: n, t: t, opt: true, null: true} }
func reqNull(n string, t *vt) fld { return fld{name: n, t: t, null: true} }

func quoteAll(v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = strconv.Quote(s)
	}
	return out
}

// checker accumulates violations for one frame.
type checker struct {
	p   string // code prefix: "synaps", "opi", ...
	out []Violation
}

func (c *checker) add(sev Severity, code, ptr, msg string) {
	c.out = append(c.out, Violation{Code: c.p + "." + code, Severity: sev, Pointer: ptr, Message: msg})
}

func ptrJoin(base, name string) string {
	name = strings.ReplaceAll(name, "~", "~0")
	name = strings.ReplaceAll(name, "/", "~1")
	return base + "/" + name
}

// evDecode decodes a whole frame keeping numbers exact.
func evDecode(frame []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(frame))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("extra data after the JSON value")
	}
	// d.More is false at EOF and before '}'/']'; make sure only spaces follow.
	rest := frame[d.InputOffset():]
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("extra data after the JSON value")
	}
	return v, nil
}

func jsonTypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		_ = x
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// fields checks the members of obj against fs.
func (c *checker) fields(obj map[string]any, fs []fld, ptr, what string) {
	for _, f := range fs {
		v, present := obj[f.name]
		p := ptrJoin(ptr, f.name)
		if !present {
			if !f.opt {
				c.add(SevError, "missing-field", p, fmt.Sprintf("%s: required field %q (%s) is missing", what, f.name, f.t.name))
			}
			continue
		}
		if v == nil {
			if !f.null {
				c.add(SevError, "wrong-type", p, fmt.Sprintf("%s: field %q is null, expected %s", what, f.name, f.t.name))
			}
			continue
		}
		c.value(v, f.t, p, what)
	}
}

// value checks one (non-null) value against t.
func (c *checker) value(v any, t *vt, ptr, what string) {
	wrong := func() {
		c.add(SevError, "wrong-type", ptr, fmt.Sprintf("%s: %s is %s, expected %s", what, ptrOrFrame(ptr), jsonTypeName(v), t.name))
	}
	switch t.kind {
	case vAny:
	case vString:
		if _, ok := v.(string); !ok {
			wrong()
		}
	case vBool:
		if _, ok := v.(bool); !ok {
			wrong()
		}
	case vNumber:
		if _, ok := v.(json.Number); !ok {
			wrong()
		}
	case vUint, vInt, vConst:
		n, ok := v.(json.Number)
		if !ok {
			wrong()
			return
		}
		s := string(n)
		if strings.ContainsAny(s, ".eE") {
			// serde_json refuses a float (1.0, 1e3) for an integer field.
			c.add(SevError, "wrong-type", ptr, fmt.Sprintf("%s: %s is %s, expected %s", what, ptrOrFrame(ptr), s, t.name))
			return
		}
		if t.kind == vUint && strings.HasPrefix(s, "-") {
			c.add(SevError, "invalid-value", ptr, fmt.Sprintf("%s: %s is %s, expected a non-negative integer", what, ptrOrFrame(ptr), s))
			return
		}
		if t.kind == vConst {
			if x, err := strconv.ParseInt(s, 10, 64); err != nil || x != t.ival {
				c.add(SevError, "invalid-value", ptr, fmt.Sprintf("%s: %s is %s, expected %d", what, ptrOrFrame(ptr), s, t.ival))
			}
		}
	case vEnum:
		s, ok := v.(string)
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
		a, ok := v.([]any)
		if !ok {
			wrong()
			return
		}
		for i, e := range a {
			p := ptr + "/" + strconv.Itoa(i)
			if e == nil {
				c.add(SevError, "wrong-type", p, fmt.Sprintf("%s: %s is null, expected %s", what, p, t.elem.name))
				continue
			}
			c.value(e, t.elem, p, what)
		}
	case vObject:
		o, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		c.fields(o, t.fields, ptr, what)
	case vTagged:
		o, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		tp := ptrJoin(ptr, t.tag)
		tv, present := o[t.tag]
		if !present {
			c.add(SevError, "missing-field", tp, fmt.Sprintf("%s: %s has no %q tag", what, ptrOrFrame(ptr), t.tag))
			return
		}
		ts, ok := tv.(string)
		if !ok {
			c.add(SevError, "wrong-type", tp, fmt.Sprintf("%s: tag %q is %s, expected string", what, t.tag, jsonTypeName(tv)))
			return
		}
		fs, known := t.vars[ts]
		if !known {
			c.add(SevError, "invalid-value", tp, fmt.Sprintf("%s: unknown %s %q (known: %s)", what, t.tag, ts, strings.Join(sortedKeys(t.vars), ", ")))
			return
		}
		c.fields(o, fs, ptr, what+" "+ts)
		if more := t.also[ts]; more != nil {
			c.value(o, more, ptr, what+" "+ts)
		}
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
		c.add(SevError, "wrong-type", ptr, fmt.Sprintf("%s: %s is %s, expected %s", what, ptrOrFrame(ptr), jsonTypeName(v), t.name))
	}
}

// kindAccepts reports whether a value's JSON kind fits a shape kind.
func kindAccepts(k vkind, v any) bool {
	switch v.(type) {
	case string:
		return k == vString || k == vEnum || k == vAny
	case bool:
		return k == vBool || k == vAny
	case json.Number:
		return k == vNumber || k == vInt || k == vUint || k == vConst || k == vAny
	case []any:
		return k == vArray || k == vAny
	case map[string]any:
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
	// small maps; insertion sort keeps this dependency-free
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// evFrame decodes a frame and checks it is an object; on failure it reports
// prefix.invalid-json / prefix.not-object and returns nil.
func (c *checker) object(frame []byte) map[string]any {
	v, err := evDecode(frame)
	if err != nil {
		c.add(SevError, "invalid-json", "", "frame is not valid JSON: "+err.Error())
		return nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		c.add(SevError, "not-object", "", "frame is JSON "+jsonTypeName(v)+", expected an object")
		return nil
	}
	return o
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
func (c *checker) top(dir Dir, frame []byte, tab *evTable) (map[string]any, string) {
	o := c.object(frame)
	if o == nil {
		return nil, ""
	}
	tv, present := o["type"]
	if !present {
		c.add(SevError, "missing-type", "/type", `frame has no "type" member`)
		return o, ""
	}
	ts, ok := tv.(string)
	if !ok {
		c.add(SevError, "wrong-type", "/type", `"type" is `+jsonTypeName(tv)+", expected string")
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

package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaProto judges frames with a user-supplied JSON Schema, for a
// protocol of the user's own. Every frame must validate against the
// schema's root.
//
// Accepted schemas (docs/protocols.md, "schema"): JSON Schema draft 2020-12
// (the default when "$schema" is absent) and draft-07, as implemented by
// github.com/google/jsonschema-go. References must stay inside the file
// ($defs, definitions, anchors, JSON pointers); remote references are
// refused when the schema is loaded. "format" is not asserted.
//
// The validator reports only the first failure it meets, in no fixed order
// between sibling properties. To report every failing top-level property
// of an object, in a stable order, the schema is also resolved as one
// "probe" per top-level property (the root's definitions plus that one
// property) and one for the rest of the root (its properties accepting
// anything); the probes run only on a frame the whole schema rejected.
//
// Classification is generic: JSON-RPC frames are classified as JSON-RPC
// (so their responses pair with requests as usual); other objects with a
// string "type" are named by it (a Notification from the parent, an Event
// from the child).
type schemaProto struct {
	path   string
	root   *jsonschema.Resolved
	rest   *jsonschema.Resolved            // nil: no probes
	probes map[string]*jsonschema.Resolved // top-level property -> probe
}

// CodeSchemaInvalid is the code of a frame the user's schema rejects.
const CodeSchemaInvalid = "schema.invalid"

// The "$schema" values whose drafts the validator implements.
var schemaDrafts = []string{
	"",
	"https://json-schema.org/draft/2020-12/schema",
	"http://json-schema.org/draft-07/schema#",
	"https://json-schema.org/draft-07/schema#",
}

// FromSchemaFile loads the JSON Schema in path into a Protocol named
// "schema". Errors name the file and say what is wrong in one line.
func FromSchemaFile(path string) (Protocol, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	fail := func(format string, args ...any) (Protocol, error) {
		return nil, fmt.Errorf("schema %s: %s", path, oneLine(fmt.Sprintf(format, args...)))
	}
	if !json.Valid(raw) {
		var v any
		return fail("not JSON: %v", json.Unmarshal(raw, &v))
	}
	base := schemaBase(path)
	root, sch, err := resolveSchema(raw, base)
	if err != nil {
		if strings.Contains(err.Error(), "cannot resolve remote schemas") {
			return fail("%v (rpctap loads no other file or URL: move the definitions under $defs)", err)
		}
		return fail("%v", err)
	}
	if !slices.Contains(schemaDrafts, sch.Schema) {
		return fail("$schema %q is not supported (rpctap accepts JSON Schema draft 2020-12 and draft-07)", sch.Schema)
	}
	p := &schemaProto{path: path, root: root}
	p.rest, p.probes = schemaProbes(raw, base)
	return p, nil
}

// schemaBase is the base URI of a schema file: relative references resolve
// against it (and fail, since remote schemas are not loaded).
func schemaBase(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return "file://" + filepath.ToSlash(abs)
}

func resolveSchema(raw []byte, base string) (*jsonschema.Resolved, *jsonschema.Schema, error) {
	sch := new(jsonschema.Schema)
	if err := json.Unmarshal(raw, sch); err != nil {
		return nil, nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	rs, err := sch.Resolve(&jsonschema.ResolveOptions{BaseURI: base})
	if err != nil {
		return nil, nil, err
	}
	return rs, sch, nil
}

// probeKeys are the root members a probe keeps: identity and definitions,
// which references inside a property's schema may need.
var probeKeys = []string{"$schema", "$id", "$defs", "definitions", "$anchor", "$vocabulary"}

// schemaProbes builds the per-property probes described on schemaProto.
// It returns nil when the root has fewer than two properties, when the
// schema refers to its own root (a probe would then mean something else),
// or when any probe fails to resolve; frames then get one violation each.
func schemaProbes(raw []byte, base string) (*jsonschema.Resolved, map[string]*jsonschema.Resolved) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil, nil
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(top["properties"], &props) != nil || len(props) < 2 {
		return nil, nil
	}
	if bytes.Contains(raw, []byte(`"#"`)) || bytes.Contains(raw, []byte(`"$dynamicRef"`)) || bytes.Contains(raw, []byte(`"$recursiveRef"`)) {
		return nil, nil
	}
	probes := make(map[string]*jsonschema.Resolved, len(props))
	open := make(map[string]json.RawMessage, len(props))
	for name, sub := range props {
		m := map[string]json.RawMessage{}
		for _, k := range probeKeys {
			if v, ok := top[k]; ok {
				m[k] = v
			}
		}
		one, _ := json.Marshal(map[string]json.RawMessage{name: sub})
		m["properties"] = one
		b, _ := json.Marshal(m)
		rs, _, err := resolveSchema(b, base)
		if err != nil {
			return nil, nil
		}
		probes[name] = rs
		open[name] = json.RawMessage("true")
	}
	m := make(map[string]json.RawMessage, len(top))
	for k, v := range top {
		m[k] = v
	}
	m["properties"], _ = json.Marshal(open)
	b, _ := json.Marshal(m)
	rest, _, err := resolveSchema(b, base)
	if err != nil {
		return nil, nil
	}
	return rest, probes
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

func (p *schemaProto) Name() string  { return "schema" }
func (p *schemaProto) MaxFrame() int { return 0 }

func (p *schemaProto) Classify(dir Dir, frame []byte) Info {
	f := scanRPC(frame)
	if !f.object {
		return Info{Kind: Invalid}
	}
	if f.jsonrpc != nil || f.method != nil || f.result != nil || f.err != nil {
		return f.info()
	}
	var typ, id []byte
	forEachMember(frame, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			typ = v
		case "id":
			id = v
		}
		return true
	})
	info := Info{Kind: Notification, ID: string(id)}
	if dir == FromChild {
		info.Kind = Event
	}
	if s, ok := rawString(typ); ok {
		info.Method = s
	}
	return info
}

func (p *schemaProto) Validate(_ Dir, frame []byte, _ Info) []Violation {
	var v any // numbers as float64: the validator types json.Number as a string
	if json.Unmarshal(frame, &v) != nil {
		return nil // not JSON: the Session reports it
	}
	err := p.root.Validate(v)
	if err == nil {
		return nil
	}
	var vs []Violation
	if obj, ok := v.(map[string]any); ok && p.probes != nil {
		if e := p.rest.Validate(v); e != nil {
			vs = append(vs, schemaViolation(e, v))
		}
		names := make([]string, 0, len(obj))
		for name := range obj {
			if p.probes[name] != nil {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			if e := p.probes[name].Validate(v); e != nil {
				vs = append(vs, schemaViolation(e, v))
			}
		}
	}
	if len(vs) == 0 {
		vs = append(vs, schemaViolation(err, v))
	}
	return vs
}

// schemaViolation turns one validation error into a violation. The error
// reads "validating root: validating /properties/n: validating /$defs/x:
// minimum: ...": the chain of schemas entered, then the failure. The
// instance pointer follows the steps that name their instance member
// (properties/NAME, prefixItems/I) and stops at a step that does not
// (items, additionalProperties, patternProperties, contains), so it is the
// failing value or the nearest object or array holding it.
func schemaViolation(err error, inst any) Violation {
	msg := oneLine(err.Error())
	var chain []string
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		i := strings.Index(rest, ": ")
		if i < 0 {
			break
		}
		chain = append(chain, rest[:i])
		msg = rest[i+2:]
	}
	if len(chain) > 0 {
		msg = fmt.Sprintf("%s (schema %s)", msg, chain[len(chain)-1])
	}
	return Violation{Code: CodeSchemaInvalid, Severity: SevError, Pointer: instancePointer(chain, inst), Message: msg}
}

// instancePointer walks a chain of schema locations ("root", then JSON
// pointers into the schema) and returns the instance location it implies.
func instancePointer(chain []string, inst any) string {
	var ptr strings.Builder
	prev := ""
	for _, loc := range chain {
		if !strings.HasPrefix(loc, "/") { // "root", or a schema's $id
			prev = ""
			continue
		}
		step, ok := strings.CutPrefix(loc, prev+"/")
		prev = loc
		if !ok {
			continue // a $ref jump: same instance
		}
		kw, arg, _ := strings.Cut(step, "/")
		switch kw {
		case "properties":
			if strings.Contains(arg, "/") {
				return ptr.String()
			}
			ptr.WriteString("/" + arg)
			inst = pointerStep(inst, arg)
		case "prefixItems":
			ptr.WriteString("/" + arg)
			inst = pointerStep(inst, arg)
		case "items":
			if a, ok := inst.([]any); ok && arg != "" { // draft-07 items array
				ptr.WriteString("/" + arg)
				inst = pointerStep(a, arg)
				continue
			}
			return ptr.String()
		case "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "$ref", "$defs", "definitions":
			// same instance
		default:
			return ptr.String()
		}
	}
	return ptr.String()
}

// pointerStep returns the value at one JSON-pointer step (escaped as in a
// pointer), or nil.
func pointerStep(inst any, step string) any {
	switch x := inst.(type) {
	case map[string]any:
		return x[strings.NewReplacer("~1", "/", "~0", "~").Replace(step)]
	case []any:
		if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(x) {
			return x[i]
		}
	}
	return nil
}

package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/rpctap/rpctap/internal/jsonschema"
)

// schemaProto judges frames with a user-supplied JSON Schema, for a
// protocol of the user's own. Every frame must validate against the
// schema's root.
//
// Accepted schemas (docs/protocols.md, "schema"): JSON Schema draft 2020-12
// (the default when "$schema" is absent) and draft-07, as implemented by
// rpctap's internal/jsonschema. References must stay inside the file
// ($defs, definitions, anchors, JSON pointers); remote references are
// refused when the schema is loaded. "format" is not asserted.
//
// The validator reports the first failure it meets; for an object whose
// root schema has two or more properties it also reports each failing
// top-level member, in a stable order (jsonschema.Schema.Validate).
//
// Classification is generic: JSON-RPC frames are classified as JSON-RPC
// (so their responses pair with requests as usual); other objects with a
// string "type" are named by it (a Notification from the parent, an Event
// from the child).
type schemaProto struct {
	path string
	s    *jsonschema.Schema
}

// CodeSchemaInvalid is the code of a frame the user's schema rejects.
const CodeSchemaInvalid = "schema.invalid"

// FromSchemaFile loads the JSON Schema in path into a Protocol named
// "schema". Errors name the file and say what is wrong in one line.
func FromSchemaFile(path string) (Protocol, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	// RFC 8259 section 8.1: parsers "MAY ignore the presence of a byte
	// order mark"; editors on Windows write one.
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	fail := func(format string, args ...any) (Protocol, error) {
		return nil, fmt.Errorf("schema %s: %s", path, oneLine(fmt.Sprintf(format, args...)))
	}
	if !json.Valid(raw) {
		var v any
		return fail("not JSON: %v", json.Unmarshal(raw, &v))
	}
	s, err := jsonschema.Compile(raw, schemaBase(path))
	if err != nil {
		return fail("%v", err)
	}
	return &schemaProto{path: path, s: s}, nil
}

// schemaBase is the base URI of a schema file: relative references resolve
// against it (and fail, since remote schemas are not loaded).
func schemaBase(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
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
	errs, err := p.s.Validate(frame)
	if err != nil {
		return nil // not JSON: the Session reports it
	}
	var vs []Violation
	for _, e := range errs {
		vs = append(vs, Violation{Code: CodeSchemaInvalid, Severity: SevError, Pointer: e.Pointer, Message: oneLine(e.Message)})
	}
	return vs
}

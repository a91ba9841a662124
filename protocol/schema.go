package protocol

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaProto judges frames with a user-supplied JSON Schema (draft 2020-12
// unless the schema says otherwise in "$schema"), for a protocol of the
// user's own. Every frame must validate against the schema's root.
//
// Classification is generic: JSON-RPC frames are classified as JSON-RPC
// (so their responses pair with requests as usual); other objects with a
// string "type" are named by it (a Notification from the parent, an Event
// from the child).
type schemaProto struct {
	path string
	sch  *jsonschema.Schema
}

// CodeSchemaInvalid is the code of a frame the user's schema rejects.
const CodeSchemaInvalid = "schema.invalid"

// FromSchemaFile compiles the JSON Schema in path into a Protocol named
// "schema". Errors name the file and say what is wrong in one line.
func FromSchemaFile(path string) (Protocol, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema %s: not JSON: %v", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "file://" + filepath.ToSlash(abs)
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %s", path, oneLine(err.Error()))
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %s", path, oneLine(err.Error()))
	}
	return &schemaProto{path: path, sch: sch}, nil
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
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(frame))
	if err != nil {
		return nil // not JSON: the Session reports it
	}
	err = p.sch.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Violation{{Code: CodeSchemaInvalid, Severity: SevError, Message: oneLine(err.Error())}}
	}
	var vs []Violation
	var walk func(u *jsonschema.OutputUnit)
	walk = func(u *jsonschema.OutputUnit) {
		if len(u.Errors) == 0 && u.Error != nil {
			vs = append(vs, Violation{Code: CodeSchemaInvalid, Severity: SevError, Pointer: u.InstanceLocation,
				Message: fmt.Sprintf("%s (schema %s)", u.Error.String(), u.KeywordLocation)})
		}
		for i := range u.Errors {
			walk(&u.Errors[i])
		}
	}
	walk(ve.BasicOutput())
	if len(vs) == 0 {
		vs = append(vs, Violation{Code: CodeSchemaInvalid, Severity: SevError, Message: oneLine(ve.Error())})
	}
	return vs
}

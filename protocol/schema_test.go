package protocol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const userSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["type"],
  "properties": {
    "type": {"enum": ["hello", "bye", "ask", "answer"]},
    "n": {"type": "integer", "minimum": 0}
  }
}`

func writeSchema(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSchemaProtocol(t *testing.T) {
	p, err := FromSchemaFile(writeSchema(t, userSchema))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "schema" {
		t.Errorf("name %q", p.Name())
	}
	s := NewSession(p)
	info, vs := s.Frame(1, FromParent, []byte(`{"type":"hello","n":3}`))
	if len(vs) != 0 || info.Method != "hello" || info.Kind != Notification {
		t.Errorf("valid frame: %+v %v", info, vs)
	}
	_, vs = s.Frame(2, FromChild, []byte(`{"type":"shout","n":-1}`))
	ptrs := map[string]bool{}
	for _, v := range vs {
		if v.Code != CodeSchemaInvalid || v.Severity != SevError || v.Record != 2 {
			t.Errorf("unexpected %+v", v)
		}
		ptrs[v.Pointer] = true
	}
	if !ptrs["/type"] || !ptrs["/n"] {
		t.Errorf("want violations at /type and /n, got %v", vs)
	}
	_, vs = s.Frame(3, FromChild, []byte(`not json`))
	if !hasCode(vs, CodeNonJSONStdout) {
		t.Errorf("non-JSON: %v", vs)
	}
}

func TestSchemaFileErrors(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":   `{"type":`,
		"bad schema": `{"type": 12}`,
	} {
		_, err := FromSchemaFile(writeSchema(t, body))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", name, err)
		}
	}
	if _, err := FromSchemaFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file: no error")
	}
}

// TestSchemaDrafts: draft 2020-12 and draft-07 schemas are accepted, with
// references inside the file; violations point at the failing value.
func TestSchemaDrafts(t *testing.T) {
	for name, tc := range map[string]struct {
		schema string
		frame  string
		want   []string // pointers, in order
	}{
		"2020-12 $defs": {
			schema: `{"$defs":{"pos":{"type":"integer","minimum":0}},"type":"object",
				"properties":{"n":{"$ref":"#/$defs/pos"},"m":{"$ref":"#/$defs/pos"},"s":{"type":"string"}}}`,
			frame: `{"s":"x","n":-1,"m":-2}`,
			want:  []string{"/m", "/n"},
		},
		"draft-07 definitions": {
			schema: `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},
				"properties":{"a":{"$ref":"#/definitions/s"},"b":{"type":"object","properties":{"c":{"$ref":"#/definitions/s"}}}}}`,
			frame: `{"a":"ok","b":{"c":3}}`,
			want:  []string{"/b/c"},
		},
		"items stop at the array": {
			schema: `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}}}}`,
			frame:  `{"l":["a",3]}`,
			want:   []string{"/l"},
		},
		"root keywords": {
			schema: `{"type":"object","required":["id"],"additionalProperties":false,"properties":{"id":{},"x":{"type":"string"}}}`,
			frame:  `{"x":1,"y":2}`,
			want:   []string{"", "/x"},
		},
		"not an object": {
			schema: `{"type":"object","properties":{"a":{},"b":{}}}`,
			frame:  `[1]`,
			want:   []string{""},
		},
	} {
		p, err := FromSchemaFile(writeSchema(t, tc.schema))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		vs := p.Validate(FromChild, []byte(tc.frame), Info{})
		var got []string
		for _, v := range vs {
			if v.Code != CodeSchemaInvalid || v.Message == "" || strings.Contains(v.Message, "\n") {
				t.Errorf("%s: %+v", name, v)
			}
			got = append(got, v.Pointer)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: pointers %q, want %q (%v)", name, got, tc.want, vs)
		}
		for range 3 { // the order is stable
			again := p.Validate(FromChild, []byte(tc.frame), Info{})
			if len(again) != len(vs) {
				t.Fatalf("%s: %d violations, then %d", name, len(vs), len(again))
			}
			for i := range again {
				if again[i] != vs[i] {
					t.Errorf("%s: %+v then %+v", name, vs[i], again[i])
				}
			}
		}
	}
}

// TestSchemaRefused: what the validator cannot honour is refused when the
// schema is loaded, in one line naming the file.
func TestSchemaRefused(t *testing.T) {
	for name, body := range map[string]string{
		"draft-04":       `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`,
		"remote ref":     `{"$ref":"https://example.com/s.json"}`,
		"dangling ref":   `{"properties":{"a":{"$ref":"#/$defs/missing"}}}`,
		"bad regexp":     `{"pattern":"("}`,
		"wrong keywords": `{"required":"a"}`,
	} {
		path := writeSchema(t, body)
		_, err := FromSchemaFile(path)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, path) {
			t.Errorf("%s: %q", name, msg)
		}
	}
}

// TestSchemaFileBOM: a schema file that starts with a UTF-8 byte order mark
// (as editors on Windows write it) loads like the same file without one.
func TestSchemaFileBOM(t *testing.T) {
	p, err := FromSchemaFile(writeSchema(t, "\xef\xbb\xbf"+userSchema))
	if err != nil {
		t.Fatalf("schema with a BOM: %v", err)
	}
	_, vs := NewSession(p).Frame(1, FromParent, []byte(`{"type":"shout"}`))
	if !hasCode(vs, CodeSchemaInvalid) {
		t.Errorf("the schema is not applied: %v", vs)
	}
}

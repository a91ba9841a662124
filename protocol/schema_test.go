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

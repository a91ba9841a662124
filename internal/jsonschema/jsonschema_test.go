package jsonschema

import (
	"strings"
	"testing"
)

// TestValidateAllocs: validation runs on every frame in the recorder, so a
// valid frame costs no allocation once the scratch has grown.
func TestValidateAllocs(t *testing.T) {
	s, err := Compile([]byte(`{"$defs":{"id":{"type":["string","integer"]}},"type":"object","required":["jsonrpc"],
		"properties":{"jsonrpc":{"const":"2.0"},"id":{"$ref":"#/$defs/id"},"method":{"type":"string","pattern":"^[a-z/]+$"},
		"params":{"type":"object","properties":{"text":{"type":"string","minLength":1}},"additionalProperties":{"type":["number","string","array"]},
		"unevaluatedProperties":false}},"anyOf":[{"required":["method"]},{"required":["result"]}]}`), testBase)
	if err != nil {
		t.Fatal(err)
	}
	frame := []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"text":"h\u00e9llo \"you\"","n":[1,2,3],"k":3.5}}`)
	if errs, err := s.Validate(frame); err != nil || errs != nil {
		t.Fatalf("valid frame: %v %v", errs, err)
	}
	if raceEnabled {
		t.Log("allocations not counted with -race: sync.Pool drops items on purpose then")
	} else if n := testing.AllocsPerRun(200, func() { s.Validate(frame) }); n != 0 {
		t.Errorf("%v allocations per valid frame, want 0", n)
	}
	bad := []byte(`{"jsonrpc":"1.0","id":true,"params":{"text":""}}`)
	errs, _ := s.Validate(bad)
	var ptrs []string
	for _, e := range errs {
		ptrs = append(ptrs, e.Pointer)
	}
	if strings.Join(ptrs, " ") != " /id /jsonrpc /params/text" {
		t.Errorf("invalid frame: %+v", errs)
	}
}

// TestCompileRefusals: what the validator cannot honour is refused when
// the schema is compiled, in one line.
func TestCompileRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ schema, want string }{
		"draft-04":            {`{"$schema":"http://json-schema.org/draft-04/schema#"}`, "not supported"},
		"remote ref":          {`{"$ref":"https://example.com/s.json"}`, "cannot resolve remote schema"},
		"relative ref":        {`{"$ref":"other.json#/a"}`, "cannot resolve remote schema file:///schemas/other.json"},
		"dangling pointer":    {`{"properties":{"a":{"$ref":"#/$defs/missing"}}}`, "nothing at /$defs/missing"},
		"missing anchor":      {`{"$ref":"#nope"}`, `no anchor "nope"`},
		"look-ahead":          {`{"pattern":"a(?=b)"}`, "Go RE2 syntax"},
		"bad pattern key":     {`{"patternProperties":{"(":{}}}`, "Go RE2 syntax"},
		"items array (2020)":  {`{"items":[{}]}`, "prefixItems"},
		"$id fragment (2020)": {`{"$id":"https://x.test/s#frag"}`, "no fragment"},
		"wrong type":          {`{"required":"a"}`, "want an array of strings"},
		"negative minLength":  {`{"minLength":-1}`, "non-negative integer"},
		"multipleOf 0":        {`{"multipleOf":0}`, "greater than 0"},
		"unknown type":        {`{"type":"float"}`, "not a JSON Schema type"},
		"schema not object":   {`{"not":3}`, "want a schema"},
		"bad definition":      {`{"$defs":{"a":"x"}}`, "want a schema"},
	} {
		_, err := Compile([]byte(tc.schema), testBase)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", name, err, tc.want)
		}
	}
}

// TestDraft07RefSiblings: draft-07 ignores the siblings of $ref; 2020-12
// applies them.
func TestDraft07RefSiblings(t *testing.T) {
	for draft, want := range map[string]int{`"$schema":"http://json-schema.org/draft-07/schema#",`: 0, ``: 1} {
		s, err := Compile([]byte(`{`+draft+`"definitions":{"n":{"type":"number"}},"$ref":"#/definitions/n","minimum":5}`), testBase)
		if err != nil {
			t.Fatal(err)
		}
		if errs, _ := s.Validate([]byte(`3`)); len(errs) != want {
			t.Errorf("%q: %v", draft, errs)
		}
	}
}

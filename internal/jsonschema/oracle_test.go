package jsonschema

// A third-party validator, github.com/santhosh-tekuri/jsonschema/v6 (used
// only by tests, never linked into rpctap), is the oracle: on generated
// schemas and instances of both drafts, on the upstream ACP schemas in
// ../shared, and in FuzzDifferential, our verdict (valid or not) must equal
// its verdict.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	oracle "github.com/santhosh-tekuri/jsonschema/v6"
)

const testBase = "file:///schemas/s.json"

// oracleCompile compiles schema with the oracle; ok is false when it
// refuses the schema.
func oracleCompile(schema []byte, d7 bool) (*oracle.Schema, error) {
	doc, err := oracle.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := oracle.NewCompiler()
	if d7 {
		c.DefaultDraft(oracle.Draft7)
	} else {
		c.DefaultDraft(oracle.Draft2020)
	}
	if err := c.AddResource(testBase, doc); err != nil {
		return nil, err
	}
	return c.Compile(testBase)
}

func oracleValid(s *oracle.Schema, inst []byte) (bool, error) {
	v, err := oracle.UnmarshalJSON(bytes.NewReader(inst))
	if err != nil {
		return false, err
	}
	err = s.Validate(v)
	if err != nil && strings.Contains(err.Error(), "infinite loop") {
		return false, err
	}
	return err == nil, nil
}

// gen generates schemas and instances from a small vocabulary, so that
// instances often meet the schemas' names, types and bounds.
type gen struct {
	r     *rand.Rand
	d7    bool
	defs  []string
	depth int
}

var (
	genKeys    = []string{"a", "b", "c", "x~/y", "%25", "é"}
	genStrings = []string{"", "a", "ab", "abc", "é", "😀😀", "a1", "zz", "x~/y"}
	genNums    = []string{"-1", "0", "1", "2", "3", "2.5", "0.3", "10", "1.0", "-0.5", "6"}
	genPats    = []string{"^a", "b$", "^[a-c]+$", "\\d", "é", "^.{2}$", "^$"}
)

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) value(depth int) any {
	switch k := g.r.IntN(10); {
	case k == 0:
		return nil
	case k == 1:
		return g.r.IntN(2) == 0
	case k <= 3:
		return json.Number(g.pick(genNums))
	case k <= 5:
		return g.pick(genStrings)
	case k <= 7 && depth < 3:
		n := g.r.IntN(4)
		a := make([]any, n)
		for i := range a {
			a[i] = g.value(depth + 1)
		}
		return a
	case depth < 3:
		n := g.r.IntN(4)
		m := map[string]any{}
		for range n {
			m[g.pick(genKeys)] = g.value(depth + 1)
		}
		return m
	}
	return json.Number(g.pick(genNums))
}

func (g *gen) schema(depth int) any {
	if g.r.IntN(8) == 0 || depth > 3 {
		return g.r.IntN(3) != 0
	}
	m := map[string]any{}
	n := 1 + g.r.IntN(3)
	if depth >= 3 {
		n = 1
	}
	sub := func() any { return g.schema(depth + 1) }
	subs := func() []any {
		a := make([]any, 1+g.r.IntN(3))
		for i := range a {
			a[i] = sub()
		}
		return a
	}
	names := func() []any {
		a := []any{}
		for _, k := range genKeys {
			if g.r.IntN(3) == 0 {
				a = append(a, k)
			}
		}
		return a
	}
	num := func() json.Number { return json.Number(g.pick(genNums)) }
	for range n {
		switch kw := g.r.IntN(40); kw {
		case 0, 1:
			types := []string{"null", "boolean", "number", "integer", "string", "array", "object"}
			if g.r.IntN(2) == 0 {
				m["type"] = types[g.r.IntN(len(types))]
			} else {
				i := g.r.IntN(len(types))
				m["type"] = []any{types[i], types[(i+1+g.r.IntN(len(types)-1))%len(types)]}
			}
		case 2:
			var e []any
			for range 3 {
				v := g.value(2)
				if !slices.ContainsFunc(e, func(x any) bool { a, _ := json.Marshal(x); b, _ := json.Marshal(v); return string(a) == string(b) }) {
					e = append(e, v)
				}
			}
			m["enum"] = e
		case 3:
			m["const"] = g.value(2)
		case 4:
			m[g.pick([]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})] = num()
		case 5:
			m["multipleOf"] = json.Number(g.pick([]string{"2", "0.5", "0.1", "3", "1.5"}))
		case 6:
			m[g.pick([]string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})] = json.Number(strconv.Itoa(g.r.IntN(4)))
		case 7:
			m["pattern"] = g.pick(genPats)
		case 8, 9:
			p := map[string]any{}
			for _, k := range names() {
				p[k.(string)] = sub()
			}
			m["properties"] = p
		case 10:
			m["patternProperties"] = map[string]any{g.pick(genPats): sub()}
		case 11:
			m["additionalProperties"] = sub()
		case 12:
			m["required"] = names()
		case 13:
			if g.d7 {
				m["dependencies"] = map[string]any{g.pick(genKeys): names(), g.pick(genKeys): sub()}
			} else {
				m["dependentRequired"] = map[string]any{g.pick(genKeys): names()}
			}
		case 14:
			if !g.d7 {
				m["dependentSchemas"] = map[string]any{g.pick(genKeys): sub()}
			}
		case 15:
			m["propertyNames"] = sub()
		case 16, 17:
			m["items"] = sub()
		case 18:
			if g.d7 {
				m["items"] = subs()
				m["additionalItems"] = sub()
			} else {
				m["prefixItems"] = subs()
			}
		case 19:
			m["contains"] = sub()
			if !g.d7 && g.r.IntN(2) == 0 {
				m[g.pick([]string{"minContains", "maxContains"})] = json.Number(strconv.Itoa(g.r.IntN(3)))
			}
		case 20:
			m["uniqueItems"] = g.r.IntN(3) != 0
		case 21:
			m["allOf"] = subs()
		case 22:
			m["anyOf"] = subs()
		case 23:
			m["oneOf"] = subs()
		case 24:
			m["not"] = sub()
		case 25:
			m["if"], m["then"] = sub(), sub()
			if g.r.IntN(2) == 0 {
				m["else"] = sub()
			}
		case 26, 27:
			if !g.d7 {
				m["unevaluatedProperties"] = sub()
			}
		case 28:
			if !g.d7 {
				m["unevaluatedItems"] = sub()
			}
		case 29, 30, 31:
			if len(g.defs) > 0 {
				d := g.pick(g.defs)
				switch g.r.IntN(2) + g.r.IntN(2) {
				case 1:
					m["$ref"] = "#/" + defsKey(g.d7) + "/" + strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(d, "%", "%25"), "~", "~0"), "/", "~1")
				default:
					m["$ref"] = "#anchor-" + strconv.Itoa(slices.Index(g.defs, d))
				}
			}
		default:
			m["type"] = g.pick([]string{"object", "array", "string", "number"})
		}
	}
	if ref, ok := m["$ref"]; ok && g.d7 {
		// Draft-07 ignores a $ref's siblings ("All other properties in a
		// "$ref" object MUST be ignored"), the oracle applies them.
		return map[string]any{"$ref": ref}
	}
	return m
}

func defsKey(d7 bool) string {
	if d7 {
		return "definitions"
	}
	return "$defs"
}

// document generates a whole schema with definitions and anchors.
func (g *gen) document() map[string]any {
	g.defs = []string{"p", "q/r", "s~t", "50%"}
	defs := map[string]any{}
	for i, name := range g.defs {
		s, ok := g.schema(1).(map[string]any)
		if !ok {
			s = map[string]any{}
		}
		if g.d7 {
			s["$id"] = "#anchor-" + strconv.Itoa(i)
			delete(s, "$ref") // draft-07 ignores $id beside $ref
		} else {
			s["$anchor"] = "anchor-" + strconv.Itoa(i)
		}
		defs[name] = s
	}
	root, ok := g.schema(0).(map[string]any)
	if !ok {
		root = map[string]any{"not": map[string]any{"type": "null"}}
	}
	root[defsKey(g.d7)] = defs
	if g.d7 {
		root["$schema"] = Draft07
		if _, ok := root["$ref"]; ok { // keep the definitions reachable in draft-07
			delete(root, "definitions")
			root = map[string]any{"$schema": Draft07, "definitions": defs, "allOf": []any{root}}
		}
	} else if g.r.IntN(2) == 0 {
		root["$schema"] = Draft2020
	}
	return root
}

// compare validates inst with both and reports a disagreement.
func compare(t testing.TB, mine *Schema, theirs *oracle.Schema, schema, inst []byte) (valid bool, agree bool) {
	want, err := oracleValid(theirs, inst)
	if err != nil {
		return false, true // the oracle has no verdict (a reference loop)
	}
	errs, err := mine.Validate(inst)
	if err != nil {
		t.Errorf("instance %s: %v", inst, err)
		return false, false
	}
	if len(errs) == 1 && strings.Contains(errs[0].Message, "(a reference loop)") {
		return false, true // what a loop means inside "not" is not defined; we reject
	}
	got := len(errs) == 0
	if got != want {
		t.Errorf("schema %s\ninstance %s\noracle valid=%v, ours valid=%v %v", schema, inst, want, got, errs)
		return got, false
	}
	return got, true
}

// TestDifferentialGenerated: generated schemas of both drafts, each with
// generated instances.
func TestDifferentialGenerated(t *testing.T) {
	schemas, instances := 3000, 40
	if testing.Short() {
		schemas = 300
	}
	var valid, invalid, fails int
	for i := range schemas {
		g := &gen{r: rand.New(rand.NewPCG(uint64(i), 23)), d7: i%3 == 0}
		schema, _ := json.Marshal(g.document())
		theirs, err := oracleCompile(schema, g.d7)
		if err != nil {
			t.Fatalf("the oracle refuses generated schema %s: %v", schema, err)
		}
		mine, err := Compile(schema, testBase)
		if err != nil {
			t.Fatalf("generated schema %s: %v", schema, err)
		}
		for range instances {
			inst, _ := json.Marshal(g.value(0))
			ok, agree := compare(t, mine, theirs, schema, inst)
			if !agree {
				if fails++; fails > 3 {
					t.FailNow()
				}
			} else if ok {
				valid++
			} else {
				invalid++
			}
		}
	}
	t.Logf("%d schemas: %d valid and %d invalid instances agree with the oracle", schemas, valid, invalid)
	if valid < schemas || invalid < schemas {
		t.Errorf("too few cases on one side (valid %d, invalid %d): the generator is broken", valid, invalid)
	}
}

// FuzzDifferential: a schema and an instance; whenever both validators
// accept the schema, their verdicts must agree; ours must never panic.
func FuzzDifferential(f *testing.F) {
	for i := range 20 {
		g := &gen{r: rand.New(rand.NewPCG(uint64(i), 7)), d7: i%2 == 1}
		schema, _ := json.Marshal(g.document())
		inst, _ := json.Marshal(g.value(0))
		f.Add(string(schema), string(inst))
	}
	f.Fuzz(func(t *testing.T, schema, inst string) {
		mine, err := Compile([]byte(schema), testBase)
		if err != nil {
			return
		}
		if !json.Valid([]byte(inst)) {
			if _, e := mine.Validate([]byte(inst)); e == nil {
				t.Errorf("instance %q is not JSON, yet validated", inst)
			}
			return
		}
		if _, err := parseCheck([]byte(inst)); err != nil { // duplicate names
			mine.Validate([]byte(inst)) // must not panic
			return
		}
		if !comparable(schema) || !comparable(inst) {
			mine.Validate([]byte(inst)) // must not panic
			return
		}
		theirs, err := oracleCompile([]byte(schema), strings.Contains(schema, "draft-07"))
		if err != nil {
			mine.Validate([]byte(inst))
			return
		}
		compare(t, mine, theirs, []byte(schema), []byte(inst))
	})
}

// parseCheck says whether s is one JSON text without duplicate member
// names (duplicates mean different things to different decoders).
func parseCheck(s []byte) (any, error) {
	if !json.Valid(s) {
		return nil, fmt.Errorf("not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(s))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if seen[k.(string)] {
					return fmt.Errorf("duplicate key %q", k)
				}
				seen[k.(string)] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return nil, walk()
}

// comparable leaves out what the two validators are allowed to judge
// differently: numbers beyond float64's exact range (the oracle uses exact
// rationals, rpctap float64 for bounds), "format" (the oracle asserts it in
// draft-07), and deep nesting.
func comparable(s string) bool {
	if strings.Contains(s, `"format"`) || strings.Count(s, "[")+strings.Count(s, "{") > 200 {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		if n, ok := tok.(json.Number); ok {
			lit := strings.TrimLeft(strings.TrimPrefix(n.String(), "-"), "0.")
			if len(lit) > 15 || strings.ContainsAny(lit, "eE") {
				return false
			}
		}
	}
}

// sharedDir finds ../shared beside the module root, or skips the test.
func sharedDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared")
	if _, err := os.Stat(filepath.Join(dir, "DESIGN.md")); err != nil {
		t.Skipf("needs ../shared beside the checkout (looked for %s): %v", dir, err)
	}
	return dir
}

// TestDifferentialACP: every upstream ACP schema in ../shared compiles,
// and for every one of its definitions, values generated from the
// definition (mostly valid) and mutated (often not) and every frame of the
// ACP traffic captures against the root get the oracle's verdict.
func TestDifferentialACP(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedDir(t), "protocols", "acp", "*", "schema*.json"))
	more, _ := filepath.Glob(filepath.Join(sharedDir(t), "protocols", "acp", "*", "*", "schema*.json"))
	files = append(files, more...)
	if testing.Short() && len(files) > 2 {
		files = files[:2]
	}
	if len(files) == 0 {
		t.Skip("no ACP schemas under ../shared/protocols/acp")
	}
	var frames [][]byte
	caps, _ := filepath.Glob(filepath.Join(sharedDir(t), "traffic", "acp-*"))
	for _, c := range caps {
		b, _ := os.ReadFile(c)
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				frames = append(frames, l)
			}
		}
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(sharedDir(t), file)
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		mine, err := Compile(raw, testBase)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		odoc, err := oracle.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		oc := oracle.NewCompiler()
		oc.DefaultDraft(oracle.Draft2020)
		if err := oc.AddResource(testBase, odoc); err != nil {
			t.Fatal(err)
		}
		theirs, err := oc.Compile(testBase)
		if err != nil {
			t.Fatalf("%s: the oracle: %v", name, err)
		}
		var valid, invalid int
		count := func(ok, agree bool) {
			if agree && ok {
				valid++
			} else if agree {
				invalid++
			}
		}
		for _, fr := range frames {
			count(compare(t, mine, theirs, []byte(name), fr))
		}
		defs, _ := doc["$defs"].(map[string]any)
		r := rand.New(rand.NewPCG(1, 2))
		for _, def := range sortedKeys(defs) {
			m := mine.subschema("/$defs/" + escapeToken(def))
			if m == nil {
				t.Fatalf("%s $defs/%s was not compiled", name, def)
			}
			o, err := oc.Compile(testBase + "#/$defs/" + def)
			if err != nil {
				t.Fatalf("%s $defs/%s: the oracle: %v", name, def, err)
			}
			for range 30 {
				sg := &schemaGen{r: r, doc: doc}
				v := sg.value(defs[def], 0)
				if r.IntN(2) == 0 {
					v = mutate(r, v)
				}
				inst, _ := json.Marshal(v)
				count(compare(t, m, o, []byte(name+" $defs/"+def), inst))
			}
		}
		t.Logf("%s: %d valid and %d invalid instances agree with the oracle", name, valid, invalid)
		if valid < 100 || invalid < 100 {
			t.Errorf("%s: too few cases on one side (valid %d, invalid %d)", name, valid, invalid)
		}
	}
}

// schemaGen generates a value meant to satisfy a schema of the upstream
// files (which use $ref, anyOf, oneOf, allOf, type, enum, const,
// properties, required, items, additionalProperties).
type schemaGen struct {
	r   *rand.Rand
	doc map[string]any
}

func (g *schemaGen) value(s any, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > 12 {
		return nil
	}
	if ref, ok := m["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		defs, _ := g.doc["$defs"].(map[string]any)
		return g.value(defs[name], depth+1)
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[g.r.IntN(len(e))]
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if a, ok := m[kw].([]any); ok && len(a) > 0 {
			v := g.value(a[g.r.IntN(len(a))], depth+1)
			if obj, ok := v.(map[string]any); ok {
				if base := g.object(m, depth); base != nil {
					for k, x := range base {
						if _, ok := obj[k]; !ok {
							obj[k] = x
						}
					}
				}
			}
			return v
		}
	}
	if a, ok := m["allOf"].([]any); ok && len(a) > 0 {
		return g.value(a[0], depth+1)
	}
	typ := m["type"]
	if ts, ok := typ.([]any); ok && len(ts) > 0 {
		typ = ts[g.r.IntN(len(ts))]
	}
	switch typ {
	case "string":
		return g.pickStr()
	case "integer":
		if mn, ok := m["minimum"].(json.Number); ok {
			return mn
		}
		return json.Number(strconv.Itoa(g.r.IntN(100)))
	case "number":
		return json.Number("1.5")
	case "boolean":
		return g.r.IntN(2) == 0
	case "null":
		return nil
	case "array":
		n := g.r.IntN(3)
		a := make([]any, n)
		for i := range a {
			a[i] = g.value(m["items"], depth+1)
		}
		return a
	}
	if o := g.object(m, depth); o != nil || typ == "object" {
		if o == nil {
			o = map[string]any{}
		}
		return o
	}
	return g.pickStr()
}

func (g *schemaGen) pickStr() string {
	return []string{"x", "", "session-1", "2026-01-01T00:00:00Z", "é"}[g.r.IntN(5)]
}

func (g *schemaGen) object(m map[string]any, depth int) map[string]any {
	props, _ := m["properties"].(map[string]any)
	if props == nil {
		return nil
	}
	req := map[string]bool{}
	if r, ok := m["required"].([]any); ok {
		for _, x := range r {
			if s, ok := x.(string); ok {
				req[s] = true
			}
		}
	}
	o := map[string]any{}
	for _, k := range sortedKeys(props) {
		if req[k] || g.r.IntN(2) == 0 {
			o[k] = g.value(props[k], depth+1)
		}
	}
	return o
}

// mutate changes one value somewhere in v.
func mutate(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := sortedKeys(x)
		if len(keys) == 0 || r.IntN(4) == 0 {
			switch r.IntN(3) {
			case 0:
				x["unexpected"] = 1
			case 1:
				return "not an object"
			default:
				if len(keys) > 0 {
					delete(x, keys[r.IntN(len(keys))])
				}
			}
			return x
		}
		k := keys[r.IntN(len(keys))]
		x[k] = mutate(r, x[k])
		return x
	case []any:
		if len(x) == 0 || r.IntN(3) == 0 {
			return append(x, json.Number("-7"))
		}
		i := r.IntN(len(x))
		x[i] = mutate(r, x[i])
		return x
	case string:
		return []any{json.Number("1"), nil, true, map[string]any{}}[r.IntN(4)]
	case json.Number:
		return []any{"7", json.Number("-1.5"), nil}[r.IntN(3)]
	}
	return []any{"s", json.Number("3"), []any{}}[r.IntN(3)]
}

// subschema is the schema at a JSON pointer of s's file as a Schema of its
// own (references resolve as in s).
func (s *Schema) subschema(ptr string) *Schema {
	n := s.nodes[ptr]
	if n == nil {
		return nil
	}
	sub := &Schema{root: n, track: s.track, dyn: s.dyn, nodes: s.nodes}
	sub.pool.New = func() any { return new(state) }
	return sub
}

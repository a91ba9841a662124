package protocol

// The upstream ACP JSON Schemas (../shared/protocols/acp/v0.10.3 and
// v0.13.0, read at run time, never copied into the repository) are an
// oracle: for every ACP frame of the traffic captures and for thousands of
// generated valid and broken frames, our verdict (any error-level violation
// from Validate, session rules aside) must equal the schema's verdict for the
// frame's method.
//
// "The schema's verdict for the method": the top-level schema is an anyOf
// that does not tie method to params, so the test builds one small wrapper
// per (method, kind) around the upstream $defs named by x-method:
//   request:      {jsonrpc: const "2.0", id: RequestId, method: const M, params: $defs/<M's Request type>}, all required
//   notification: the same without id (and id forbidden)
//   response:     {jsonrpc, id: RequestId, result: $defs/<Response type>, error: $defs/Error}, jsonrpc and id required,
//                 exactly one of result and error (JSON-RPC 2.0's rule; the upstream
//                 anyOf of {id,result} | {id,error} does not forbid both)
// Methods absent from the version's meta are invalid unless they start with
// "_" (extension methods: params and result are free). "params" is required
// for known methods, as rpc.rs demands (Error::invalid_params when absent).
//
// Our catalogue follows v0.13.0 (a superset of v0.10.3); a generated frame
// that only v0.13.0 accepts (a newer field or variant) is counted, not
// failed, when comparing against v0.10.3.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type acpOracle struct {
	version string
	methods map[string]string // method -> "agent" / "client" / "protocol"
	defs    map[string]map[string]any
	c       *jsonschema.Compiler
	cache   map[string]*jsonschema.Schema
}

func loadACPOracle(t *testing.T, version string) *acpOracle {
	t.Helper()
	dir := filepath.Join(sharedDir(t), "protocols", "acp", version)
	raw, err := os.ReadFile(filepath.Join(dir, "schema.unstable.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	o := &acpOracle{version: version, methods: map[string]string{}, defs: map[string]map[string]any{}, cache: map[string]*jsonschema.Schema{}}
	for name, d := range doc.(map[string]any)["$defs"].(map[string]any) {
		o.defs[name] = d.(map[string]any)
	}
	var meta map[string]any
	mb, err := os.ReadFile(filepath.Join(dir, "meta.unstable.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mb, &meta); err != nil {
		t.Fatal(err)
	}
	for group, side := range map[string]string{"agentMethods": "agent", "clientMethods": "client", "protocolMethods": "protocol"} {
		m, _ := meta[group].(map[string]any)
		for _, v := range m {
			o.methods[v.(string)] = side
		}
	}
	o.c = jsonschema.NewCompiler()
	if err := o.c.AddResource("https://acp.test/acp.json", doc); err != nil {
		t.Fatal(err)
	}
	return o
}

// typeFor finds the $defs type for (method, kind suffix "Request",
// "Response" or "Notification") by x-method.
func (o *acpOracle) typeFor(method, suffix string) string {
	var found []string
	for name, d := range o.defs {
		if d["x-method"] == method && strings.HasSuffix(name, suffix) {
			found = append(found, name)
		}
	}
	sort.Strings(found)
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

func (o *acpOracle) compile(key string, wrapper map[string]any) *jsonschema.Schema {
	if s, ok := o.cache[key]; ok {
		return s
	}
	url := "https://acp.test/w/" + strings.NewReplacer("/", "_", "$", "S").Replace(key) + ".json"
	if err := o.c.AddResource(url, wrapper); err != nil {
		panic(err)
	}
	s, err := o.c.Compile(url)
	if err != nil {
		panic(fmt.Sprintf("compile %s: %v", key, err))
	}
	o.cache[key] = s
	return s
}

func defRef(t string) map[string]any {
	return map[string]any{"$ref": "https://acp.test/acp.json#/$defs/" + t}
}

// verdict is the schema's judgement of frame, sent as kind with method
// (for a response: the method of its request). ok=false means the schema
// has no say (cannot happen for the kinds we pass).
func (o *acpOracle) verdict(frame []byte, kind Kind, method string) (valid bool, why string) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(frame))
	if err != nil {
		return false, "not JSON"
	}
	env := map[string]any{"const": "2.0"}
	_, known := o.methods[method]
	ext := strings.HasPrefix(method, "_")
	if !known && !ext {
		return false, "method not in meta"
	}
	var w map[string]any
	switch kind {
	case Request, Notification:
		suffix := "Request"
		if kind == Notification {
			suffix = "Notification"
		}
		var params any = true
		if !ext {
			tn := o.typeFor(method, suffix)
			if tn == "" {
				return false, "method has no " + suffix + " type"
			}
			params = defRef(tn)
		}
		props := map[string]any{"jsonrpc": env, "method": map[string]any{"const": method}, "params": params}
		req := []any{"jsonrpc", "method"}
		if !ext {
			req = append(req, "params")
		}
		w = map[string]any{"type": "object", "properties": props}
		if kind == Request {
			props["id"] = defRef("RequestId")
			w["required"] = append(req, "id")
		} else {
			w["required"] = req
			w["not"] = map[string]any{"required": []any{"id"}}
		}
	case Response:
		var result any = true
		if !ext {
			tn := o.typeFor(method, "Response")
			if tn == "" {
				return false, "method has no Response type"
			}
			result = defRef(tn)
		}
		w = map[string]any{"type": "object",
			"properties": map[string]any{"jsonrpc": env, "id": defRef("RequestId"), "result": result, "error": defRef("Error")},
			"required":   []any{"jsonrpc", "id"},
			"oneOf":      []any{map[string]any{"required": []any{"result"}}, map[string]any{"required": []any{"error"}}},
		}
	default:
		return false, "not a request, notification or response"
	}
	s := o.compile(string(kind)+" "+method, w)
	if err := s.Validate(v); err != nil {
		return false, oneLineErr(err)
	}
	return true, ""
}

func oneLineErr(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " | ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// ourVerdict: no error-level violation from Validate.
func ourVerdict(dir Dir, frame []byte, kind Kind, method string) (bool, []Violation) {
	p := acpProto{}
	info := p.Classify(dir, frame)
	if info.Kind == Response {
		info.Method = method
	}
	var errs []Violation
	for _, v := range p.Validate(dir, frame, info) {
		if v.Severity == SevError {
			errs = append(errs, v)
		}
	}
	return len(errs) == 0, errs
}

// oracleCase is one frame to judge.
type oracleCase struct {
	name   string
	dir    Dir
	kind   Kind
	method string
	frame  []byte
}

func TestACPSchemaOracle(t *testing.T) {
	oracles := []*acpOracle{loadACPOracle(t, "v0.13.0"), loadACPOracle(t, "v0.10.3")}
	ref := oracles[0]
	cases := append(acpTrafficCases(t), acpGeneratedCases(t, ref)...)
	t.Logf("%d frames (%d from traffic)", len(cases), len(acpTrafficCases(t)))
	for _, o := range oracles {
		var agree, newer, valid, invalid int
		for _, c := range cases {
			if _, known := o.methods[c.method]; !known && o != ref && !strings.HasPrefix(c.method, "_") {
				if _, inRef := ref.methods[c.method]; inRef {
					newer++ // a method this older version does not have
					continue
				}
			}
			want, why := o.verdict(c.frame, c.kind, c.method)
			got, errs := ourVerdict(c.dir, c.frame, c.kind, c.method)
			if got == want {
				agree++
				if want {
					valid++
				} else {
					invalid++
				}
				continue
			}
			if o != ref {
				if refWant, _ := ref.verdict(c.frame, c.kind, c.method); refWant == got {
					newer++ // v0.10.3 and v0.13.0 disagree; we follow v0.13.0
					continue
				}
			}
			t.Errorf("%s %s: schema says valid=%v (%s), we say valid=%v %v\n  frame: %s", o.version, c.name, want, why, got, codes(errs), excerpt(c.frame, 400))
		}
		t.Logf("%s: %d frames agree (%d valid, %d invalid); %d skipped as newer than this version", o.version, agree, valid, invalid, newer)
		if valid < 100 || invalid < 100 {
			t.Errorf("%s: too few cases on one side (valid %d, invalid %d): the generator is broken", o.version, valid, invalid)
		}
	}
}

// acpTrafficCases pairs the ACP captures' frames with their methods.
func acpTrafficCases(t *testing.T) []oracleCase {
	dir := filepath.Join(sharedDir(t), "traffic")
	var out []oracleCase
	for _, name := range []string{"acp-go", "acp-ts-agent"} {
		seq := interleave(acpProto{}, readLines(t, filepath.Join(dir, name+".in")), readLines(t, filepath.Join(dir, name+".out")))
		s := NewSession(acpProto{})
		for i, f := range seq {
			info, _ := s.Frame(uint64(i+1), f.Dir, f.Frame)
			out = append(out, oracleCase{fmt.Sprintf("%s record %d", name, i+1), f.Dir, info.Kind, info.Method, f.Frame})
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d ACP traffic frames", len(out))
	}
	return out
}

// acpGeneratedCases builds, from our own catalogue, valid frames for every
// method (several variants of each union) and mutates them: each field
// removed, each field replaced by values of other JSON types, plus envelope
// breakage. The oracle judges every one independently, so a catalogue that
// is wrong in either direction (too strict, too lax) shows up.
func acpGeneratedCases(t *testing.T, ref *acpOracle) []oracleCase {
	var out []oracleCase
	names := make([]string, 0, len(acpMethods()))
	for m := range acpMethods() {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		if _, ok := ref.methods[m]; !ok {
			t.Errorf("our catalogue has %q, which v0.13.0's meta does not list", m)
		}
	}
	for m := range ref.methods {
		if _, ok := acpMethods()[m]; !ok {
			t.Errorf("v0.13.0 meta lists %q, missing from our catalogue", m)
		}
	}
	variants := 6 // union members picked per frame: 6 reaches every member of the larger unions
	if testing.Short() {
		variants = 2
	}
	wrongValues := []any{json.Number("12345"), json.Number("-1"), json.Number("1.5"), "str", true, nil, []any{}, map[string]any{}}
	for _, m := range names {
		am := acpMethods()[m]
		dir := FromParent
		if am.side == acpClientSide {
			dir = FromChild
		}
		type part struct {
			kind Kind
			s    shape
			key  string // "params" or "result"
		}
		var parts []part
		if am.req != nil {
			parts = append(parts, part{Request, am.req, "params"}, part{Response, am.result, "result"})
		}
		if am.notif != nil {
			parts = append(parts, part{Notification, am.notif, "params"})
		}
		for _, pt := range parts {
			fdir := dir
			if pt.kind == Response {
				fdir = 1 - dir
			}
			for variant := 0; variant < variants; variant++ {
				for _, full := range []bool{false, true} {
					body := sampleShape(pt.s, variant, full)
					frame := func(b any) []byte {
						msg := map[string]any{"jsonrpc": "2.0", pt.key: b}
						if pt.kind != Notification {
							msg["id"] = json.Number("7")
						}
						if pt.kind != Response {
							msg["method"] = m
						}
						js, _ := json.Marshal(msg)
						return js
					}
					tag := fmt.Sprintf("%s %s v%d full=%v", pt.kind, m, variant, full)
					out = append(out, oracleCase{tag, fdir, pt.kind, m, frame(body)})
					for _, mut := range mutations(body, "", 3, wrongValues) {
						out = append(out, oracleCase{tag + " " + mut.desc, fdir, pt.kind, m, frame(mut.v)})
					}
				}
			}
		}
	}
	// Envelope breakage and unknown methods.
	good := `{"jsonrpc":"2.0","id":1,"method":"session/cancel","params":{"sessionId":"s"}}`
	extra := []oracleCase{
		{"bad jsonrpc version", FromParent, Request, "session/prompt", []byte(`{"jsonrpc":"1.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)},
		{"missing jsonrpc", FromParent, Request, "session/prompt", []byte(`{"id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)},
		{"jsonrpc number", FromParent, Request, "session/prompt", []byte(`{"jsonrpc":2.0,"id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)},
		{"result and error", FromChild, Response, "session/prompt", []byte(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"},"error":{"code":-32603,"message":"x"}}`)},
		{"error only", FromChild, Response, "session/prompt", []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x","data":[1]}}`)},
		{"error code string", FromChild, Response, "session/prompt", []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"x"}}`)},
		{"error without message", FromChild, Response, "session/prompt", []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":1}}`)},
		{"response without id", FromChild, Response, "session/prompt", []byte(`{"jsonrpc":"2.0","result":{"stopReason":"end_turn"}}`)},
		{"id object", FromParent, Request, "session/prompt", []byte(`{"jsonrpc":"2.0","id":{},"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)},
		{"string id", FromParent, Request, "session/prompt", []byte(`{"jsonrpc":"2.0","id":"a","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)},
		{"unknown method", FromParent, Request, "session/frobnicate", []byte(`{"jsonrpc":"2.0","id":1,"method":"session/frobnicate","params":{}}`)},
		{"unknown notification", FromChild, Notification, "agent/hello", []byte(`{"jsonrpc":"2.0","method":"agent/hello","params":{}}`)},
		{"extension request", FromParent, Request, "_zed/hello", []byte(`{"jsonrpc":"2.0","id":1,"method":"_zed/hello","params":[1,2]}`)},
		{"extension notification", FromChild, Notification, "_x", []byte(`{"jsonrpc":"2.0","method":"_x"}`)},
		{"extension response", FromChild, Response, "_x", []byte(`{"jsonrpc":"2.0","id":3,"result":42}`)},
		{"request without params", FromParent, Request, "session/list", []byte(`{"jsonrpc":"2.0","id":1,"method":"session/list"}`)},
		{"null params", FromParent, Request, "session/list", []byte(`{"jsonrpc":"2.0","id":1,"method":"session/list","params":null}`)},
		{"request as notification", FromParent, Notification, "session/prompt", []byte(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)},
		{"notification as request", FromParent, Request, "session/cancel", []byte(good)},
	}
	return append(out, extra...)
}

type mutation struct {
	desc string
	v    any
}

// mutations returns copies of v with one change each, down to depth levels
// of nested objects (and first array items).
func mutations(v any, ptr string, depth int, wrong []any) []mutation {
	if depth == 0 {
		return nil
	}
	var out []mutation
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cp := copyMap(x)
			delete(cp, k)
			out = append(out, mutation{"without " + ptr + "/" + k, cp})
			for _, w := range wrong {
				cp := copyMap(x)
				cp[k] = w
				out = append(out, mutation{fmt.Sprintf("%s/%s=%v", ptr, k, w), cp})
			}
			for _, sub := range mutations(x[k], ptr+"/"+k, depth-1, wrong) {
				cp := copyMap(x)
				cp[k] = sub.v
				out = append(out, mutation{sub.desc, cp})
			}
		}
	case []any:
		if len(x) > 0 {
			for _, sub := range mutations(x[0], ptr+"/0", depth-1, wrong) {
				cp := append([]any{sub.v}, x[1:]...)
				out = append(out, mutation{sub.desc, cp})
			}
		}
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	cp := make(map[string]any, len(m))
	for k, v := range m {
		cp[k] = v
	}
	return cp
}

// sampleShape builds a value our shape accepts: required fields only, or
// all fields when full; variant picks among union members.
func sampleShape(s shape, variant int, full bool) any {
	switch x := s.(type) {
	case scalarShape:
		switch x {
		case jString:
			return "x"
		case jBoolean:
			return true
		case jNumber:
			return json.Number("1.5")
		case jInteger:
			return json.Number("3")
		case jAnything:
			return "anything"
		case jAnyObject:
			return map[string]any{}
		case jAnyArray:
			return []any{}
		}
	case uintShape:
		return json.Number("2")
	case nullableShape:
		if full || variant%2 == 0 {
			return sampleShape(x.s, variant, full)
		}
		return nil
	case enumShape:
		return x.values[variant%len(x.values)]
	case arrayShape:
		return []any{sampleShape(x.item, variant, full)}
	case constShape:
		return string(x)
	case *objShape:
		m := map[string]any{}
		for _, f := range x.fields {
			if f.required || full {
				m[f.name] = sampleShape(f.s, variant, full)
			}
		}
		for _, e := range x.extra {
			if em, ok := sampleShape(e, variant, full).(map[string]any); ok {
				for k, v := range em {
					m[k] = v
				}
			}
		}
		return m
	case *taggedShape:
		tag := x.order[variant%len(x.order)]
		m, _ := sampleShape(x.variants[tag], variant, full).(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m[x.tag] = tag
		return m
	case anyOfShape:
		return sampleShape(x.alts[variant%len(x.alts)], variant, full)
	}
	panic(fmt.Sprintf("sampleShape: unhandled %T", s))
}

package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/internal/testpeers"
)

func TestLine(t *testing.T) {
	cases := []struct{ in, want string }{
		// Plain secret keys, any case, - or _; values of any type but null/bool/"".
		{`{"token":"abc"}`, `{"token":"[REDACTED]"}`},
		{`{"apiKey":"k1","api_key":"k2","API-KEY":"k3","Api_Key":42}`, `{"apiKey":"[REDACTED]","api_key":"[REDACTED]","API-KEY":"[REDACTED]","Api_Key":"[REDACTED]"}`},
		{`{"password": null, "secret": true, "token": "", "client_secret": {"a":[1,2]}}`, `{"password": null, "secret": true, "token": "", "client_secret": "[REDACTED]"}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"session_token":"s3cr3t","ok":true}}`, `{"jsonrpc":"2.0","id":1,"result":{"session_token":"[REDACTED]","ok":true}}`},
		{`{"Authorization" : "Bearer xyz" , "x":1}`, `{"Authorization" : "[REDACTED]" , "x":1}`},
		{`{"access_token":"a","refresh_token":"b","accessToken":"c"}`, `{"access_token":"[REDACTED]","refresh_token":"[REDACTED]","accessToken":"[REDACTED]"}`},
		// Keys that merely contain a secret word are kept.
		{`{"max_tokens":100,"inputTokens":5,"tokenizer":"x","secretary":"y","passwordHint":"z"}`, ``},
		// MCP env object: every value.
		{`{"mcpServers":{"fs":{"command":"x","env":{"HOME":"/h","GITHUB_PAT":"ghp_1"}}}}`, `{"mcpServers":{"fs":{"command":"x","env":{"HOME":"[REDACTED]","GITHUB_PAT":"[REDACTED]"}}}}`},
		// ACP env array and HTTP headers array.
		{`{"method":"session/new","params":{"mcpServers":[{"name":"gh","command":"gh","args":[],"env":[{"name":"GH_TOKEN","value":"t1"},{"name":"DEBUG","value":"1"}]},{"type":"http","name":"api","url":"https://x","headers":[{"name":"Authorization","value":"Bearer q"},{"name":"Accept","value":"json"},{"value":"c=1","name":"Cookie"},{"name":"X-Api-Key","value":"k"}]}]}}`,
			`{"method":"session/new","params":{"mcpServers":[{"name":"gh","command":"gh","args":[],"env":[{"name":"GH_TOKEN","value":"[REDACTED]"},{"name":"DEBUG","value":"[REDACTED]"}]},{"type":"http","name":"api","url":"https://x","headers":[{"name":"Authorization","value":"[REDACTED]"},{"name":"Accept","value":"json"},{"value":"[REDACTED]","name":"Cookie"},{"name":"X-Api-Key","value":"[REDACTED]"}]}]}}`},
		// Docker-style env list of strings.
		{`{"env":["GH_TOKEN=x", "DEBUG=1", null]}`, `{"env":["[REDACTED]", "[REDACTED]", null]}`},
		// Header object form.
		{`{"headers":{"Authorization":"Bearer q","Content-Type":"json"}}`, `{"headers":{"Authorization":"[REDACTED]","Content-Type":"json"}}`},
		// ACP authenticate: params except methodId, whatever the key order.
		{`{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"api-key","credentials":{"k":"v"},"code":"1234"}}`,
			`{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"api-key","credentials":"[REDACTED]","code":"[REDACTED]"}}`},
		{`{"params":{"code":"1234","methodId":"oauth"},"method":"authenticate","id":3}`, `{"params":{"code":"[REDACTED]","methodId":"oauth"},"method":"authenticate","id":3}`},
		{`{"params":{"code":"1234"},"method":"authenticated"}`, ``},
		// Escaped key names still match.
		{`{"\u0074oken":"x"}`, `{"\u0074oken":"[REDACTED]"}`},
		// Nested secrets inside a secret value: the outer value wins.
		{`{"secret":{"token":"x"}}`, `{"secret":"[REDACTED]"}`},
		// Already redacted: unchanged and not reported.
		{`{"token":"[REDACTED]"}`, ``},
		// Top-level array (a JSON-RPC batch).
		{`[{"token":"a"},{"b":1}]`, `[{"token":"[REDACTED]"},{"b":1}]`},
		// Text rule on lines that are not JSON.
		{`curl -H "Authorization: Bearer eyJhbGciOi.x-y_z~+/=" https://x`, `curl -H "Authorization: Bearer [REDACTED]" https://x`},
		{`bearer   abc and BEARER def`, `bearer   [REDACTED] and BEARER [REDACTED]`},
		{`Bearer`, ``}, {`Bearer `, ``}, {`unbearer abc`, ``},
		// Not valid JSON: only the text rule applies.
		{`{"token":"abc"`, ``},
		// JSON strings mentioning Bearer are not text.
		{`{"msg":"Bearer abc"}`, ``},
	}
	r := Default()
	for _, c := range cases {
		want := c.want
		if want == "" {
			want = c.in
		}
		got, did := r.Line([]byte(c.in))
		if string(got) != want {
			t.Errorf("Line(%s)\n got %s\nwant %s", c.in, got, want)
		}
		if did != (want != c.in) {
			t.Errorf("Line(%s): redacted=%v", c.in, did)
		}
		checkSplice(t, r, []byte(c.in))
	}
}

func TestOptions(t *testing.T) {
	in := []byte(`{"license":"L-1","my-pin":"1234","token":"t"}`)
	got, _ := New(Options{Keys: []string{"license", "MY_PIN"}}).Line(in)
	if want := `{"license":"[REDACTED]","my-pin":"[REDACTED]","token":"[REDACTED]"}`; string(got) != want {
		t.Errorf("added keys: %s", got)
	}
	off := New(Options{Off: true})
	if got, did := off.Line(in); did || !bytes.Equal(got, in) || off.Enabled() {
		t.Errorf("Off redacted: %s", got)
	}
	var nilR *Redactor
	if got, did := nilR.Line(in); did || !bytes.Equal(got, in) {
		t.Errorf("nil Redactor redacted")
	}
}

// TestFastPath: a frame without any candidate text comes back as the same
// slice, unparsed.
func TestFastPath(t *testing.T) {
	r := Default()
	in := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"content":{"text":"hello","type":"text"}}}}`)
	if r.candidate(in) {
		t.Fatal("candidate on a frame without needles")
	}
	got, did := r.Line(in)
	if did || &got[0] != &in[0] {
		t.Error("fast path copied or changed the frame")
	}
	for _, s := range []string{`"TOKEN"`, `"api-key"`, `"A_p_I_kEy"`, "auth", "Env", "bearer", "cookie"} {
		if !r.candidate([]byte(s)) {
			t.Errorf("candidate(%s) = false", s)
		}
	}
	if r.candidate([]byte("_token")) != true || r.candidate([]byte("tok-en")) != true {
		t.Error("separators inside a needle must not hide it")
	}
}

// TestTraffic: real captures redact without breaking any frame, and frames
// of the captures that carry no secrets are unchanged.
func TestTraffic(t *testing.T) {
	files := testpeers.CaptureFiles()
	if len(files) == 0 {
		t.Fatal("no captures in testdata/traffic")
	}
	r := Default()
	slow := Default()
	slow.noFast = true
	for _, f := range files {
		if strings.HasSuffix(f, ".md") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			out, _ := r.Line(line)
			if want, _ := slow.Line(line); !bytes.Equal(out, want) {
				t.Errorf("%s: the fast path skipped a secret in %s", f, line)
			}
			if json.Valid(line) != json.Valid(out) {
				t.Errorf("%s: validity changed: %s", f, line)
			}
			checkSplice(t, r, line)
		}
	}
}

// checkSplice verifies that Line changed nothing but the reported spans,
// each a whole JSON value (JSON lines) or a run of token characters (text),
// and that validity is kept.
func checkSplice(t *testing.T, r *Redactor, in []byte) {
	t.Helper()
	out, spans, isJSON := r.line(in, false, nil)
	if json.Valid(in) {
		// The trusted entry points must agree with the checking one.
		if trusted, _ := r.LineJSON(in); !bytes.Equal(trusted, out) {
			t.Fatalf("LineJSON(%q) = %q, Line gave %q", in, trusted, out)
		}
		var idx jsonscan.Index
		idx.Build(in)
		if trusted, _ := r.LineJSONIndexed(in, &idx); !bytes.Equal(trusted, out) {
			t.Fatalf("LineJSONIndexed(%q) = %q, Line gave %q", in, trusted, out)
		}
	}
	var rebuilt []byte
	pos := 0
	ph := Placeholder
	if isJSON {
		ph = quotedPlaceholder
	}
	for _, s := range spans {
		if s.start < pos || s.end > len(in) || s.start >= s.end {
			t.Fatalf("bad span %v in %q", s, in)
		}
		if isJSON && !json.Valid(in[s.start:s.end]) {
			t.Fatalf("span %q of %q is not a JSON value", in[s.start:s.end], in)
		}
		if !isJSON {
			for _, c := range in[s.start:s.end] {
				if !isTokenChar(c) {
					t.Fatalf("text span %q has a non-token byte", in[s.start:s.end])
				}
			}
		}
		rebuilt = append(append(rebuilt, in[pos:s.start]...), ph...)
		pos = s.end
	}
	rebuilt = append(rebuilt, in[pos:]...)
	if !bytes.Equal(rebuilt, out) {
		t.Fatalf("output %q is not the input %q with its spans replaced", out, in)
	}
	// Redact agrees, and each pointer it gives leads to the value replaced.
	got, at := r.Redact(in, false, nil)
	if !bytes.Equal(got, out) || (len(spans) > 0) != (at != nil) {
		t.Fatalf("Redact(%q) = %q at %q; Line gave %q", in, got, at, out)
	}
	if isJSON && len(at) != len(spans) {
		t.Fatalf("Redact(%q): %d pointers for %d values", in, len(at), len(spans))
	}
	// (encoding/json turns bad UTF-8 in keys into U+FFFD, and keeps the
	// last of duplicate keys: a pointer names either.)
	if isJSON && utf8.Valid(in) && !dupKeys(in) {
		var doc any
		if err := json.Unmarshal(in, &doc); err != nil {
			t.Fatal(err)
		}
		for i, p := range at {
			var want any
			if err := json.Unmarshal(in[spans[i].start:spans[i].end], &want); err != nil {
				t.Fatal(err)
			}
			if v, ok := resolve(doc, p); !ok || !reflect.DeepEqual(v, want) {
				t.Fatalf("Redact(%q): pointer %q leads to %v, the value replaced was %v", in, p, v, want)
			}
		}
	}
	if json.Valid(in) != json.Valid(out) {
		t.Fatalf("validity changed: %q -> %q", in, out)
	}
}

// dupKeys reports whether an object of the JSON text b has a key twice.
func dupKeys(b []byte) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		keys map[string]bool
		obj  bool
		key  bool // the next string token is a key
	}
	var stack []*level
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.key {
			if top.keys[s] {
				return true
			}
			top.keys[s], top.key = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{keys: map[string]bool{}, obj: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].key = true // a value ended: a key comes next
		}
	}
}

// resolve follows the JSON pointer p in the decoded document doc.
func resolve(doc any, p string) (any, bool) {
	segs, ok := parsePointer(p)
	if !ok {
		return nil, false
	}
	for _, s := range segs {
		switch x := doc.(type) {
		case map[string]any:
			if doc, ok = x[s]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			doc = x[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{
		`{"token":"abc"}`, `{"env":{"A":"b"}}`, `{"env":[{"name":"A","value":"b"}]}`,
		`{"method":"authenticate","params":{"methodId":"x","k":"v"}}`, `Bearer abc`,
		`{"headers":[{"name":"Cookie","value":"c"}]}`, `[{"apiKey":1e5}]`, `{"a":"Bearer x"}`, `not json`, ``,
		`{"method":"$/progress","params":{"token":"t","value":{"token":1}}}`, `{"params":{"token":"t"},"method":"x"}`,
	} {
		f.Add([]byte(s))
	}
	r := New(Options{Keys: []string{"pin"}, Public: lspProgress})
	slow := New(Options{Keys: []string{"pin"}, Public: lspProgress})
	slow.noFast = true
	f.Fuzz(func(t *testing.T, in []byte) {
		checkSplice(t, r, in)
		// The fast path never lets a secret through: without it the result
		// is the same.
		got, _ := r.Line(in)
		want, _ := slow.Line(in)
		if !bytes.Equal(got, want) {
			t.Fatalf("fast path changed the result for %q:\n got %q\nwant %q", in, got, want)
		}
	})
}

func BenchmarkLine(b *testing.B) {
	var files []string
	for _, c := range testpeers.Captures() {
		files = append(files, c.Out)
	}
	var lines [][]byte
	var size int64
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, l := range bytes.Split(data, []byte("\n")) {
			lines = append(lines, l)
			size += int64(len(l))
		}
	}
	if len(lines) == 0 {
		b.Fatal("no captures in testdata/traffic")
	}
	r := Default()
	b.SetBytes(size)
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	n := 0
	for b.Loop() {
		for _, l := range lines {
			r.Line(l)
		}
		n++
	}
	// MB per CPU second: the shared machine's load makes wall-clock MB/s swing.
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := float64(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / 1e9
	if cpu > 0 {
		b.ReportMetric(float64(size)*float64(n)/cpu/1e6, "cpu-MB/s")
	}
}

// BenchmarkLineNoCandidate: frames without any candidate key (most agent
// traffic) take the fast path.
func BenchmarkLineNoCandidate(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_deb13a2950f6717b1405b27e","update":{"content":{"text":"Hello from the agent: this is a streamed chunk of the answer","type":"text"},"sessionUpdate":"agent_message_chunk"}}}`)
	r := Default()
	b.SetBytes(int64(len(line)))
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	n := 0
	for b.Loop() {
		r.Line(line)
		n++
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := float64(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / 1e9
	if cpu > 0 {
		b.ReportMetric(float64(len(line))*float64(n)/cpu/1e6, "cpu-MB/s")
	}
}

// TestLineJSONWalksLikeLine: LineJSON walks every valid frame (no
// candidate scan); its answer is Line's on keys that take each of the
// walker's key paths (short, escaped, longer than its buffer) and on the
// rules whose decision comes after the values they hide (authenticate).
func TestLineJSONWalksLikeLine(t *testing.T) {
	long := strings.Repeat("Long_Key-", 9) // 81 bytes, normalizes to 63
	r := New(Options{Keys: []string{long, "pin"}})
	for _, in := range []string{
		`{"` + long + `":"s1","x":1}`,
		`{"` + long + `x":"kept"}`,
		`{"` + strings.Repeat("a", 70) + `":{"token":"s"}}`,
		`{"\u0074oken":"s","to\/ken":"kept","PIN":"s"}`,
		`{"params":{"methodId":"m","key":"s","n":{"a":[1,2]}},"method":"authenticate","id":1}`,
		`{"method":"authenticate","params":{"methodId":"m","key":"s"},"params":{"x":"s2"}}`,
		`{"method":"authenticat","params":{"methodId":"m","key":"kept"}}`,
		`{"headers":[{"value":"s","name":"X-Api_KEY"},{"name":"Accept","value":"kept"}]}`,
		`{"env":{"A":"s","B":{"c":"s"}},"ENV":["K=s",{"name":"N","value":"s"}]}`,
		`{"text":"token secret password env auth bearer abc","nested":[{"type":"text"}]}`,
		`[{"apiKey":1e5},{"Set-Cookie":"s"},"token"]`,
		// long strings, which an index skips by lookup
		`{"text":"` + strings.Repeat(`token \"x\" `, 8) + `","token":"` + strings.Repeat("s", 60) + `","env":{"A":"` + strings.Repeat("e", 60) + `"},"name":"` + strings.Repeat("n", 60) + `"}`,
	} {
		if !json.Valid([]byte(in)) {
			t.Fatalf("test frame %s is not JSON", in)
		}
		want, wantOK := r.Line([]byte(in))
		got, gotOK := r.LineJSON([]byte(in))
		if !bytes.Equal(got, want) || gotOK != wantOK {
			t.Errorf("LineJSON(%s) = %s %v, Line %s %v", in, got, gotOK, want, wantOK)
		}
		checkSplice(t, r, []byte(in))
	}
}

// TestLongCustomKey: keys of 64 bytes and more skip the shape filter.
func TestLongCustomKey(t *testing.T) {
	k := strings.Repeat("k", 70)
	r := New(Options{Keys: []string{k}})
	got, did := r.LineJSON([]byte(`{"` + k + `":"s","` + k[:69] + `":"kept"}`))
	if want := `{"` + k + `":"[REDACTED]","` + k[:69] + `":"kept"}`; !did || string(got) != want {
		t.Errorf("got %s %v, want %s", got, did, want)
	}
	if Default().isKey([]byte(k)) {
		t.Error("a long key is secret by default")
	}
}

// lspProgress are LSP's not-secret fields as protocol/lsp.go declares them
// (the redact package cannot import protocol: protocol imports it).
var lspProgress = []Field{
	{Method: "$/progress", Pointer: "/params/token"},
	{Method: "window/workDoneProgress/create", Pointer: "/params/token"},
	{Pointer: "/params/workDoneToken"},
}

// TestPublicFields: a progress token is kept under its protocol's method,
// whatever the member order; the same key under another method, deeper, or
// named by the user with --redact is still a secret; Redact says where it
// replaced what.
func TestPublicFields(t *testing.T) {
	lsp := Default().WithPublic(lspProgress)
	cases := []struct{ in, want, at string }{
		{`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"a1b2","value":{"kind":"end"}}}`, ``, ``},
		{`{"params":{"token":7,"value":{}},"jsonrpc":"2.0","method":"$/progress"}`, ``, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"window/workDoneProgress/create","params":{"token":"x-1"}}`, ``, ``},
		// Another method's token is a secret.
		{`{"jsonrpc":"2.0","id":2,"method":"copilot/signIn","params":{"token":"ghp_1"}}`, `{"jsonrpc":"2.0","id":2,"method":"copilot/signIn","params":{"token":"[REDACTED]"}}`, `/params/token`},
		// So is a token deeper in a progress frame, and one in a response.
		{`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"p","value":{"token":"s"}}}`, `{"jsonrpc":"2.0","method":"$/progress","params":{"token":"p","value":{"token":"[REDACTED]"}}}`, `/params/value/token`},
		{`{"jsonrpc":"2.0","id":1,"result":{"token":"s"}}`, `{"jsonrpc":"2.0","id":1,"result":{"token":"[REDACTED]"}}`, `/result/token`},
		// Pointers of replaced values: arrays by index, ~ and / escaped.
		{`{"a":[{"x":1},{"env":{"K":"v"}}],"b/c~":{"password":"p"}}`, `{"a":[{"x":1},{"env":{"K":"[REDACTED]"}}],"b/c~":{"password":"[REDACTED]"}}`, `/a/1/env/K /b~1c~0/password`},
		{`Authorization: Bearer abc`, `Authorization: Bearer [REDACTED]`, ``},
	}
	for _, c := range cases {
		want := c.want
		if want == "" {
			want = c.in
		}
		got, at := lsp.Redact([]byte(c.in), false, nil)
		if string(got) != want {
			t.Errorf("Redact(%s)\n got %s\nwant %s", c.in, got, want)
		}
		if strings.Join(at, " ") != c.at || (want != c.in) != (at != nil) {
			t.Errorf("Redact(%s) replaced at %q, want %q", c.in, at, c.at)
		}
		if g, _ := lsp.LineJSON([]byte(c.in)); json.Valid([]byte(c.in)) && string(g) != want {
			t.Errorf("LineJSON(%s) = %s, Redact %s", c.in, g, got)
		}
		checkSplice(t, lsp, []byte(c.in))
	}
	// Without the protocol's fields (before it is known), or with the key
	// added by the user, the progress token is redacted.
	progress := []byte(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"a1b2","value":{}}}`)
	for name, r := range map[string]*Redactor{
		"default":        Default(),
		"--redact token": New(Options{Keys: []string{"Token"}, Public: lspProgress}),
	} {
		if _, did := r.Line(progress); !did {
			t.Errorf("%s: the progress token was kept", name)
		}
	}
	if _, did := New(Options{Public: lspProgress}).Line(progress); did {
		t.Errorf("Options.Public: the progress token was redacted")
	}
}

// BenchmarkRedactManySecrets: a 1 MB frame with 40,000 secret values (an
// env object) is redacted and each value's pointer found in one walk of
// the frame, not one per value (which took minutes).
func BenchmarkRedactManySecrets(b *testing.B) {
	var f bytes.Buffer
	f.WriteString(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"env":{`)
	for i := 0; i < 40000; i++ {
		if i > 0 {
			f.WriteByte(',')
		}
		fmt.Fprintf(&f, `"K%d":"v%d"`, i, i)
	}
	f.WriteString(`}}}`)
	line := f.Bytes()
	r := Default()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, at := r.Redact(line, true, nil); len(at) != 40000 {
			b.Fatalf("%d pointers", len(at))
		}
	}
}

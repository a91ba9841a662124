package replay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

func TestIgnorePatterns(t *testing.T) {
	set, err := compileIgnores([]string{"/params/cwd", "/params/**/timestamp", "/result/items/*/id", "/a~1b/c~0d"})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := decodeJSON([]byte(`{"id":7,"params":{"cwd":"/x","keep":1,"deep":{"timestamp":1,"more":[{"timestamp":2,"k":3}]},"timestamp":0},
		"result":{"items":[{"id":1,"n":"a"},{"id":2,"n":"b"}]},"a/b":{"c~d":1,"e":2}}`))
	got := jsonOf(set.normalize(v, "id"))
	want := `{"a/b":{"e":2},"params":{"deep":{"more":[{"k":3}]},"keep":1},"result":{"items":[{"n":"a"},{"n":"b"}]}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// normalize never modifies its input.
	if !strings.Contains(jsonOf(v), `"cwd":"/x"`) {
		t.Fatal("input modified")
	}
	for _, bad := range []string{"", "params/cwd"} {
		if _, err := compileIgnores([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pat, path string
		want      bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b", "/a/b/c", false},
		{"/a/*", "/a/x", true},
		{"/a/*", "/a", false},
		{"/**/t", "/t", true},
		{"/**/t", "/x/y/t", true},
		{"/a/**", "/a", true},
		{"/a/**/b/*", "/a/q/b/z", true},
		{"/a/**/b/*", "/a/q/b", false},
	} {
		p := strings.Split(c.pat[1:], "/")
		q := strings.Split(c.path[1:], "/")
		if got := globMatch(p, q); got != c.want {
			t.Errorf("%s ~ %s = %v", c.pat, c.path, got)
		}
	}
}

func TestEqualNumbersAndOrder(t *testing.T) {
	a, _ := decodeJSON([]byte(`{"x":1,"y":[1.0,2e0],"z":{"b":true,"a":null}}`))
	b, _ := decodeJSON([]byte(`{"z":{"a":null,"b":true},"y":[1,2],"x":1.00}`))
	c, _ := decodeJSON([]byte(`{"z":{"a":null,"b":true},"y":[2,1],"x":1}`))
	if !Equal(a, b) || Equal(a, c) {
		t.Fatal("Equal")
	}
}

func TestBindingsAndSubstitute(t *testing.T) {
	set, _ := compileIgnores([]string{"/result/sessionId", "/params/_meta"})
	rec, _ := decodeJSON([]byte(`{"result":{"sessionId":"sess_rec","other":"sess_x"}}`))
	live, _ := decodeJSON([]byte(`{"result":{"sessionId":"sess_live","other":"sess_y"}}`))
	binds := map[string]string{}
	set.bindings(rec, live, binds)
	if len(binds) != 1 || binds["sess_rec"] != "sess_live" {
		t.Fatalf("%v", binds) // "other" is not ignored: no binding
	}
	rec, _ = decodeJSON([]byte(`{"params":{"_meta":{"token":"tok-rec","n":1}}}`))
	live, _ = decodeJSON([]byte(`{"params":{"_meta":{"token":"tok-live","n":2}}}`))
	set.bindings(rec, live, binds)
	if binds["tok-rec"] != "tok-live" {
		t.Fatalf("%v", binds)
	}
	out := substitute([]byte(`{"a":"sess_rec","b":"xsess_recx","c":["sess_rec"]}`), binds, []string{"sess_rec", "tok-rec"})
	if string(out) != `{"a":"sess_live","b":"xsess_recx","c":["sess_live"]}` {
		t.Fatalf("%s", out)
	}
}

func TestReplaceMember(t *testing.T) {
	for _, c := range []struct{ in, key, val, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "id", `"x"`, `{"jsonrpc":"2.0","id":"x","result":{}}`},
		{`{"id":1}`, "id", `22`, `{"id":22}`},
		{` { "a" : {"id":9} , "id" : 1 } `, "id", `2`, ` { "a" : {"id":9} , "id" : 2 } `},
		{`{"a":"\"id\":1","id":3}`, "id", `4`, `{"a":"\"id\":1","id":4}`},
		{`{"a":1,"id":3}`, "id", "", `{"a":1}`},
		{`{"id":3,"a":1}`, "id", "", `{"a":1}`},
		{`{"id":3}`, "id", "", `{}`},
		{`{"a":1}`, "id", `5`, `{"id":5,"a":1}`},
		{`{}`, "id", `5`, `{"id":5}`},
		{`[1]`, "id", `5`, `[1]`},
	} {
		var val []byte
		if c.val != "" {
			val = []byte(c.val)
		}
		got := string(replaceMember([]byte(c.in), c.key, val))
		if got != c.want {
			t.Errorf("replaceMember(%s, %s, %s) = %s, want %s", c.in, c.key, c.val, got, c.want)
		}
	}
}

// FuzzReplaceMember: on any valid JSON object, replacing "id" gives valid
// JSON whose "id" is the new value and whose other members are unchanged.
func FuzzReplaceMember(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"x"}`, `{"a":[1,{"id":2}],"id":"s"}`, `{"id":null}`, `{"b":"}{\"id\":"}`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var before map[string]any
		if json.Unmarshal([]byte(s), &before) != nil {
			return
		}
		if dup := strings.Count(s, `"id"`); dup > 1 {
			// Duplicate keys are legal JSON but ambiguous; only check validity.
			out := replaceMember([]byte(s), "id", []byte(`"new"`))
			if !json.Valid(out) {
				t.Fatalf("invalid output %q from %q", out, s)
			}
			return
		}
		out := replaceMember([]byte(s), "id", []byte(`"new"`))
		var after map[string]any
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("invalid output %q from %q: %v", out, s, err)
		}
		if after["id"] != "new" || len(after) != len(before)+btoi(before["id"] == nil && !hasKey(before, "id")) {
			t.Fatalf("%q -> %q", s, out)
		}
		delete(after, "id")
		delete(before, "id")
		if jsonOf(after) != jsonOf(before) {
			t.Fatalf("other members changed: %q -> %q", s, out)
		}
	})
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestChildNotificationMismatchDoesNotStall(t *testing.T) {
	b := newBuilder("acp")
	b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","method":"_note/hello","params":{"n":1}}`))
	b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","method":"_note/ack","params":{}}`))
	p := startPeer(t, b.end(), WithSpeed(0))
	p.send(`{"jsonrpc":"2.0","method":"_note/hello","params":{"n":2}}`)
	if r := p.recv(); r["method"] != "_note/ack" {
		t.Fatalf("%v", r)
	}
	p.c.Stdin.Close()
	res, _ := p.c.Wait()
	if len(res.Divergences) != 1 || res.Divergences[0].Kind != Mismatch || res.Divergences[0].Diff[0].Path != "/params/n" {
		t.Fatalf("%v", res.Divergences)
	}
}

func TestWithIgnoreAndWithMatcher(t *testing.T) {
	rec := func() []cassette.Record {
		b := newBuilder("acp")
		b.frame(cassette.DirIn, []byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`))
		b.frame(cassette.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`))
		return b.end()
	}
	live := `{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"bye"}]}}`
	for name, opts := range map[string][]Option{
		"ignore":  {WithIgnore("/params/prompt/*/text")},
		"matcher": {WithMatcher(func(l, r *Frame) bool { return l.Kind == r.Kind && l.Method == r.Method })},
	} {
		t.Run(name, func(t *testing.T) {
			p := startPeer(t, rec(), append(opts, WithSpeed(0), WithStrict(true))...)
			p.send(live)
			if r := p.recv(); jsonOf(r["id"]) != "9" || r["result"] == nil {
				t.Fatalf("%v", r)
			}
			p.c.Stdin.Close()
			if _, err := p.c.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Without either, the same frame is a miss.
	p := startPeer(t, rec(), WithSpeed(0))
	p.send(live)
	if r := p.recv(); r["error"] == nil {
		t.Fatalf("%v", r)
	}
}

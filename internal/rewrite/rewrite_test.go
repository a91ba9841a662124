package rewrite

import (
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
)

func apply(t *testing.T, rules []string, d cassette.Dir, payload, kind, method, reqMethod string) (string, *Change) {
	t.Helper()
	var rs Rules
	for _, s := range rules {
		r, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	rec := filterexpr.Frame(d, []byte(payload), kind, method, "")
	out, ch := rs.Apply(&rec, filterexpr.MatchInfo{Method: reqMethod})
	return string(out), ch
}

// TestApply: each action, members kept in order and byte for byte, rules
// chained, the change recorded with the original.
func TestApply(t *testing.T) {
	resp := `{"jsonrpc":"2.0","id":4,"result":{"contents":{"kind":"markdown","value":"old"},"range":{"start":1}}}`
	for _, c := range []struct {
		rules []string
		want  string
	}{
		{[]string{`dir:out & m=textDocument/hover => set result.contents.value "new text"`},
			`{"jsonrpc":"2.0","id":4,"result":{"contents":{"kind":"markdown","value":"new text"},"range":{"start":1}}}`},
		{[]string{`dir:out => set /result/extra/deep 42`},
			`{"jsonrpc":"2.0","id":4,"result":{"contents":{"kind":"markdown","value":"old"},"range":{"start":1},"extra":{"deep":42}}}`},
		{[]string{`dir:out => set result.note not json, a string`},
			`{"jsonrpc":"2.0","id":4,"result":{"contents":{"kind":"markdown","value":"old"},"range":{"start":1},"note":"not json, a string"}}`},
		{[]string{`dir:out => delete result.range`},
			`{"jsonrpc":"2.0","id":4,"result":{"contents":{"kind":"markdown","value":"old"}}}`},
		{[]string{`kind:response => error -32603 the server fell over`},
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"the server fell over"}}`},
		{[]string{`dir:out => delete result.range`, `dir:out => set result.contents.kind "plaintext"`},
			`{"jsonrpc":"2.0","id":4,"result":{"contents":{"kind":"plaintext","value":"old"}}}`},
	} {
		got, ch := apply(t, c.rules, cassette.DirOut, resp, "response", "", "textDocument/hover")
		if got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.rules, got, c.want)
		}
		if ch == nil || string(ch.Original) != resp || len(ch.Rules) != len(c.rules) {
			t.Errorf("%v: change %+v", c.rules, ch)
		}
	}
	// Not selected, or not applicable: the frame unchanged, no change.
	for _, rules := range [][]string{{`dir:in => delete result`}, {`m=initialize => delete result`}, {`dir:out => delete result.nope`}} {
		if got, ch := apply(t, rules, cassette.DirOut, resp, "response", "", "textDocument/hover"); got != resp || ch != nil {
			t.Errorf("%v: %s %+v", rules, got, ch)
		}
	}
	// Arrays by index.
	list := `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`
	if got, _ := apply(t, []string{`m=tools/list => delete result.tools.0`}, cassette.DirOut, list, "response", "", "tools/list"); got != `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b"}]}}` {
		t.Errorf("array delete: %s", got)
	}
}

// TestParseErrors: a bad rule is one clear error.
func TestParseErrors(t *testing.T) {
	for rule, want := range map[string]string{
		"m:x set a 1":            "EXPR => ACTION",
		"slow>1s => delete a":    "cannot be a breakpoint",
		"m:x =>":                 "no action",
		"m:x => frob a":          "unknown action",
		"m:x => set a":           "needs a value",
		"m:x => delete":          "needs a PATH",
		"m:x => delete a b":      "only a PATH",
		"m:x => error oops":      "not an integer",
		"m:x => set a..b 1":      "empty step",
		"kind:bogus => delete a": "kind:",
	} {
		if _, err := Parse(rule); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", rule, err, want)
		}
	}
}

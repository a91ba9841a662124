package deeptap

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func testOptions() *Options {
	return &Options{Self: "/opt/rpctap/bin/rpctap", Dir: "/d/tapes", Cassette: "P.cassette",
		Flags: []string{"--redact", "k"},
		Wrapped: func(command string, args []string) bool {
			return strings.HasSuffix(command, "rpctap") && len(args) > 0 && args[0] == "record"
		}}
}

// prefix is the record command line testOptions gives an entry of request
// id and method method, before the original command.
func prefix(id, method, name string) string {
	return `"record","--dir","/d/tapes","--parent-cassette","P.cassette","--parent-request",` +
		strconvQuote(id) + `,"--parent-method","` + method + `","--parent-server",` + strconvQuote(name) +
		`,"--redact","k","--",`
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestRewrite(t *testing.T) {
	const self = `"/opt/rpctap/bin/rpctap"`
	cases := []struct {
		name, in, want string // want "" : not applicable, frame unchanged
		servers        []string
	}{
		{
			name:    "session/new, one stdio entry, name env and _meta kept",
			in:      `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"files","command":"mcp-files","args":["--root","/src"],"env":[{"name":"T","value":"x"}],"_meta":{"a":1}}]}}`,
			want:    `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"files","command":` + self + `,"args":[` + prefix("2", "session/new", "files") + `"mcp-files","--root","/src"],"env":[{"name":"T","value":"x"}],"_meta":{"a":1}}]}}`,
			servers: []string{"files"},
		},
		{
			name:    "session/load, string id, args before command (the Go SDK's order), whitespace and escapes kept",
			in:      "{ \"method\" : \"session/load\", \"id\" : \"a\\\"b\", \"params\" : { \"sessionId\":\"s\", \"mcpServers\" : [ { \"args\" : [ \"-v\" , \"\\u0041\" ] , \"command\" : \"srv\\/x\" , \"name\":\"n\", \"env\":[] } ] } , \"jsonrpc\":\"2.0\" }",
			want:    "{ \"method\" : \"session/load\", \"id\" : \"a\\\"b\", \"params\" : { \"sessionId\":\"s\", \"mcpServers\" : [ { \"args\" : [" + prefix(`"a\"b"`, "session/load", "n") + "\"srv\\/x\",\"-v\",\"\\u0041\"] , \"command\" : " + self + " , \"name\":\"n\", \"env\":[] } ] } , \"jsonrpc\":\"2.0\" }",
			servers: []string{"n"},
		},
		{
			name:    "two stdio entries and http/sse/acp ones left alone",
			in:      `{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/","mcpServers":[{"type":"http","name":"h","url":"https://x","headers":[{"name":"Authorization","value":"t"}]},{"name":"a","command":"A","args":[],"env":[]},{"type":"sse","name":"s","url":"u","headers":[]},{"type":"acp","name":"c","id":"i"},{"name":"b","command":"B","args":["1"],"env":[]}]}}`,
			want:    `{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/","mcpServers":[{"type":"http","name":"h","url":"https://x","headers":[{"name":"Authorization","value":"t"}]},{"name":"a","command":` + self + `,"args":[` + prefix("7", "session/new", "a") + `"A"],"env":[]},{"type":"sse","name":"s","url":"u","headers":[]},{"type":"acp","name":"c","id":"i"},{"name":"b","command":` + self + `,"args":[` + prefix("7", "session/new", "b") + `"B","1"],"env":[]}]}}`,
			servers: []string{"a", "b"},
		},
		{
			name:    "type stdio spelled out; no args member gets one after command",
			in:      `{"jsonrpc":"2.0","id":1,"method":"session/fork","params":{"sessionId":"s","cwd":"/","mcpServers":[{"type":"stdio","name":"x","command":"X","env":[]}]}}`,
			want:    `{"jsonrpc":"2.0","id":1,"method":"session/fork","params":{"sessionId":"s","cwd":"/","mcpServers":[{"type":"stdio","name":"x","command":` + self + `,"args":[` + prefix("1", "session/fork", "x") + `"X"],"env":[]}]}}`,
			servers: []string{"x"},
		},
		{
			name:    "session/resume",
			in:      `{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"s","cwd":"/","mcpServers":[{"name":"r","command":"R","args":[],"env":[]}]}}`,
			want:    `{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"s","cwd":"/","mcpServers":[{"name":"r","command":` + self + `,"args":[` + prefix("3", "session/resume", "r") + `"R"],"env":[]}]}}`,
			servers: []string{"r"},
		},
		{
			name:    "a key spelled with escapes (no plain \"mcpServers\" in the frame)",
			in:      `{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"/","mcp\u0053ervers":[{"name":"e","command":"E","args":[],"env":[]}]}}`,
			want:    `{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"/","mcp\u0053ervers":[{"name":"e","command":` + self + `,"args":[` + prefix("9", "session/new", "e") + `"E"],"env":[]}]}}`,
			servers: []string{"e"},
		},
		{
			name: "an entry wrapped already is not wrapped twice",
			in:   `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"w","command":"/usr/bin/rpctap","args":["record","--dir","/x","--","srv"],"env":[]}]}}`,
		},
		{name: "mcpServers not an array", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":{"name":"a","command":"A"}}}`},
		{name: "entry without command", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"a","args":[],"env":[]}]}}`},
		{name: "command not a string", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"a","command":["A"],"args":[],"env":[]}]}}`},
		{name: "empty command", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"a","command":"","args":[],"env":[]}]}}`},
		{name: "args not strings", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"a","command":"A","args":[1],"env":[]}]}}`},
		{name: "args not an array", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"a","command":"A","args":"x","env":[]}]}}`},
		{name: "an entry that is not an object", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":["A"]}}`},
		{name: "a notification (no id)", in: `{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"a","command":"A","args":[],"env":[]}]}}`},
		{name: "a response", in: `{"jsonrpc":"2.0","id":2,"result":{"mcpServers":[{"name":"a","command":"A","args":[],"env":[]}]}}`},
		{name: "another method", in: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"mcpServers":[{"name":"a","command":"A","args":[],"env":[]}]}}`},
		{name: "no params", in: `{"jsonrpc":"2.0","id":2,"method":"session/new"}`},
		{name: "params not an object", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":[1]}`},
		{name: "not JSON", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{`},
		{name: "not an object", in: `[1,2]`},
		{name: "empty mcpServers", in: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			out, servers, err := o.Rewrite([]byte(c.in))
			if c.want == "" {
				if !errors.Is(err, ErrNotApplicable) || string(out) != c.in || servers != nil {
					t.Fatalf("want not applicable and the frame unchanged; got err %v, %d servers, %s", err, len(servers), out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Fatalf("got\n%s\nwant\n%s", out, c.want)
			}
			if !json.Valid(out) {
				t.Fatalf("output is not JSON: %s", out)
			}
			var names []string
			for _, s := range servers {
				names = append(names, s.Name)
			}
			if !reflect.DeepEqual(names, c.servers) {
				t.Errorf("servers %v, want %v", names, c.servers)
			}
			// Rewriting the output again changes nothing: every entry now
			// runs under rpctap record.
			if again, _, err := o.Rewrite(out); !errors.Is(err, ErrNotApplicable) || !bytes.Equal(again, out) {
				t.Errorf("a second rewrite changed the frame (err %v):\n%s", err, again)
			}
		})
	}
}

// TestRewriteDecodes checks the rewritten entries as an agent decodes them:
// the command is rpctap, and the args end with the original command line.
func TestRewriteDecodes(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":"x\u0031","method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"n\"q","command":"C\\D","args":["a b","\u00e9"],"env":[]}]}}`
	out, servers, err := testOptions().Rewrite([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Params struct {
			McpServers []struct {
				Name, Command string
				Args          []string
			}
		}
	}
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	e := f.Params.McpServers[0]
	want := []string{"record", "--dir", "/d/tapes", "--parent-cassette", "P.cassette", "--parent-request", `"x\u0031"`,
		"--parent-method", "session/new", "--parent-server", `n"q`, "--redact", "k", "--", `C\D`, "a b", "é"}
	if e.Command != "/opt/rpctap/bin/rpctap" || !reflect.DeepEqual(e.Args, want) || e.Name != `n"q` {
		t.Fatalf("decoded %+v\nwant args %q", e, want)
	}
	if len(servers) != 1 || servers[0].Command != `C\D` || !reflect.DeepEqual(servers[0].Args, []string{"a b", "é"}) {
		t.Errorf("servers %+v", servers)
	}
}

// FuzzRewrite: any input gives either ErrNotApplicable and the input back,
// or valid JSON that differs only inside mcpServers, whose entries now all
// run under rpctap record, and that a second rewrite leaves alone.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"a","command":"A","args":["x"],"env":[]}]}}`))
	f.Add([]byte(`{"id":1,"method":"session/load","params":{"mcpServers":[{"args":[],"command":"B","name":"b"},{"type":"http","name":"h","url":"u","headers":[]}]}}`))
	f.Add([]byte(`{"id":1,"method":"session/new","params":{"mcpServers":[{"command":"C"}]}}`))
	f.Add([]byte(` { "id" : null , "method" : "session/fork" , "params" : { "mcpServers" : [ { "command" : "\u0043" , "args" : [ ] } ] } } `))
	f.Fuzz(func(t *testing.T, in []byte) {
		o := testOptions()
		out, servers, err := o.Rewrite(in)
		if err != nil {
			if !errors.Is(err, ErrNotApplicable) || !bytes.Equal(out, in) || servers != nil {
				t.Fatalf("err %v with output %q, %d servers", err, out, len(servers))
			}
			return
		}
		if len(servers) == 0 || !json.Valid(out) {
			t.Fatalf("applied with %d servers, output valid %v: %q", len(servers), json.Valid(out), out)
		}
		var a, b map[string]any
		if json.Unmarshal(in, &a) != nil || json.Unmarshal(out, &b) != nil {
			t.Fatalf("not objects: %q -> %q", in, out)
		}
		pa, _ := a["params"].(map[string]any)
		pb, _ := b["params"].(map[string]any)
		delete(pa, "mcpServers")
		delete(pb, "mcpServers")
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("changed outside mcpServers:\n%q\n%q", in, out)
		}
		again, _, err := o.Rewrite(out)
		if !errors.Is(err, ErrNotApplicable) || !bytes.Equal(again, out) {
			t.Fatalf("second rewrite applied (err %v): %q -> %q", err, out, again)
		}
	})
}

// TestUnwrap: Unwrap gives back the entries Rewrite wrapped, also after
// another change to the frame, and leaves everything else alone.
func TestUnwrap(t *testing.T) {
	o := testOptions()
	for _, in := range []string{
		// byte for byte when args was there and compact
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"files","command":"mcp-\u0066iles","args":["--root","/src"],"env":[{"name":"T","value":"x"}]},{"type":"http","name":"h","url":"u","headers":[]},{"name":"e","command":"E","args":[],"env":[]}]}}`,
		// a server named "--" and an id "--": the flags' values are skipped
		`{"jsonrpc":"2.0","id":"--","method":"session/load","params":{"sessionId":"s","cwd":"/","mcpServers":[{"name":"--","command":"--","args":["--","x"],"env":[]}]}}`,
	} {
		w, _, err := o.Rewrite([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		// a user's rule changed cwd as well
		w = bytes.Replace(w, []byte(`"cwd":"/`), []byte(`"cwd":"/changed/`), 1)
		want := strings.Replace(in, `"cwd":"/`, `"cwd":"/changed/`, 1)
		got, ok := Unwrap(w)
		if !ok || string(got) != want {
			t.Errorf("Unwrap(%s)\n = %s, %v\nwant %s", w, got, ok, want)
		}
		if again, ok := Unwrap(got); ok || string(again) != want {
			t.Errorf("Unwrap of an unwrapped frame: %s, %v", again, ok)
		}
	}
	// no args member: Rewrite added one, Unwrap leaves it (empty)
	w, _, _ := o.Rewrite([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"x","command":"X","env":[]}]}}`))
	if got, ok := Unwrap(w); !ok || string(got) != `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"x","command":"X","args":[],"env":[]}]}}` {
		t.Errorf("no args: %s, %v", got, ok)
	}
	for _, f := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"w","command":"/bin/rpctap","args":["record","--dir","/d","--","srv"],"env":[]}]}}`, // wrapped by rpctap wrap, not linked
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"x":["record","--parent-cassette","p","--","y"]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"x","command":"c","args":["record","--parent-cassette","p","--"],"env":[]}]}}`, // nothing after --
		`not json --parent-cassette`,
	} {
		if got, ok := Unwrap([]byte(f)); ok || string(got) != f {
			t.Errorf("Unwrap(%s) = %s, %v; want it unchanged", f, got, ok)
		}
	}
}

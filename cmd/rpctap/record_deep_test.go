package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/tailscale/hujson"
)

// deepCassette is one cassette of a deep recording, read whole.
type deepCassette struct {
	name string
	h    cassette.Header
	recs []cassette.Record
}

func readDeepCassette(t *testing.T, path string) deepCassette {
	t.Helper()
	r, err := cassette.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := deepCassette{name: filepath.Base(path), h: r.Header()}
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		c.recs = append(c.recs, *rec)
	}
	return c
}

// frames are the payloads of c's frames of direction d, in order.
func (c deepCassette) frames(d cassette.Dir) []string {
	var out []string
	for i := range c.recs {
		if c.recs[i].K == cassette.KindFrame && c.recs[i].D == d {
			out = append(out, string(c.recs[i].Payload()))
		}
	}
	return out
}

// TestRecordDeep runs the ACP Go SDK client of internal/testpeers, which
// hands its agent two stdio MCP servers (the MCP Go SDK's everything
// example), against `rpctap record --deep` in front of the ACP Go SDK agent
// that starts them with the MCP Go SDK's client and calls their greet tool
// in its turn. It checks: what the client saw is what it sees without
// rpctap; the directory holds one ACP cassette with deep and the rewrite
// marks, and one MCP cassette per server started, each naming the ACP
// cassette and the request that started it; check finds no error and no
// warning in any of them; every frame but the rewritten requests is the
// same as in a plain recording of the same session; the env secret is in
// no cassette.
func TestRecordDeep(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	client := testpeers.Tool(t, "deepclient")
	agent := testpeers.Tool(t, "deepagent")
	server := testpeers.Tool(t, "mcpserver")
	self, err := filepath.EvalSymlinks(rp)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-value"
	for _, c := range []struct {
		name  string
		agent []string
		load  bool
		// the requests that start servers: id and method, one per server
		links []string
	}{
		{"servers started before session/new's answer", []string{agent}, false,
			[]string{"2 session/new mcp-1", "2 session/new mcp-2"}},
		{"servers started at the first prompt, then session/load", []string{agent, "-lazy"}, true,
			[]string{"2 session/new mcp-1", "2 session/new mcp-2", "4 session/load mcp-1", "4 session/load mcp-2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			clientArgs := []string{client, "-server", server, "-n", "2", "-secret", secret}
			if c.load {
				clientArgs = append(clientArgs, "-load")
			}
			clientArgs = append(clientArgs, "--")

			direct := run(t, work, "", append(clientArgs, c.agent...)...)
			if direct.code != 0 || !strings.Contains(direct.stdout, "tool_call_update call_2 completed Hi rpctap") {
				t.Fatalf("without rpctap: exit %d\n%s\n%s", direct.code, direct.stdout, direct.stderr)
			}
			plainCas := filepath.Join(work, "plain.cassette")
			plain := run(t, work, "", append(append(clientArgs, rp, "record", "-o", plainCas, "--"), c.agent...)...)
			dir := filepath.Join(work, "tapes")
			deep := run(t, work, "", append(append(clientArgs, rp, "record", "--deep", "--dir", dir, "--"), c.agent...)...)
			if deep.code != 0 || deep.stdout != direct.stdout || plain.stdout != direct.stdout {
				t.Fatalf("the client saw something else under record --deep (exit %d):\n%s\nwithout rpctap:\n%s\nstderr:\n%s",
					deep.code, deep.stdout, direct.stdout, deep.stderr)
			}
			testpeers.WaitFinished(t, rp, plainCas, 30e9)

			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var parent deepCassette
			var linked []deepCassette
			for _, e := range ents {
				p := filepath.Join(dir, e.Name())
				testpeers.WaitFinished(t, rp, p, 30e9)
				cs := readDeepCassette(t, p)
				switch {
				case cs.h.Deep && cs.h.Parent == nil:
					if parent.name != "" {
						t.Fatalf("two deep cassettes: %s, %s", parent.name, cs.name)
					}
					parent = cs
				case cs.h.Parent != nil && !cs.h.Deep:
					linked = append(linked, cs)
				default:
					t.Fatalf("%s: header deep %v parent %v", e.Name(), cs.h.Deep, cs.h.Parent)
				}
				// Redaction: the env secret is in neither frame of the
				// rewrite, nor anywhere else.
				raw := run(t, work, "", rp, "cat", p)
				if raw.code != 0 || strings.Contains(raw.stdout, secret) {
					t.Errorf("%s: cat exit %d; holds the secret: %v", e.Name(), raw.code, strings.Contains(raw.stdout, secret))
				}
				chk := run(t, work, "", rp, "check", p)
				if chk.code != 0 || !strings.Contains(chk.stdout, " 0 errors, 0 warnings") {
					t.Errorf("check %s: exit %d\n%s%s", e.Name(), chk.code, chk.stdout, chk.stderr)
				}
			}
			if parent.name == "" {
				t.Fatalf("no deep cassette in %v", ents)
			}
			if parent.h.Protocol != "" && parent.h.Protocol != "acp" {
				t.Errorf("parent protocol %q", parent.h.Protocol)
			}
			var got []string
			for _, l := range linked {
				p := l.h.Parent
				if p.Cassette != parent.name {
					t.Errorf("%s: parent cassette %q, want %q", l.name, p.Cassette, parent.name)
				}
				if l.h.Protocol != "" && l.h.Protocol != "mcp" || len(l.h.Argv) != 1 || l.h.Argv[0] != server {
					t.Errorf("%s: protocol %q argv %q, want the MCP server", l.name, l.h.Protocol, l.h.Argv)
				}
				if n := len(l.frames(cassette.DirIn)); n < 2 {
					t.Errorf("%s: %d frames from the agent, want initialize and tools/call at least", l.name, n)
				}
				got = append(got, string(p.Request)+" "+p.Method+" "+p.Server)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, c.links) {
				t.Errorf("linked recordings %q, want %q", got, c.links)
			}

			// The rewrite marks: each session/new and session/load is an
			// icpt rewrite frame, then its intercept event with the
			// original and the deep tap named.
			rewrites := 0
			origs := map[string]string{} // the rewritten frame -> its original
			for i, r := range parent.recs {
				if r.K != cassette.KindFrame || r.Icpt == "" {
					continue
				}
				ev := parent.recs[i+1]
				if r.Icpt != "rewrite" || r.D != cassette.DirIn || (r.Method != "session/new" && r.Method != "session/load") ||
					ev.Ev != "intercept" || ev.Act != "rewrite" || ev.BP != deepRuleName || ev.Ref != r.N || len(ev.Orig) == 0 {
					t.Fatalf("record %d: %+v, then %+v", r.N, r, ev)
				}
				rewrites++
				origs[string(r.Payload())] = string(ev.Orig)
				checkDeepEntries(t, r.Payload(), ev.Orig, self, dir, parent.name, server)
			}
			if want := map[bool]int{false: 1, true: 2}[c.load]; rewrites != want {
				t.Errorf("%d rewritten frames, want %d", rewrites, want)
			}

			// Every other frame is what a plain recording of the session
			// has, byte for byte; the rewritten ones' originals are.
			pl := readDeepCassette(t, plainCas)
			for _, d := range []cassette.Dir{cassette.DirIn, cassette.DirOut} {
				a, b := parent.frames(d), pl.frames(d)
				if len(a) != len(b) {
					t.Fatalf("%s: %d frames under --deep, %d in a plain recording", d, len(a), len(b))
				}
				for i := range a {
					if o, ok := origs[a[i]]; ok {
						a[i] = o
					}
					if a[i] != b[i] {
						t.Errorf("%s frame %d differs:\n%s\n%s", d, i, a[i], b[i])
					}
				}
			}
		})
	}
}

// checkDeepEntries checks a rewritten request against its original: the
// same members but mcpServers, whose every entry now runs rpctap (self)
// with record's linking flags and then the original command line.
func checkDeepEntries(t *testing.T, frame, orig []byte, self, dir, parent, server string) {
	t.Helper()
	type entry struct {
		Name    string            `json:"name"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     []json.RawMessage `json:"env"`
	}
	var f, o struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Cwd        string  `json:"cwd"`
			McpServers []entry `json:"mcpServers"`
		} `json:"params"`
	}
	if err := json.Unmarshal(frame, &f); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(orig, &o); err != nil {
		t.Fatal(err)
	}
	if len(f.Params.McpServers) != 2 || len(o.Params.McpServers) != 2 || f.Params.Cwd != o.Params.Cwd || string(f.ID) != string(o.ID) {
		t.Fatalf("rewritten %s\noriginal %s", frame, orig)
	}
	for i, e := range f.Params.McpServers {
		oe := o.Params.McpServers[i]
		want := append([]string{"record", "--dir", dir, "--parent-cassette", parent, "--parent-request", string(o.ID),
			"--parent-method", o.Method, "--parent-server", oe.Name, "--"}, append([]string{oe.Command}, oe.Args...)...)
		if e.Command != self || !reflect.DeepEqual(e.Args, want) || e.Name != oe.Name || !reflect.DeepEqual(e.Env, oe.Env) || oe.Command != server {
			t.Errorf("entry %d rewritten to %+v\nfrom %+v\nwant command %s args %q", i, e, oe, self, want)
		}
	}
}

// TestRecordDeepBrokenDir: a linked MCP server whose cassette directory is
// gone and cannot be made again still runs, unrecorded, with one warning
// line (the agent's session must not break); one whose directory is only
// gone gets it made again.
func TestRecordDeepBrokenDir(t *testing.T) {
	rp := rpctapPath(t)
	work := t.TempDir()
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n"
	r := run(t, work, in, rp, "record", "--dir", "/proc/rpctap-nope", "--parent-cassette", "p.cassette",
		"--parent-request", "2", "--parent-method", "session/new", "--parent-server", "s", "--", "sh", "-c", "cat; exit 3")
	if r.code != 3 || r.stdout != in || strings.Count(r.stderr, "\n") != 1 ||
		!strings.HasPrefix(r.stderr, "rpctap: warning: not recording this linked MCP server: cannot create the cassette directory /proc/rpctap-nope") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	gone := filepath.Join(work, "gone", "tapes")
	r = run(t, work, in, rp, "record", "--dir", gone, "--parent-cassette", "p.cassette",
		"--parent-request", `"x"`, "--parent-method", "session/load", "--parent-server", "s", "--", "cat")
	ents, _ := os.ReadDir(gone)
	if r.code != 0 || r.stdout != in || len(ents) != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q, %d files", r.code, r.stdout, r.stderr, len(ents))
	}
	p := filepath.Join(gone, ents[0].Name())
	testpeers.WaitFinished(t, rp, p, 30e9)
	h := readDeepCassette(t, p).h
	if h.Parent == nil || h.Parent.Cassette != "p.cassette" || string(h.Parent.Request) != `"x"` || h.Parent.Method != "session/load" || h.Parent.Server != "s" {
		t.Errorf("header parent %+v", h.Parent)
	}
}

// TestWrapDeepRecords: `rpctap wrap zed --deep` turns a Zed ACP agent entry
// into one that records with --deep, and that entry's command line, as
// written in the config, gives one deep ACP cassette and one linked MCP
// cassette per server the client hands the agent (the real ACP and MCP Go
// SDK peers of TestRecordDeep).
func TestWrapDeepRecords(t *testing.T) {
	t.Parallel()
	client := testpeers.Tool(t, "deepclient")
	agent := testpeers.Tool(t, "deepagent")
	server := testpeers.Tool(t, "mcpserver")
	_, project, env := wrapEnv(t)
	cfg := filepath.Join(project, "settings.json")
	src := `{
  // my agent
  "agent_servers": {
    "deep": {"type": "custom", "command": ` + strconvQuote(agent) + `, "args": []},
  },
}
`
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	tapes := filepath.Join(t.TempDir(), "tapes")
	out, errs, code := runRpctap(t, project, env, "wrap", "--config", cfg, "--deep", "--dir", tapes)
	if code != 0 || !strings.Contains(out, "wrapped          deep (agent_servers)") {
		t.Fatalf("wrap --deep: exit %d\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(cfg)
	var line []string
	var parsed struct {
		AgentServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"agent_servers"`
	}
	std, err := hujsonStandard(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(std, &parsed); err != nil {
		t.Fatal(err)
	}
	e := parsed.AgentServers["deep"]
	line = append([]string{e.Command}, e.Args...)
	if !reflect.DeepEqual(e.Args[:4], []string{"record", "--dir", tapes, "--deep"}) {
		t.Fatalf("the wrapped entry runs %q", line)
	}
	r := run(t, project, "", append([]string{client, "-server", server, "-n", "2", "--"}, line...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "stop end_turn") {
		t.Fatalf("the client through the wrapped entry: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ents, _ := filepath.Glob(filepath.Join(tapes, "*.cassette"))
	var deep, linked int
	for _, p := range ents {
		testpeers.WaitFinished(t, line[0], p, 30e9)
		h := readDeepCassette(t, p).h
		switch {
		case h.Deep:
			deep++
		case h.Parent != nil:
			linked++
		}
	}
	if deep != 1 || linked != 2 {
		t.Fatalf("%d deep and %d linked cassettes in %s, want 1 and 2: %v", deep, linked, tapes, ents)
	}
	// wrap --list says which entries record with --deep (Zed's user
	// settings, where --list looks for them).
	home := envValue(env, "HOME")
	zed := filepath.Join(home, ".config", "zed", "settings.json")
	os.MkdirAll(filepath.Dir(zed), 0o755)
	b, _ = os.ReadFile(cfg)
	os.WriteFile(zed, b, 0o600)
	out, errs, code = runRpctap(t, project, append(env, "XDG_CONFIG_HOME="+filepath.Join(home, ".config")), "wrap", "--list")
	if code != 0 || !regexp.MustCompile(`deep \(agent_servers\) +wrapped --deep `).MatchString(out) {
		t.Errorf("wrap --list does not say the agent records with --deep: exit %d\n%s%s", code, out, errs)
	}

	out, errs, code = runRpctap(t, project, env, "unwrap", "--config", cfg)
	if b, _ := os.ReadFile(cfg); code != 0 || string(b) != src {
		t.Errorf("unwrap: exit %d, original back: %v\n%s%s", code, string(b) == src, out, errs)
	}
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// hujsonStandard strips a JSONC file's comments and trailing commas.
func hujsonStandard(b []byte) ([]byte, error) {
	v, err := hujson.Parse(b)
	if err != nil {
		return nil, err
	}
	v.Standardize()
	return v.Pack(), nil
}

// TestDeepVerifyDiffReplay: the deep tap's rewrite of session/new names the
// recording's own cassette and directory, so the tools that play the
// parent's side undo it. verify of a deep cassette against the real agent
// passes and adds no cassette to the recording's directory (with the
// rewritten request the agent started its servers under rpctap record
// linked to the finished recording: two more cassettes joined its linked
// set); diff of two deep recordings of one session finds no difference
// (it saw the cassette names and directories differ); replay still gives
// the real client what it saw. The second recording has a user's --rewrite
// rule on session/new as well.
func TestDeepVerifyDiffReplay(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	client := testpeers.Tool(t, "deepclient")
	agent := testpeers.Tool(t, "deepagent")
	server := testpeers.Tool(t, "mcpserver")
	work := t.TempDir()
	clientArgs := []string{client, "-server", server, "-n", "2", "--"}
	var parents []string
	for _, d := range []string{"a", "b"} {
		dir := filepath.Join(work, d)
		rec := []string{rp, "record", "--deep", "--dir", dir}
		if d == "b" {
			// a user's rule changes the request too (cwd, which diff
			// ignores): only the deep tap's part is undone
			rec = append(rec, "--rewrite", `dir:in & m=session/new => set params.cwd "/tmp"`)
		}
		r := run(t, work, "", append(append(clientArgs, rec...), "--", agent)...)
		if r.code != 0 || !strings.Contains(r.stdout, "tool_call_update call_2 completed Hi rpctap") {
			t.Fatalf("record --deep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			testpeers.WaitFinished(t, rp, p, 30e9)
			if readDeepCassette(t, p).h.Deep {
				parents = append(parents, p)
			}
		}
		if len(ents) != 3 || len(parents) == 0 || filepath.Dir(parents[len(parents)-1]) != dir {
			t.Fatalf("%s: %d files, parents %v", dir, len(ents), parents)
		}
	}

	for _, p := range parents {
		v := run(t, work, "", rp, "verify", p, "--", agent)
		if v.code != 0 || !strings.Contains(v.stdout+v.stderr, "rpctap verify: ok") {
			t.Fatalf("verify %s: exit %d\n%s", p, v.code, v.stderr)
		}
		if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 3 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("verify added cassettes to the recording's directory: %v", names)
		}
	}

	if d := run(t, work, "", rp, "diff", parents[0], parents[1]); d.code != 0 {
		t.Errorf("diff of two deep recordings of one session: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}

	r := run(t, work, "", append(clientArgs, rp, "replay", parents[0])...)
	if r.code != 0 || !strings.Contains(r.stdout, "tool_call_update call_2 completed Hi rpctap") {
		t.Errorf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

package wrap

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture is a realistic config of one client. Claude Desktop, Claude Code
// and Cursor read strict JSON, so theirs have no comments; the others
// (JSONC, TOML) do. clientEdit is a change the client makes after wrap,
// inside and outside the wrapped entries, that unwrap must keep.
type fixture struct {
	client     string
	file       string
	stdio      []string // the entries wrap must wrap
	skipped    []string // the entries it must leave alone
	clientEdit [2]string
}

var fixtures = []fixture{
	{"claude-desktop", "claude-desktop.json", []string{"filesystem", "demo", "sqlite"}, nil,
		[2]string{`"/Users/dev/Downloads"`, `"/Users/dev/Documents"`}},
	{"claude-code", "claude-code.json", []string{"demo", "playwright"}, []string{"linear"},
		[2]string{`"numStartups": 42`, `"numStartups": 43`}},
	{"cursor", "cursor.json", []string{"demo", "git"}, []string{"server-name"},
		[2]string{`"API_KEY": "value" }`, `"API_KEY": "other" }`}},
	{"vscode", "vscode.json", []string{"Perplexity", "demo"}, []string{"github"},
		[2]string{`"-y", "server-perplexity-ask"`, `"-y", "server-perplexity-ask@2"`}},
	{"gemini", "gemini.json", []string{"demo", "pythonTools"}, []string{"httpServer"},
		[2]string{`"--port", "8080"`, `"--port", "9090"`}},
	{"zed", "zed.json", []string{"Demo Agent", "mcp-server-github", "old"}, []string{"claude", "remote-mcp"},
		[2]string{`"ui_font_size": 16`, `"ui_font_size": 18`}},
	{"codex", "codex.toml", []string{"demo", "context7", "time"}, []string{"docs"},
		[2]string{`startup_timeout_sec = 20`, `startup_timeout_sec = 30`}},
	{"helix", "helix.toml", []string{"rust-analyzer", "demo", "gopls", "efm"}, nil,
		[2]string{`"-c", "~/.config/efm/config.yaml"`, `"-c", "~/.config/efm/other.yaml"`}},
}

// specFor is the client's spec that reads file (by syntax).
func specFor(t *testing.T, client, file string) Spec {
	t.Helper()
	g := GuessSpec(file)
	for _, s := range Clients[client].Files(Env{GOOS: "linux", Home: "/h", Cwd: "/p"}) {
		if s.Format == g.Format {
			s.Path = file
			// ~/.claude.json is the one with projects; .mcp.json has none.
			if client == "claude-code" {
				s.Sections = [][]string{{"mcpServers"}, {"projects", "*", "mcpServers"}}
			}
			return s
		}
	}
	t.Fatalf("no %s spec for %s", client, file)
	return Spec{}
}

var testOpts = Options{Self: "/opt/rpctap/bin/rpctap", Dir: "/var/tapes dir"}

func names(es []Entry, pick func(Entry) bool) []string {
	var n []string
	for _, e := range es {
		if pick(e) {
			n = append(n, e.Name)
		}
	}
	return n
}

func TestWrapRoundTrip(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.client, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join("testdata", f.file))
			if err != nil {
				t.Fatal(err)
			}
			spec := specFor(t, f.client, f.file)
			w, err := PlanBytes(spec, orig, OpWrap, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			if !w.Changed() {
				t.Fatal("wrap changed nothing")
			}
			es, err := spec.Parse(w.After)
			if err != nil {
				t.Fatal(err)
			}
			wrapped := names(es, func(e Entry) bool { return e.Wrapped != nil && !e.Wrapped.ByHand })
			left := names(es, func(e Entry) bool { return e.Skip != "" })
			if strings.Join(wrapped, ",") != strings.Join(f.stdio, ",") {
				t.Errorf("wrapped %q, want %q", wrapped, f.stdio)
			}
			if strings.Join(left, ",") != strings.Join(f.skipped, ",") {
				t.Errorf("left alone %q, want %q", left, f.skipped)
			}
			before, _ := spec.Parse(orig)
			for i, e := range es {
				if e.Wrapped == nil {
					continue
				}
				if e.Command != testOpts.Self {
					t.Errorf("%s: command %q, want rpctap's absolute path", e.Name, e.Command)
				}
				want := append([]string{"record", "--dir", testOpts.Dir, "--"}, before[i].Line()...)
				if before[i].args == nil {
					want = append([]string{"record", "--dir=" + testOpts.Dir, "--"}, before[i].Line()...)
				}
				if strings.Join(e.Args, "\x00") != strings.Join(want, "\x00") {
					t.Errorf("%s: args %q, want %q", e.Name, e.Args, want)
				}
			}
			// Every byte outside the edited values is kept: removing the
			// lines the diff touches leaves the same lines on both sides.
			if n := countChangedLines(orig, w.After); n > 2*len(f.stdio) {
				t.Errorf("wrap changed %d lines for %d entries", n, len(f.stdio))
			}

			twice, err := PlanBytes(spec, w.After, OpWrap, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			if twice.Changed() {
				t.Errorf("wrapping twice changed the file again:\n%s", diffString(w.After, twice.After))
			}

			u, err := PlanBytes(spec, w.After, OpUnwrap, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(u.After, orig) {
				t.Errorf("unwrap did not give the original back:\n%s", diffString(orig, u.After))
			}
			again, _ := PlanBytes(spec, u.After, OpUnwrap, Options{})
			if again.Changed() {
				t.Error("unwrapping an unwrapped file changed it")
			}

			// The client changes its config after wrap; unwrap keeps it.
			edited := bytes.Replace(w.After, []byte(f.clientEdit[0]), []byte(f.clientEdit[1]), 1)
			if bytes.Equal(edited, w.After) {
				t.Fatalf("client edit %q not found in the wrapped file", f.clientEdit[0])
			}
			u2, err := PlanBytes(spec, edited, OpUnwrap, Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantBack := bytes.Replace(orig, []byte(f.clientEdit[0]), []byte(f.clientEdit[1]), 1)
			if !bytes.Equal(u2.After, wantBack) {
				t.Errorf("unwrap lost the client's change:\n%s", diffString(wantBack, u2.After))
			}
		})
	}
}

func countChangedLines(a, b []byte) int {
	n := 0
	for _, o := range diffLines(splitLines(a), splitLines(b)) {
		if o.kind == '-' {
			n++
		}
	}
	return n
}

func diffString(a, b []byte) string {
	var buf bytes.Buffer
	UnifiedDiff(&buf, "x", a, b)
	return buf.String()
}

// --only picks entries; the others are not touched.
func TestWrapOnly(t *testing.T) {
	orig, _ := os.ReadFile("testdata/codex.toml")
	spec := specFor(t, "codex", "codex.toml")
	o := testOpts
	o.Only = []string{"time"}
	w, err := PlanBytes(spec, orig, OpWrap, o)
	if err != nil {
		t.Fatal(err)
	}
	es, _ := spec.Parse(w.After)
	got := names(es, func(e Entry) bool { return e.Wrapped != nil })
	if strings.Join(got, ",") != "time" {
		t.Errorf("wrapped %q, want only time", got)
	}
	if len(w.Changes) != 1 || w.Changes[0].Action != "wrapped" {
		t.Errorf("changes %+v", w.Changes)
	}
}

// An entry someone wrapped by hand (other record flags, no "--") is
// recognised: wrap leaves it, unwrap takes it out.
func TestWrapByHand(t *testing.T) {
	src := []byte(`{"mcpServers": {
  "x": {"command": "/usr/local/bin/rpctap", "args": ["record", "-o", "/tmp/x.cassette", "--protocol", "mcp", "my-server", "--stdio"]},
  "sock": {"command": "rpctap", "args": ["record", "--listen", "/tmp/a.sock", "--upstream", "/tmp/b.sock"]}
}}`)
	spec := GuessSpec("x.json")
	w, err := PlanBytes(spec, src, OpWrap, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if w.Changed() {
		t.Errorf("wrap changed a hand-wrapped entry:\n%s", diffString(src, w.After))
	}
	for _, c := range w.Changes {
		if c.Action != "already wrapped" || c.Note != "by hand" {
			t.Errorf("%s: %s %s", c.Entry.Name, c.Action, c.Note)
		}
	}
	u, err := PlanBytes(spec, src, OpUnwrap, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `"x": {"command": "my-server", "args": ["--stdio"]}`
	if !bytes.Contains(u.After, []byte(want)) {
		t.Errorf("unwrap gave\n%s\nwant it to contain %s", u.After, want)
	}
	if u.Changes[1].Action != "left alone" {
		t.Errorf("socket-mode entry: %+v", u.Changes[1])
	}
}

// The diff --dry-run prints applies with patch(1) and gives the wrapped file.
func TestWrapDiffApplies(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("needs patch(1): apt-get install patch")
	}
	for _, f := range fixtures {
		orig, _ := os.ReadFile(filepath.Join("testdata", f.file))
		w, err := PlanBytes(specFor(t, f.client, f.file), orig, OpWrap, testOpts)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		p := filepath.Join(dir, "f")
		os.WriteFile(p, orig, 0o644)
		var d bytes.Buffer
		UnifiedDiff(&d, "f", orig, w.After)
		cmd := exec.Command("patch", "-p1", "--quiet")
		cmd.Dir, cmd.Stdin = dir, &d
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: patch: %v\n%s\n%s", f.file, err, out, d.String())
		}
		got, _ := os.ReadFile(p)
		if !bytes.Equal(got, w.After) {
			t.Errorf("%s: the patched file differs from the wrapped one", f.file)
		}
	}
}

// diffLines against a random edit script: applying the script to a gives b.
func TestDiffLines(t *testing.T) {
	cases := [][2]string{
		{"", "a\n"}, {"a\n", ""}, {"a\nb\nc\n", "a\nc\n"}, {"a\nb\nc\n", "x\na\nb\ny\nc\nz"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n"},
	}
	for _, c := range cases {
		ops := diffLines(splitLines([]byte(c[0])), splitLines([]byte(c[1])))
		var a, b []byte
		for _, o := range ops {
			if o.kind != '+' {
				a = append(a, o.line...)
			}
			if o.kind != '-' {
				b = append(b, o.line...)
			}
		}
		if string(a) != c[0] || string(b) != c[1] {
			t.Errorf("%q -> %q: script gives %q -> %q", c[0], c[1], a, b)
		}
	}
}

// Write edits a symlinked config where it points, keeps the link, writes a
// backup first, and refuses when the file changed since Plan read it.
func TestWriteSymlinkBackup(t *testing.T) {
	dir := t.TempDir()
	dot := filepath.Join(dir, "dotfiles")
	os.Mkdir(dot, 0o755)
	real := filepath.Join(dot, "mcp.json")
	orig, _ := os.ReadFile("testdata/cursor.json")
	os.WriteFile(real, orig, 0o640)
	link := filepath.Join(dir, "mcp.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	spec := specFor(t, "cursor", "x.json")
	spec.Path = link
	r, err := Plan(spec, OpWrap, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Target != real {
		t.Errorf("target %s, want %s", r.Target, real)
	}
	backup, err := r.Write(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is gone: %v", err)
	}
	if filepath.Dir(backup) != dot || !strings.HasSuffix(backup, ".rpctap-20260102T030405Z.bak") {
		t.Errorf("backup %s", backup)
	}
	if b, _ := os.ReadFile(backup); !bytes.Equal(b, orig) {
		t.Error("the backup is not the original")
	}
	if b, _ := os.ReadFile(real); !bytes.Equal(b, r.After) {
		t.Error("the target does not hold the wrapped config")
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}

	// The client rewrites its config between Plan and Write.
	r2, err := Plan(spec, OpUnwrap, Options{})
	if err != nil {
		t.Fatal(err)
	}
	clientVersion := append(append([]byte(nil), r.After...), ' ')
	os.WriteFile(real, clientVersion, 0o640)
	if _, err := r2.Write(time.Now()); err == nil || !strings.Contains(err.Error(), "changed while") {
		t.Errorf("Write over a changed file: %v", err)
	}
	if b, _ := os.ReadFile(real); !bytes.Equal(b, clientVersion) {
		t.Error("the client's version was overwritten")
	}
	// A second backup in the same second gets its own name.
	r3, _ := Plan(spec, OpUnwrap, Options{})
	b2, err := r3.Write(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil || b2 == backup {
		t.Errorf("second backup %s (%v)", b2, err)
	}
	if b, _ := os.ReadFile(backup); !bytes.Equal(b, orig) {
		t.Error("the first backup was overwritten")
	}
}

// A file that does not parse is refused with its position; nothing is
// written.
func TestWrapBadInput(t *testing.T) {
	for name, src := range map[string]string{
		"x.json": "{\"mcpServers\": {\"a\": {\"command\": \"x\",,}}}",
		"x.toml": "[mcp_servers.a]\ncommand = \n",
	} {
		_, err := PlanBytes(GuessSpec(name), []byte(src), OpWrap, testOpts)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "line") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Each client's configs are looked for where the client documents them,
// per OS.
func TestClientPaths(t *testing.T) {
	envs := map[string]Env{
		"linux":   {GOOS: "linux", Home: "/home/u", Cwd: "/p"},
		"darwin":  {GOOS: "darwin", Home: "/Users/u", Cwd: "/p"},
		"windows": {GOOS: "windows", Home: `C:\Users\u`, AppData: `C:\Users\u\AppData\Roaming`, Cwd: "/p"},
	}
	want := map[string]map[string][]string{
		"linux": {
			"claude-desktop": {"/home/u/.config/Claude/claude_desktop_config.json"},
			"claude-code":    {"/p/.mcp.json", "/home/u/.claude.json"},
			"cursor":         {"/p/.cursor/mcp.json", "/home/u/.cursor/mcp.json"},
			"vscode":         {"/p/.vscode/mcp.json", "/home/u/.config/Code/User/mcp.json"},
			"gemini":         {"/p/.gemini/settings.json", "/home/u/.gemini/settings.json"},
			"zed":            {"/p/.zed/settings.json", "/home/u/.config/zed/settings.json"},
			"codex":          {"/home/u/.codex/config.toml"},
			"helix":          {"/p/.helix/languages.toml", "/home/u/.config/helix/languages.toml"},
		},
		"darwin": {
			"claude-desktop": {"/Users/u/Library/Application Support/Claude/claude_desktop_config.json"},
			"vscode":         {"/p/.vscode/mcp.json", "/Users/u/Library/Application Support/Code/User/mcp.json"},
			"zed":            {"/p/.zed/settings.json", "/Users/u/.config/zed/settings.json"},
		},
		"windows": {
			"claude-desktop": {filepath.Join(`C:\Users\u\AppData\Roaming`, "Claude", "claude_desktop_config.json")},
			"zed":            {"/p/.zed/settings.json", filepath.Join(`C:\Users\u\AppData\Roaming`, "Zed", "settings.json")},
		},
	}
	for goos, clients := range want {
		for name, paths := range clients {
			var got []string
			for _, s := range Clients[name].Files(envs[goos]) {
				got = append(got, filepath.ToSlash(s.Path))
			}
			for i := range paths {
				paths[i] = filepath.ToSlash(paths[i])
			}
			if strings.Join(got, "\n") != strings.Join(paths, "\n") {
				t.Errorf("%s on %s: %q, want %q", name, goos, got, paths)
			}
		}
	}
	e := envs["linux"]
	e.XDGConfig, e.CodexHome = "/x", "/c"
	if p := Clients["zed"].Files(e)[1].Path; p != "/x/zed/settings.json" {
		t.Errorf("zed with XDG_CONFIG_HOME: %s", p)
	}
	if p := Clients["codex"].Files(e)[0].Path; p != "/c/config.toml" {
		t.Errorf("codex with CODEX_HOME: %s", p)
	}
}

// TestWrapSelfUnderAnotherName: an rpctap built under another name (`go
// build -o rpctap-dev`) names itself by that path; the config it wrapped
// must read back as wrapped, so that wrap twice is wrap once and unwrap
// works. Before the fix wrap refused its own edit ("entry did not come out
// wrapped"), since only a program called rpctap counted.
func TestWrapSelfUnderAnotherName(t *testing.T) {
	self, err := os.Executable() // this test binary, wrap.test: not called rpctap
	if err != nil {
		t.Skip(err)
	}
	spec := Spec{Path: "c.json", Format: JSON, Sections: [][]string{{"mcpServers"}}}
	orig := []byte(`{"mcpServers":{"a":{"command":"npx","args":["-y","x"]}}}`)
	o := Options{Self: self, Dir: "/tapes"}
	w, err := PlanBytes(spec, orig, OpWrap, o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(w.After, []byte(self)) {
		t.Fatalf("not wrapped with %s:\n%s", self, w.After)
	}
	twice, err := PlanBytes(spec, w.After, OpWrap, o)
	if err != nil || !bytes.Equal(twice.After, w.After) {
		t.Fatalf("wrapping again: %v\n%s", err, twice.After)
	}
	u, err := PlanBytes(spec, w.After, OpUnwrap, Options{})
	if err != nil || !bytes.Equal(u.After, orig) {
		t.Fatalf("unwrap: %v\n%s", err, u.After)
	}
	// Another program that is not rpctap is still not taken for it.
	other := []byte(`{"mcpServers":{"a":{"command":"/bin/sh","args":["record","--","x"]}}}`)
	es, err := spec.Parse(other)
	if err != nil || len(es) != 1 || es[0].Wrapped != nil {
		t.Fatalf("/bin/sh taken for rpctap: %v %+v", err, es)
	}
}

// TestWrapDeep: with Deep, Zed's ACP agents are wrapped with record --deep
// and its MCP servers are not; the result reads back as wrapped by wrap
// (not by hand), wrapping again changes nothing, and unwrap gives the
// original bytes back. An agent wrapped earlier without --deep is left as
// it is, with a note saying how to get --deep.
func TestWrapDeep(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join("testdata", "zed.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec := specFor(t, "zed", "zed.json")
	deep := testOpts
	deep.Deep = true
	w, err := PlanBytes(spec, orig, OpWrap, deep)
	if err != nil {
		t.Fatal(err)
	}
	es, err := spec.Parse(w.After)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Wrapped == nil {
			continue
		}
		if e.Wrapped.ByHand {
			t.Errorf("%s: read back as wrapped by hand: %q", e.Name, e.Args)
		}
		if e.Wrapped.Deep() != e.ACP() {
			t.Errorf("%s (%s): --deep %v, want it on ACP agents only: %q", e.Name, e.Section, e.Wrapped.Deep(), e.Args)
		}
	}
	if !strings.Contains(string(w.After), `"args": ["record", "--dir", "/var/tapes dir", "--deep", "--", "rpctap", "demo-agent"]`) {
		t.Errorf("the agent's args:\n%s", w.After)
	}
	twice, err := PlanBytes(spec, w.After, OpWrap, deep)
	if err != nil {
		t.Fatal(err)
	}
	if twice.Changed() {
		t.Errorf("wrapping twice changed the file:\n%s", diffString(w.After, twice.After))
	}
	un, err := PlanBytes(spec, w.After, OpUnwrap, deep)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(un.After, orig) {
		t.Errorf("unwrap did not give the original back:\n%s", diffString(orig, un.After))
	}

	// Wrapped without --deep first: --deep leaves the agent, and says why.
	plain, err := PlanBytes(spec, orig, OpWrap, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := PlanBytes(spec, plain.After, OpWrap, deep)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed() {
		t.Errorf("--deep over a plain wrap changed the file")
	}
	var noted bool
	for _, c := range again.Changes {
		if c.Entry.Name == "Demo Agent" {
			noted = c.Action == "already wrapped" && strings.Contains(c.Note, "unwrap it first")
		}
	}
	if !noted {
		t.Errorf("no note for the agent wrapped without --deep: %+v", again.Changes)
	}
}

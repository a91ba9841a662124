package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/wrap"
)

// wrapClientFiles is where each client's config lives on Linux, relative to
// HOME ("~") or the project directory ("."), and the fixture it gets.
var wrapClientFiles = []struct{ client, path, fixture string }{
	{"claude-desktop", "~/.config/Claude/claude_desktop_config.json", "claude-desktop.json"},
	{"claude-code", "~/.claude.json", "claude-code.json"},
	{"cursor", "~/.cursor/mcp.json", "cursor.json"},
	{"vscode", "./.vscode/mcp.json", "vscode.json"},
	{"gemini", "~/.gemini/settings.json", "gemini.json"},
	{"zed", "~/.config/zed/settings.json", "zed.json"},
	{"codex", "~/.codex/config.toml", "codex.toml"},
	{"helix", "~/.config/helix/languages.toml", "helix.toml"},
}

// wrapEnv is a user whose HOME and project are in a temporary directory.
func wrapEnv(t *testing.T) (home, project string, env []string) {
	root := t.TempDir()
	home, project = filepath.Join(root, "home"), filepath.Join(root, "project")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(project, 0o755)
	for _, kv := range rpctapEnv() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA", "RPCTAP_DIR":
			continue
		}
		env = append(env, kv)
	}
	return home, project, append(env, "HOME="+home)
}

func runRpctap(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("rpctap", args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// For each client: `rpctap wrap CLIENT` finds its config where the client
// keeps it, wraps every stdio entry, and the demo entry's command line, as
// written in the config, really records a session (the bundled demo agent
// is the server, driven by the bundled demo client); wrapping again changes
// nothing; `rpctap unwrap CLIENT` gives back the original bytes.
func TestWrapClients(t *testing.T) {
	for _, c := range wrapClientFiles {
		t.Run(c.client, func(t *testing.T) {
			t.Parallel()
			home, project, env := wrapEnv(t)
			path := strings.Replace(strings.Replace(c.path, "~", home, 1), ".", project, 1)
			if strings.HasPrefix(c.path, "~") {
				path = filepath.Join(home, c.path[2:])
			}
			orig, err := os.ReadFile(filepath.Join("..", "..", "internal", "wrap", "testdata", c.fixture))
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, orig, 0o600)
			tapes := filepath.Join(t.TempDir(), "tapes")

			out, errs, code := runRpctap(t, project, env, "wrap", c.client, "--dry-run", "--dir", tapes)
			if code != 0 || !strings.Contains(out, "+++ b/"+path) {
				t.Fatalf("wrap --dry-run: exit %d\n%s%s", code, out, errs)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, orig) {
				t.Fatal("--dry-run changed the file")
			}
			out, errs, code = runRpctap(t, project, env, "wrap", c.client, "--dir", tapes)
			if code != 0 || !strings.Contains(out, "wrapped") || !strings.Contains(out, "written; the file as it was is in") {
				t.Fatalf("wrap: exit %d\n%s%s", code, out, errs)
			}
			wrapped, _ := os.ReadFile(path)
			self, _ := exec.LookPath("rpctap")
			self, _ = filepath.Abs(self)

			spec := wrap.GuessSpec(path)
			entries, err := spec.Parse(wrapped)
			if err != nil {
				t.Fatal(err)
			}
			var demoLine []string
			for _, e := range entries {
				if e.Wrapped != nil && len(e.Wrapped.Inner) > 0 && e.Wrapped.Inner[0] == "rpctap" {
					demoLine = e.Line()
				}
			}
			if len(demoLine) == 0 || demoLine[0] != self {
				t.Fatalf("the demo entry runs %q, want rpctap by its absolute path %s", demoLine, self)
			}
			// The client starts the entry's command line; the demo client
			// plays the client.
			out, errs, code = runRpctap(t, project, env, append([]string{"demo-client", "--"}, demoLine...)...)
			if code != 0 {
				t.Fatalf("running the wrapped entry: exit %d\n%s%s", code, out, errs)
			}
			tapesList, _ := filepath.Glob(filepath.Join(tapes, "*.cassette"))
			if len(tapesList) != 1 {
				t.Fatalf("cassettes in %s: %v", tapes, tapesList)
			}
			if err := completeCassette(tapesList[0]); err != nil {
				t.Fatalf("the recording: %v", err)
			}
			if n := countFrames(t, tapesList[0]); n < 6 {
				t.Errorf("the recording holds %d frames", n)
			}

			out, errs, code = runRpctap(t, project, env, "wrap", c.client, "--dir", tapes)
			if b, _ := os.ReadFile(path); code != 0 || !bytes.Equal(b, wrapped) || !strings.Contains(out, "nothing to change") {
				t.Errorf("wrapping twice: exit %d, changed %v\n%s%s", code, !bytes.Equal(b, wrapped), out, errs)
			}
			out, errs, code = runRpctap(t, project, env, "wrap", "--list")
			if code != 0 || !strings.Contains(out, c.client+"  "+path) || !strings.Contains(out, "wrapped   rpctap demo-agent") {
				t.Errorf("wrap --list: exit %d\n%s%s", code, out, errs)
			}
			out, errs, code = runRpctap(t, project, env, "unwrap", c.client)
			if b, _ := os.ReadFile(path); code != 0 || !bytes.Equal(b, orig) {
				t.Errorf("unwrap: exit %d, original back: %v\n%s%s", code, bytes.Equal(b, orig), out, errs)
			}
		})
	}
}

func countFrames(t *testing.T, path string) int {
	rd, err := cassette.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	n := 0
	for {
		r, err := rd.Next()
		if err != nil {
			return n
		}
		if r.K == cassette.KindFrame {
			n++
		}
	}
}

// Bad input gets one line and a non-zero exit; nothing is written.
func TestWrapErrors(t *testing.T) {
	home, project, env := wrapEnv(t)
	bad := filepath.Join(project, "bad.json")
	os.WriteFile(bad, []byte(`{"mcpServers": {"a": {"command": "x",,}}}`), 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"wrap"}, ExitUsage, "needs a CLIENT"},
		{[]string{"wrap", "emacs"}, ExitUsage, `unknown client "emacs"`},
		{[]string{"wrap", "zed"}, ExitInput, "no zed config found (looked for " + filepath.Join(project, ".zed", "settings.json")},
		{[]string{"wrap", "--config", bad}, ExitInput, "bad.json: line 1"},
		{[]string{"wrap", "--config", filepath.Join(project, "none.json")}, ExitInput, "none.json: no such file"},
		{[]string{"wrap", "--config", bad, "--only", "zz"}, ExitInput, "bad.json"},
		{[]string{"wrap", "--list", "zed"}, ExitUsage, "takes no client"},
		{[]string{"wrap", "--rpctap", "rpctap", "zed"}, ExitUsage, "absolute path"},
	} {
		out, errs, code := runRpctap(t, project, env, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) || strings.Count(strings.TrimSpace(errs), "\n") > 1 {
			t.Errorf("%q: exit %d, want %d with %q\n%s%s", c.args, code, c.code, c.msg, out, errs)
		}
	}
	good := filepath.Join(project, "good.json")
	os.WriteFile(good, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o644)
	if _, errs, code := runRpctap(t, project, env, "wrap", "--config", good, "--only", "zz"); code != ExitUsage || !strings.Contains(errs, `--only "zz": no entry of that name`) {
		t.Errorf("--only zz: exit %d: %s", code, errs)
	}
	_ = home
	// A read-only directory: the backup cannot be written, the file is
	// left as it was.
	if os.Geteuid() != 0 {
		ro := filepath.Join(project, "ro")
		os.Mkdir(ro, 0o755)
		p := filepath.Join(ro, "mcp.json")
		os.WriteFile(p, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o644)
		os.Chmod(ro, 0o555)
		defer os.Chmod(ro, 0o755)
		if _, errs, code := runRpctap(t, project, env, "wrap", "--config", p); code == 0 || !strings.Contains(errs, "unchanged") {
			t.Errorf("read-only dir: exit %d: %s", code, errs)
		}
	}
	// stdout on /dev/full: the report cannot be written, so the config
	// it describes is not changed; exit 125 (dispatch's one line).
	if full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0); err == nil {
		before, _ := os.ReadFile(good)
		cmd := exec.Command("rpctap", "wrap", "--config", good)
		cmd.Dir, cmd.Env, cmd.Stdout = project, env, full
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		full.Close()
		after, _ := os.ReadFile(good)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitInternal || !bytes.Equal(before, after) || !strings.Contains(errb.String(), "cannot write the output") {
			t.Errorf("wrap > /dev/full: %v, changed %v: %s", err, !bytes.Equal(before, after), errb.String())
		}
	}
	// wrap --list on /dev/full: a write error, not a panic.
	cmd := exec.Command("rpctap", "wrap", "--list")
	cmd.Dir, cmd.Env = project, env
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err == nil {
		defer full.Close()
		cmd.Stdout = full
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if err == nil || strings.Contains(errb.String(), "panic") {
			t.Errorf("wrap --list > /dev/full: %v %s", err, errb.String())
		}
	}
}

// Neovim is configured in Lua: wrap prints the snippet.
func TestWrapNeovimSnippet(t *testing.T) {
	_, project, env := wrapEnv(t)
	out, errs, code := runRpctap(t, project, env, "wrap", "neovim", "--dir", "/tmp/t", "--", "gopls", "serve")
	self, _ := exec.LookPath("rpctap")
	self, _ = filepath.Abs(self)
	want := `cmd = { "` + self + `", "record", "--dir", "/tmp/t", "--", "gopls", "serve" },`
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d\n%s%s\nwant %s", code, out, errs, want)
	}
}

// --config with a client reads every section the client's files have:
// ~/.claude.json kept somewhere else still has its projects' servers.
func TestWrapConfigWithClient(t *testing.T) {
	_, project, env := wrapEnv(t)
	p := filepath.Join(project, "claude-backup.json")
	orig, _ := os.ReadFile(filepath.Join("..", "..", "internal", "wrap", "testdata", "claude-code.json"))
	os.WriteFile(p, orig, 0o600)
	out, errs, code := runRpctap(t, project, env, "wrap", "claude-code", "--config", p, "--dry-run", "--dir", "/tmp/t")
	if code != 0 || !strings.Contains(out, "wrapped          playwright (projects[/home/dev/src/app].mcpServers)") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}

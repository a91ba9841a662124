package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

// runToFull runs rpctap with its stdout on /dev/full (a redirection, as a
// shell's `> /dev/full`; never -o onto a system device).
func runToFull(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	cmd := exec.Command(rpctapPath(t), args...)
	cmd.Dir = dir
	cmd.Stdout = full
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Run()
	return cmd.ProcessState.ExitCode(), errb.String()
}

// TestStdoutWriteFailure (issue 20 item 9): every command that writes a
// report on stdout exits 125 with one line when the write fails, whatever
// it found (check --format junit used to exit 0 with an empty report, text
// diff 1).
func TestStdoutWriteFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	other := filepath.Join(dir, "other.cassette")
	if r := run(t, dir, "", rpctapPath(t), "shrink", "-o", other, "--test", "exit 1", demo); r.code != 0 {
		t.Fatalf("shrink: %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"check", demo},
		{"check", "--format", "json", demo},
		{"check", "--format", "junit", demo},
		{"diff", demo, other},
		{"diff", "--format", "json", demo, other},
		{"cat", demo},
		{"cat", "--format", "table", demo},
		{"cat", "--raw", "-d", "out", demo},
		{"view", "--dump", "80x24", demo},
		{"export", "--format", "har", demo},
		{"export", "--format", "trace", demo},
		{"export", "--format", "otlp", demo},
		{"export", "--format", "html", demo},
		{"verify", demo, "--", rpctapPath(t), "demo-agent"},
		{"--help"},
		{"help", "exit-codes"},
		{"--version"},
		{"check", "--help"},
	} {
		code, stderr := runToFull(t, dir, args...)
		if code != ExitInternal {
			t.Errorf("%v > /dev/full: exit %d, want %d\n%s", args, code, ExitInternal, stderr)
		}
		// verify's child may say a line of its own on stderr; rpctap's is one.
		var own []string
		for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
			if strings.HasPrefix(l, "rpctap") {
				own = append(own, l)
			}
		}
		if len(own) != 1 || !strings.Contains(own[0], "cannot write the output") || !strings.Contains(own[0], "no space left on device") {
			t.Errorf("%v > /dev/full: stderr %q; want one line saying the output could not be written", args, stderr)
		}
	}
}

// TestFlagsAfterFiles: commands that take files accept their flags after
// the files too (check FILE --max 2 used to read "--max" and "2" as files);
// an unknown flag is a usage error naming it; commands that run a child
// keep their rule (everything after the cassette is the child's).
func TestFlagsAfterFiles(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	for _, c := range []struct {
		args []string
		code int
		want string // in stdout (exit 0) or stderr
	}{
		{[]string{"check", demo, "--max", "2"}, 0, "protocol acp"},
		{[]string{"check", demo, "--format", "json"}, 0, `"files"`},
		{[]string{"cat", demo, "--format", "table"}, 0, "session/prompt"},
		{[]string{"diff", demo, demo, "--format", "json"}, 0, `"frames": []`},
		{[]string{"export", demo, "--format", "har"}, 0, `"version":"1.2"`},
		{[]string{"view", demo, "--dump", "80x24"}, 0, "session/prompt"},
		{[]string{"check", demo, "--frob"}, ExitUsage, "unknown flag: --frob"},
		{[]string{"cat", demo, "--frob"}, ExitUsage, "unknown flag: --frob"},
		{[]string{"normalize", demo, "out.cassette", "--frob"}, ExitUsage, "unknown flag: --frob"},
		{[]string{"replay", demo, "--frob"}, ExitUsage, "unknown flag: --frob"},
		{[]string{"verify", demo, "--timeout", "1s", "--", "cat"}, ExitUsage, "flags go before the cassette"},
		{[]string{"shrink", demo, "--timeout", "1s", "--", "cat"}, ExitUsage, "flags go before the cassette"},
		{[]string{"shrink", demo, "--test", "false", "--frob"}, ExitUsage, "unknown flag: --frob"},
	} {
		r := run(t, dir, "", append([]string{rp}, c.args...)...)
		got := r.stdout
		if c.code != 0 {
			got = r.stderr
		}
		if r.code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout %.300s\nstderr %s", c.args, r.code, c.code, c.want, r.stdout, r.stderr)
		}
	}
	// record keeps its rule: flags after the first word of the child's
	// command line are the child's.
	r := run(t, dir, "", rp, "record", "-q", "-o", filepath.Join(dir, "r.cassette"), "--", "sh", "-c", "echo $0", "--frob")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "--frob" {
		t.Errorf("record: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestRefusedCombinations: what would silently do nothing is a usage error
// that says why (issue 20, "CLI and docs"): a fault rule that can never
// fire under verify or replay, replay or verify of a socket-mode cassette
// without --conn (it names the connections), export flags that do not go
// with the format.
func TestRefusedCombinations(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	sock := filepath.Join(dir, "socket.cassette")
	w, err := cassette.Create(sock, cassette.Header{Mode: "socket", Protocol: "jsonrpc", Listen: "/tmp/a.sock", Upstream: "/tmp/b.sock"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []int{1, 2, 1, 2} {
		r := cassette.NewLineRecord(cassette.KindFrame, cassette.DirIn, []byte(`{"jsonrpc":"2.0","method":"n","params":{"i":`+strconv.Itoa(i)+`}}`), "\n")
		r.Conn = c
		w.Append(&r)
	}
	w.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--fault", "drop dir=out", demo, "--", "true"}, "can never fire: verify sends only dir=in frames"},
		{[]string{"verify", "--fault", "drop method=nosuch/thing", demo, "--", "true"}, "no frame with method nosuch/thing"},
		{[]string{"verify", "--fault", "kill frame=99", demo, "--", "true"}, "verify sends 5 frames"},
		{[]string{"replay", "--fault", "drop dir=in", demo}, "can never fire: replay sends only dir=out frames"},
		{[]string{"replay", sock}, "2 connections (1, 2): choose one with --conn N"},
		{[]string{"verify", sock, "--", "cat"}, "2 connections (1, 2): choose one with --conn N"},
		{[]string{"export", "--format", "har", "--payloads", demo}, "--payloads is for --format otlp"},
		{[]string{"export", "--format", "trace", "--send", demo}, "--send is for --format otlp"},
		{[]string{"export", "--format", "otlp", "--send", "-o", "x.json", demo}, "--send and -o exclude each other"},
	} {
		r := run(t, dir, "", append([]string{rp}, c.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", c.args, r.code, r.stderr, ExitUsage, c.want)
		}
	}
	// A rule that can fire is taken: verify injects it and reports.
	r := run(t, dir, "", rp, "verify", "--fault", "drop method=session/prompt", demo, "--", rp, "demo-agent")
	if r.code != ExitFindings || !strings.Contains(r.stdout, "fault injected: drop method=session/prompt") {
		t.Errorf("a rule that fires: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestREADMEClaims: the README's command list, -o list, Layout line and
// fault injection section say what the commands do (issue 20).
func TestREADMEClaims(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, want := range []string{
		"`-o/--output FILE` is a file rpctap writes\n(`record`, `demo`, `shrink`, `export`)",
		"internal/export/     HAR, Chrome/Perfetto trace, OTLP/JSON and HTML report writers",
		"## Fault injection",
		"rpctap verify --fault",
		"A missing directory of `-o` or `--dir` is created (mode 0700) by every command",
		"flags after the files too",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
}

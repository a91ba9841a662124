package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rpctap/rpctap/replay/replaytest"
	"golang.org/x/sys/unix"
)

// Issue 20: nothing rpctap writes is ever broken. These tests drive the
// commands that write files (shrink, normalize, export -o, verify --update,
// check --write-baseline) end to end, with the rpctap in PATH.

// demoCassette records the bundled demo session into dir.
func demoCassette(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "demo.cassette")
	if r := run(t, dir, "", rpctapPath(t), "demo", "-q", "-o", p); r.code != 0 {
		t.Fatalf("demo: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return p
}

// strayCassette is a 20-frame JSON-RPC session in which the child answers an
// id nobody asked for (session.unknown-response-id).
func strayCassette(t *testing.T, dir string) string {
	t.Helper()
	b := replaytest.New("jsonrpc").Event("start")
	for i := range 10 {
		b.In(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"work","params":{"n":%d}}`, i+1, i))
		if i == 6 {
			b.Out(`{"jsonrpc":"2.0","id":9999,"result":"stray"}`)
			continue
		}
		b.Out(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, i+1, i))
	}
	b.Event("stdin-eof").Exit(0)
	p := filepath.Join(dir, "stray.cassette")
	if err := replaytest.WriteFile(p, b.End(), true); err != nil {
		t.Fatal(err)
	}
	return p
}

// assertWhole fails unless the cassette at p reads to its end record: the
// cassette reader, `zstd -t` (when installed) and `rpctap cat` all clean.
func assertWhole(t *testing.T, p string) {
	t.Helper()
	if err := completeCassette(p); err != nil {
		t.Errorf("%s does not read to its end record: %v", p, err)
	}
	if z, err := exec.LookPath("zstd"); err == nil {
		if out, err := exec.Command(z, "-q", "-t", p).CombinedOutput(); err != nil {
			t.Errorf("zstd -t %s: %v %s", p, err, out)
		}
	} else {
		t.Log("zstd not installed (apt-get install zstd): skipped its check")
	}
	if r := run(t, filepath.Dir(p), "", rpctapPath(t), "cat", p); r.code != 0 || r.stderr != "" {
		t.Errorf("rpctap cat %s: exit %d, stderr %q", p, r.code, r.stderr)
	}
}

func fileBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assertOneLine fails unless stderr is exactly one line holding want.
func assertOneLine(t *testing.T, what, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], want) || strings.Contains(stderr, "goroutine ") {
		t.Errorf("%s: stderr %q; want one line with %q", what, stderr, want)
	}
}

// TestShrinkWritesWholeCassettes (issue 20 item 1): in all four modes the
// shrunk cassette reads to its end record.
func TestShrinkWritesWholeCassettes(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	stray := strayCassette(t, dir)
	parent := filepath.Join(dir, "parent.sh")
	os.WriteFile(parent, []byte(`i=1
while [ $i -le 10 ]; do printf '{"jsonrpc":"2.0","id":%d,"method":"work","params":{"n":%d}}\n' $i $((i-1)); i=$((i+1)); done | "$@" | grep -q 9999 && exit 1
exit 0
`), 0o755)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"test", []string{"--test", "exit 1", demo}},
		{"check", []string{"--check", "session.unknown-response-id", stray}},
		{"parent", []string{"--parent", "sh " + parent, stray}},
		{"child", []string{"--timeout", "300ms", demo, "--", "sh", "-c", "cat >/dev/null; exit 3"}},
	} {
		out := filepath.Join(dir, c.name+".min.cassette")
		r := run(t, dir, "", append([]string{rp, "shrink", "-o", out}, c.args...)...)
		if r.code != 0 {
			t.Errorf("%s: exit %d\n%s", c.name, r.code, r.stderr)
			continue
		}
		assertWhole(t, out)
	}
}

// TestVerifyUpdateRefusesFaults (issue 20 item 2): --update with any fault
// rule is a usage error and the cassette is untouched.
func TestVerifyUpdateRefusesFaults(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	cas := demoCassette(t, dir)
	before := fileBytes(t, cas)
	rules := filepath.Join(dir, "rules")
	os.WriteFile(rules, []byte("drop method=session/prompt\n"), 0o600)
	for _, f := range [][]string{{"--fault", "drop"}, {"--fault", "kill frame=3"}, {"--faults", rules}} {
		args := append(append([]string{rp, "verify", "--update"}, f...), cas, "--", rp, "demo-agent")
		r := run(t, dir, "", args...)
		if r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", f, r.code, ExitUsage, r.stderr)
		}
		if !strings.Contains(r.stderr, "--update") || !strings.Contains(r.stderr, "fault") {
			t.Errorf("%v: stderr %q", f, r.stderr)
		}
		if !bytes.Equal(fileBytes(t, cas), before) {
			t.Fatalf("%v: the cassette changed", f)
		}
	}
}

// TestVerifyUpdateRefusesWorseRun (issue 20 item 3): a run whose child
// crashed, hung past the timeout, exited otherwise than recorded or left
// recorded frames unsent leaves the cassette as it was and exits 1; --force
// takes it anyway; a good run is still taken.
func TestVerifyUpdateRefusesWorseRun(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	cas := demoCassette(t, dir)
	before := fileBytes(t, cas)
	for _, c := range []struct {
		name  string
		child []string
		want  string
	}{
		{"crash", []string{"sh", "-c", "read x; kill -SEGV $$"}, "SIGSEGV"},
		{"exit 3", []string{"sh", "-c", "cat >/dev/null; exit 3"}, "exited with 3"},
		{"hangs", []string{"sh", "-c", "trap '' TERM; cat >/dev/null; sleep 30"}, "did not exit"},
		{"unsent", []string{"true"}, "never sent"},
		{"stops reading", []string{"sh", "-c", "head -n 1 >/dev/null; exec 0<&-; sleep 0.2"}, "never sent"},
	} {
		args := append([]string{rp, "verify", "--update", "--timeout", "500ms", cas, "--"}, c.child...)
		r := run(t, dir, "", args...)
		if r.code != ExitFindings {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", c.name, r.code, ExitFindings, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "--force") {
			t.Errorf("%s: stderr %q; want %q and the --force hint", c.name, r.stderr, c.want)
		}
		if !bytes.Equal(fileBytes(t, cas), before) {
			t.Fatalf("%s: the cassette changed", c.name)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) > 0 {
			t.Errorf("%s: temporary files left: %v", c.name, m)
		}
	}
	// A good run is taken without --force.
	if r := run(t, dir, "", rp, "verify", "--update", cas, "--", rp, "demo-agent"); r.code != 0 {
		t.Fatalf("good update: exit %d\n%s", r.code, r.stderr)
	}
	assertWhole(t, cas)
	if r := run(t, dir, "", rp, "verify", cas, "--", rp, "demo-agent"); r.code != 0 {
		t.Fatalf("verify after update: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --force takes a worse run: the file is replaced, and whole, and the
	// warning says what was taken.
	good := fileBytes(t, cas)
	r := run(t, dir, "", rp, "verify", "--update", "--force", "--timeout", "500ms", cas, "--", "sh", "-c", "cat >/dev/null; exit 3")
	if r.code != 0 || bytes.Equal(fileBytes(t, cas), good) || !strings.Contains(r.stderr, "--force took a run") {
		t.Fatalf("--force: exit %d, changed %v\n%s", r.code, !bytes.Equal(fileBytes(t, cas), good), r.stderr)
	}
	assertWhole(t, cas)
	if r := run(t, dir, "", rp, "verify", "--force", cas, "--", "true"); r.code != ExitUsage {
		t.Errorf("--force without --update: exit %d, want %d", r.code, ExitUsage)
	}
}

// TestShrinkPreflight (issue 20 item 4): a command that cannot start, or a
// failure the whole cassette does not show, is refused in one line before
// any shrinking; so is a check code no rule has.
func TestShrinkPreflight(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{demo, "--", "nosuchcmd-rpctap"}, ExitNotFound, "cannot start"},
		{[]string{"--parent", "nosuchcmd-rpctap", demo}, ExitNotFound, "cannot start"},
		{[]string{"--test", "nosuchcmd-rpctap", demo}, ExitNotFound, "cannot start"},
		{[]string{"--parent", "true", demo}, ExitFindings, "does not fail that way"},
		{[]string{"--check", "no.such-code", demo}, ExitUsage, "no rule"},
		{[]string{"--check", "session.duplicate-id", demo}, ExitFindings, "does not fail that way"},
		{[]string{demo, "--check", "x"}, ExitUsage, "no rule"}, // flags may follow the cassette (TestShrinkFlagsAfterCassette)
	} {
		out := filepath.Join(dir, "out.cassette")
		r := run(t, dir, "", append([]string{rp, "shrink", "-o", out}, c.args...)...)
		if r.code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, r.code, c.code, r.stderr)
		}
		assertOneLine(t, fmt.Sprint(c.args), strings.ReplaceAll(r.stderr, "Run 'rpctap shrink --help' for usage.\n", ""), c.want)
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: wrote %s", c.args, out)
			os.Remove(out)
		}
	}
}

// makeNode makes a character device node like /dev/null (minor 3) or
// /dev/full (minor 7) inside the test's directory: never a system device.
func makeNode(t *testing.T, p string, minor uint32) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("not root: device targets not covered (run the tests as root)")
		return false
	}
	if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, minor))); err != nil {
		t.Logf("mknod refused (%v): device targets not covered", err)
		return false
	}
	return true
}

func isCharDev(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode()&fs.ModeCharDevice != 0
}

// writerCase is one command that writes a file named by the test.
type writerCase struct {
	name     string
	cassette bool // the output is a cassette (read it back)
	args     func(out string) []string
}

func writerCases(demo, stray string) []writerCase {
	return []writerCase{
		{"export", false, func(out string) []string { return []string{"export", "--format", "har", "-o", out, demo} }},
		{"export-html", false, func(out string) []string { return []string{"export", "--format", "html", "-o", out, demo} }},
		{"shrink", true, func(out string) []string {
			return []string{"shrink", "-o", out, "--check", "session.unknown-response-id", stray}
		}},
		{"normalize", true, func(out string) []string { return []string{"normalize", demo, out} }},
		{"write-baseline", false, func(out string) []string { return []string{"check", "--write-baseline", out, demo} }},
	}
}

// TestWrittenFileTargets (issue 20 item 5 and "for every command that
// writes a file"): -o onto a FIFO and onto a symlink writes through them,
// onto a device leaves it a device (a full one is exit 125 in one line), a
// read-only directory or a killed run leaves the target byte for byte as
// it was, and every cassette written reads to its end record.
func TestWrittenFileTargets(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	stray := strayCassette(t, dir)
	// The read-only case runs as nobody, who must reach the inputs.
	for _, p := range []string{filepath.Dir(dir), dir} {
		os.Chmod(p, 0o755)
	}
	os.Chmod(demo, 0o644)
	os.Chmod(stray, 0o644)
	for _, c := range writerCases(demo, stray) {
		t.Run(c.name, func(t *testing.T) {
			d := filepath.Join(dir, c.name)
			os.Mkdir(d, 0o755)
			// A plain new file in a directory that does not exist yet.
			plain := filepath.Join(d, "new", "out")
			if r := run(t, d, "", append([]string{rp}, c.args(plain)...)...); r.code != 0 {
				t.Fatalf("plain: exit %d\n%s", r.code, r.stderr)
			}
			want := fileBytes(t, plain)
			if c.cassette {
				assertWhole(t, plain)
			}

			// A FIFO: written through, still a FIFO.
			fifo := filepath.Join(d, "fifo")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			got := make(chan []byte)
			go func() {
				f, err := os.Open(fifo)
				if err != nil {
					got <- nil
					return
				}
				b, _ := io.ReadAll(f)
				f.Close()
				got <- b
			}()
			if r := run(t, d, "", append([]string{rp}, c.args(fifo)...)...); r.code != 0 {
				t.Errorf("fifo: exit %d\n%s", r.code, r.stderr)
			}
			b := <-got
			if st, _ := os.Lstat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
				t.Errorf("the FIFO became %v", st.Mode())
			}
			if len(b) == 0 {
				t.Errorf("nothing came through the FIFO")
			} else if c.cassette {
				through := filepath.Join(d, "through-fifo.cassette")
				os.WriteFile(through, b, 0o600)
				assertWhole(t, through)
			}

			// A symlink: still a symlink, its target written.
			os.Mkdir(filepath.Join(d, "real"), 0o755)
			real := filepath.Join(d, "real", "target")
			os.WriteFile(real, []byte("old"), 0o600)
			link := filepath.Join(d, "link")
			os.Symlink("real/target", link)
			if r := run(t, d, "", append([]string{rp}, c.args(link)...)...); r.code != 0 {
				t.Errorf("symlink: exit %d\n%s", r.code, r.stderr)
			}
			if lst, _ := os.Lstat(link); lst.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the symlink became %v", lst.Mode())
			}
			if bytes.Equal(fileBytes(t, real), []byte("old")) {
				t.Errorf("the symlink's target was not written")
			} else if c.cassette {
				assertWhole(t, real)
			}

			// Devices made here: /dev/null-like stays a device; a
			// /dev/full-like one is exit 125, one line, still a device.
			if null := filepath.Join(d, "null"); makeNode(t, null, 3) {
				if r := run(t, d, "", append([]string{rp}, c.args(null)...)...); r.code != 0 {
					t.Errorf("null device: exit %d\n%s", r.code, r.stderr)
				}
				if !isCharDev(null) {
					t.Errorf("the null device was replaced")
				}
				full := filepath.Join(d, "full")
				makeNode(t, full, 7)
				r := run(t, d, "", append([]string{rp}, c.args(full)...)...)
				if r.code != ExitInternal {
					t.Errorf("full device: exit %d, want %d\n%s", r.code, ExitInternal, r.stderr)
				}
				assertOneLine(t, "full device", r.stderr, "no space left on device")
				if !isCharDev(full) {
					t.Errorf("the full device was replaced")
				}
			}

			// A read-only directory: the target is untouched, one line,
			// exit 125. Root ignores directory modes, so the command runs
			// as nobody when the tests run as root.
			ro := filepath.Join(d, "ro")
			os.Mkdir(ro, 0o755)
			target := filepath.Join(ro, "out")
			os.WriteFile(target, []byte("the only copy"), 0o644)
			os.Chmod(ro, 0o555)
			defer os.Chmod(ro, 0o755)
			if r, ok := runAsNobody(t, d, append([]string{rp}, c.args(target)...)...); ok {
				if r.code != ExitInternal {
					t.Errorf("read-only dir: exit %d, want %d\n%s", r.code, ExitInternal, r.stderr)
				}
				assertOneLine(t, "read-only dir", r.stderr, "left as it was")
			}
			if !bytes.Equal(fileBytes(t, target), []byte("the only copy")) {
				t.Errorf("read-only dir: the target changed")
			}
			_ = want
		})
	}
}

// runAsNobody runs argv as uid/gid 65534 when the tests run as root (so
// that file modes apply), else as is. ok is false when that cannot be done
// (the test binary is not reachable by nobody), said in the log.
func runAsNobody(t *testing.T, dir string, argv ...string) (runResult, bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		return run(t, dir, "", argv...), true
	}
	// nobody must reach the binary: a copy named rpctap (testscript runs
	// the command named by argv[0]) in a directory anyone can search.
	bin, err := os.MkdirTemp("", "rpctap-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(bin)
	os.Chmod(bin, 0o755)
	self, _ := os.Executable()
	exe := filepath.Join(bin, "rpctap")
	if b, err := os.ReadFile(self); err != nil || os.WriteFile(exe, b, 0o755) != nil {
		t.Logf("read-only directory as nobody not covered: cannot copy %s", self)
		return runResult{}, false
	}
	cmd := exec.Command(exe, argv[1:]...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Logf("read-only directory as nobody not covered: %v", err)
		return runResult{}, false
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v as nobody did not finish", argv)
	}
	if strings.Contains(errb.String(), "permission denied") && cmd.ProcessState.ExitCode() == 126 {
		t.Logf("read-only directory as nobody not covered: %s", errb.String())
		return runResult{}, false
	}
	return runResult{out.String(), errb.String(), cmd.ProcessState.ExitCode()}, true
}

// TestKilledWriterLeavesTarget: shrink killed (SIGKILL) in the middle of
// its runs leaves the -o target byte for byte as it was.
func TestKilledWriterLeavesTarget(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	target := filepath.Join(dir, "keep.cassette")
	os.WriteFile(target, []byte("the only copy"), 0o600)
	// Fails while session/prompt is kept: a dozen runs of 0.3s or more.
	test := `sleep 0.3; if rpctap cat "$RPCTAP_CASSETTE" | grep -q session/prompt; then exit 1; fi`
	cmd := exec.Command(rp, "shrink", "-o", target, "--test", test, demo)
	// SIGKILL leaves shrink's work directory behind: in the test's own
	// directory, not one more rpctap-shrink-* in /tmp per run.
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("shrink finished before it was killed (%v): make the runs slower", cmd.ProcessState)
	}
	if !bytes.Equal(fileBytes(t, target), []byte("the only copy")) {
		t.Fatal("the target changed")
	}
}

// TestNoReplacingOriginals: a damaged cassette is never replaced by a copy
// of what could be read of it (normalize IN IN), and -o naming the input
// through a symlink is refused like -o naming it directly.
func TestNoReplacingOriginals(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	b := fileBytes(t, demo)
	b[len(b)/2] ^= 4
	damaged := filepath.Join(dir, "damaged.cassette")
	os.WriteFile(damaged, b, 0o600)
	r := run(t, dir, "", rp, "normalize", damaged, damaged)
	if r.code != ExitInput || !strings.Contains(r.stderr, "not replacing it") || !bytes.Equal(fileBytes(t, damaged), b) {
		t.Errorf("normalize IN IN of a damaged cassette: exit %d\n%s", r.code, r.stderr)
	}
	link := filepath.Join(dir, "link.cassette")
	os.Symlink("demo.cassette", link)
	before := fileBytes(t, demo)
	for _, args := range [][]string{
		{"shrink", "-o", link, "--test", "exit 1", demo},
		{"export", "--format", "har", "-o", link, demo},
	} {
		r := run(t, dir, "", append([]string{rp}, args...)...)
		if r.code != ExitUsage || !bytes.Equal(fileBytes(t, demo), before) {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
}

// TestKnownCheckCodes: every code docs/protocols.md lists is one shrink
// --check takes; a code outside every family is refused.
func TestKnownCheckCodes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocols.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?m)^\\| `([a-z0-9]+\\.[a-z0-9.-]+)`")
	codes := re.FindAllStringSubmatch(string(b), -1)
	if len(codes) < 40 {
		t.Fatalf("found %d codes in docs/protocols.md", len(codes))
	}
	for _, m := range codes {
		if !knownCheckCode(m[1]) {
			t.Errorf("shrink --check refuses %s, which docs/protocols.md lists", m[1])
		}
	}
	for _, bad := range []string{"unknown-response-id", "sesion.unknown-response-id", "no.such-code", "session.", "Session.Unanswered"} {
		if knownCheckCode(bad) {
			t.Errorf("knownCheckCode(%q) = true", bad)
		}
	}
}

// TestVerifyUpdateThroughSymlink: --update of a symlinked cassette writes
// the file it points at (the link stays a link) and leaves no temporary
// file beside either.
func TestVerifyUpdateThroughSymlink(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demoCassette(t, dir)
	os.Mkdir(filepath.Join(dir, "store"), 0o755)
	real := filepath.Join(dir, "store", "ref.cassette")
	os.Rename(filepath.Join(dir, "demo.cassette"), real)
	link := filepath.Join(dir, "ref.cassette")
	os.Symlink("store/ref.cassette", link)
	before := fileBytes(t, real)
	if r := run(t, dir, "", rp, "verify", "--update", link, "--", rp, "demo-agent"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if lst, _ := os.Lstat(link); lst.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the symlink became %v", lst.Mode())
	}
	if bytes.Equal(fileBytes(t, real), before) {
		t.Error("the cassette behind the link was not updated")
	}
	assertWhole(t, real)
	for _, d := range []string{dir, filepath.Join(dir, "store")} {
		if m, _ := filepath.Glob(filepath.Join(d, ".*")); len(m) > 0 {
			t.Errorf("temporary files left: %v", m)
		}
	}
}

// TestKilledDemoLeavesTarget: `rpctap demo` records beside its target and
// renames only a complete session into place, so a demo killed mid-session
// (its whole process group, SIGKILL) leaves the earlier demo recording as it
// was, and SIGTERM to rpctap alone leaves no temporary file behind. (After
// SIGKILL the sink, which survives its tap by design, finishes the hidden
// temporary recording; nothing can remove it then.)
func TestKilledDemoLeavesTarget(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "demo.cassette")
	if r := run(t, dir, "", rp, "demo", "-q", "--delay", "0", "-o", target); r.code != 0 {
		t.Fatalf("demo: exit %d\n%s", r.code, r.stderr)
	}
	before := fileBytes(t, target)
	temps := func() []string {
		left, _ := filepath.Glob(filepath.Join(dir, ".demo.cassette.rpctap-tmp-*"))
		return left
	}
	var afterKill []string
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		if sig == syscall.SIGTERM {
			afterKill = temps()
		}
		cmd := exec.Command(rp, "demo", "-q", "--delay", "400ms", "-o", target)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		if sig == syscall.SIGKILL {
			syscall.Kill(-cmd.Process.Pid, sig)
		} else {
			cmd.Process.Signal(sig)
		}
		cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("%v: demo finished before it was killed (%v): make the session slower", sig, cmd.ProcessState)
		}
		if !bytes.Equal(fileBytes(t, target), before) {
			t.Fatalf("%v: the earlier demo recording changed", sig)
		}
	}
	// The recorder of the SIGTERM run ends when its stdin closes; give it
	// the time to, then no temporary file may remain.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := temps()
		if len(left) <= len(afterKill) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("temporary files left: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestShrinkTermEndsTestCommand: SIGTERM to shrink alone (a CI timeout,
// kill PID) also ends the test command it is running, with everything that
// command started, instead of leaving it to run on after shrink is gone.
func TestShrinkTermEndsTestCommand(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	started := filepath.Join(dir, "started")
	marker := filepath.Join(dir, "still-running")
	// The first run (the preflight on the whole cassette) says it started,
	// then a grandchild outlives a plain kill of sh unless its group ends.
	test := `touch ` + started + `; (sleep 2; touch ` + marker + `) & wait`
	cmd := exec.Command(rp, "shrink", "-o", filepath.Join(dir, "min.cassette"), "--test", test, demo)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if i == 100 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the test command never ran")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("shrink did not die of SIGTERM: %v", cmd.ProcessState)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the test command's child ran on after shrink was terminated")
	}
}

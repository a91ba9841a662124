package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Found by trying issue 20's writers as a user would (the qa round).

// TestShrinkUnwritableOutputFirst: an -o that can never be written is one
// line and exit 125 before the first run, not after a shrink that may have
// taken an hour.
func TestShrinkUnwritableOutputFirst(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	// A regular file where the directory of -o should be: even root
	// cannot make that directory.
	notDir := filepath.Join(dir, "plain")
	os.WriteFile(notDir, []byte("x"), 0o600)
	ran := filepath.Join(dir, "ran")
	r := run(t, dir, "", rp, "shrink", "-o", filepath.Join(notDir, "out.cassette"),
		"--test", "touch "+ran+"; exit 1", demo)
	if r.code != ExitInternal {
		t.Errorf("exit %d, want %d\n%s", r.code, ExitInternal, r.stderr)
	}
	assertOneLine(t, "unwritable -o", r.stderr, "cannot write")
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the failure check ran before shrink found that -o cannot be written")
	}
	// -o naming a directory: the same, before the runs.
	r = run(t, dir, "", rp, "shrink", "-o", dir, "--test", "touch "+ran+"; exit 1", demo)
	if r.code != ExitInternal {
		t.Errorf("-o DIR: exit %d, want %d\n%s", r.code, ExitInternal, r.stderr)
	}
	assertOneLine(t, "-o DIR", r.stderr, "is a directory")
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("-o DIR: the failure check ran before shrink found that -o is a directory")
	}
}

// TestShrinkFlagsAfterCassette: shrink with --test, --check or --parent
// runs no child command line of its own, so it takes files like check
// does and its flags may follow the cassette (README: "Commands that take
// files accept their flags after the files too"); with -- CMD it keeps
// verify's rule (flags before the cassette).
func TestShrinkFlagsAfterCassette(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	stray := strayCassette(t, dir)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"test", []string{demo, "--test", "exit 1", "-o", filepath.Join(dir, "test.cassette")}},
		{"check", []string{stray, "-o", filepath.Join(dir, "check.cassette"), "--check", "session.unknown-response-id"}},
	} {
		r := run(t, dir, "", append([]string{rp, "shrink", "-q"}, c.args...)...)
		if r.code != 0 {
			t.Errorf("%s: exit %d\n%s", c.name, r.code, r.stderr)
			continue
		}
		assertWhole(t, filepath.Join(dir, c.name+".cassette"))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{demo, "--test", "exit 1", "--bogus"}, "unknown flag: --bogus"},
		// With -- CMD, verify's rule: flags before the cassette.
		{[]string{demo, "--timeout", "1s", "--", "cat"}, "flags go before the cassette"},
		{[]string{demo, "--test", "exit 1", "cat"}, "flags go before the cassette"},
	} {
		r := run(t, dir, "", append([]string{rp, "shrink"}, c.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", c.args, r.code, ExitUsage, c.want, r.stderr)
		}
	}
}

// TestInterruptedWriterLeavesNothing: Ctrl-C (SIGINT) or SIGTERM in the
// middle of a command that writes a file leaves the target byte for byte
// as it was and no temporary file beside it or in $TMPDIR, and the
// command still dies of the signal.
func TestInterruptedWriterLeavesNothing(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		args func(target string) []string
	}{
		{"verify-update-term", syscall.SIGTERM, func(target string) []string {
			return []string{"verify", "--update", target, "--", rp, "demo-agent", "--delay", "200ms"}
		}},
		{"verify-update-int", syscall.SIGINT, func(target string) []string {
			return []string{"verify", "--update", target, "--", rp, "demo-agent", "--delay", "200ms"}
		}},
		{"shrink-term", syscall.SIGTERM, func(target string) []string {
			// Fails while session/prompt is kept: a dozen runs of 0.3s or more.
			return []string{"shrink", "-o", target, "--test",
				`sleep 0.3; if rpctap cat "$RPCTAP_CASSETTE" | grep -q session/prompt; then exit 1; fi`, demo}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := filepath.Join(dir, c.name)
			tmp := filepath.Join(d, "tmp")
			os.MkdirAll(tmp, 0o700)
			target := filepath.Join(d, "ref.cassette")
			orig := fileBytes(t, demo)
			os.WriteFile(target, orig, 0o600)
			cmd := exec.Command(rp, c.args(target)...)
			cmd.Dir = d
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1200 * time.Millisecond)
			cmd.Process.Signal(c.sig)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("did not end after %v", c.sig)
			}
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != c.sig {
				t.Fatalf("ended with %v, want death by %v (finished before the signal? make it slower)\n%s", cmd.ProcessState, c.sig, errb.String())
			}
			if !bytes.Equal(fileBytes(t, target), orig) {
				t.Errorf("the target changed")
			}
			time.Sleep(100 * time.Millisecond)
			for _, where := range []string{d, tmp} {
				ents, _ := os.ReadDir(where)
				for _, e := range ents {
					if n := e.Name(); n != "ref.cassette" && n != "tmp" {
						t.Errorf("left behind in %s: %s", where, n)
					}
				}
			}
		})
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

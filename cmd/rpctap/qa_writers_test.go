package main

import (
	"os"
	"path/filepath"
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

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// realVerifyTimeout is verify's --timeout against a real peer in the tests.
// verify's default (5s) is how long a user waits for a frame the child owes;
// in `go test ./...` on 2 cores a node server or debugpy beside a dozen
// other test binaries was seen to take longer than that to answer its
// first request (server/discover, the initialized event), which verify
// rightly reports as a missing frame. The tests judge the protocol, not the
// machine's load, so they give a real peer 30s.
const realVerifyTimeout = "30s"

// verifyReal runs `rpctap verify --timeout 30s CASSETTE -- CHILD...` once.
//
// lldb-vscode 14 (Debian's lldb) aborts now and then while it handles
// `disconnect` (SIGABRT before it answers; 1 run in 10 to 1 in 100, more
// often under load, never reproduced outside a loaded machine). verify is
// right to call that a crash, so this helper does not hide it: it tries
// such a run once more, logs the first one, and fails when the adapter
// aborts twice in a row. Every other result is returned as it is.
func verifyReal(t *testing.T, dir, rp, cas string, child ...string) runResult {
	t.Helper()
	argv := append([]string{rp, "verify", "--timeout", realVerifyTimeout, cas, "--"}, child...)
	v := run(t, dir, "", argv...)
	if v.code != 0 && lldbAbort(child, v.stderr+v.stdout) {
		t.Logf("lldb-vscode aborted on its own (SIGABRT), a known crash of the adapter; one more run:\n%s%s", v.stdout, v.stderr)
		v = run(t, dir, "", argv...)
	}
	return v
}

// lldbAbort reports whether child is an lldb debug adapter and verify's
// report says it died of SIGABRT.
func lldbAbort(child []string, report string) bool {
	return len(child) > 0 && strings.HasPrefix(filepath.Base(child[0]), "lldb-") &&
		strings.Contains(report, "the child died of SIGABRT")
}

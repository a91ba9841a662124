package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/internal/testpeers"
)

// debugSession records testpeer's dap-debug (a development tool: breakpoint,
// stop, threads, stackTrace, scopes, variables, continue) driving the
// adapter argv on program, then runs verify against the same adapter
// peerRuns() times and replay --strict under the same tool, and fails
// unless every run passes and the tool saw the same session from the
// replay as from the adapter.
func debugSession(t *testing.T, dir, program, source, line string, adapter []string) {
	t.Helper()
	rp := realPeersRpctap(t)
	peer := testpeers.Tool(t, "testpeer")
	cas := filepath.Join(dir, "debug.cassette")
	tool := []string{peer, "dap-debug", program, source, line}
	live := testpeers.Record(t, rp, dir, cas, "", 60*time.Second, tool, adapter...)
	if !strings.Contains(live, "variables: ") || !strings.Contains(live, "disconnect: success=true") {
		t.Fatalf("the debug session did not run through rpctap record:\n%s", live)
	}
	for i := 0; i < peerRuns(); i++ {
		v := verifyReal(t, dir, rp, cas, adapter...)
		if v.code != 0 || !strings.Contains(v.stdout, "rpctap verify: ok:") {
			t.Fatalf("verify run %d of %d: exit %d\n%s%s", i+1, peerRuns(), v.code, v.stdout, v.stderr)
		}
	}
	rep := run(t, dir, "", append(tool, rp, "replay", "--strict", cas)...)
	if rep.code != 0 || rep.stdout != live {
		t.Errorf("the tool against replay --strict (exit %d):\n%s\nagainst the adapter:\n%s\n%s", rep.code, rep.stdout, live, rep.stderr)
	}
}

// TestDAPLLDBThreadIDs: lldb-vscode (Debian's lldb) puts the debuggee's OS
// thread id in threadId and threads[].id, different every run. verify must
// learn it from the live adapter's stopped event and send it back in
// stackTrace and continue (issue 21 item 3: it failed 4 of 4 with
// "/body/threadId: 21807 -> 22325", then stackTrace failed).
func TestDAPLLDBThreadIDs(t *testing.T) {
	t.Parallel()
	adapter := testpeers.LLDBDAP(t)
	cc := testpeers.CC(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\n\nstatic int add(int a, int b) {\n\tint sum = a + b;\n\treturn sum;\n}\n\nint main(void) {\n\tint r = add(40, 2);\n\tprintf(\"result %d\\n\", r);\n\treturn 0;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command(cc, "-g", "-O0", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	debugSession(t, dir, prog, src, "5", []string{adapter})
}

// TestDAPDebugpyOutput: debugpy's adapter (Debian's python3-debugpy) cuts
// the debuggee's stdout into output events as its reads fall ("result 42\n"
// in one run, "result" and " 42\n" in another). verify compares each
// category's text, not the cutting (issue 21 item 4: it failed about 1 run
// in 10, here 8 in 10, with `/body/output: "result" -> "result 42\ndone\n"`
// and unexpected output events). RPCTAP_PEER_RUNS=10 runs verify 10 times.
func TestDAPDebugpyOutput(t *testing.T) {
	t.Parallel()
	adapter := testpeers.Debugpy(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "prog.py")
	if err := os.WriteFile(src, []byte("def add(a, b):\n    s = a + b\n    return s\n\n\nr = add(40, 2)\nprint(\"result\", r)\nprint(\"done\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	debugSession(t, dir, src, src, "3", adapter)
}

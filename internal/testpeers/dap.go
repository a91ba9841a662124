package testpeers

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// The real debug adapters come from Debian's packages (.ci/run installs
// them): lldb-vscode (renamed lldb-dap in LLVM 18) from `lldb`, and debugpy
// from `python3-debugpy`.

// LLDBDAP returns the path of LLVM's debug adapter: lldb-dap or
// lldb-vscode, plain or versioned (lldb-vscode-14 in Debian 12), the
// newest found in PATH or /usr/bin and /usr/lib/llvm-*/bin. It skips,
// saying how to install it, when there is none (and with -short).
func LLDBDAP(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs lldb's debug adapter; skipped with -short")
	}
	for _, name := range []string{"lldb-dap", "lldb-vscode"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	var found []string
	for _, pat := range []string{"/usr/bin/lldb-dap-*", "/usr/bin/lldb-vscode-*", "/usr/lib/llvm-*/bin/lldb-dap", "/usr/lib/llvm-*/bin/lldb-vscode"} {
		m, _ := filepath.Glob(pat)
		found = append(found, m...)
	}
	sort.Strings(found)
	for i := len(found) - 1; i >= 0; i-- {
		if fi, err := os.Stat(found[i]); err == nil && fi.Mode()&0o111 != 0 {
			return found[i]
		}
	}
	t.Skip("no lldb-dap or lldb-vscode: install Debian's lldb package (apt-get install lldb) to run it")
	return ""
}

// CC returns the path of the system C compiler, for a debuggee built with
// cc -g. It skips, saying how to install one, when there is none.
func CC(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no C compiler (cc): install Debian's gcc package (apt-get install gcc) to run it")
	return ""
}

// DebugpyPython is the interpreter of Debian's python3-debugpy. The first
// python3 in PATH may be another installation (a pyenv shim) without it.
const DebugpyPython = "/usr/bin/python3"

// Debugpy returns the argv that runs debugpy's debug adapter
// (DebugpyPython -m debugpy.adapter). It skips, saying how to install it,
// when that python cannot import debugpy (and with -short).
func Debugpy(t testing.TB) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs debugpy's debug adapter; skipped with -short")
	}
	if err := exec.Command(DebugpyPython, "-c", "import debugpy.adapter").Run(); err != nil {
		t.Skipf("%s cannot import debugpy: install Debian's python3-debugpy package (apt-get install python3-debugpy) to run it", DebugpyPython)
	}
	return []string{DebugpyPython, "-m", "debugpy.adapter"}
}

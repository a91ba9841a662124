// Package testpeers gives tests the real peer programs they run rpctap
// between: the ACP and MCP Go SDK examples (go.mod tool entries) and
// replay's testpeer. Each is built once per test binary, whichever tests
// ask for it, into one directory under the name the catalogue gives it.
package testpeers

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Programs maps the name a peer program is built under to its package.
var Programs = map[string]string{
	"acpclient": "github.com/coder/acp-go-sdk/example/client",
	"acpagent":  "github.com/coder/acp-go-sdk/example/agent",
	"mcpclient": "github.com/modelcontextprotocol/go-sdk/examples/client/listfeatures",
	"mcpserver": "github.com/modelcontextprotocol/go-sdk/examples/server/everything",
	"testpeer":  "github.com/rpctap/rpctap/replay/internal/testpeer",
	// record --deep's pair: an ACP agent (ACP Go SDK) that starts the
	// stdio MCP servers it is handed with the MCP Go SDK's client, and an
	// ACP client that hands it some.
	"deepagent":  "github.com/rpctap/rpctap/internal/testpeers/deepagent",
	"deepclient": "github.com/rpctap/rpctap/internal/testpeers/deepclient",
}

var (
	mu     sync.Mutex
	dir    string
	dirErr error
	built  = map[string]*build{}
)

type build struct {
	once sync.Once
	err  error
}

// Tool builds the named program (a key of Programs) once per test binary
// and returns its path. It skips the test with -short.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds peer programs; skipped with -short")
	}
	pkg, ok := Programs[name]
	if !ok {
		t.Fatalf("testpeers: no program %q", name)
	}
	mu.Lock()
	if dir == "" && dirErr == nil {
		dir, dirErr = os.MkdirTemp("", "rpctap-testpeers-")
	}
	d, err := dir, dirErr
	b := built[name]
	if b == nil {
		b = &build{}
		built[name] = b
	}
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(d, name)
	b.once.Do(func() {
		if o, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, o)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return out
}

// Dir builds every program in Programs (once per test binary) and returns
// the directory holding them, each under its name. It skips the test with
// -short.
func Dir(t testing.TB) string {
	t.Helper()
	names := make([]string, 0, len(Programs))
	for name := range Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	var p string
	for _, name := range names {
		p = Tool(t, name)
	}
	return filepath.Dir(p)
}

// RunFor starts cmd and waits for it at most d. Past d it kills the
// process, waits for it and reports finished false. err is the error from
// starting it; the exit status is left in cmd.ProcessState.
func RunFor(cmd *exec.Cmd, d time.Duration) (finished bool, err error) {
	if err := cmd.Start(); err != nil {
		return false, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return true, nil
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return false, nil
	}
}

// Record runs parent with `rpctap record -o cas -- child...` appended as
// the agent command it starts (rpctap is the path of the rpctap to run), in
// dir with stdin as its input, and returns what the run wrote to stdout and
// stderr together. It fails t when the run does not finish within d.
func Record(t testing.TB, rpctap, dir, cas, stdin string, d time.Duration, parent []string, child ...string) string {
	t.Helper()
	argv := append(append(append([]string{}, parent...), rpctap, "record", "-o", cas, "--"), child...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if finished, err := RunFor(cmd, d); err != nil {
		t.Fatal(err)
	} else if !finished {
		t.Fatalf("%v did not finish:\n%s", argv, out.String())
	}
	WaitFinished(t, rpctap, cas, 30*time.Second)
	return out.String()
}

// WaitFinished waits until the cassette at cas has its end record: a parent
// that SIGKILLs rpctap after its last reply (the ACP SDK example client)
// leaves the recorder process finishing the file a moment later. It asks
// `rpctap cat` (this package cannot import cassette, whose tests import
// it), and fails t after d. A cassette that never gets an end record (the
// recorder itself was killed) is the caller's to expect: it waits then.
func WaitFinished(t testing.TB, rpctap, cas string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		cmd := exec.Command(rpctap, "cat", "--format", "table", cas)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err == nil && !strings.Contains(errb.String(), "truncated") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no end record after %v: %s", cas, d, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package main

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/replay/replaytest"
)

// ciStep is one step of the workflow in docs/ci.md.
type ciStep struct {
	name, run, path string
}

// ciWorkflow reads the YAML block of docs/ci.md: the job's env and its
// steps' name, run (a line, or a "|" block) and with.path. It reads the
// few shapes that workflow uses, not YAML in general; a step it cannot
// read fails the test.
func ciWorkflow(t *testing.T, doc string) (env map[string]string, steps []ciStep) {
	t.Helper()
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/ci.md has no yaml block")
	}
	env = map[string]string{}
	lines := strings.Split(m[1], "\n")
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	inEnv := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		tl := strings.TrimSpace(l)
		switch {
		case tl == "env:":
			inEnv = true
			continue
		case inEnv && indent(l) == 6 && !strings.HasPrefix(tl, "#"):
			k, v, _ := strings.Cut(tl, ":")
			env[k] = strings.TrimSpace(v)
			continue
		case inEnv && tl != "" && !strings.HasPrefix(tl, "#"):
			inEnv = false
		}
		if strings.HasPrefix(tl, "- ") {
			steps = append(steps, ciStep{})
			tl = strings.TrimPrefix(tl, "- ")
		}
		if len(steps) == 0 {
			continue
		}
		s := &steps[len(steps)-1]
		switch {
		case strings.HasPrefix(tl, "name: "):
			s.name = strings.TrimPrefix(tl, "name: ")
		case strings.HasPrefix(tl, "path: "):
			s.path = strings.TrimPrefix(tl, "path: ")
		case tl == "run: |":
			base := indent(l)
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indent(lines[i+1]) > base) {
				i++
				s.run += strings.TrimPrefix(lines[i], strings.Repeat(" ", base+2)) + "\n"
			}
		case strings.HasPrefix(tl, "run: "):
			s.run = strings.TrimPrefix(tl, "run: ")
		}
	}
	return env, steps
}

// TestCIWorkflow runs the commands of the workflow docs/ci.md gives, as
// GitHub's runner runs a step (bash -eo pipefail), in a checkout whose
// committed cassette is a recording of the demo agent, with SERVER the demo
// agent. Installing rpctap (the test's rpctap is on PATH) and building the
// user's server are the two steps left out. The JUnit report the upload step
// names must be there. Then a cassette that breaks the protocol is
// committed too, and the check step must fail.
func TestCIWorkflow(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	env, steps := ciWorkflow(t, string(doc))
	if env["SERVER"] == "" {
		t.Fatalf("the workflow sets no SERVER: %v", env)
	}
	repo := t.TempDir()
	casDir := filepath.Join(repo, "testdata", "cassettes")
	os.MkdirAll(casDir, 0o755)
	rec := exec.Command("rpctap", "demo-client", "--", "rpctap", "record", "-q", "-o", filepath.Join(casDir, "demo.cassette"), "--", "rpctap", "demo-agent", "--delay", "0s")
	rec.Env = rpctapEnv()
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("recording the demo: %v\n%s", err, out)
	}
	skipped := map[string]bool{"Install rpctap": true, "Build the server under test": true}
	runSteps := func() (failed string, out string) {
		for _, s := range steps {
			if s.run == "" || skipped[s.name] {
				continue
			}
			cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.run)
			cmd.Dir = repo
			cmd.Env = append(rpctapEnv(), "SERVER=rpctap demo-agent")
			b, err := cmd.CombinedOutput()
			if err != nil {
				return s.name, string(b)
			}
		}
		return "", ""
	}
	var ran, report []string
	for _, s := range steps {
		if s.run != "" && !skipped[s.name] {
			ran = append(ran, s.name)
		}
		if s.path != "" {
			report = append(report, s.path)
		}
	}
	if strings.Join(ran, "|") != "Check the committed cassettes|Verify the server against each cassette" || len(report) != 1 {
		t.Fatalf("the workflow's steps changed: runs %q, uploads %q; update this test", ran, report)
	}
	if failed, out := runSteps(); failed != "" {
		t.Fatalf("step %q failed:\n%s", failed, out)
	}
	xmlReport, err := os.ReadFile(filepath.Join(repo, report[0]))
	if err != nil {
		t.Fatalf("the report the upload step names: %v", err)
	}
	var junit struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []struct {
			Name     string `xml:"name,attr"`
			Failures int    `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(xmlReport, &junit); err != nil || len(junit.Suites) != 1 || junit.Suites[0].Failures != 0 {
		t.Errorf("JUnit report: %v %+v\n%s", err, junit, xmlReport)
	}

	// A cassette whose server answers with a broken JSON-RPC version: the
	// check step fails, and still writes its report.
	bad := replaytest.New("mcp").
		In(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`).
		Out(`{"jsonrpc":"1.0","id":1,"result":{}}`).End()
	if err := replaytest.WriteFile(filepath.Join(casDir, "broken.cassette"), bad, true); err != nil {
		t.Fatal(err)
	}
	failed, out := runSteps()
	if failed != "Check the committed cassettes" {
		t.Errorf("with a broken cassette, the failing step is %q, want the check:\n%s", failed, out)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, report[0])); !strings.Contains(string(b), "broken.cassette") || !strings.Contains(string(b), "<failure") {
		t.Errorf("the report does not name the broken cassette's failure:\n%s", b)
	}
}

// The Go example in docs/ci.md is the test the project runs.
func TestCIDocGoExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(string(doc))
	src, err := os.ReadFile(filepath.Join("..", "..", "replay", "replaytest", "ci_example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if m == nil || m[1] != string(src) {
		t.Error("docs/ci.md's Go example differs from replay/replaytest/ci_example_test.go")
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/internal/testpeers"
)

// junitDoc is the JUnit XML shape CI systems read.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Suites   []struct {
		Name      string `xml:"name,attr"`
		Tests     int    `xml:"tests,attr"`
		Failures  int    `xml:"failures,attr"`
		Testcases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestCheckAssertionsMCP: CI assertions and a tool-list baseline on a
// session recorded from the MCP Go SDK's listfeatures client and everything
// server, in text, JSON and JUnit.
func TestCheckAssertionsMCP(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "mcp.cassette")
	testpeers.Record(t, rp, dir, cas, "", 60*time.Second, []string{testpeers.Tool(t, "mcpclient")}, testpeers.Tool(t, "mcpserver"))

	ok := run(t, dir, "", rp, "check", "--expect-method", "tools/list", "--expect-method", "prompts/list",
		"--forbid-method", "sampling/createMessage", "--max-latency", "tools/list=30s", cas)
	if ok.code != 0 {
		t.Fatalf("assertions that hold: exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}

	base := filepath.Join(dir, "tools.baseline")
	if r := run(t, dir, "", rp, "check", "--write-baseline", base, cas); r.code != 0 || !strings.Contains(r.stderr, "wrote the baseline") {
		t.Fatalf("--write-baseline: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var bf baselineFile
	b, _ := os.ReadFile(base)
	if err := json.Unmarshal(b, &bf); err != nil || bf.Protocol != "mcp" || bf.Items["tool:greet"] == nil || bf.Items["capabilities"] == nil {
		t.Fatalf("baseline: %v\n%s", err, b)
	}
	if r := run(t, dir, "", rp, "check", "--baseline", base, cas); r.code != 0 {
		t.Fatalf("the same session against its own baseline: exit %d\n%s", r.code, r.stdout)
	}
	// The server "changes": one tool gone, one schema changed, one added.
	delete(bf.Items, "tool:greet")
	bf.Items["tool:ping"] = json.RawMessage(`{"inputSchema":{"type":"object","properties":{"x":{"type":"number"}}}}`)
	bf.Items["tool:retired"] = json.RawMessage(`{}`)
	b, _ = json.Marshal(bf)
	drifted := filepath.Join(dir, "old.baseline")
	os.WriteFile(drifted, b, 0o644)

	bad := run(t, dir, "", rp, "check", "--expect-method", "tools/call", "--forbid-method", "tools/list",
		"--max-latency", "tools/list=1ns", "--baseline", drifted, cas)
	if bad.code != ExitFindings {
		t.Fatalf("failing assertions: exit %d\n%s%s", bad.code, bad.stdout, bad.stderr)
	}
	for _, want := range []string{"assert.expect-method", "tools/call never appears", "assert.forbid-method", "assert.max-latency",
		"tools/list over 1ns", "assert.baseline", "added tool:greet", "changed tool:ping", "removed tool:retired"} {
		if !strings.Contains(bad.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, bad.stdout)
		}
	}

	// JUnit: it parses, and the counts say what failed.
	j := run(t, dir, "", rp, "check", "--format", "junit", "--expect-method", "tools/list", "--expect-method", "tools/call",
		"--baseline", drifted, cas, filepath.Join(dir, "missing.cassette"))
	var doc junitDoc
	if err := xml.Unmarshal([]byte(j.stdout), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, j.stdout)
	}
	if j.code != ExitInput || len(doc.Suites) != 2 {
		t.Fatalf("exit %d, %d suites:\n%s", j.code, len(doc.Suites), j.stdout)
	}
	s := doc.Suites[0]
	failed := map[string]bool{}
	for _, tc := range s.Testcases {
		if tc.Failure != nil {
			failed[tc.Name] = true
		}
	}
	if !failed["expect-method tools/call"] || failed["expect-method tools/list"] || !failed["baseline "+drifted] || s.Failures != len(failed) {
		t.Errorf("suite %s: %d tests, %d failures: %v\n%s", s.Name, s.Tests, s.Failures, failed, j.stdout)
	}
	if m := doc.Suites[1]; m.Failures != 1 || m.Testcases[0].Failure == nil || m.Testcases[0].Failure.Type != "cassette.unreadable" {
		t.Errorf("the missing file's suite: %+v", m)
	}
	if doc.Tests != doc.Suites[0].Tests+doc.Suites[1].Tests || doc.Failures != doc.Suites[0].Failures+doc.Suites[1].Failures {
		t.Errorf("totals %d/%d do not add up", doc.Tests, doc.Failures)
	}
}

// TestCheckAssertionFlags: bad assertion flags are one line and exit 2.
func TestCheckAssertionFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"check", "--max-latency", "tools/call", "x.cassette"}, "--max-latency takes METHOD=DURATION"},
		{[]string{"check", "--max-latency", "tools/call=soon", "x.cassette"}, "--max-latency takes METHOD=DURATION"},
		{[]string{"check", "--write-baseline", "b", "x.cassette", "y.cassette"}, "--write-baseline takes the surface of one cassette"},
		{[]string{"check", "--format", "xml", "x.cassette"}, "--format must be text, json or junit"},
	} {
		code, _, errs := runMain(c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, %q", c.args, code, errs)
		}
	}
	dir := t.TempDir()
	notBase := filepath.Join(dir, "nb.json")
	os.WriteFile(notBase, []byte(`{"tools":[]}`), 0o644)
	cas := filepath.Join(dir, "d.cassette")
	if r := run(t, dir, "", rpctapPath(t), "demo", "-q", "-o", cas); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if code, _, errs := runMain("check", "--baseline", notBase, cas); code != ExitInput || !strings.Contains(errs, "not an rpctap baseline") {
		t.Errorf("a foreign baseline: exit %d %q", code, errs)
	}
	// The demo is ACP: its baseline is the agent's capabilities.
	base := filepath.Join(dir, "acp.baseline")
	if code, _, errs := runMain("check", "--write-baseline", base, cas); code != 0 {
		t.Fatal(errs)
	}
	if b, _ := os.ReadFile(base); !strings.Contains(string(b), `"agentCapabilities"`) || !strings.Contains(string(b), `"protocol": "acp"`) {
		t.Errorf("ACP baseline:\n%s", b)
	}
}

// TestJUnitXMLAsEncodingXML: the hand-written JUnit writer writes what
// encoding/xml's Encoder (Indent "", "  ") writes for the same document,
// on text that needs every kind of escape: markup characters, quotes,
// newlines, tabs, CRs, control characters, invalid UTF-8, U+FFFD,
// characters outside the BMP, and empty suites and cases.
func TestJUnitXMLAsEncodingXML(t *testing.T) {
	nasty := "a<b>&\"c'\td\r\ne\x01f\x7f\xff g\uFFFD h\U0001F600 i\u2028 \x00]]>"
	docs := []junitSuites{
		{Name: "rpctap check"},
		{Name: "rpctap check", Suites: []junitSuite{{Name: "empty.cassette"}}},
		{Name: nasty, Tests: 3, Failures: 1, Suites: []junitSuite{
			{Name: "x.cassette", Tests: 3, Failures: 1, Testcases: []junitCase{
				{Name: "readable cassette", Classname: "rpctap.check.mcp"},
				{Name: nasty, Classname: nasty, Failure: &junitFailure{Message: nasty, Type: "mcp.x", Text: "record 1 →: " + nasty + "\n"}},
				{Name: "w", Classname: "c", SystemOut: "warning: " + nasty},
				{Name: "both", Classname: "c", Failure: &junitFailure{}, SystemOut: "out"},
			}},
			{Name: "y.cassette"},
		}},
	}
	for i, doc := range docs {
		var want bytes.Buffer
		want.WriteString(xml.Header)
		enc := xml.NewEncoder(&want)
		enc.Indent("", "  ")
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		want.WriteString("\n")
		if got := doc.xml(); got != want.String() {
			t.Errorf("doc %d:\n got %q\nwant %q", i, got, want.String())
		}
	}
}

package testpeers

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// TestdataTraffic is the module's testdata/traffic: NAME.in (what the
// parent wrote) and NAME.out (what the child wrote) pairs that every clone
// has. Most are recorded from the SDK peers by TestFixtures (-update records
// them afresh); the hand-written ones are listed in handWritten.
func TestdataTraffic() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "traffic")
}

// handWritten names the fixtures written by hand from a protocol's
// documentation, for protocols whose real peer the tests cannot build.
var handWritten = map[string]bool{
	"pi-session":   true, // docs/protocols/pi.md: ids, queued id-less commands, a parse error, an unknown command
	"mcp-progress": true, // MCP 2025-11-25 progress: a tools/call with a progressToken and notifications/progress
}

// FixtureNames lists the pairs in testdata/traffic, sorted.
func FixtureNames() []string {
	files, _ := filepath.Glob(filepath.Join(TestdataTraffic(), "*.in"))
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".in"))
	}
	sort.Strings(names)
	return names
}

// Fixture returns the lines of testdata/traffic/NAME.{in,out}, line endings
// removed. A missing fixture fails the test: fixtures are part of the clone.
func Fixture(t testing.TB, name string) (in, out [][]byte) {
	t.Helper()
	dir := TestdataTraffic()
	return mustLines(t, filepath.Join(dir, name+".in")), mustLines(t, filepath.Join(dir, name+".out"))
}

// FixtureStrings is Fixture with the lines as strings.
func FixtureStrings(t testing.TB, name string) (in, out []string) {
	t.Helper()
	bin, bout := Fixture(t, name)
	return toStrings(bin), toStrings(bout)
}

// Capture is one traffic pair on disk.
type Capture struct {
	Name   string // e.g. "acp-go"
	In     string // path of NAME.in
	Out    string // path of NAME.out
	Shared bool   // from ../shared/traffic (third-party programs) rather than testdata/traffic
}

// Captures lists every traffic pair a test can read: the fixtures of
// testdata/traffic always, and the third-party captures of ../shared/traffic
// as extras when they are beside the checkout. Tests that walk "all the
// real traffic" use this, so that they run on a fresh clone too.
func Captures() []Capture {
	var cs []Capture
	for _, n := range FixtureNames() {
		d := TestdataTraffic()
		cs = append(cs, Capture{Name: n, In: filepath.Join(d, n+".in"), Out: filepath.Join(d, n+".out")})
	}
	if d := SharedTrafficDir(); d != "" {
		files, _ := filepath.Glob(filepath.Join(d, "*.in"))
		sort.Strings(files)
		for _, f := range files {
			n := strings.TrimSuffix(filepath.Base(f), ".in")
			cs = append(cs, Capture{Name: "shared/" + n, In: f, Out: filepath.Join(d, n+".out"), Shared: true})
		}
	}
	return cs
}

// SharedTrafficDir is ../shared/traffic beside the checkout (found from this
// file, so it does not depend on the test's package directory), or "" when
// it is not there.
func SharedTrafficDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "traffic")
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

// SharedTraffic returns the lines of a third-party capture pair from
// ../shared/traffic. It skips the test when they are not beside the
// checkout: use it only for extras next to a fixture-based test.
func SharedTraffic(t testing.TB, name string) (in, out [][]byte) {
	t.Helper()
	dir := SharedTrafficDir()
	if dir == "" {
		t.Skip("needs ../shared/traffic beside the checkout (an extra: the same test runs on testdata/traffic)")
	}
	return mustLines(t, filepath.Join(dir, name+".in")), mustLines(t, filepath.Join(dir, name+".out"))
}

// ReadLines splits a capture file into lines without their endings.
func ReadLines(t testing.TB, path string) [][]byte {
	t.Helper()
	return mustLines(t, path)
}

func mustLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return splitLines(b)
}

// splitLines cuts b at "\n", dropping a "\r" before it; a last line without
// a newline is kept.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, bytes.Clone(b))
			break
		}
		out = append(out, bytes.Clone(bytes.TrimSuffix(b[:i], []byte("\r"))))
		b = b[i+1:]
	}
	return out
}

func toStrings(lines [][]byte) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

// CaptureFiles lists the .in and .out files of every pair Captures lists:
// testdata/traffic always, ../shared/traffic as extras when it is there.
func CaptureFiles() []string {
	var files []string
	for _, c := range Captures() {
		files = append(files, c.In, c.Out)
	}
	return files
}

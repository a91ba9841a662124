package testpeers

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TrafficDir is ../shared/traffic beside the checkout (found from this
// file, so it does not depend on the test's package directory), or "" when
// it is not there.
func TrafficDir() string {
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

// Traffic returns the lines of the capture pair name.in (what the parent
// wrote) and name.out (what the child wrote) from ../shared/traffic, line
// endings removed. It skips the test when they are not beside the checkout.
func Traffic(t testing.TB, name string) (in, out [][]byte) {
	t.Helper()
	dir := TrafficDir()
	if dir == "" {
		t.Skip("needs ../shared/traffic beside the checkout")
	}
	return trafficLines(t, filepath.Join(dir, name+".in")), trafficLines(t, filepath.Join(dir, name+".out"))
}

func trafficLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("needs %s beside the checkout: %v", path, err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TrafficStrings is Traffic with the lines as strings.
func TrafficStrings(t testing.TB, name string) (in, out []string) {
	t.Helper()
	bin, bout := Traffic(t, name)
	return toStrings(bin), toStrings(bout)
}

func toStrings(lines [][]byte) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

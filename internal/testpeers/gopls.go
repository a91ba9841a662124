package testpeers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// GoplsVersion is the language server the LSP tests run: a real,
// widely-used Content-Length peer that sends requests of its own
// (workspace/configuration, window/workDoneProgress/create) and $/progress.
const GoplsVersion = "v0.23.0"

var (
	goplsOnce sync.Once
	goplsPath string
	goplsErr  error
	goplsSkip bool
)

// Gopls returns the path of gopls GoplsVersion, built through the Go module
// proxy with `go install` the first time any test asks and kept in the user
// cache directory (rpctap-test/gopls-VERSION/gopls), so later runs and
// other test binaries reuse it. The test is skipped, saying why, when the
// module proxy cannot be reached; any other build failure fails it. It
// skips with -short.
func Gopls(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds gopls; skipped with -short")
	}
	goplsOnce.Do(func() { goplsPath, goplsSkip, goplsErr = buildGopls() })
	switch {
	case goplsSkip:
		t.Skipf("gopls %s cannot be built here, the Go module proxy is unreachable: %v", GoplsVersion, goplsErr)
	case goplsErr != nil:
		t.Fatalf("building gopls %s: %v", GoplsVersion, goplsErr)
	}
	return goplsPath
}

func buildGopls() (path string, skip bool, err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "rpctap-test", "gopls-"+GoplsVersion)
	path = filepath.Join(dir, "gopls")
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return path, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	// Install into a private directory, then rename into place: test
	// binaries of other packages may be building it at the same moment.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "install", "golang.org/x/tools/gopls@"+GoplsVersion)
	cmd.Dir = tmp // outside any module: go install pkg@version ignores it anyway
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		return "", unreachable(msg), fmt.Errorf("go install golang.org/x/tools/gopls@%s: %v\n%s", GoplsVersion, err, msg)
	}
	if err := os.Rename(filepath.Join(tmp, "gopls"), path); err != nil {
		return "", false, err
	}
	return path, false, nil
}

// unreachable reports whether go's output says the module proxy (or the
// network) could not be reached, rather than that the build broke.
func unreachable(out string) bool {
	for _, s := range []string{"dial tcp", "no such host", "connection refused", "i/o timeout", "proxyconnect",
		"network is unreachable", "TLS handshake timeout", "server misbehaving", "410 Gone", "403 Forbidden"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

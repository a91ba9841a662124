package testpeers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GoplsVersion is the language server the LSP tests run: a real,
// widely-used Content-Length peer that sends requests of its own
// (workspace/configuration, window/workDoneProgress/create) and $/progress.
const GoplsVersion = "v0.23.0"

var gopls = &cachedTool{name: "gopls", version: GoplsVersion, what: "gopls", build: buildGopls}

// Gopls returns the path of gopls GoplsVersion, built through the Go module
// proxy with `go install` the first time any test asks and kept in the user
// cache directory (rpctap-test/gopls-VERSION/gopls), so later runs and
// other test binaries reuse it. It skips when the module proxy cannot be
// reached (and with -short).
func Gopls(t testing.TB) string { return gopls.get(t) }

func buildGopls(tmp string) (string, bool, error) {
	out, unreachable, err := goCommand(tmp, "install", "golang.org/x/tools/gopls@"+GoplsVersion)
	if err != nil {
		return "", unreachable, fmt.Errorf("go install golang.org/x/tools/gopls@%s: %v\n%s", GoplsVersion, err, out)
	}
	return filepath.Join(tmp, "gopls"), false, nil
}

// goCommand runs go with args in dir, outside any module and workspace,
// installing into dir; unreachable says a failure was the module proxy's.
func goCommand(dir string, args ...string) (out string, unreachable bool, err error) {
	return runIn(dir, "go", args...)
}

func runIn(dir, name string, args ...string) (string, bool, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "GOWORK=off")
	b, err := cmd.CombinedOutput()
	out := strings.TrimSpace(string(b))
	if err != nil {
		return out, unreachable(out), err
	}
	return out, false, nil
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

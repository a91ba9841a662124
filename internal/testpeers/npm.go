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

// The npm packages the tests run as real peers, at the versions the tests
// were written against.
const (
	// ServerEverythingVersion is @modelcontextprotocol/server-everything:
	// an MCP server that asks the client for roots/list and, like most
	// Node servers, does not exit when its stdin closes (its parent ends
	// it with a signal).
	ServerEverythingVersion = "2026.8.31"
	// ACPSDKVersion is @agentclientprotocol/sdk, the last version whose
	// dist/examples holds the example agent and client.
	ACPSDKVersion = "1.9.0"
)

var (
	npmMu   sync.Mutex
	npmPkgs = map[string]*npmPackage{}
)

type npmPackage struct {
	once       sync.Once
	dir        string
	skip, fail string
}

// NPM returns the directory of the npm package name@version, installed with
// `npm install` the first time any test asks and kept in the user cache
// directory (rpctap-test/npm-NAME-VERSION/node_modules/NAME), so later runs
// and other test binaries reuse it. It skips, with one line saying how to
// get it, when node or npm is missing or the npm registry cannot be
// reached (and with -short); any other failure fails the test.
func NPM(t testing.TB, name, version string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("installs %s from npm; skipped with -short", name)
	}
	key := name + "@" + version
	npmMu.Lock()
	p := npmPkgs[key]
	if p == nil {
		p = &npmPackage{}
		npmPkgs[key] = p
	}
	npmMu.Unlock()
	p.once.Do(func() { p.dir, p.skip, p.fail = installNPM(name, version) })
	switch {
	case p.skip != "":
		t.Skip(p.skip)
	case p.fail != "":
		t.Fatal(p.fail)
	}
	return p.dir
}

func installNPM(name, version string) (dir, skip, fail string) {
	how := fmt.Sprintf("install Node.js and npm (apt-get install nodejs npm) with access to the npm registry to run it (npm install %s@%s)", name, version)
	for _, prog := range []string{"node", "npm"} {
		if _, err := exec.LookPath(prog); err != nil {
			return "", fmt.Sprintf("%s@%s needs %s, not found: %s", name, version, prog, how), ""
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	base := filepath.Join(cache, "rpctap-test", "npm-"+strings.NewReplacer("@", "", "/", "-").Replace(name)+"-"+version)
	pkg := filepath.Join(base, "node_modules", filepath.FromSlash(name))
	if _, err := os.Stat(filepath.Join(pkg, "package.json")); err == nil {
		return pkg, "", ""
	}
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", "", err.Error()
	}
	// Install into a private directory, then rename into place: test
	// binaries of other packages may be installing it at the same moment.
	tmp, err := os.MkdirTemp(filepath.Dir(base), "npm-install-")
	if err != nil {
		return "", "", err.Error()
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix", tmp, name+"@"+version)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		s := string(out)
		for _, net := range []string{"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "network", "E403", "E404"} {
			if strings.Contains(s, net) {
				return "", fmt.Sprintf("%s@%s cannot be installed here (npm registry unreachable): %s", name, version, how), ""
			}
		}
		return "", "", fmt.Sprintf("npm install %s@%s: %v\n%s", name, version, err, out)
	}
	if err := os.Rename(tmp, base); err != nil {
		if _, serr := os.Stat(filepath.Join(pkg, "package.json")); serr == nil {
			return pkg, "", "" // another test binary renamed its copy first
		}
		return "", "", err.Error()
	}
	return pkg, "", ""
}

// ServerEverything returns the argv that runs
// @modelcontextprotocol/server-everything over stdio (node and its
// dist/index.js), installing it through NPM.
func ServerEverything(t testing.TB) []string {
	t.Helper()
	dir := NPM(t, "@modelcontextprotocol/server-everything", ServerEverythingVersion)
	return []string{"node", filepath.Join(dir, "dist", "index.js"), "stdio"}
}

// ACPSDKExamples returns the dist/examples directory of
// @agentclientprotocol/sdk ACPSDKVersion (agent.js, client.js), installing
// it through NPM.
func ACPSDKExamples(t testing.TB) string {
	t.Helper()
	return filepath.Join(NPM(t, "@agentclientprotocol/sdk", ACPSDKVersion), "dist", "examples")
}

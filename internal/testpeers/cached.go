package testpeers

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// cachedTool is a program the tests build from the Go module proxy once
// per machine (gopls, an OpenTelemetry Collector) and keep in the user
// cache directory under rpctap-test/NAME-VERSION.
type cachedTool struct {
	name, version, what string
	// build makes the program in tmp (a fresh directory beside the cache
	// entry) and returns its path there; unreachable says a failure was
	// the module proxy's, not the build's.
	build func(tmp string) (path string, unreachable bool, err error)

	once sync.Once
	path string
	err  error
	skip bool
}

// get returns the program's path, building it the first time. The test is
// skipped, saying why, when the module proxy cannot be reached; any other
// failure fails it. It skips with -short.
func (c *cachedTool) get(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("builds %s; skipped with -short", c.what)
	}
	c.once.Do(func() { c.path, c.skip, c.err = c.load() })
	switch {
	case c.skip:
		t.Skipf("%s %s cannot be built here, the Go module proxy is unreachable: %v", c.what, c.version, c.err)
	case c.err != nil:
		t.Fatalf("building %s %s: %v", c.what, c.version, c.err)
	}
	return c.path
}

func (c *cachedTool) load() (string, bool, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "rpctap-test", c.name+"-"+c.version)
	path := filepath.Join(dir, c.name)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return path, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	// Build in a private directory, then rename into place: test binaries
	// of other packages may be building it at the same moment.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	built, unreachable, err := c.build(tmp)
	if err != nil {
		return "", unreachable, err
	}
	if err := os.Rename(built, path); err != nil {
		return "", false, err
	}
	return path, false, nil
}

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

// CollectorVersion is the OpenTelemetry Collector the export tests send
// spans to: a distribution built with the collector's own builder (ocb) from
// the core OTLP receiver and debug exporter modules, through the Go module
// proxy.
const CollectorVersion = "v0.165.0"

var (
	colOnce sync.Once
	colPath string
	colErr  error
	colSkip bool
)

// Collector returns the path of an OpenTelemetry Collector with the OTLP
// receiver and the debug exporter, built the first time a test asks and
// kept in the user cache directory (rpctap-test/otelcol-VERSION). A cold
// build takes about two minutes on two cores. The test is skipped, saying
// why, when the module proxy cannot be reached; other build failures fail
// it. It skips with -short.
func Collector(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds an OpenTelemetry Collector; skipped with -short")
	}
	colOnce.Do(func() { colPath, colSkip, colErr = buildCollector() })
	switch {
	case colSkip:
		t.Skipf("the OpenTelemetry Collector %s cannot be built here, the Go module proxy is unreachable: %v", CollectorVersion, colErr)
	case colErr != nil:
		t.Fatalf("building the OpenTelemetry Collector %s: %v", CollectorVersion, colErr)
	}
	return colPath
}

func buildCollector() (path string, skip bool, err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "rpctap-test", "otelcol-"+CollectorVersion)
	path = filepath.Join(dir, "otelcol")
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return path, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			msg := strings.TrimSpace(string(out))
			skip = unreachable(msg)
			return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, msg)
		}
		return nil
	}
	if err := run("go", "install", "go.opentelemetry.io/collector/cmd/builder@"+CollectorVersion); err != nil {
		return "", skip, err
	}
	manifest := fmt.Sprintf(`dist:
  name: otelcol
  description: OpenTelemetry Collector for rpctap's export tests
  output_path: %s
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver %[2]s
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter %[2]s
`, filepath.Join(tmp, "dist"), CollectorVersion)
	if err := os.WriteFile(filepath.Join(tmp, "builder.yaml"), []byte(manifest), 0o644); err != nil {
		return "", false, err
	}
	if err := run(filepath.Join(tmp, "builder"), "--config", "builder.yaml"); err != nil {
		return "", skip, err
	}
	if err := os.Rename(filepath.Join(tmp, "dist", "otelcol"), path); err != nil {
		return "", false, err
	}
	return path, false, nil
}

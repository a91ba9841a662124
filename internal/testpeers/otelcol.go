package testpeers

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// CollectorVersion is the OpenTelemetry Collector the export tests send
// spans to: a distribution built with the collector's own builder (ocb) from
// the core OTLP receiver and debug exporter modules, through the Go module
// proxy.
const CollectorVersion = "v0.165.0"

var collector = &cachedTool{name: "otelcol", version: CollectorVersion, what: "the OpenTelemetry Collector", build: buildCollector}

// Collector returns the path of an OpenTelemetry Collector with the OTLP
// receiver and the debug exporter, built the first time a test asks and
// kept in the user cache directory (rpctap-test/otelcol-VERSION). A cold
// build takes about two minutes on two cores. It skips when the module
// proxy cannot be reached (and with -short).
func Collector(t testing.TB) string { return collector.get(t) }

func buildCollector(tmp string) (string, bool, error) {
	if out, unreachable, err := goCommand(tmp, "install", "go.opentelemetry.io/collector/cmd/builder@"+CollectorVersion); err != nil {
		return "", unreachable, fmt.Errorf("go install the collector builder: %v\n%s", err, out)
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
	if out, unreachable, err := runIn(tmp, filepath.Join(tmp, "builder"), "--config", "builder.yaml"); err != nil {
		return "", unreachable, fmt.Errorf("building the collector: %v\n%s", err, out)
	}
	return filepath.Join(tmp, "dist", "otelcol"), false, nil
}

package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// otelcolSource is a minimal OpenTelemetry Collector (core's OTLP receiver
// and debug exporter) as its own module: main.go (ours) with a go.mod and
// go.sum pinning the collector release. The test builds it with the Go
// module proxy.
const otelcolSource = "testdata/otelcol"

// otelcol builds the test collector once per machine: under the user cache
// dir, keyed by the hash of its source, so a second run (or a second
// package) reuses the binary. The build is two steps so that only the
// network can make the test skip: `go list -deps` fetches the modules
// (failure: skip, the proxy cannot be reached), then `go build` with
// GOPROXY=off (failure: the test fails, the collector does not build).
func otelcol(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds an OpenTelemetry Collector; skipped with -short")
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(otelcolSource, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "rpctap-test", "otelcol-"+hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(dir, "otelcol")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Abs(otelcolSource)
	start := time.Now()
	fetch := exec.Command("go", "list", "-deps", ".")
	fetch.Dir = src
	if out, err := fetch.CombinedOutput(); err != nil {
		t.Skipf("cannot fetch the OpenTelemetry Collector modules from the Go module proxy (%v); skipping the collector test:\n%s", err, tail(out))
	}
	fetched := time.Since(start)
	tmp := bin + fmt.Sprintf(".%d.tmp", os.Getpid())
	build := exec.Command("go", "build", "-o", tmp, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("building the test collector: %v\n%s", err, tail(out))
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the test collector in %v (modules fetched in %v): %s", time.Since(start).Round(time.Second), fetched.Round(time.Second), bin)
	return bin
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestCollector starts a real OpenTelemetry Collector with an OTLP
// receiver (gRPC and HTTP on loopback) and the debug exporter at detailed
// verbosity writing every span it receives to its log, sends the ACP
// sample through each protocol with the SDK exporter configured by the
// OTEL_EXPORTER_OTLP_* variables, and reads the collector's log: every
// span arrived once per protocol with its name, parent, recorded start
// time and GenAI attributes.
func TestCollector(t *testing.T) {
	bin := otelcol(t)
	grpcAddr, httpAddr := freePort(t), freePort(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "otelcol.yaml")
	os.WriteFile(cfg, []byte(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: `+grpcAddr+`
      http:
        endpoint: `+httpAddr+`
exporters:
  debug:
    verbosity: detailed
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
`), 0o644)
	logPath := filepath.Join(dir, "otelcol.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	col := exec.Command(bin, "--config", "file:"+cfg)
	col.Stdout, col.Stderr = logf, logf
	if err := col.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- col.Wait() }()
	t.Cleanup(func() {
		col.Process.Kill()
		<-exited
	})
	readLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range []string{grpcAddr, httpAddr} {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				t.Fatalf("the collector exited (%v):\n%s", err, readLog())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the collector does not listen on %s:\n%s", a, readLog())
			}
		}
	}

	path := goldenCassettes(t)["acp"]
	want := otlpSpans(t, path, false)
	var wantNames []string
	for _, s := range want {
		wantNames = append(wantNames, s["name"].(string))
	}
	sort.Strings(wantNames)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	for i, send := range []struct{ protocol, endpoint string }{
		{"http/protobuf", "http://" + httpAddr},
		{"grpc", "http://" + grpcAddr},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", send.protocol)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", send.endpoint)
		exp, err := NewEnvExporter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sink := NewSDKSpans(context.Background(), exp)
		if err := Run(path, NewOTLPSpans(sink, false), Options{}, nil); err != nil {
			t.Fatalf("%s: %v", send.protocol, err)
		}
		// The debug exporter logs each batch as it passes; wait for all.
		nameRE := regexp.MustCompile(`(?m)^\s+Name\s+: (.*)$`)
		var log string
		for {
			log = readLog()
			if len(nameRE.FindAllString(log, -1)) >= (i+1)*len(want) || time.Now().After(deadline.Add(30*time.Second)) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		var got []string
		for _, m := range nameRE.FindAllStringSubmatch(log, -1) {
			got = append(got, strings.TrimSpace(m[1]))
		}
		sort.Strings(got)
		var wantNow []string
		for _, n := range wantNames {
			for range i + 1 {
				wantNow = append(wantNow, n)
			}
		}
		sort.Strings(wantNow)
		if strings.Join(got, "|") != strings.Join(wantNow, "|") {
			t.Fatalf("%s: the collector received spans\n%q\nwant\n%q\nlog:\n%s", send.protocol, got, wantNow, tail([]byte(log)))
		}
	}
	log := readLog()
	for _, w := range []string{
		"-> gen_ai.conversation.id: Str(sess_d19697b4d00049da84f8ab34)",
		"-> gen_ai.operation.name: Str(invoke_agent)",
		"-> gen_ai.operation.name: Str(execute_tool)",
		"-> gen_ai.tool.name: Str(Reading project files)",
		"-> gen_ai.tool.call.id: Str(call_2)",
		"-> network.transport: Str(pipe)",
		"-> service.name: Str(rpctap)",
		"Start time     : 2026-11-21 08:00:00.003 +0000 UTC", // session/prompt, recorded 3 ms in
	} {
		if c := strings.Count(log, w); c < 2 {
			t.Errorf("the collector's log has %q %d times, want it once per protocol at least:\n%s", w, c, tail([]byte(log)))
		}
	}
	// every child's parent is a span that arrived
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+ID\s+: ([0-9a-f]{16})$`).FindAllStringSubmatch(log, -1) {
		ids[m[1]] = true
	}
	parents := regexp.MustCompile(`(?m)^\s+Parent ID\s+: ([0-9a-f]{16})$`).FindAllStringSubmatch(log, -1)
	if len(parents) == 0 {
		t.Error("no span arrived with a parent")
	}
	for _, m := range parents {
		if !ids[m[1]] {
			t.Errorf("parent %s never arrived", m[1])
		}
	}
}

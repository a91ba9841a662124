package main

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// sampleCassette unpacks one of the sample cassettes stored (base64) in
// testdata/script/damaged_frame.txtar into dir.
func sampleCassette(t *testing.T, dir, name string) string {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", "script", "damaged_frame.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == name+".b64" {
			b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(f.Data), "\n", ""))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no %s in damaged_frame.txtar", name)
	return ""
}

// Issue 20 item 6, --send: spans of a damaged cassette go to the endpoint
// (every readable record), the damaged range is said once, and the exit
// status is 4, as for the formats written to a file. The endpoint is an
// OTLP/HTTP receiver that takes the SDK exporter's requests
// (TestExportSendToCollector sends to a real OpenTelemetry Collector).
func TestExportSendDamaged(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	var mu sync.Mutex
	var posts, bytes int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			mu.Lock()
			posts++
			bytes += len(b)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		name, want string
		code       int
	}{
		{"good.cassette", "", 0},
		{"bad.cassette", `^rpctap: .*bad.cassette: damaged cassette: bytes 2305-2641 unreadable \(zstd: .*\): 2 records lost \(12-13\)$`, 4},
	} {
		cas := sampleCassette(t, dir, c.name)
		cmd := exec.Command(rp, "export", "--format", "otlp", "--send", cas)
		cmd.Env = append(filterEnv(os.Environ(), "OTEL_"), "OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		msg := stderr.String()
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, msg)
		}
		if !regexp.MustCompile(`(?m)^rpctap export: sent [1-9][0-9]* spans$`).MatchString(msg) {
			t.Errorf("%s: no spans sent:\n%s", c.name, msg)
		}
		if c.want == "" {
			continue
		}
		if n := strings.Count(msg, "damaged cassette"); n != 1 {
			t.Errorf("%s: the damage said %d times, want once:\n%s", c.name, n, msg)
		}
		if !regexp.MustCompile(`(?m)` + c.want).MatchString(msg) {
			t.Errorf("%s: stderr lacks %s:\n%s", c.name, c.want, msg)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if posts < 2 || bytes == 0 {
		t.Errorf("the endpoint got %d requests (%d bytes), want the spans of both cassettes", posts, bytes)
	}
}

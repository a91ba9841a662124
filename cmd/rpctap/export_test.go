package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestExportSend: `rpctap export --format otlp --send` posts the demo
// sample's spans to the endpoint in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// (gzip-compressed as OTEL_EXPORTER_OTLP_COMPRESSION asks), writes nothing
// on stdout and says on stderr how many spans went where.
func TestExportSend(t *testing.T) {
	var spans, gz atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz.Add(1)
		}
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			body = gunzip(t, body)
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans.Add(int64(len(ss.Spans)))
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	cas, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	var out, errb bytes.Buffer
	err := runExport(&exportOptions{Format: "otlp", Send: true}, cas, Stdio{Out: &out, Err: &errb})
	if err != nil {
		t.Fatal(err)
	}
	// 14 frames' exchanges and 2 tool calls, as the OTLP/JSON golden has
	if spans.Load() != 14 || gz.Load() == 0 || out.Len() != 0 {
		t.Errorf("%d spans arrived (%d gzipped requests), stdout %q", spans.Load(), gz.Load(), out.String())
	}
	if want := "rpctap export: sent 14 spans (http/protobuf " + srv.URL + "/v1/traces)\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	if strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("stderr: %q", errb.String())
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Error(err)
		return nil
	}
	out, _ := io.ReadAll(zr)
	return out
}

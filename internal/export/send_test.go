package export

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestSendHTTP sends the ACP sample with the SDK's OTLP/HTTP exporter, as
// the OTEL_EXPORTER_OTLP_* variables configure it (endpoint, headers), to
// an OTLP/HTTP endpoint on loopback that decodes the protobuf; what arrives
// is span for span what the OTLP/JSON export writes: ids, parents, names,
// recorded times, attributes and status.
func TestSendHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20t0ken")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")

	path := goldenCassettes(t)["acp"]
	exp, err := NewEnvExporter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sink := NewSDKSpans(context.Background(), exp)
	if err := Run(path, NewOTLPSpans(sink, false), Options{}, nil); err != nil {
		t.Fatal(err)
	}
	want := otlpSpans(t, path, false)
	if len(got) == 0 || sink.Sent != len(want) {
		t.Fatalf("%d requests, %d spans sent, want %d", len(got), sink.Sent, len(want))
	}
	if auth[0] != "Bearer t0ken" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS not sent: %q", auth[0])
	}
	byID := map[string]map[string]any{}
	for _, s := range want {
		byID[s["spanId"].(string)] = s
	}
	n := 0
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			res := map[string]string{}
			for _, a := range rs.Resource.Attributes {
				res[a.Key] = a.Value.GetStringValue()
			}
			if res["service.name"] != "rpctap" || res["rpctap.protocol"] != "acp" {
				t.Errorf("resource: %v", res)
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					n++
					w := byID[hex.EncodeToString(s.SpanId)]
					if w == nil {
						t.Errorf("span %x %s not in the JSON export", s.SpanId, s.Name)
						continue
					}
					wantParent, _ := w["parentSpanId"].(string)
					if s.Name != w["name"] || hex.EncodeToString(s.TraceId) != w["traceId"] || hex.EncodeToString(s.ParentSpanId) != wantParent ||
						itoa(s.StartTimeUnixNano) != w["startTimeUnixNano"] || itoa(s.EndTimeUnixNano) != w["endTimeUnixNano"] || float64(s.Kind) != w["kind"].(float64) {
						t.Errorf("span %s: sent %v, written %v", s.Name, s, w)
					}
					wa := spanAttrs(w)
					if len(s.Attributes) != len(wa) {
						t.Errorf("span %s: %d attributes sent, %d written", s.Name, len(s.Attributes), len(wa))
					}
					for _, a := range s.Attributes {
						v := a.Value.GetStringValue()
						if a.Value.GetIntValue() != 0 {
							v = itoa(uint64(a.Value.GetIntValue()))
						}
						if arr := a.Value.GetArrayValue(); arr != nil {
							v = arr.Values[0].GetStringValue()
						}
						if wa[a.Key] != v {
							t.Errorf("span %s attribute %s: sent %q, written %q", s.Name, a.Key, v, wa[a.Key])
						}
					}
				}
			}
		}
	}
	if n != len(want) {
		t.Errorf("%d spans arrived, %d written", n, len(want))
	}
}

// TestSendRefused: an endpoint that refuses the spans (400, not retried)
// fails the export with a WriteError naming it; an unknown protocol is
// refused before anything is read.
func TestSendRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no thanks", http.StatusBadRequest)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	exp, err := NewEnvExporter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = Run(goldenCassettes(t)["acp"], NewOTLPSpans(NewSDKSpans(context.Background(), exp), false), Options{}, nil)
	var we *WriteError
	if err == nil || !asWriteError(err, &we) || !bytes.Contains([]byte(err.Error()), []byte("400")) {
		t.Fatalf("want a WriteError with the 400, got %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := NewEnvExporter(context.Background()); err == nil {
		t.Fatal("http/json accepted")
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func asWriteError(err error, we **WriteError) bool { return errors.As(err, we) }

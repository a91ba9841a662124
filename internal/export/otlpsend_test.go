package export

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// flatSpan is a span reduced to what the writer sets, for comparing the
// OTLP/JSON file with what went over the wire.
type flatSpan struct {
	Trace, ID, Parent, Name string
	Kind                    int64
	Start, End              string
	Attrs                   map[string]string
	Code                    int64
	Message                 string
}

func flatFromJSON(s map[string]any) flatSpan {
	f := flatSpan{Attrs: spanAttrs(s)}
	f.Trace, _ = s["traceId"].(string)
	f.ID, _ = s["spanId"].(string)
	f.Parent, _ = s["parentSpanId"].(string)
	f.Name, _ = s["name"].(string)
	kind, _ := s["kind"].(float64)
	f.Kind = int64(kind)
	f.Start, _ = s["startTimeUnixNano"].(string)
	f.End, _ = s["endTimeUnixNano"].(string)
	if st, ok := s["status"].(map[string]any); ok {
		c, _ := st["code"].(float64)
		f.Code = int64(c)
		f.Message, _ = st["message"].(string)
	}
	return f
}

func anyString(v *common.AnyValue) string {
	switch x := v.Value.(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *common.AnyValue_ArrayValue:
		var vs []string
		for _, e := range x.ArrayValue.Values {
			vs = append(vs, anyString(e))
		}
		return strings.Join(vs, ",")
	}
	return fmt.Sprintf("unexpected %T", v.Value)
}

// decodeProtoRequest reads an ExportTraceServiceRequest with the generated
// OTLP types (the oracle for the hand-written encoder) and checks its
// resource and scope.
func decodeProtoRequest(t *testing.T, body []byte) []flatSpan {
	t.Helper()
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		t.Fatalf("the request is not an ExportTraceServiceRequest: %v", err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("want one resource with one scope: %v", &req)
	}
	rs := req.ResourceSpans[0]
	res := map[string]string{}
	for _, kv := range rs.Resource.Attributes {
		res[kv.Key] = anyString(kv.Value)
	}
	if res["service.name"] != "rpctap" || res["rpctap.protocol"] != "acp" || !strings.HasSuffix(res["rpctap.cassette"], "acp-go.cassette") {
		t.Errorf("resource attributes: %v", res)
	}
	if sc := rs.ScopeSpans[0].Scope; sc.Name != "rpctap" || sc.Version != "1" {
		t.Errorf("scope %v", sc)
	}
	var out []flatSpan
	for _, s := range rs.ScopeSpans[0].Spans {
		f := flatSpan{Trace: hex.EncodeToString(s.TraceId), ID: hex.EncodeToString(s.SpanId), Name: s.Name, Kind: int64(s.Kind),
			Start: strconv.FormatUint(s.StartTimeUnixNano, 10), End: strconv.FormatUint(s.EndTimeUnixNano, 10), Attrs: map[string]string{}}
		if len(s.ParentSpanId) > 0 {
			f.Parent = hex.EncodeToString(s.ParentSpanId)
		}
		for _, kv := range s.Attributes {
			f.Attrs[kv.Key] = anyString(kv.Value)
		}
		if s.Status != nil {
			f.Code, f.Message = int64(s.Status.Code), s.Status.Message
		}
		out = append(out, f)
	}
	return out
}

func decodeJSONRequest(t *testing.T, body []byte) []flatSpan {
	t.Helper()
	var doc struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []map[string]any `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("the request is not JSON: %v", err)
	}
	var out []flatSpan
	for _, s := range doc.ResourceSpans[0].ScopeSpans[0].Spans {
		out = append(out, flatFromJSON(s))
	}
	return out
}

func acpSample(t *testing.T) string {
	p, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	return p
}

// collectorStub is an OTLP/HTTP receiver that records each request's
// headers and (decompressed) body, and answers with answer(n) for the
// n-th request.
type collectorStub struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
	answer func(n int, w http.ResponseWriter)
}

func (c *collectorStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		rd = zr
	}
	b, _ := io.ReadAll(rd)
	c.mu.Lock()
	c.reqs = append(c.reqs, r)
	c.bodies = append(c.bodies, b)
	n := len(c.reqs)
	c.mu.Unlock()
	if c.answer != nil {
		c.answer(n, w)
		return
	}
	w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
	w.WriteHeader(200)
}

func sendWith(t *testing.T, env map[string]string, path string) (int, error) {
	t.Helper()
	cfg, err := sendConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	o := &OTLP{send: newSender(context.Background(), cfg)}
	err = Run(path, o, Options{}, nil)
	return o.Sent(), err
}

// TestSendOverHTTP: the spans sent as OTLP/HTTP protobuf (read back with
// the generated OTLP types) and as OTLP/JSON, gzipped or not, with the
// headers of OTEL_EXPORTER_OTLP_HEADERS, are the spans the OTLP/JSON file
// holds, field for field.
func TestSendOverHTTP(t *testing.T) {
	want := []flatSpan{}
	for _, s := range otlpSpans(t, acpSample(t), false) {
		want = append(want, flatFromJSON(s))
	}
	if len(want) != 14 {
		t.Fatalf("the sample has %d spans, want 14", len(want))
	}
	for _, c := range []struct {
		protocol, compression, ctype string
	}{
		{"http/protobuf", "", "application/x-protobuf"},
		{"http/protobuf", "gzip", "application/x-protobuf"},
		{"http/json", "", "application/json"},
		{"http/json", "gzip", "application/json"},
	} {
		stub := &collectorStub{}
		srv := httptest.NewServer(stub)
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/", "OTEL_EXPORTER_OTLP_PROTOCOL": c.protocol,
			"OTEL_EXPORTER_OTLP_COMPRESSION": c.compression, "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s%20cret, tenant = a"}
		n, err := sendWith(t, env, acpSample(t))
		srv.Close()
		if err != nil || n != 14 {
			t.Fatalf("%s %s: sent %d, %v", c.protocol, c.compression, n, err)
		}
		if len(stub.reqs) != 1 {
			t.Fatalf("%s: %d requests, want 1", c.protocol, len(stub.reqs))
		}
		r := stub.reqs[0]
		if r.URL.Path != "/v1/traces" || r.Method != "POST" || r.Header.Get("Content-Type") != c.ctype ||
			r.Header.Get("X-Api-Key") != "s cret" || r.Header.Get("Tenant") != "a" {
			t.Errorf("%s: %s %s, headers %v", c.protocol, r.Method, r.URL.Path, r.Header)
		}
		if (r.Header.Get("Content-Encoding") == "gzip") != (c.compression == "gzip") {
			t.Errorf("%s %s: Content-Encoding %q", c.protocol, c.compression, r.Header.Get("Content-Encoding"))
		}
		var got []flatSpan
		if c.protocol == "http/json" {
			got = decodeJSONRequest(t, stub.bodies[0])
		} else {
			got = decodeProtoRequest(t, stub.bodies[0])
		}
		if !reflect.DeepEqual(got, want) {
			for i := range min(len(got), len(want)) {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("%s span %d:\n got %+v\nwant %+v", c.protocol, i, got[i], want[i])
					break
				}
			}
			t.Fatalf("%s: %d spans differ from the file's %d", c.protocol, len(got), len(want))
		}
	}
}

// TestSendFailures: a refusal is one error naming the endpoint's status and
// message and is not retried; 503 is retried (after Retry-After) and then
// succeeds; a partial success is an error counting the rejected spans;
// a timeout gives up within it.
func TestSendFailures(t *testing.T) {
	statusBody := func(msg string) []byte { // google.rpc.Status{code: 3, message: msg}
		return appendStringField(appendVarintField(nil, 1, 3), 2, msg)
	}
	cases := []struct {
		name     string
		answer   func(n int, w http.ResponseWriter)
		timeout  string
		requests int
		sent     int
		want     string
	}{
		{"bad request", func(n int, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(400)
			w.Write(statusBody("span name too long"))
		}, "", 1, 0, "400 Bad Request: span name too long"},
		{"unavailable once", func(n int, w http.ResponseWriter) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(503)
				return
			}
			w.WriteHeader(200)
		}, "", 2, 14, ""},
		{"partial", func(n int, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(appendBytesField(nil, 1, appendStringField(appendVarintField(nil, 1, 2), 2, "two spans too old")))
		}, "", 1, 12, "the endpoint rejected 2 of 14: two spans too old"},
		{"always unavailable", func(n int, w http.ResponseWriter) { w.WriteHeader(503) }, "600", 2, 0, "gave up: OTEL_EXPORTER_OTLP_TIMEOUT is 600ms"},
	}
	for _, c := range cases {
		stub := &collectorStub{answer: c.answer}
		srv := httptest.NewServer(stub)
		env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/custom/path", "OTEL_EXPORTER_OTLP_TIMEOUT": c.timeout}
		start := time.Now()
		n, err := sendWith(t, env, acpSample(t))
		took := time.Since(start)
		srv.Close()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
		if len(stub.reqs) < 1 || stub.reqs[0].URL.Path != "/custom/path" {
			t.Errorf("%s: the traces endpoint is used as given", c.name)
		}
		if len(stub.reqs) != c.requests || n != c.sent {
			t.Errorf("%s: %d requests, %d sent; want %d, %d", c.name, len(stub.reqs), n, c.requests, c.sent)
		}
		if c.name == "always unavailable" && took > 5*time.Second {
			t.Errorf("%s: took %v with a 600 ms timeout", c.name, took)
		}
	}
	// Nothing listening: one attempt, an error at once.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if _, err := sendWith(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr}, acpSample(t)); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("nothing listening: %v", err)
	}
}

// TestSendHTTPS: an https endpoint whose certificate
// OTEL_EXPORTER_OTLP_CERTIFICATE trusts gets the spans, an answer in chunks
// included; without it the TLS failure is the error, at once.
func TestSendHTTPS(t *testing.T) {
	stub := &collectorStub{answer: func(n int, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.(http.Flusher).Flush() // the answer goes in chunks
		w.Write(appendBytesField(nil, 1, appendStringField(nil, 2, "all fine")))
	}}
	srv := httptest.NewTLSServer(stub)
	defer srv.Close()
	pemFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := sendWith(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_CERTIFICATE": pemFile}, acpSample(t))
	if err != nil || n != 14 || len(stub.reqs) != 1 {
		t.Fatalf("sent %d in %d requests: %v", n, len(stub.reqs), err)
	}
	if got := decodeProtoRequest(t, stub.bodies[0]); len(got) != 14 {
		t.Errorf("%d spans arrived", len(got))
	}
	if _, err := sendWith(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}, acpSample(t)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted certificate: %v", err)
	}
}

// TestReadAnswer: the HTTP/1.1 answers an endpoint may give are read to
// their end (by length, in chunks, to the close) and junk is an error.
func TestReadAnswer(t *testing.T) {
	for _, c := range []struct{ in, status, body, err string }{
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiEXTRA", "200 OK", "hi", ""},
		{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n", "400 Bad Request", "abcde", ""},
		{"HTTP/1.0 503 Service Unavailable\r\n\r\nto the close", "503 Service Unavailable", "to the close", ""},
		{"HTTP/1.1 204 No Content\r\n\r\n", "204 No Content", "", ""},
		{"SSH-2.0-OpenSSH\r\n", "", "", "not HTTP/1.x"},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "", "", "bad chunk size"},
		{"", "", "", "reading the answer"},
	} {
		a, err := readAnswer(bufio.NewReader(strings.NewReader(c.in)))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
		case err != nil || a.status != c.status || string(a.body) != c.body:
			t.Errorf("%q: %v %+v", c.in, err, a)
		}
	}
}

// TestSendConfigFromEnv: the standard variables, each signal-specific one
// winning over the generic, and a bad value refused in one line.
func TestSendConfigFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		want string // url, or the error
	}{
		{"ENDPOINT=http://c:4318", "http://c:4318/v1/traces"},
		{"ENDPOINT=https://c:4318/base/", "https://c:4318/base/v1/traces"},
		{"ENDPOINT=http://c:4318 TRACES_ENDPOINT=http://d/x", "http://d/x"},
		{"ENDPOINT=http://c:4317 PROTOCOL=grpc", `error: OTLP protocol "grpc" is not sent by rpctap: set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`},
		{"ENDPOINT=http://c:4318 PROTOCOL=grpc TRACES_PROTOCOL=http/json", "http://c:4318/v1/traces"},
		{"ENDPOINT=http://c HEADERS=a%0Db=c", `error: OTEL_EXPORTER_OTLP_HEADERS: "a%0Db=c" is not key=value`},
		{"ENDPOINT=http://c HEADERS=k=a%0Db", `error: OTEL_EXPORTER_OTLP_HEADERS: "k=a%0Db" is not key=value`},
		{"ENDPOINT=c:4318", `error: OTLP endpoint "c:4318/v1/traces" is not an http:// or https:// URL`},
		{"ENDPOINT=http://c PROTOCOL=thrift", `error: OTLP protocol "thrift" cannot be sent`},
		{"ENDPOINT=http://c HEADERS=novalue", `error: OTEL_EXPORTER_OTLP_HEADERS: "novalue" is not key=value`},
		{"ENDPOINT=http://c TIMEOUT=5s", `error: OTEL_EXPORTER_OTLP_TIMEOUT "5s" is not a number of milliseconds`},
		{"ENDPOINT=http://c COMPRESSION=zstd", `error: OTEL_EXPORTER_OTLP_COMPRESSION "zstd" is not gzip or none`},
		{"ENDPOINT=http://c CERTIFICATE=/nonexistent.pem", `error: OTEL_EXPORTER_OTLP_CERTIFICATE: open /nonexistent.pem`},
		{"ENDPOINT=http://c CLIENT_KEY=/k.pem", `error: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together`},
	} {
		env := map[string]string{}
		for _, kv := range strings.Fields(c.env) {
			k, v, _ := strings.Cut(kv, "=")
			env["OTEL_EXPORTER_OTLP_"+k] = v
		}
		cfg, err := sendConfigFromEnv(func(k string) string { return env[k] })
		got := ""
		if cfg.url != nil {
			got = cfg.url.String()
		}
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.env, got, c.want)
		}
	}
	cfg, _ := sendConfigFromEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
			"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2%2C3"}[k]
	})
	if cfg.timeout != 2500*time.Millisecond || !reflect.DeepEqual(cfg.headers, [][2]string{{"b", "2,3"}}) || cfg.protocol != "http/protobuf" {
		t.Errorf("timeout %v headers %v protocol %s", cfg.timeout, cfg.headers, cfg.protocol)
	}
}

// TestProtoWireHelpers: the reading side used for answers finds fields in
// what the writing side wrote, and stops on garbage.
func TestProtoWireHelpers(t *testing.T) {
	msg := appendStringField(appendVarintField(appendFixed64Field(nil, 3, 99), 1, 300), 2, "hi")
	if v, ok := protoVarint(msg, 1); !ok || v != 300 {
		t.Errorf("varint %d %v", v, ok)
	}
	if s := protoField(msg, 2); string(s) != "hi" {
		t.Errorf("string %q", s)
	}
	if protoField([]byte{0x12, 0xff, 0x01}, 2) != nil || protoField(nil, 1) != nil {
		t.Error("a cut message yields a field")
	}
	if !bytes.Equal(appendVarint(nil, 1<<63), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}) {
		t.Error("varint of 2^63")
	}
}

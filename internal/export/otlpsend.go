package export

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// This file sends the OTLP writer's spans to an endpoint with the official
// OpenTelemetry Go SDK's OTLP/HTTP exporter, which reads the standard
// OTEL_EXPORTER_OTLP_* variables itself (ENDPOINT and TRACES_ENDPOINT,
// HEADERS, TIMEOUT, COMPRESSION, CERTIFICATE, and an http:// endpoint for
// plain text). The spans keep the recorded times and ids: they are handed to
// the exporter as finished spans (tracetest.SpanStub), not re-created by a
// tracer.

// sendBatch is how many spans go in one export request.
const sendBatch = 512

type sdkSender struct {
	ctx   context.Context
	exp   *otlptrace.Exporter
	res   *resource.Resource
	batch tracetest.SpanStubs
	sent  int
}

// SendConfigured reports whether the environment names an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func SendConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// NewOTLPSender returns an OTLP writer that sends its spans to the endpoint
// the OTEL_EXPORTER_OTLP_* variables name, over OTLP/HTTP (protobuf).
// OTEL_EXPORTER_OTLP_PROTOCOL, when set, must be http/protobuf: gRPC is not
// built in. payloads as for NewOTLP. Sent reports how many spans went out.
func NewOTLPSender(ctx context.Context, payloads bool) (*OTLP, error) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(k); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%s: rpctap sends OTLP over http/protobuf only (set it to http/protobuf, or use an OTLP/HTTP endpoint, usually port 4318)", k, p)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	return &OTLP{payloads: payloads, send: &sdkSender{ctx: ctx, exp: exp}}, nil
}

// Sent is how many spans were handed to the exporter.
func (o *OTLP) Sent() int {
	if o.send == nil {
		return 0
	}
	return o.send.sent
}

func (s *sdkSender) begin(sess Session) error {
	s.res = resource.NewSchemaless(attribute.String("service.name", "rpctap"),
		attribute.String("rpctap.cassette", sess.File), attribute.String("rpctap.protocol", orRaw(sess.Protocol)))
	return nil
}

func (s *sdkSender) add(span map[string]any) error {
	stub, err := stubOf(span)
	if err != nil {
		return err
	}
	stub.Resource = s.res
	s.batch = append(s.batch, stub)
	if len(s.batch) >= sendBatch {
		return s.flush()
	}
	return nil
}

func (s *sdkSender) flush() error {
	if len(s.batch) == 0 {
		return nil
	}
	if err := s.exp.ExportSpans(s.ctx, s.batch.Snapshots()); err != nil {
		return fmt.Errorf("sending spans: %w", err)
	}
	s.sent += len(s.batch)
	s.batch = s.batch[:0]
	return nil
}

func (s *sdkSender) end() error {
	err := s.flush()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := s.exp.Shutdown(ctx); err == nil && serr != nil {
		err = serr
	}
	return err
}

// stubOf turns one span in its OTLP/JSON form (what the OTLP writer builds)
// into a finished span for the SDK's exporter.
func stubOf(m map[string]any) (tracetest.SpanStub, error) {
	var st tracetest.SpanStub
	var tid trace.TraceID
	var sid, pid trace.SpanID
	if err := decodeID(m["traceId"], tid[:]); err != nil {
		return st, err
	}
	if err := decodeID(m["spanId"], sid[:]); err != nil {
		return st, err
	}
	st.SpanContext = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	if p, ok := m["parentSpanId"]; ok {
		if err := decodeID(p, pid[:]); err != nil {
			return st, err
		}
		st.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled})
	}
	st.Name, _ = m["name"].(string)
	switch m["kind"] {
	case 3:
		st.SpanKind = trace.SpanKindClient
	default:
		st.SpanKind = trace.SpanKindInternal
	}
	st.StartTime = unixNano(m["startTimeUnixNano"])
	st.EndTime = unixNano(m["endTimeUnixNano"])
	attrs, _ := m["attributes"].([]any)
	for _, a := range attrs {
		kv, _ := a.(map[string]any)
		k, _ := kv["key"].(string)
		v, _ := kv["value"].(map[string]any)
		switch {
		case v["stringValue"] != nil:
			st.Attributes = append(st.Attributes, attribute.String(k, v["stringValue"].(string)))
		case v["intValue"] != nil:
			n, _ := strconv.ParseInt(v["intValue"].(string), 10, 64)
			st.Attributes = append(st.Attributes, attribute.Int64(k, n))
		}
	}
	if status, _ := m["status"].(map[string]any); status["code"] == 2 {
		msg, _ := status["message"].(string)
		st.Status = sdktrace.Status{Code: codes.Error, Description: msg}
	}
	st.InstrumentationScope = instrumentation.Scope{Name: "rpctap", Version: "1"}
	return st, nil
}

func decodeID(v any, dst []byte) error {
	s, _ := v.(string)
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(dst) {
		return fmt.Errorf("bad span id %q", s)
	}
	copy(dst, b)
	return nil
}

func unixNano(v any) time.Time {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return time.Unix(0, n)
}

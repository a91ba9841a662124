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
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// This file sends the OTLP writer's spans to an endpoint with the official
// OpenTelemetry Go SDK's OTLP exporters (HTTP or gRPC, as
// OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL says), which read the standard
// OTEL_EXPORTER_OTLP_* variables themselves (ENDPOINT and TRACES_ENDPOINT,
// HEADERS, TIMEOUT, COMPRESSION, CERTIFICATE, INSECURE, and an http://
// endpoint for plain text). The spans keep the recorded times and ids: they are handed to
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

// SendProtocol is the OTLP protocol the standard variables ask for:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf (the specification's default).
func SendProtocol() string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(os.Getenv(k)); p != "" {
			return p
		}
	}
	return "http/protobuf"
}

// NewOTLPSender returns an OTLP writer that sends its spans to the endpoint
// the OTEL_EXPORTER_OTLP_* variables name, over the protocol SendProtocol
// names: http/protobuf (otlptracehttp) or grpc (otlptracegrpc, plain text
// for an http:// endpoint or with OTEL_EXPORTER_OTLP_INSECURE=true). The
// SDK has no http/json exporter, so that protocol is refused with what to
// do instead. payloads as for NewOTLP. Sent reports how many spans went out.
func NewOTLPSender(ctx context.Context, payloads bool) (*OTLP, error) {
	var exp *otlptrace.Exporter
	var err error
	switch p := SendProtocol(); p {
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTLP protocol %q cannot be sent: the OpenTelemetry SDK sends http/protobuf or grpc (or write OTLP/JSON with -o and post that file)", p)
	}
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
		case v["boolValue"] != nil:
			b, _ := v["boolValue"].(bool)
			st.Attributes = append(st.Attributes, attribute.Bool(k, b))
		case v["intValue"] != nil:
			n, _ := strconv.ParseInt(v["intValue"].(string), 10, 64)
			st.Attributes = append(st.Attributes, attribute.Int64(k, n))
		case v["arrayValue"] != nil:
			var ss []string
			vals, _ := v["arrayValue"].(map[string]any)["values"].([]any)
			for _, e := range vals {
				s, _ := e.(map[string]any)["stringValue"].(string)
				ss = append(ss, s)
			}
			st.Attributes = append(st.Attributes, attribute.StringSlice(k, ss))
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

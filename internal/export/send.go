package export

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// sendBatch is how many spans go in one export call: the memory held is
// one batch, whatever the cassette's size.
const sendBatch = 512

// SDKSpans hands the spans to an OpenTelemetry SDK SpanExporter (an OTLP
// exporter from NewEnvExporter), sendBatch at a time, each span with the
// ids and the recorded start and end times the OTLP writer gave it (the
// SDK's tracer would stamp the current time and fresh ids, so spans are
// handed over as finished snapshots). Span blocks while the exporter sends
// a batch (bounded by the exporter's timeout and retry settings).
type SDKSpans struct {
	ctx   context.Context
	exp   sdktrace.SpanExporter
	res   *resource.Resource
	batch []sdktrace.ReadOnlySpan
	Sent  int // spans handed to the exporter without error
}

// NewSDKSpans sends through exp; End shuts exp down.
func NewSDKSpans(ctx context.Context, exp sdktrace.SpanExporter) *SDKSpans {
	return &SDKSpans{ctx: ctx, exp: exp}
}

func (s *SDKSpans) Begin(res []Attr) error {
	s.res = resource.NewSchemaless(sdkAttrs(res)...)
	return nil
}

func (s *SDKSpans) Span(sp *Span) error {
	stub := tracetest.SpanStub{
		Name: sp.Name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID(sp.TraceID), SpanID: trace.SpanID(sp.SpanID), TraceFlags: trace.FlagsSampled,
		}),
		SpanKind:             trace.SpanKind(sp.Kind), // OTLP and the Go API number kinds alike (1 internal, 3 client)
		StartTime:            time.Unix(0, sp.Start),
		EndTime:              time.Unix(0, sp.End),
		Attributes:           sdkAttrs(sp.Attrs),
		Resource:             s.res,
		InstrumentationScope: instrumentation.Scope{Name: "rpctap", Version: "1"},
	}
	if sp.Parent != ([8]byte{}) {
		stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID(sp.TraceID), SpanID: trace.SpanID(sp.Parent), TraceFlags: trace.FlagsSampled,
		})
	}
	if sp.Error {
		stub.Status = sdktrace.Status{Code: codes.Error, Description: sp.StatusMsg}
	}
	s.batch = append(s.batch, stub.Snapshot())
	if len(s.batch) >= sendBatch {
		return s.flush()
	}
	return nil
}

func (s *SDKSpans) flush() error {
	if len(s.batch) == 0 {
		return nil
	}
	if err := s.exp.ExportSpans(s.ctx, s.batch); err != nil {
		return fmt.Errorf("sending spans: %w", err)
	}
	s.Sent += len(s.batch)
	clear(s.batch)
	s.batch = s.batch[:0]
	return nil
}

// End sends the last batch and shuts the exporter down.
func (s *SDKSpans) End() error {
	err := s.flush()
	if e := s.exp.Shutdown(s.ctx); err == nil && e != nil {
		err = fmt.Errorf("closing the exporter: %w", e)
	}
	return err
}

func sdkAttrs(as []Attr) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(as))
	for _, a := range as {
		switch v := a.Value.(type) {
		case string:
			out = append(out, attribute.String(a.Key, v))
		case int64:
			out = append(out, attribute.Int64(a.Key, v))
		case []string:
			out = append(out, attribute.StringSlice(a.Key, v))
		default:
			out = append(out, attribute.String(a.Key, fmt.Sprint(v)))
		}
	}
	return out
}

// SendProtocol is the OTLP protocol the standard variables ask for:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf (the specification's default).
func SendProtocol() string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	return "http/protobuf"
}

// NewEnvExporter makes the OTLP trace exporter the standard
// OTEL_EXPORTER_OTLP_* variables describe: the protocol from SendProtocol
// (http/protobuf with otlptracehttp, grpc with otlptracegrpc; http/json has
// no SDK exporter and is refused), and endpoint, headers, timeout,
// compression, certificates and insecure read by the exporter itself.
// Retries are kept short (15 s in all) so a dead endpoint fails the command
// instead of hanging it for the SDK's default minute.
func NewEnvExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	switch p := SendProtocol(); p {
	case "http/protobuf":
		return otlptracehttp.New(ctx, otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: 15 * time.Second,
		}))
	case "grpc":
		return otlptracegrpc.New(ctx, otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
			Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: 15 * time.Second,
		}))
	default:
		return nil, fmt.Errorf("OTLP protocol %q cannot be sent (use grpc or http/protobuf, or write OTLP/JSON with -o and post it)", p)
	}
}

// SendTarget names where NewEnvExporter sends, for messages: the traces
// endpoint variable, else the endpoint variable (+ /v1/traces over HTTP),
// else the specification's default for the protocol.
func SendTarget() string {
	p := SendProtocol()
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		return p + " " + v
	}
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		if p == "grpc" {
			return p + " " + v
		}
		return p + " " + strings.TrimSuffix(v, "/") + "/v1/traces"
	}
	if p == "grpc" {
		return p + " localhost:4317"
	}
	return p + " https://localhost:4318/v1/traces"
}

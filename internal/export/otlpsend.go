package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// This file sends the OTLP writer's spans to an endpoint over OTLP/HTTP
// (binary protobuf or JSON), configured by the standard OTEL_EXPORTER_OTLP_*
// variables (see sendConfigFromEnv). It is written against the OTLP
// specification rather than with the OpenTelemetry SDK's exporters: Go runs
// every linked package's initialisation in every process, and the SDK with
// its gRPC stack was most of what each rpctap process (the tap and its sink
// included, which never send) paid to start. Static build, `rpctap
// --version` peak RSS and binary size, one run each on a 2-core machine:
// with the SDK 13.9 MiB and 26.8 MB; with this encoder over net/http (gRPC
// on its HTTP/2 client) 8.9 MiB and 16.5 MB; over postHTTP (HTTP/1.1 on
// crypto/tls, no gRPC) 8.0 MiB and 14.7 MB (docs/performance.md, "Startup").
// gRPC needs an HTTP/2 client, so OTEL_EXPORTER_OTLP_PROTOCOL=grpc is refused
// with a line saying to use http/protobuf, which every OTLP receiver serves.
//
// The protobuf is encoded by hand (otlpwire.go): the messages are five, with
// no maps or oneofs beyond AnyValue, and the protobuf module's wire package
// would bring an init that opens and hashes the executable in every process.

// sendBatch is how many spans go in one export request.
const sendBatch = 512

// The protocols of OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	protoHTTPProtobuf = "http/protobuf"
	protoHTTPJSON     = "http/json"
	protoGRPC         = "grpc"
)

// sendConfig is what the OTEL_EXPORTER_OTLP_* variables ask for.
type sendConfig struct {
	protocol string
	url      *url.URL // where the spans are POSTed
	headers  [][2]string
	timeout  time.Duration // per export request, retries included
	gzip     bool
	tls      *tls.Config // nil: the system's roots
}

type otlpSender struct {
	ctx      context.Context
	cfg      sendConfig
	resource []any // the resource's attributes, OTLP/JSON form
	batch    []map[string]any
	sent     int
}

// SendConfigured reports whether the environment names an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func SendConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// SendProtocol is the OTLP protocol the standard variables ask for:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf (the specification's default).
func SendProtocol() string { return sendProtocol(os.Getenv) }

func sendProtocol(getenv func(string) string) string {
	if p := signalVar(getenv, "PROTOCOL"); p != "" {
		return p
	}
	return protoHTTPProtobuf
}

// signalVar is OTEL_EXPORTER_OTLP_TRACES_<name>, else
// OTEL_EXPORTER_OTLP_<name>: the specification's signal-specific variable
// wins over the generic one.
func signalVar(getenv func(string) string, name string) string {
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
		return v
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
}

// sendConfigFromEnv reads the OTLP exporter variables of the OpenTelemetry
// specification ("OpenTelemetry Protocol Exporter"), each in its
// TRACES_-specific form first:
//
//   - PROTOCOL: http/protobuf (default), http/json or grpc.
//   - ENDPOINT: for HTTP the base URL, the traces going to <base>/v1/traces;
//     TRACES_ENDPOINT is used as given. For gRPC scheme and host (http:
//     plain-text HTTP/2, https: TLS); without a scheme, INSECURE=true means
//     plain text.
//   - HEADERS: key=value pairs separated by commas, percent-decoded.
//   - TIMEOUT: milliseconds an export may take, default 10000.
//   - COMPRESSION: gzip or none.
//   - CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY: PEM files (trusted roots;
//     the client's certificate and key for mutual TLS).
func sendConfigFromEnv(getenv func(string) string) (sendConfig, error) {
	c := sendConfig{protocol: sendProtocol(getenv), timeout: 10 * time.Second}
	switch c.protocol {
	case protoHTTPProtobuf, protoHTTPJSON:
	case protoGRPC:
		return c, errors.New("OTLP protocol \"grpc\" is not sent by rpctap: set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf and the endpoint's OTLP/HTTP port (a Collector's is 4318); see docs/export.md")
	default:
		return c, fmt.Errorf("OTLP protocol %q cannot be sent: OTEL_EXPORTER_OTLP_PROTOCOL is one of http/protobuf, http/json, grpc", c.protocol)
	}
	traces := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	if traces == "" && base == "" {
		return c, errors.New("no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)")
	}
	e := traces
	if e == "" {
		e = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("OTLP endpoint %q is not an http:// or https:// URL", e)
	}
	c.url = u
	if c.headers, err = parseHeaders(signalVar(getenv, "HEADERS")); err != nil {
		return c, err
	}
	if t := signalVar(getenv, "TIMEOUT"); t != "" {
		ms, err := strconv.ParseUint(t, 10, 32)
		if err != nil {
			return c, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT %q is not a number of milliseconds", t)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch z := signalVar(getenv, "COMPRESSION"); z {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return c, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION %q is not gzip or none", z)
	}
	c.tls, err = tlsConfig(signalVar(getenv, "CERTIFICATE"), signalVar(getenv, "CLIENT_CERTIFICATE"), signalVar(getenv, "CLIENT_KEY"))
	return c, err
}

// parseHeaders reads OTEL_EXPORTER_OTLP_HEADERS: "k1=v1,k2=v2", keys and
// values percent-encoded (the W3C Baggage format the specification names).
func parseHeaders(s string) ([][2]string, error) {
	var hs [][2]string
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, kerr := url.PathUnescape(strings.TrimSpace(k))
		v, verr := url.PathUnescape(strings.TrimSpace(v))
		if !ok || !validHeaderName(k) || kerr != nil || verr != nil || strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value (percent-encoded)", strings.TrimSpace(kv))
		}
		hs = append(hs, [2]string{k, v})
	}
	return hs, nil
}

// validHeaderName: an HTTP field name is a token (RFC 9110 section 5.1).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r >= 0x80 || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

func tlsConfig(ca, cert, key string) (*tls.Config, error) {
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ca)
		}
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/KEY: %v", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// NewOTLPSender returns an OTLP writer that sends its spans, 512 a request,
// to the endpoint the OTEL_EXPORTER_OTLP_* variables name, over the
// protocol SendProtocol names (sendConfigFromEnv). payloads as for NewOTLP.
// Sent reports how many spans the endpoint accepted.
func NewOTLPSender(ctx context.Context, payloads bool) (*OTLP, error) {
	cfg, err := sendConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	return &OTLP{payloads: payloads, send: newSender(ctx, cfg)}, nil
}

func newSender(ctx context.Context, cfg sendConfig) *otlpSender {
	return &otlpSender{ctx: ctx, cfg: cfg}
}

// Sent is how many spans the endpoint accepted.
func (o *OTLP) Sent() int {
	if o.send == nil {
		return 0
	}
	return o.send.sent
}

func (s *otlpSender) begin(sess Session) error {
	s.resource = []any{attr("service.name", "rpctap"), attr("rpctap.cassette", sess.File), attr("rpctap.protocol", orRaw(sess.Protocol))}
	return nil
}

func (s *otlpSender) add(span map[string]any) error {
	s.batch = append(s.batch, span)
	if len(s.batch) >= sendBatch {
		return s.flush()
	}
	return nil
}

func (s *otlpSender) end() error {
	return s.flush()
}

func (s *otlpSender) flush() error {
	if len(s.batch) == 0 {
		return nil
	}
	var body []byte
	if s.cfg.protocol == protoHTTPJSON {
		var err error
		if body, err = json.Marshal(s.requestJSON()); err != nil {
			return err
		}
	} else {
		var err error
		if body, err = encodeRequest(s.resource, s.batch); err != nil {
			return err
		}
	}
	rejected, msg, err := s.export(body)
	if err != nil {
		return fmt.Errorf("sending spans: %w", err)
	}
	s.sent += len(s.batch) - int(rejected)
	if rejected > 0 {
		return fmt.Errorf("sending spans: the endpoint rejected %d of %d: %s", rejected, len(s.batch), orNone(msg))
	}
	s.batch = s.batch[:0]
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}

// requestJSON is the OTLP/JSON ExportTraceServiceRequest of the batch: the
// same envelope the file writer streams.
func (s *otlpSender) requestJSON() map[string]any {
	spans := make([]any, len(s.batch))
	for i, sp := range s.batch {
		spans[i] = sp
	}
	return map[string]any{"resourceSpans": []any{map[string]any{
		"resource": map[string]any{"attributes": s.resource},
		"scopeSpans": []any{map[string]any{
			"scope": map[string]any{"name": "rpctap", "version": "1"},
			"spans": spans,
		}},
	}}}
}

// export sends one request, retrying what the specification calls
// retryable (HTTP 429, 502, 503, 504) with
// growing pauses (or the server's Retry-After) until the timeout. It
// returns the partial success the endpoint reported, if any.
func (s *otlpSender) export(msg []byte) (rejected int64, message string, err error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.timeout)
	defer cancel()
	body := msg
	if s.cfg.gzip {
		body = gzipped(msg)
	}
	pause := 250 * time.Millisecond
	for {
		var retry time.Duration
		rejected, message, retry, err = s.post(ctx, body)
		if err == nil || retry < 0 {
			return rejected, message, err
		}
		if retry == 0 {
			retry = pause
			pause *= 2
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < retry {
			return 0, "", fmt.Errorf("%w (gave up: OTEL_EXPORTER_OTLP_TIMEOUT is %v)", err, s.cfg.timeout)
		}
		select {
		case <-ctx.Done():
			return 0, "", err
		case <-time.After(retry):
		}
	}
}

// post makes one request. retry is negative when the failure is final, 0
// or the server's Retry-After when it may be retried.
func (s *otlpSender) post(ctx context.Context, body []byte) (rejected int64, message string, retry time.Duration, err error) {
	ctype := "application/x-protobuf"
	if s.cfg.protocol == protoHTTPJSON {
		ctype = "application/json"
	}
	hdr := [][2]string{{"User-Agent", "rpctap"}, {"Content-Type", ctype}}
	if s.cfg.gzip {
		hdr = append(hdr, [2]string{"Content-Encoding", "gzip"})
	}
	for _, h := range s.cfg.headers {
		switch strings.ToLower(h[0]) {
		case "host", "content-length", "connection", "transfer-encoding", "content-type", "content-encoding", "user-agent":
			continue // rpctap's own
		}
		hdr = append(hdr, h)
	}
	a, err := postHTTP(ctx, s.cfg.url, s.cfg.tls, hdr, body)
	if err != nil {
		// Nothing listening, a name that does not resolve, a TLS
		// failure, a connection cut: no retry would mend it within a
		// timeout.
		return 0, "", -1, err
	}
	if a.code/100 == 2 {
		rejected, message = partialSuccess(a.body, s.cfg.protocol == protoHTTPJSON)
		return rejected, message, 0, nil
	}
	err = fmt.Errorf("%s answered %s%s", s.cfg.url, a.status, statusMessage(a.header.Get("Content-Type"), a.body))
	switch a.code {
	case 429, 502, 503, 504:
		if sec, perr := strconv.Atoi(a.header.Get("Retry-After")); perr == nil && sec > 0 {
			return 0, "", time.Duration(sec) * time.Second, err
		}
		return 0, "", 0, err
	}
	return 0, "", -1, err
}

// statusMessage is the message of an OTLP/HTTP failure's body (a
// google.rpc.Status, protobuf or JSON), or its first line of text.
func statusMessage(ctype string, data []byte) string {
	var m string
	switch {
	case strings.HasPrefix(ctype, "application/x-protobuf"):
		m = string(protoField(data, 2)) // google.rpc.Status.message
	case strings.HasPrefix(ctype, "application/json"):
		var st struct{ Message string }
		if json.Unmarshal(data, &st) == nil {
			m = st.Message
		}
	default:
		m, _, _ = strings.Cut(strings.TrimSpace(string(data)), "\n")
	}
	if len(m) > 200 {
		m = m[:200] + "…"
	}
	return prefixed(m)
}

// partialSuccess reads ExportTraceServiceResponse.partial_success.
func partialSuccess(data []byte, isJSON bool) (rejected int64, message string) {
	if isJSON {
		var r struct {
			PartialSuccess struct {
				RejectedSpans json.Number
				ErrorMessage  string
			}
		}
		if json.Unmarshal(data, &r) != nil {
			return 0, ""
		}
		n, _ := r.PartialSuccess.RejectedSpans.Int64()
		return n, r.PartialSuccess.ErrorMessage
	}
	ps := protoField(data, 1)
	if ps == nil {
		return 0, ""
	}
	n, _ := protoVarint(ps, 1)
	return int64(n), string(protoField(ps, 2))
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func prefixed(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

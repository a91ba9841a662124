package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/internal/linked/linkedfix"
	"github.com/rpctap/rpctap/internal/testpeers"
)

// TestExportSendToCollector: `rpctap export --format otlp --send` sends the
// spans of the ACP sample cassette, to the standard
// OTEL_EXPORTER_OTLP_ENDPOINT, to a real OpenTelemetry Collector (OTLP
// receiver, debug exporter printing every span), which receives all of
// them over each protocol rpctap sends (OTEL_EXPORTER_OTLP_PROTOCOL):
// http/protobuf and http/json (gzipped, with a header): names, the GenAI
// attributes, the prompt turn's parent links, the recorded times.
func TestExportSendToCollector(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	addr, out := startCollector(t)
	cas, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	for _, proto := range []struct {
		name, endpoint string
		env            []string
	}{
		{"http/protobuf", addr, nil},
		{"http/json", addr, []string{"OTEL_EXPORTER_OTLP_COMPRESSION=gzip", "OTEL_EXPORTER_OTLP_HEADERS=x-tenant=rpctap"}},
	} {
		before := len(out.String())
		send := exec.Command(rp, "export", "--format", "otlp", "--send", cas)
		send.Env = append(filterEnv(os.Environ(), "OTEL_"), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+proto.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+proto.name)
		send.Env = append(send.Env, proto.env...)
		msg, err := send.CombinedOutput()
		if err != nil || !strings.Contains(string(msg), "sent 14 spans") {
			t.Fatalf("export --send over %s: %v\n%s", proto.name, err, msg)
		}
		// The debug exporter prints each span it received.
		var got string
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			got = out.String()[before:]
			if strings.Count(got, "Span #") >= 14 || time.Now().After(deadline) {
				break
			}
		}
		if n := strings.Count(got, "Span #"); n != 14 {
			t.Fatalf("over %s the collector received %d spans, want 14 (12 exchanges, 2 tool calls):\n%s", proto.name, n, got)
		}
		for _, want := range []string{
			"Name           : session/prompt",
			"Name           : execute_tool Reading project files",
			"-> gen_ai.operation.name: Str(invoke_agent)",
			"-> gen_ai.tool.name: Str(Reading project files)",
			"-> network.transport: Str(pipe)",
			"-> service.name: Str(rpctap)",
			"Kind           : Client",
			"2026-11-21 08:00:00", // the recorded start, not the time of sending
		} {
			if !strings.Contains(got, want) {
				t.Errorf("over %s the collector's spans lack %q", proto.name, want)
			}
		}
		// The tool call spans are children of the prompt's span.
		prompt := regexp.MustCompile(`(?s)ID             : ([0-9a-f]{16})\n[^\n]*\n?    Name           : session/prompt`).FindStringSubmatch(got)
		if prompt == nil {
			prompt = regexp.MustCompile(`(?s)Parent ID      : \n    ID             : ([0-9a-f]{16})\n    Name           : session/prompt`).FindStringSubmatch(got)
		}
		if prompt == nil {
			t.Fatalf("no session/prompt span id in:\n%s", got)
		}
		// 4 agent messages and 2 tool calls under the prompt.
		if n := strings.Count(got, "Parent ID      : "+prompt[1]); n != 6 {
			t.Errorf("over %s %d spans have the prompt %s as parent, want 6 (its 4 messages and 2 tool calls)", proto.name, n, prompt[1])
		}
		// the finish reason arrives as a string array
		if !strings.Contains(got, "-> gen_ai.response.finish_reasons: Slice([\"end_turn\"])") {
			t.Errorf("over %s the prompt's finish reason did not arrive", proto.name)
		}
	}
}

// startCollector runs a real OpenTelemetry Collector (OTLP/HTTP receiver,
// debug exporter printing every span in detail) until the test ends, and
// returns its address and what it prints.
func startCollector(t *testing.T) (string, *syncBuffer) {
	t.Helper()
	col := testpeers.Collector(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "collector.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
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
`, addr)), 0o644)
	out := &syncBuffer{}
	cmd := exec.Command(col, "--config", cfg)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range []string{addr} {
		for {
			if c, err := net.Dial("tcp", a); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the collector did not listen on %s:\n%s", a, out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return addr, out
}

// TestExportSendBadSetup: --send without an endpoint, with another format,
// with -o, or with a protocol OTLP does not have says what to do in one
// line.
func TestExportSendBadSetup(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	cas, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--format", "otlp", "--send"}, "--send needs OTEL_EXPORTER_OTLP_ENDPOINT"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1"}, []string{"--format", "har", "--send"}, "--send is for --format otlp"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1"}, []string{"--format", "otlp", "--send", "-o", "x.json"}, "exclude each other"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=thrift"}, []string{"--format", "otlp", "--send"}, `OTLP protocol "thrift" cannot be sent`},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318"}, []string{"--format", "otlp", "--send"}, `is not an http:// or https:// URL`},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, []string{"--format", "otlp", "--send"}, `OTLP protocol "grpc" is not sent by rpctap: set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`},
	} {
		cmd := exec.Command(rp, append(append([]string{"export"}, c.args...), cas)...)
		cmd.Env = append(append([]string{}, filterEnv(os.Environ(), "OTEL_")...), c.env...)
		out, err := cmd.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err == nil || !strings.Contains(lines[0], c.want) {
			t.Errorf("%v %v: %v\n%s", c.env, c.args, err, out)
		}
	}
}

func filterEnv(env []string, prefix string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// collectorSpan is one span as the Collector's debug exporter prints it.
type collectorSpan struct{ trace, parent, id, name string }

// collectorSpans reads the spans of the debug exporter's detailed output.
func collectorSpans(out string) []collectorSpan {
	field := func(block, name string) string {
		m := regexp.MustCompile(`(?m)^\s*` + name + `\s*: ?(.*)$`).FindStringSubmatch(block)
		if m == nil {
			return ""
		}
		return strings.TrimSpace(m[1])
	}
	var spans []collectorSpan
	for _, block := range strings.Split(out, "Span #")[1:] {
		spans = append(spans, collectorSpan{field(block, "Trace ID"), field(block, "Parent ID"), field(block, "ID"), field(block, "Name")})
	}
	return spans
}

// TestExportSendLinkedToCollector: `export --format otlp --send` of a deep
// recording (an ACP cassette and the two MCP cassettes its agent spawned,
// linked by their headers) gives the real Collector one trace: every span
// has the same trace id, each MCP tools/call span's parent is the ACP
// execute_tool span of the tool call that encloses it, and the MCP
// servers' other spans hang under the session/new span that spawned them.
func TestExportSendLinkedToCollector(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	set, err := linkedfix.Write(t.TempDir(), linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr, out := startCollector(t)
	for _, proto := range []string{"http/protobuf", "http/json"} {
		before := len(out.String())
		send := exec.Command(rp, "export", "--format", "otlp", "--send", set.Parent)
		send.Env = append(filterEnv(os.Environ(), "OTEL_"), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+addr, "OTEL_EXPORTER_OTLP_PROTOCOL="+proto)
		msg, err := send.CombinedOutput()
		if err != nil || !strings.Contains(string(msg), "sent 21 spans") {
			t.Fatalf("export --send over %s: %v\n%s", proto, err, msg)
		}
		var spans []collectorSpan
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			spans = collectorSpans(out.String()[before:])
			if len(spans) >= 21 || time.Now().After(deadline) {
				break
			}
		}
		if len(spans) != 21 {
			t.Fatalf("over %s the collector received %d spans, want 21 (12 ACP, 9 MCP):\n%s", proto, len(spans), out.String()[before:])
		}
		byName := map[string][]collectorSpan{}
		for _, s := range spans {
			if s.trace != spans[0].trace || len(s.trace) != 32 {
				t.Errorf("over %s span %s is in trace %q, the first in %q", proto, s.name, s.trace, spans[0].trace)
			}
			byName[s.name] = append(byName[s.name], s)
		}
		one := func(name string) collectorSpan {
			if len(byName[name]) != 1 {
				t.Fatalf("over %s %d spans named %q", proto, len(byName[name]), name)
			}
			return byName[name][0]
		}
		newSpan := one("session/new")
		if p := one("tools/call read_file").parent; p != one("execute_tool Read README.md").id {
			t.Errorf("over %s the files server's tools/call has parent %s, not the Read README.md tool call", proto, p)
		}
		if p := one("tools/call status").parent; p != one("execute_tool git status").id {
			t.Errorf("over %s the git server's tools/call has parent %s, not the git status tool call", proto, p)
		}
		// Each server's initialize and tools/list, and the files server's
		// log message: under session/new.
		under := 0
		for _, name := range []string{"initialize", "tools/list", "notifications/initialized", "notifications/message"} {
			for _, s := range byName[name] {
				if s.parent == newSpan.id {
					under++
				}
			}
		}
		if under != 7 {
			t.Errorf("over %s %d MCP spans are children of session/new %s, want 7", proto, under, newSpan.id)
		}
	}

	// A real deep recording (recordDeep: the ACP and MCP Go SDKs' peers
	// under record --deep): one trace, each MCP span under an ACP span of
	// it (its execute_tool, or session/new).
	deep := recordDeep(t, rp, t.TempDir())
	before := len(out.String())
	send := exec.Command(rp, "export", "--format", "otlp", "--send", deep)
	send.Env = append(filterEnv(os.Environ(), "OTEL_"), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+addr)
	msg, err := send.CombinedOutput()
	m := regexp.MustCompile(`sent (\d+) spans`).FindStringSubmatch(string(msg))
	if err != nil || m == nil {
		t.Fatalf("export --send of the deep recording: %v\n%s", err, msg)
	}
	var spans []collectorSpan
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		spans = collectorSpans(out.String()[before:])
		if fmt.Sprint(len(spans)) == m[1] || time.Now().After(deadline) {
			break
		}
	}
	if fmt.Sprint(len(spans)) != m[1] {
		t.Fatalf("the collector received %d spans of the deep recording, %s were sent", len(spans), m[1])
	}
	names := map[string]string{}
	for _, s := range spans {
		names[s.id] = s.name
		if s.trace != spans[0].trace {
			t.Errorf("span %s is in trace %s, the first in %s", s.name, s.trace, spans[0].trace)
		}
	}
	mcp := 0
	for _, s := range spans {
		if s.name != "server/discover" && s.name != "tools/call greet" {
			continue
		}
		mcp++
		if p := names[s.parent]; p != "session/new" && !strings.HasPrefix(p, "execute_tool greet via mcp-") {
			t.Errorf("the deep recording's %s span hangs under %q", s.name, p)
		}
	}
	if mcp != 4 {
		t.Errorf("%d MCP spans of the deep recording arrived, want 4 (2 servers: server/discover, tools/call greet)", mcp)
	}
}

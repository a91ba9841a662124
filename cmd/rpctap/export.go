package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rpctap/rpctap/internal/export"
	"github.com/rpctap/rpctap/internal/redact"
	"github.com/spf13/pflag"
)

// exportOptions are the flags of `rpctap export`.
type exportOptions struct {
	Format   string
	Output   string
	Redact   []string
	Payloads bool
	Send     bool
}

func init() {
	register(&command{
		Name:    "export",
		Summary: "write a cassette as HAR, a Chrome/Perfetto trace, OpenTelemetry OTLP/JSON or an HTML report",
		Usage:   "export --format har|trace|otlp|html [flags] CASSETTE",
		Long: `Writes the cassette's requests with their answers (and its notifications and
events) in a format other tools open:
  har     HAR 1.2: one entry per request and answer (browser devtools, proxies)
  trace   Chrome trace event JSON: a track per direction and method (Perfetto,
          chrome://tracing)
  otlp    OpenTelemetry OTLP/JSON spans, named and attributed by the GenAI and
          MCP semantic conventions (an OTLP/JSON file for a collector's
          otlpjsonfile receiver, or for curl to /v1/traces)
  html    one self-contained HTML page (no network): the frame list, a detail
          pane and the transcript
With --send (otlp only), the spans are sent instead, with the OpenTelemetry
Go SDK, to the endpoint the standard variables name: OTEL_EXPORTER_OTLP_
[TRACES_]ENDPOINT, _HEADERS, _PROTOCOL (http/protobuf, the default, or grpc),
_INSECURE, _TIMEOUT, _COMPRESSION, _CERTIFICATE. Without --send nothing is
sent, whatever the variables say. Spans keep the recorded times.
Secrets are redacted as when recording (--redact KEY adds keys). The cassette
is read once and streamed: memory stays bounded however large it is. Mappings:
docs/export.md.`,
		Example: `  rpctap export --format har -o session.har session.cassette
  rpctap export --format trace -o trace.json session.cassette   # open in ui.perfetto.dev
  rpctap export --format otlp --payloads session.cassette > spans.json
  rpctap export --format html -o report.html session.cassette
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 rpctap export --format otlp --send session.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &exportOptions{}
			fs.StringVar(&o.Format, "format", "", "har, trace, otlp or html (required)")
			fs.StringVarP(&o.Output, "output", "o", "", "write to `FILE` (default: stdout)")
			fs.StringArrayVar(&o.Redact, "redact", nil, "also redact the values of JSON key `KEY` (repeatable)")
			fs.BoolVar(&o.Payloads, "payloads", false, "otlp: include request and response bodies as span attributes")
			fs.BoolVar(&o.Send, "send", false, "otlp: send the spans to the OTEL_EXPORTER_OTLP_* endpoint instead of writing them")
			return func(args []string, stdio Stdio) error {
				if len(args) != 1 {
					return Usagef("export needs one cassette (got %d)", len(args))
				}
				return runExport(o, args[0], stdio)
			}
		},
	})
}

func runExport(o *exportOptions, path string, stdio Stdio) error {
	if o.Send {
		return runExportSend(o, path, stdio)
	}
	out := stdio.Out
	var file *os.File
	if o.Output != "" {
		if abs(o.Output) == abs(path) {
			return Usagef("export: -o would overwrite the cassette %s", path)
		}
		f, err := os.CreateTemp(filepath.Dir(o.Output), ".rpctap-export-*")
		if err != nil {
			return fmt.Errorf("export: %v", err)
		}
		defer os.Remove(f.Name())
		file, out = f, f
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	var w export.Writer
	switch o.Format {
	case "har":
		w = export.NewHAR(bw)
	case "trace":
		w = export.NewTrace(bw)
	case "otlp":
		w = export.NewOTLP(bw, o.Payloads)
	case "html":
		w = export.NewHTML(bw)
	case "":
		return Usagef("export needs --format har, trace, otlp or html")
	default:
		return Usagef("--format must be har, trace, otlp or html, not %q", o.Format)
	}
	var progress func(uint64)
	if f, ok := stdio.Err.(*os.File); ok && isTerminal(f) {
		progress = func(n uint64) { fmt.Fprintf(stdio.Err, "\rrpctap export: %d records", n) }
		defer fmt.Fprint(stdio.Err, "\r\033[K")
	}
	if err := export.Run(path, w, exportRunOptions(o), progress); err != nil {
		return exportErr(path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %v", err)
	}
	if file != nil {
		if err := file.Sync(); err != nil {
			return fmt.Errorf("export: %v", err)
		}
		if err := file.Close(); err != nil {
			return fmt.Errorf("export: %v", err)
		}
		if err := os.Rename(file.Name(), o.Output); err != nil {
			return fmt.Errorf("export: %v", err)
		}
	}
	return nil
}

func exportRunOptions(o *exportOptions) export.Options {
	return export.Options{Redactor: redact.New(redact.Options{Keys: o.Redact})}
}

// exportErr is one line: a failure to write or send is rpctap's (exit
// 125), any other the cassette's (exit 4).
func exportErr(path string, err error) error {
	var we *export.WriteError
	if errors.As(err, &we) {
		return &ExitError{Code: ExitInternal, Err: fmt.Errorf("export: %v", we.Err)}
	}
	return Inputf("export: %s: %v", path, describeCassetteErr(err))
}

// runExportSend sends the OTLP spans with the OTel SDK exporter the
// OTEL_EXPORTER_OTLP_* variables describe, and says how many went where.
func runExportSend(o *exportOptions, path string, stdio Stdio) error {
	if o.Format != "otlp" {
		return Usagef("--send needs --format otlp")
	}
	if o.Output != "" {
		return Usagef("--send sends the spans; it takes no -o")
	}
	if _, err := os.Stat(path); err != nil {
		return Inputf("export: %s: %v", path, describeCassetteErr(err))
	}
	ctx := context.Background()
	exp, err := export.NewEnvExporter(ctx)
	if err != nil {
		return Usagef("export --send: %v", err)
	}
	sink := export.NewSDKSpans(ctx, exp)
	if err := export.Run(path, export.NewOTLPSpans(sink, o.Payloads), exportRunOptions(o), nil); err != nil {
		exp.Shutdown(ctx)
		return exportErr(path, err)
	}
	fmt.Fprintf(stdio.Err, "rpctap export: sent %d spans (%s)\n", sink.Sent, export.SendTarget())
	return nil
}

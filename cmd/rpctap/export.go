package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rpctap/rpctap/internal/export"
	"github.com/rpctap/rpctap/internal/redact"
	"github.com/rpctap/rpctap/internal/safefile"
	"github.com/rpctap/rpctap/replay"
	"github.com/spf13/pflag"
)

// exportOptions are the flags of `rpctap export`.
type exportOptions struct {
	Format   string
	Output   string
	Redact   []string
	Payloads bool
	Send     bool
	Alone    bool // otlp: without the cassettes linked to it
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
  html    a self-contained report (one file, no network): the exchanges, each
          one's request and response, and the transcript
A cassette recorded with 'record --deep' takes the cassettes linked to it
(the MCP servers its ACP agent spawned) into its OTLP trace, their spans
under the ACP tool call that encloses them (--alone: the cassette alone).
Secrets are redacted as when recording (--redact KEY adds keys). The cassette
is read once and streamed: memory stays bounded however large it is. Mappings:
docs/export.md.

Flags by format: -o and --redact go with every format; --payloads and --send
(and --alone) are otlp's only, and --send (spans to an endpoint) excludes
-o. A flag that would do nothing with the format chosen is refused. -o
writes through a temporary file renamed over a regular file (a missing
directory is made); a FIFO or a device is written directly, a symlink
written through.`,
		Example: `  rpctap export --format har -o session.har session.cassette
  rpctap export --format trace -o trace.json session.cassette   # open in ui.perfetto.dev
  rpctap export --format otlp --payloads session.cassette > spans.json
  rpctap export --format html -o report.html session.cassette   # one file, opens offline
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 rpctap export --format otlp --send session.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &exportOptions{}
			fs.StringVar(&o.Format, "format", "", "har, trace, otlp or html (required)")
			fs.StringVarP(&o.Output, "output", "o", "", "write to `FILE` (default, or -: stdout)")
			fs.StringArrayVar(&o.Redact, "redact", nil, "also redact the values of JSON key `KEY` (repeatable)")
			fs.BoolVar(&o.Payloads, "payloads", false, "otlp only: include request and response bodies as span attributes")
			fs.BoolVar(&o.Alone, "alone", false, "otlp only: export the cassette alone, without the cassettes linked to it (record --deep)")
			fs.BoolVar(&o.Send, "send", false, "otlp only, not with -o: send the spans to the endpoint OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) names (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json), instead of writing them")
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
	if o.Output == "-" {
		o.Output = "" // -o - is stdout, as for most tools; not a file named "-"
	}
	// A flag that does nothing with the format chosen is refused, not
	// ignored: --payloads and --send are OTLP's.
	if o.Payloads && o.Format != "otlp" && o.Format != "" {
		return Usagef("--payloads is for --format otlp (har and html always hold the bodies; trace holds none)")
	}
	if o.Alone && o.Format != "otlp" && o.Format != "" {
		return Usagef("--alone is for --format otlp (the other formats export one cassette)")
	}
	if o.Send {
		return runExportSend(o, path, stdio)
	}
	var newWriter func(io.Writer) export.Writer
	switch o.Format {
	case "har":
		newWriter = func(w io.Writer) export.Writer { return export.NewHAR(w) }
	case "trace":
		newWriter = func(w io.Writer) export.Writer { return export.NewTrace(w) }
	case "otlp":
		newWriter = func(w io.Writer) export.Writer { return export.NewOTLP(w, o.Payloads) }
	case "html":
		newWriter = func(w io.Writer) export.Writer { return export.NewHTML(w) }
	case "":
		return Usagef("export needs --format har, trace, otlp or html")
	default:
		return Usagef("--format must be har, trace, otlp or html, not %q", o.Format)
	}
	if o.Output != "" && sameFile(o.Output, path) {
		return Usagef("export: -o would overwrite the cassette %s", path)
	}
	var progress func(export.Progress)
	if f, ok := stdio.Err.(*os.File); ok && isTerminal(f) {
		// A bar on the terminal only: redirected stderr gets nothing.
		last := time.Time{}
		progress = func(p export.Progress) {
			if now := time.Now(); now.Sub(last) >= 100*time.Millisecond || p.Read == p.Size {
				last = now
				fmt.Fprint(stdio.Err, "\r"+progressBar(p))
			}
		}
		defer fmt.Fprint(stdio.Err, "\r\033[K")
	}
	var rep export.Report
	var linked []export.LinkedReport
	write := func(out io.Writer) error {
		bw := bufio.NewWriterSize(out, 256<<10)
		opts := export.Options{Redactor: redact.New(redact.Options{Keys: o.Redact})}
		var r export.Report
		var err error
		if w, ok := newWriter(bw).(*export.OTLP); ok && !o.Alone {
			// The cassettes linked to it (record --deep) join its trace.
			r, linked, err = export.RunLinked(path, w, opts, progress)
		} else {
			r, err = export.RunReport(path, newWriter(bw), opts, progress)
		}
		if err != nil {
			return exportErr(path, err)
		}
		rep = r
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("export: %v", err)
		}
		return nil
	}
	if o.Output == "" {
		if err := write(stdio.Out); err != nil {
			return err
		}
	} else if err := safefile.Write(o.Output, safefile.Options{}, write); err != nil {
		// -o: through a temporary file renamed over a regular target,
		// straight into a device or FIFO; the target is untouched when
		// anything fails.
		return writeFailed("export", err)
	}
	// What could be read was exported (and -o put in place); the damage
	// read past is said after it.
	return linkedDamage(exportDamage(path, rep, stdio), linked, stdio)
}

// linkedDamage reports, after the parent's (err), what export read past in
// each linked cassette, as exportDamage does; the first error wins.
func linkedDamage(err error, linked []export.LinkedReport, stdio Stdio) error {
	for _, l := range linked {
		e := exportDamage(l.Path, l.Report, stdio)
		if l.Err != nil {
			e = Inputf("export: linked %s: %v; its spans are missing", l.Path, describeCassetteErr(l.Err))
			fmt.Fprintln(stdio.Err, "rpctap: "+e.Error())
		}
		if err == nil {
			err = e
		}
	}
	return err
}

// exportDamage reports what export read past, once each, after the output
// was written: every damaged range (one line each, exit 4, as cat, check,
// diff and replay do) and an early end (one warning, exit 0: a cassette
// whose recorder was killed is read to its last whole record).
func exportDamage(path string, rep export.Report, stdio Stdio) error {
	for _, d := range rep.Damaged {
		fmt.Fprintln(stdio.Err, damageLine(path, d))
	}
	if msg := rep.TruncatedNote(); msg != "" {
		fmt.Fprintf(stdio.Err, "rpctap: warning: %s: %s\n", path, msg)
	}
	if len(rep.Damaged) == 0 {
		return nil
	}
	return Inputf("export: %s: %s; exported every readable record", path, replay.DamageSummary(rep.Damaged))
}

// progressBar draws one line: a 30-cell bar, the share of the cassette read,
// the bytes and the records.
func progressBar(p export.Progress) string {
	frac := 0.0
	if p.Size > 0 {
		frac = min(float64(p.Read)/float64(p.Size), 1)
	}
	cells := int(frac * 30)
	return fmt.Sprintf("rpctap export [%s%s] %3.0f%% %s of %s, %d records", strings.Repeat("█", cells), strings.Repeat("·", 30-cells),
		frac*100, humanBytes(p.Read), humanBytes(p.Size), p.Records)
}

// humanBytes is n in B, KiB, MiB or GiB with 3 significant digits.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.3g KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// runExportSend sends a cassette's spans to an OTLP endpoint (--send).
func runExportSend(o *exportOptions, path string, stdio Stdio) error {
	switch {
	case o.Format != "otlp":
		return Usagef("--send is for --format otlp")
	case o.Output != "":
		return Usagef("--send and -o exclude each other: the spans go to the endpoint")
	case !export.SendConfigured():
		return Usagef("--send needs OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), e.g. http://localhost:4318")
	}
	if _, err := os.Stat(path); err != nil {
		return Inputf("export: %s: %v", path, describeCassetteErr(err))
	}
	w, err := export.NewOTLPSender(context.Background(), o.Payloads)
	if err != nil {
		return Usagef("export --send: %v", err)
	}
	opts := export.Options{Redactor: redact.New(redact.Options{Keys: o.Redact}), Payloads: o.Payloads}
	var rep export.Report
	var linked []export.LinkedReport
	if o.Alone {
		rep, err = export.RunReport(path, w, opts, nil)
	} else {
		rep, linked, err = export.RunLinked(path, w, opts, nil)
	}
	if err != nil {
		return exportErr(path, err)
	}
	fmt.Fprintf(stdio.Err, "rpctap export: sent %d spans\n", w.Sent())
	return linkedDamage(exportDamage(path, rep, stdio), linked, stdio)
}

// exportErr is export.Run's error as one line: the output's or the
// endpoint's failure (a WriteError: a full disk, a closed pipe, a refused
// send) is rpctap's, exit 125, and does not name the cassette as the
// culprit; any other is the cassette's, exit 4.
func exportErr(path string, err error) error {
	var we *export.WriteError
	if errors.As(err, &we) {
		return fmt.Errorf("export: %v", we.Err)
	}
	return Inputf("export: %s: %v", path, describeCassetteErr(err))
}

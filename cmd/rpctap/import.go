package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/logimport"
	"github.com/rpctap/rpctap/internal/recorder"
	"github.com/rpctap/rpctap/internal/safefile"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

// importOptions are the flags of `rpctap import`.
type importOptions struct {
	Output   string
	NoRedact bool
	Protocol string
}

func init() {
	var formats []string
	for _, n := range logimport.FormatNames() {
		formats = append(formats, fmt.Sprintf("  %-13s %s", n, logimport.Formats[n]))
	}
	register(&command{
		Name:    "import",
		Summary: "turn an editor's or tool's message log into a cassette",
		Usage:   "import FORMAT FILE -o OUT.cassette   (FILE - reads standard input)",
		Long: `import reads a log of JSON-RPC messages that another program wrote and
writes a cassette of them, so that check, view, diff, export, shrink and
replay work on it. Each message goes through the recorder as if it had been
read from the wire: it is classified, validated and redacted the same way.

A log is not the wire: programs log the messages they parsed, printed again,
so the cassette's bytes are rebuilt, not the bytes that were sent. Its
header says so ("imported"), and 'rpctap cat --raw' warns. LSP messages get
a Content-Length header of their own. Times are the log's when it has them;
a log without times gives every record time 0.

A log with entries that cannot be read is imported as far as it can be:
rpctap names the first bad line, writes every message it could read, and
exits with status 4.

Formats (FORMAT):
` + strings.Join(formats, "\n"),
		Example: `  rpctap import zed-acp acp-log.json -o zed.cassette
  rpctap import vscode-lsp "gopls (server).log" -o gopls.cassette && rpctap check gopls.cassette
  rpctap import jsonl messages.jsonl -o x.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &importOptions{}
			fs.SetInterspersed(true)
			fs.StringVarP(&o.Output, "output", "o", "", "write the cassette to `FILE` (must not exist)")
			fs.BoolVar(&o.NoRedact, "no-redact", false, "keep secrets in the messages as they are")
			fs.StringVar(&o.Protocol, "protocol", "", "the messages' protocol `NAME` (default: the format's, or detected for jsonl)")
			return func(args []string, stdio Stdio) error { return runImport(o, args, stdio) }
		},
	})
}

func runImport(o *importOptions, args []string, stdio Stdio) error {
	if len(args) != 2 {
		return Usagef("import needs FORMAT and FILE (formats: %s)", strings.Join(logimport.FormatNames(), ", "))
	}
	format, in := args[0], args[1]
	if _, ok := logimport.Formats[format]; !ok {
		return Usagef("unknown format %q (known: %s)", format, strings.Join(logimport.FormatNames(), ", "))
	}
	if o.Output == "" {
		return Usagef("import needs -o OUT.cassette")
	}
	// An existing cassette is not replaced (it may be a recording); a
	// device or FIFO (-o /dev/stdout) is written to directly.
	if direct, _ := safefile.Direct(o.Output); !direct {
		if st, err := os.Lstat(o.Output); err == nil {
			if st.IsDir() {
				return Usagef("-o %s is a directory; give a file name such as %s", o.Output, filepath.Join(o.Output, "imported.cassette"))
			}
			return Usagef("-o %s exists; rpctap does not replace a file", o.Output)
		}
	}
	if o.Protocol != "" {
		if _, err := protocol.Lookup(o.Protocol); err != nil {
			return Usagef("--protocol: %v", err)
		}
	}
	var l *logimport.Log
	from := filepath.Base(in)
	if in == "-" {
		// Zed's Copy All Messages puts the log on the clipboard:
		// `xclip -o | rpctap import zed-acp - -o x.cassette`.
		from = ""
		var err error
		if l, err = logimport.Read(format, stdio.In, time.Now()); err != nil {
			return Inputf("standard input: %v", err)
		}
	} else {
		f, err := os.Open(in)
		if err != nil {
			return Inputf("%s: %v", in, errors.Unwrap(err))
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return Inputf("%s: %v", in, err)
		}
		if st.IsDir() {
			return Inputf("%s is a directory, not a log", in)
		}
		if l, err = logimport.Read(format, f, st.ModTime()); err != nil {
			return Inputf("%s: %v", in, err)
		}
	}
	if o.Protocol != "" {
		l.Protocol = o.Protocol
	}
	if err := writeImported(o, l, from); err != nil {
		if safefile.IsError(err) {
			return fmt.Errorf("import: %v", err)
		}
		return fmt.Errorf("import: cannot write %s: %v", o.Output, err)
	}
	// With -o /dev/stdout (or another device or FIFO) the cassette is the
	// output; the report goes to stderr.
	report := stdio.Out
	if direct, _ := safefile.Direct(o.Output); direct {
		report = stdio.Err
	}
	if _, err := fmt.Fprintf(report, "imported %s from %s into %s\n", plural(len(l.Messages), "message"), in, o.Output); err != nil {
		return fmt.Errorf("cannot write the report (%s is written): %v", o.Output, err)
	}
	if len(l.Problems) > 0 {
		more := ""
		if n := len(l.Problems) - 1; n > 0 {
			more = " (and 1 more entry)"
			if n > 1 {
				more = fmt.Sprintf(" (and %d more entries)", n)
			}
		}
		return Inputf("%s %s%s; %s read, kept in %s", in, l.Problems[0], more, plural(len(l.Messages), "message"), o.Output)
	}
	return nil
}

// writeImported feeds the log's messages to a recorder, as chunks of the
// child's stdin (In) and stdout (Out) at the log's times, into a temporary
// file that is renamed to the output when complete.
func writeImported(o *importOptions, l *logimport.Log, from string) error {
	var t0 time.Time
	for _, m := range l.Messages {
		if !m.Time.IsZero() {
			t0 = m.Time
			break
		}
	}
	created := t0
	if created.IsZero() {
		created = time.Now()
	}
	h := cassette.Header{Rpctap: Version, Created: created.UTC().Format(time.RFC3339Nano), Protocol: l.Protocol,
		Redacted: !o.NoRedact, Imported: &cassette.Imported{Format: l.Format, From: from, Clock: l.Clock}}
	// The cassette goes through safefile: a temporary file beside -o (its
	// directory made if missing), read back to its end record, renamed.
	return safefile.Write(o.Output, safefile.Options{Verify: completeCassette}, func(out io.Writer) error {
		w, err := cassette.NewWriter(out, h, nil)
		if err != nil {
			return err
		}
		var mu sync.Mutex
		var warns []string
		warn := recorder.WithWarn(func(m string) { mu.Lock(); warns = append(warns, m); mu.Unlock() })
		ro := recorder.Options{Protocol: l.Protocol, HeaderProtocol: l.Protocol != "",
			Redact: recorder.RedactOptions{Off: o.NoRedact}}
		if l.Framing == "content-length" {
			ro.Framing = framing.ContentLength
		} else {
			ro.Framing = framing.Lines
		}
		rec := recorder.New(w, recorder.WithOptions(ro), warn)
		var last int64
		for i, m := range l.Messages {
			var t int64
			if !m.Time.IsZero() && !t0.IsZero() {
				t = m.Time.Sub(t0).Nanoseconds()
			}
			if t < last {
				t = last // the recorder's clock never goes back; a log's may
			}
			last = t
			data := append(append([]byte(nil), m.Body...), '\n')
			if l.Framing == "content-length" {
				data = append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(m.Body))), m.Body...)
			}
			stream := tap.Stdin
			if m.Dir == logimport.Out {
				stream = tap.Stdout
			}
			rec.Observe(tap.Chunk{Stream: stream, Seq: uint64(i + 1), T: t, Data: data})
		}
		if err := rec.Close(); err != nil {
			return err
		}
		if rec.Failed() {
			return errors.New(strings.Join(warns, "; "))
		}
		return nil
	})
}

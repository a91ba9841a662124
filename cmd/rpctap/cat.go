package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rpctap/rpctap/cassette"
	"github.com/spf13/pflag"
)

// catOptions are the flags of `rpctap cat`.
type catOptions struct {
	Format string // "json" (the cassette's own lines) or "table"
	Raw    bool   // write one direction's exact byte stream
	Dir    string // in, out or err: only records of this direction
	Conn   int    // socket mode: only this connection (-1: any)
	Width  int    // table: bytes of payload shown
	Follow bool   // keep printing records appended to a cassette being written
	poll   time.Duration
}

func init() {
	register(&command{
		Name:    "cat",
		Summary: "print a cassette's records as JSON lines, a table, or raw bytes",
		Usage:   "cat [flags] CASSETTE...",
		Long: `Prints the records of each cassette. By default the output is the cassette's
own JSON lines, exactly as stored (the same as 'zstdcat CASSETTE', without the
need for zstd), ready for jq. --format table shows one line per record: time
since start, delta to the previous record, direction (→ parent to child,
← child to parent, ! stderr), kind, method, id, size and the first bytes.

--raw --direction in|out|err writes the exact byte stream of one direction, as the
child read it (in) or wrote it (out, err): line endings, invalid UTF-8 and a
missing final newline included. Values redacted at record time stay
redacted. In socket mode pick the connection with --conn.

A cassette that is still being written, or whose recorder was killed, is
printed up to its last complete record, followed by a warning on stderr
("truncated after record N"); the exit status is still 0. With --follow,
cat keeps printing the records of a recording in progress as they are
written, and stops at its end record (or when interrupted).

A damaged cassette (a flipped bit, a bad sector) is printed around the
damage: each damaged range is reported on stderr once, with its byte
offsets and the records it lost, and cat goes on at the next readable frame.

Exit status 4 when a file is missing, unreadable, damaged, not a cassette,
or from a newer rpctap (after printing every readable record of a damaged
one).`,
		Example: `  rpctap cat session.cassette | jq -c 'select(.k=="frame") | .json'
  rpctap cat --format table session.cassette
  rpctap cat --raw -d in session.cassette > stdin.bin
  rpctap cat --raw --direction out --conn 2 socket.cassette
  rpctap cat -f --format table session.cassette   # watch a recording`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &catOptions{}
			fs.StringVar(&o.Format, "format", "json", "output format: json or table")
			fs.BoolVar(&o.Raw, "raw", false, "write the exact bytes of one direction (needs --direction)")
			fs.StringVarP(&o.Dir, "direction", "d", "", "only records of this direction: in (stdin), out (stdout) or err (stderr)")
			// --dir was this flag's name before --dir came to mean a directory
			// in every command; it stays, hidden, for one release.
			fs.StringVar(&o.Dir, "dir", "", "old name of --direction")
			fs.MarkHidden("dir")
			fs.IntVar(&o.Conn, "conn", -1, "only records of this connection (socket mode; -1: all)")
			fs.IntVar(&o.Width, "width", 60, "table: bytes of each payload shown")
			fs.BoolVarP(&o.Follow, "follow", "f", false, "keep printing records as they are recorded, until the end record (like tail -f)")
			return func(args []string, stdio Stdio) error { return runCat(o, args, stdio) }
		},
	})
}

func runCat(o *catOptions, files []string, stdio Stdio) error {
	if len(files) == 0 {
		return Usagef("cat needs a cassette")
	}
	if o.Format != "json" && o.Format != "table" {
		return Usagef("--format must be json or table, not %q", o.Format)
	}
	switch o.Dir {
	case "", "in", "out", "err":
	default:
		return Usagef("--direction must be in, out or err, not %q", o.Dir)
	}
	if o.Raw && o.Dir == "" {
		return Usagef("--raw needs --direction in, out or err")
	}
	if o.Raw && o.Format != "json" {
		return Usagef("--raw and --format cannot be used together")
	}
	if (o.Raw || o.Follow) && len(files) > 1 {
		return Usagef("--raw and --follow take one cassette")
	}
	out := bufio.NewWriterSize(stdio.Out, 64<<10)
	damaged := false
	for _, f := range files {
		err := catFile(o, f, out, stdio.Err, len(files) > 1)
		if ferr := out.Flush(); err == nil && ferr != nil {
			return ferr
		}
		if errors.Is(err, errDamaged) {
			damaged = true
			continue
		}
		if err != nil {
			return err
		}
	}
	if damaged {
		// Each damaged range was reported where it was found.
		return Exit(ExitInput)
	}
	return nil
}

// errDamaged: a cassette had damaged ranges, each reported on stderr as it
// was found, and every readable record around them was printed.
var errDamaged = errors.New("damaged cassette")

// damageLine is how every command that reads a cassette reports a damaged
// range it went past: one line, the file, the bytes and the records lost.
func damageLine(path string, d *cassette.DamageError) string {
	return fmt.Sprintf("rpctap: %s: %v", path, d)
}

// catFile prints one cassette. Output is flushed by the caller; the warning
// about a cut comes after the records it follows.
func catFile(o *catOptions, path string, out *bufio.Writer, errw io.Writer, many bool) error {
	if o.Follow {
		return catFollow(o, path, out, errw)
	}
	r, err := cassette.Open(path)
	if err != nil {
		return Inputf("%s: %v", path, describeCassetteErr(err))
	}
	defer r.Close()
	h := r.Header()
	if o.Raw && h.Mode == "socket" && o.Conn < 0 {
		return Usagef("%s records several connections (socket mode); choose one with --conn N", path)
	}
	warnImported(o, h, path, errw)
	t := &tableState{width: o.Width}
	if o.Format == "table" && many {
		fmt.Fprintf(out, "== %s\n", path)
	}
	var gaps int64
	damaged := false
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		var de *cassette.DamageError
		if errors.As(err, &de) {
			// Say where, then go on with the records after it.
			if err := out.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(errw, damageLine(path, de))
			damaged = true
			continue
		}
		if err != nil {
			var te *cassette.TruncatedError
			if errors.As(err, &te) {
				if err := out.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(errw, "rpctap: warning: %s: %v\n", path, err)
				break
			}
			if ferr := out.Flush(); ferr != nil {
				return ferr
			}
			return Inputf("%s: %v", path, err)
		}
		if !o.match(rec) {
			continue
		}
		if rec.K == cassette.KindEvent && rec.Ev == cassette.EventGap && o.Raw {
			gaps += rec.Bytes
		}
		if err := o.print(out, t, rec, r.Line()); err != nil {
			return err
		}
	}
	if gaps > 0 {
		if err := out.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(errw, "rpctap: warning: %s: %d bytes of %q were forwarded but not recorded (gap); the output lacks them\n", path, gaps, o.Dir)
	}
	if damaged {
		return errDamaged
	}
	return nil
}

// print writes one record in the chosen form; line is its stored JSON line
// (nil: encode it, which gives the same bytes for a cassette rpctap wrote).
func (o *catOptions) print(out *bufio.Writer, t *tableState, rec *cassette.Record, line []byte) error {
	switch {
	case o.Raw:
		if rec.K == cassette.KindFrame || rec.K == cassette.KindStderr {
			t.buf = rec.AppendLine(t.buf[:0])
			_, err := out.Write(t.buf)
			return err
		}
		return nil
	case o.Format == "table":
		t.row(out, rec)
		return nil
	default:
		if line == nil {
			t.buf = rec.AppendJSON(t.buf[:0])
			line = t.buf
		}
		out.Write(line)
		return out.WriteByte('\n')
	}
}

// catFollow prints a cassette and then the records appended to it, polling
// its index (a few reads per poll: only what follows the last index frame is
// read again), until the end record. Output is flushed after each poll that
// printed something, so a pipe sees records as they are recorded. It ends
// only at the end record, a read error or a signal (like tail -f on a file
// whose writer was killed).
//
// A closed frame that does not decode is skipped like the streaming reader
// skips it: reported once on errw, the records after it printed.
func catFollow(o *catOptions, path string, out *bufio.Writer, errw io.Writer) error {
	x, err := cassette.OpenIndex(path)
	if err != nil {
		return Inputf("%s: %v", path, describeCassetteErr(err))
	}
	defer x.Close()
	if o.Raw && x.Header().Mode == "socket" && o.Conn < 0 {
		return Usagef("%s records several connections (socket mode); choose one with --conn N", path)
	}
	warnImported(o, x.Header(), path, errw)
	poll := o.poll
	if poll == 0 {
		poll = 200 * time.Millisecond
	}
	t := &tableState{width: o.Width}
	var next uint64
	damaged := false
	for {
		for {
			recs, err := x.Records(next, 1024)
			for i := range recs {
				if o.match(&recs[i]) {
					if err := o.print(out, t, &recs[i], nil); err != nil {
						return err
					}
				}
			}
			next += uint64(len(recs))
			if err != nil {
				out.Flush()
				d := skipDamagedFrame(x, next, err)
				if d == nil {
					return Inputf("%s: %v", path, err)
				}
				fmt.Fprintln(errw, damageLine(path, d))
				damaged = true
				next = d.First + d.Lost
				continue
			}
			if len(recs) == 0 {
				break
			}
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if x.Ended() && next >= x.Len() {
			if damaged {
				return errDamaged
			}
			return nil
		}
		if terr := x.TailError(); terr != nil {
			return Inputf("%s: %v", path, terr)
		}
		time.Sleep(poll)
		if _, err := x.Refresh(); err != nil {
			return Inputf("%s: %v", path, err)
		}
	}
}

// skipDamagedFrame describes the closed frame holding record n when err
// (from reading it) is damage: the records from n to the frame's end are
// lost. nil when the frame is not closed (a live tail may still change) or
// err is something else.
func skipDamagedFrame(x *cassette.Index, n uint64, err error) *cassette.DamageError {
	var ce *cassette.CorruptError
	if !errors.As(err, &ce) {
		return nil
	}
	for _, f := range x.Frames() {
		if n >= f.First && n < f.First+f.Count && f.Closed {
			return &cassette.DamageError{Offset: f.Offset, End: f.Offset + f.Len, First: n, Lost: f.First + f.Count - n, Reason: ce.Reason}
		}
	}
	return nil
}

// match applies --dir and --conn. With --dir, records without a direction
// (header, events, violations) are left out, except gap events of that
// direction, which --raw reports.
func (o *catOptions) match(r *cassette.Record) bool {
	if o.Conn >= 0 && r.Conn != o.Conn && r.K != cassette.KindHeader {
		return false
	}
	if o.Dir == "" {
		return true
	}
	if r.K == cassette.KindEvent && r.Ev == cassette.EventGap {
		return string(r.D) == o.Dir
	}
	if r.K != cassette.KindFrame && r.K != cassette.KindStderr {
		return false
	}
	return string(r.D) == o.Dir
}

// tableState formats --format table rows.
type tableState struct {
	width int
	prevT int64
	rows  int
	buf   []byte
}

func (t *tableState) row(w *bufio.Writer, r *cassette.Record) {
	if t.rows == 0 {
		fmt.Fprintf(w, "%6s %12s %11s %s %-13s %-28s %-8s %7s  %s\n", "#", "TIME", "DELTA", " ", "KIND", "METHOD", "ID", "SIZE", "DATA")
	}
	delta := r.T - t.prevT
	if t.rows == 0 {
		delta = 0
	}
	t.rows++
	t.prevT = r.T
	arrow := map[cassette.Dir]string{cassette.DirIn: "→", cassette.DirOut: "←", cassette.DirErr: "!"}[r.D]
	if arrow == "" {
		arrow = " "
	}
	kind, method, id, size, data := string(r.K), "", "", "", ""
	switch r.K {
	case cassette.KindHeader:
		if h := r.Header; h != nil {
			data = fmt.Sprintf("%s %s created %s", h.Format, h.Version, h.Created)
			if len(h.Argv) > 0 {
				data += " argv " + strings.Join(h.Argv, " ")
			}
			if h.Protocol != "" {
				method = h.Protocol
			}
		}
	case cassette.KindFrame, cassette.KindStderr:
		if r.Kind != "" && r.K == cassette.KindFrame {
			kind = r.Kind
		}
		method, id = r.Method, string(r.ID)
		p := r.Payload()
		size = strconv.Itoa(len(p) + len(r.EOL))
		data = excerpt(p, t.width)
		if r.Part {
			data = strings.TrimSuffix(data, "…") + "…(part)"
		}
	case cassette.KindEvent:
		method = r.Ev
		switch r.Ev {
		case cassette.EventStart:
			data = fmt.Sprintf("pid %d argv %s", r.PID, strings.Join(r.Argv, " "))
		case cassette.EventExit:
			if r.Exit != nil {
				data = fmt.Sprintf("exit %d", *r.Exit)
			} else {
				data = "signal " + r.Signal
			}
		case cassette.EventSignal:
			data = r.Signal
		case cassette.EventGap:
			data = fmt.Sprintf("%d bytes not recorded", r.Bytes)
		default:
			data = r.Msg
		}
	case cassette.KindViolation:
		method = r.Code
		data = fmt.Sprintf("%s #%d %s %s", r.Severity, r.Ref, r.Pointer, r.Msg)
	case cassette.KindMeta:
		method = r.Protocol
	case cassette.KindEnd:
		data = fmt.Sprintf("%d records", r.Records)
	}
	if r.Conn != 0 {
		kind = fmt.Sprintf("%s#%d", kind, r.Conn)
	}
	fmt.Fprintf(w, "%6d %12s %11s %s %-13s %-28s %-8s %7s  %s\n", r.N, seconds(r.T, false), seconds(delta, true),
		arrow, clip(kind, 13), clip(method, 28), clip(id, 8), size, data)
}

// seconds formats ns as seconds with microseconds.
func seconds(ns int64, sign bool) string {
	s := fmt.Sprintf("%d.%06d", ns/1e9, (ns%1e9)/1e3)
	if ns < 0 {
		s = fmt.Sprintf("-%d.%06d", -ns/1e9, (-ns%1e9)/1e3)
	}
	if sign && ns >= 0 {
		s = "+" + s
	}
	return s
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// excerpt shows the first bytes of a payload on one line: control bytes
// and invalid UTF-8 are escaped so the table stays a table.
func excerpt(p []byte, width int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(p) && n < width; {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, p[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0xfeff || r == 0x2028 || r == 0x2029 || r == 0x200b:
			fmt.Fprintf(&b, `\u%04x`, r) // invisible: a BOM or a line separator would hide or break the row
		default:
			b.WriteRune(r)
		}
		i += max(size, 1)
		n++
		if n == width && i < len(p) {
			b.WriteString("…")
		}
	}
	return b.String()
}

// warnImported says, before `cat --raw` writes anything, that an imported
// cassette's bytes were rebuilt from a log and are not what was sent.
func warnImported(o *catOptions, h cassette.Header, path string, errw io.Writer) {
	if o.Raw && h.Imported != nil {
		fmt.Fprintf(errw, "rpctap: warning: %s was imported from a %s log, not recorded: these bytes are rebuilt from the log, not the bytes that were sent\n", path, h.Imported.Format)
	}
}

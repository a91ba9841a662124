package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/redact"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/replay"
	"github.com/spf13/pflag"
)

// checkOptions are the flags of `rpctap check`.
type checkOptions struct {
	Protocol string // force a protocol instead of detecting it
	Schema   string // a JSON Schema file: judge every frame with it
	Format   string // "text", "json" or "junit"
	Max      int    // findings listed per code in the text report (0 = all)
	Assert   assertOptions
}

func init() {
	register(&command{
		Name:    "check",
		Summary: "re-validate cassettes with the current protocol rules",
		Usage:   "check [flags] CASSETTE...",
		Long: `Reads each cassette and judges every frame again with the protocol rules of
this rpctap (violations stored at record time are ignored): frame shapes
(required fields, JSON types, enums, unknown methods) and session rules
(handshake first, ids paired per direction, responses to unknown ids,
duplicate in-flight ids, requests never answered, oversized frames, non-JSON
or ANSI junk on stdout). The protocol is detected from the first frames as
when recording; --protocol or --schema overrides it.

The report groups findings by code, each with its record number and an
excerpt of the frame. A cassette cut short (the recorder was killed) is
checked up to the cut and the cut is reported. A damaged range (a frame
that does not decode) is reported with its bytes and the records it lost
(cassette.damaged), and every other record is checked. A session whose
rpctap was killed before the child exited has no exit event: reported as
cassette.no-exit with the last record's time, info when nothing was in
flight (a parent that SIGKILLs rpctap after its last reply), a warning when
a request was unanswered. Every file named gets an entry in the report;
one that cannot be read is an error in it (cassette.unreadable).

CI assertions: --expect-method and --forbid-method (a request,
notification or event method must or must not appear), --max-latency
METHOD=DURATION (each such request answered within DURATION; one never
answered fails too), and --baseline FILE (the child's surface: MCP
tools/list tools and initialize capabilities, ACP agentCapabilities and
authMethods, compared item by item with a baseline stored by
--write-baseline; added, removed and changed items fail). A failed assertion
is an error-level finding (assert.*). --format junit writes JUnit XML: a
testsuite per cassette, a testcase per violation code and per assertion.

Exit status: 0 when no error-level violation was found (warnings do not
count), 1 when one was, 4 when a file cannot be read as a cassette or is
damaged.
Codes and severities: docs/protocols.md.`,
		Example: `  rpctap check session.cassette
  rpctap check --format json ~/.local/state/rpctap/cassettes/*.cassette | jq '.files[].errors'
  rpctap check --protocol mcp server.cassette
  rpctap check --schema my-protocol.schema.json custom.cassette
  rpctap check --expect-method tools/call --forbid-method sampling/createMessage \
      --max-latency tools/call=2s --baseline tools.baseline --format junit s.cassette > report.xml
  rpctap check --write-baseline tools.baseline known-good.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &checkOptions{}
			fs.StringVar(&o.Protocol, "protocol", "", "judge with this protocol instead of detecting it ("+strings.Join(protocol.Names(), ", ")+")")
			fs.StringVar(&o.Schema, "schema", "", "judge every frame with this JSON Schema file (draft 2020-12 or draft-07)")
			fs.StringVar(&o.Format, "format", "text", "report format: text, json or junit (JUnit XML for CI systems)")
			fs.IntVar(&o.Max, "max", 20, "findings listed per code in the text report (0 = all)")
			fs.StringArrayVar(&o.Assert.Expect, "expect-method", nil, "fail unless `METHOD` appears (a request, notification or event; repeatable)")
			fs.StringArrayVar(&o.Assert.Forbid, "forbid-method", nil, "fail if `METHOD` appears (repeatable)")
			fs.StringArrayVar(&o.Assert.MaxLatency, "max-latency", nil, "fail if a `METHOD=DURATION` request took longer to answer, or was never answered (repeatable)")
			fs.StringVar(&o.Assert.Baseline, "baseline", "", "fail if the child's tools (MCP tools/list) or capabilities (initialize) drifted from this baseline `FILE`")
			fs.StringVar(&o.Assert.WriteBaseline, "write-baseline", "", "store the child's tools and capabilities as a baseline `FILE` for --baseline")
			return func(args []string, stdio Stdio) error { return runCheck(o, args, stdio) }
		},
	})
}

func runCheck(o *checkOptions, files []string, stdio Stdio) error {
	if len(files) == 0 {
		return Usagef("check needs at least one cassette")
	}
	if o.Format != "text" && o.Format != "json" && o.Format != "junit" {
		return Usagef("--format must be text, json or junit, not %q", o.Format)
	}
	if err := o.Assert.parse(len(files)); err != nil {
		return err
	}
	if o.Protocol != "" && o.Schema != "" {
		return Usagef("--protocol and --schema cannot be used together")
	}
	var forced protocol.Protocol
	switch {
	case o.Schema != "":
		p, err := protocol.FromSchemaFile(o.Schema)
		if err != nil {
			return Inputf("%v", err)
		}
		forced = p
	case o.Protocol != "":
		p, err := protocol.Lookup(o.Protocol)
		if err != nil {
			return Usagef("--protocol: %v", err)
		}
		forced = p
	}
	var reports []*checkReport
	var inputErrs []string
	for _, f := range files {
		rep, err := checkFileSafe(f, forced)
		var ie *internalError
		if errors.As(err, &ie) {
			return err
		}
		if rep == nil {
			// Every file named gets an entry: one that cannot be read
			// is an error in the report, never a missing line.
			rep = &checkReport{File: f, Protocol: "none", ProtocolSource: "unreadable"}
		}
		if err != nil {
			rep.unreadable(err)
			inputErrs = append(inputErrs, fmt.Sprintf("%s: %v", f, err))
		}
		if len(rep.Damage) > 0 && err == nil {
			inputErrs = append(inputErrs, fmt.Sprintf("%s: %s; checked every readable record", f, replay.DamageSummary(rep.damage)))
		}
		if o.Assert.any() {
			if err := runAssertions(&o.Assert, f, rep, stdio); err != nil {
				return err
			}
		}
		reports = append(reports, rep)
	}
	switch o.Format {
	case "json":
		writeCheckJSON(stdio.Out, reports)
	case "junit":
		writeCheckJUnit(stdio.Out, reports)
	default:
		for _, r := range reports {
			writeCheckText(stdio.Out, r, o.Max)
		}
	}
	errs := 0
	for _, r := range reports {
		errs += r.Errors
	}
	if len(inputErrs) > 0 {
		return Inputf("%s", strings.Join(inputErrs, "; "))
	}
	if errs > 0 {
		return Findingsf("%d error-level violation(s) in %s", errs, plural(len(files), "cassette"))
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// checkFinding is one violation as reported.
type checkFinding struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Record   uint64 `json:"record"`
	Conn     int    `json:"conn,omitempty"`
	Dir      string `json:"dir,omitempty"`
	Pointer  string `json:"pointer,omitempty"`
	Message  string `json:"message"`
	Excerpt  string `json:"excerpt,omitempty"`
}

// checkReport is the verdict on one cassette.
type checkReport struct {
	File           string `json:"file"`
	Protocol       string `json:"protocol"`
	ProtocolSource string `json:"protocol_source"` // "flag", "detected", "header"
	Stored         string `json:"stored_protocol,omitempty"`
	Frames         uint64 `json:"frames"`
	Records        uint64 `json:"records"`
	Truncated      bool   `json:"truncated"`
	Cut            string `json:"cut,omitempty"` // "truncated after record N"
	// ReadError is why the file (or its rest) could not be read; it is
	// also an error-level finding, so that errors is never 0 then.
	ReadError string `json:"read_error,omitempty"`
	// Damage lists the damaged ranges the reader skipped (each also an
	// error-level cassette.damaged finding).
	Damage        []checkDamage           `json:"damage,omitempty"`
	damage        []*cassette.DamageError // the same, for replay.DamageSummary
	StoredIgnored uint64                  `json:"stored_violations_ignored"`
	Errors        int                     `json:"errors"`
	Warnings      int                     `json:"warnings"`
	Infos         int                     `json:"infos"`
	Counts        map[string]int          `json:"counts"` // findings per code, including any not listed
	Findings      []checkFinding          `json:"violations"`
	Assertions    []checkAssertion        `json:"assertions,omitempty"` // --expect-method, --max-latency, --baseline, ...
}

// checkDamage is one damaged range of a cassette, as the reader reported
// it: the byte range, and which records it lost.
type checkDamage struct {
	Offset int64  `json:"offset"`
	End    int64  `json:"end"`
	First  uint64 `json:"first_record"`
	Lost   uint64 `json:"records_lost"`
	ToEnd  bool   `json:"to_end,omitempty"` // every record from first_record on is lost; how many is unknown
	Reason string `json:"reason"`
}

// unreadable records why the file (or its rest) could not be read.
func (r *checkReport) unreadable(err error) {
	r.ReadError = err.Error()
	r.add(checkFinding{Code: "cassette.unreadable", Severity: string(protocol.SevError), Message: err.Error()})
}

func (r *checkReport) add(f checkFinding) {
	switch protocol.Severity(f.Severity) {
	case protocol.SevError:
		r.Errors++
	case protocol.SevWarning:
		r.Warnings++
	default:
		r.Infos++
	}
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	r.Counts[f.Code]++
	if r.Counts[f.Code] > maxFindingsPerCode {
		return // counted, not kept: a runaway session must not exhaust memory
	}
	r.Findings = append(r.Findings, f)
}

// maxFindingsPerCode bounds the findings kept (and listed in JSON) per code;
// Counts always has the full numbers.
const maxFindingsPerCode = 10000

// internalError is a bug in rpctap found while checking (a panic in a
// validator): reported as one line, exit 125.
type internalError struct{ msg string }

func (e *internalError) Error() string { return e.msg }

// checkFileSafe is checkFile with a panic turned into an internalError, so
// that a validator bug gives one clear line and never a stack trace.
func checkFileSafe(path string, forced protocol.Protocol) (rep *checkReport, err error) {
	defer func() {
		if p := recover(); p != nil {
			rep, err = nil, &internalError{fmt.Sprintf("internal error while checking %s (a bug in rpctap, please report it): %v", path, p)}
		}
	}()
	return checkFile(path, forced)
}

// recordSource is what the checker needs from a cassette reader.
type recordSource interface {
	Next() (*cassette.Record, error)
}

// checkFile opens and checks one cassette. A non-nil report may come with
// an error (damage in the middle: everything before it was checked).
func checkFile(path string, forced protocol.Protocol) (*checkReport, error) {
	r, err := cassette.Open(path)
	if err != nil {
		return nil, describeCassetteErr(err)
	}
	defer r.Close()
	return checkRecords(path, r.Header(), r, forced)
}

// describeCassetteErr drops the path from file-system errors, which the
// caller already names.
func describeCassetteErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// excerptLen is how much of a frame a finding shows.
const excerptLen = 120

// maxKeptExcerpts bounds the memory spent remembering request excerpts for
// findings reported at the end (unanswered requests).
const maxKeptExcerpts = 200000

// connCheck is the state of one connection (stdio: connection 0): its
// Judge, the parts of a message not complete yet, and excerpts of requests
// for findings reported at the end.
type connCheck struct {
	judge    *protocol.Judge
	partial  map[cassette.Dir][]byte
	partRec  map[cassette.Dir]uint64
	partHdr  map[cassette.Dir]string // Content-Length header of a message held in parts
	lastHdr  map[cassette.Dir]string // the last Content-Length header of each direction, for frames judged from an intercept event
	excerpts map[uint64]string
	dirs     map[uint64]string
}

// checker judges the records of one cassette (checkRecords).
type checker struct {
	rep      *checkReport
	forced   protocol.Protocol
	stored   string // the protocol the cassette names (header, then meta)
	conns    map[int]*connCheck
	order    []int
	closedAt map[int]uint64 // connection -> record of its stdin-eof event

	sawStart bool  // the child's start event: a session of rpctap record with a child
	sawExit  bool  // the child's exit event
	lastT    int64 // t of the last record of the session read
	lastN    uint64
	lostTail bool // damage ran to the end of the file
	portable bool // the header has a portable table: "redacted" alone may mean run values were replaced

	// sentBy is a frame of the child's that an intercepting tap sent on
	// changed (format 1.2: icpt set, d out), waiting for the intercept
	// event right after it, which may carry what the child wrote.
	sentBy *cassette.Record
}

// checkRecords judges the records of one cassette.
func checkRecords(name string, h cassette.Header, src recordSource, forced protocol.Protocol) (*checkReport, error) {
	c := &checker{rep: &checkReport{File: name, Stored: h.Protocol}, forced: forced, stored: h.Protocol,
		conns: map[int]*connCheck{}, closedAt: map[int]uint64{}, portable: len(h.Portable) > 0}
	if forced != nil {
		c.rep.Protocol, c.rep.ProtocolSource = forced.Name(), "flag"
	}
	readErr := c.read(src)
	c.flushSent(nil)
	c.finish(readErr)
	if readErr != nil {
		return c.rep, fmt.Errorf("%v (checked the records before it)", readErr)
	}
	return c.rep, nil
}

// read takes every record of src, reporting damaged ranges and going on
// after them; it returns the error that stopped it (nil at the end).
func (c *checker) read(src recordSource) error {
	rep := c.rep
	for {
		rec, err := src.Next()
		if err == io.EOF {
			return nil
		}
		var de *cassette.DamageError
		if errors.As(err, &de) {
			// Report the range and go on with the records after it.
			rep.damage = append(rep.damage, de)
			rep.Damage = append(rep.Damage, checkDamage{Offset: de.Offset, End: de.End, First: de.First, Lost: de.Lost, ToEnd: de.ToEnd, Reason: de.Reason})
			rep.add(checkFinding{Code: "cassette.damaged", Severity: string(protocol.SevError), Record: de.First, Message: de.Error()})
			c.lostTail = c.lostTail || de.ToEnd
			continue
		}
		if err != nil {
			var te *cassette.TruncatedError
			if errors.As(err, &te) {
				rep.Truncated = true
				rep.Cut = te.Error()
				rep.add(checkFinding{Code: "cassette.truncated", Severity: string(protocol.SevWarning), Record: te.Records,
					Message: te.Error() + ": the recording was cut off (recorder killed or still writing); checked up to the cut"})
				return nil
			}
			return err
		}
		c.record(rec)
	}
}

// record takes one record.
func (c *checker) record(rec *cassette.Record) {
	rep := c.rep
	if rec.K != cassette.KindViolation {
		c.flushSent(rec)
	}
	rep.Records++
	if rec.K != cassette.KindEnd {
		c.lastT, c.lastN = rec.T, rec.N // the session's last record, not the recorder's
	}
	switch rec.K {
	case cassette.KindFrame:
		if rec.D == cassette.DirOut && rec.Icpt != "" && rec.Icpt != "inject" && !rec.Part {
			c.sentBy = rec // judged when its intercept event is read (flushSent)
			return
		}
		c.frame(rec, nil)
	case cassette.KindViolation:
		rep.StoredIgnored++
	case cassette.KindMeta:
		if rec.Protocol != "" {
			c.stored = rec.Protocol
			for _, cc := range c.conns {
				cc.judge.SetFallback(rec.Protocol)
			}
			if rep.Stored == "" {
				rep.Stored = rec.Protocol
			}
		}
	case cassette.KindEvent:
		switch rec.Ev {
		case cassette.EventStart:
			c.sawStart = c.sawStart || rec.Conn == 0
		case cassette.EventExit:
			c.sawExit = true
		case cassette.EventStdinEOF:
			c.closedAt[rec.Conn] = rec.N
		case cassette.EventConnClose:
			c.endConn(rec.Conn)
		case cassette.EventIntercept:
			// A frame the other side never got (dropped, or the answer to
			// a request rpctap injected, taken off the wire; format 1.2).
			orig := originalOf(rec)
			if (rec.Act != "drop" && rec.Act != "take") || orig == nil {
				break
			}
			if rec.D == cassette.DirOut {
				// The child wrote it: judged as the child's frame, so the
				// answer to a request rpctap injected answers it, a
				// dropped answer answers its request, and the child's
				// numbering (DAP seq) has no hole where it was.
				c.frame(&cassette.Record{N: rec.N, T: rec.T, Conn: rec.Conn, K: cassette.KindFrame, D: cassette.DirOut}, orig)
				break
			}
			// The parent's frame the child never got: a dropped request
			// is not the child's to answer, and the parent's answer to a
			// request rpctap injected toward it, or to one of the child's
			// that rpctap dropped, ends that request's wait.
			c.conn(rec.Conn).judge.Intercepted(protocol.FromParent, orig)
		case cassette.EventGap:
			rep.add(checkFinding{Code: "cassette.gap", Severity: string(protocol.SevWarning), Record: rec.N, Conn: rec.Conn, Dir: string(rec.D),
				Message: fmt.Sprintf("%d bytes of %q were forwarded but not recorded; pairing findings after this point may be spurious", rec.Bytes, rec.D)})
		}
	}
}

// CodeRedacted is the info finding on a frame that the recorder's
// redaction changed: the cassette does not hold the frame exactly as the
// wire carried it (docs/cassette-format.md, section 6).
const CodeRedacted = "cassette.redacted"

func redactedFinding(rec *cassette.Record) checkFinding {
	f := checkFinding{Code: CodeRedacted, Severity: string(protocol.SevInfo), Record: rec.N, Conn: rec.Conn, Dir: string(rec.D)}
	switch at := rec.RedactedAt; {
	case len(at) == 0:
		f.Message = fmt.Sprintf("the recorder replaced secrets with %q before writing the frame (which, a cassette older than format 1.2 does not say)", redact.Placeholder)
	case len(at) == 1 && at[0] == "":
		f.Message = fmt.Sprintf("the recorder replaced the token after \"Bearer \" with %s before writing the line", redact.Placeholder)
	case len(at) == 1:
		f.Pointer = at[0]
		f.Message = fmt.Sprintf("the recorder replaced this value with %q before writing the frame", redact.Placeholder)
	default:
		f.Pointer = at[0]
		f.Message = fmt.Sprintf("the recorder replaced %d values with %q before writing the frame: %s", len(at), redact.Placeholder, strings.Join(at, ", "))
	}
	return f
}

// conn returns connection n's state, starting it at its first record.
func (c *checker) conn(n int) *connCheck {
	cc, ok := c.conns[n]
	if !ok {
		cc = &connCheck{partial: map[cassette.Dir][]byte{}, partRec: map[cassette.Dir]uint64{}, partHdr: map[cassette.Dir]string{}, lastHdr: map[cassette.Dir]string{},
			excerpts: map[uint64]string{}, dirs: map[uint64]string{}}
		cc.judge = protocol.NewJudge(c.forced, c.stored, func(v protocol.Verdict) { c.verdict(cc, n, v) })
		c.conns[n] = cc
		c.order = append(c.order, n)
	}
	return cc
}

// originalOf is the frame an intercept event keeps as the other side sent
// it (orig, or orig_text), nil when it keeps none.
func originalOf(ev *cassette.Record) []byte {
	switch {
	case ev.Orig != nil:
		return []byte(ev.Orig)
	case ev.OrigText != "":
		return []byte(ev.OrigText)
	}
	return nil
}

// flushSent judges the child's frame an intercepting tap changed on its
// way to the parent (c.sentBy), now that next, the record after it, is
// read: when next is that frame's intercept event with the original, the
// original is judged, for that is what the child wrote (its own
// request_seq in a DAP session where rpctap renumbered the parent's
// requests; its hover before the user's edit). next nil: the end.
//
// So check judges the session as the child took part in it: the parent's
// frames as the child got them (the cassette's in records: edited,
// renumbered, injected), the child's as it wrote them (format 1.2,
// docs/cassette-format.md 4.7). Frames rpctap wrote toward the parent of
// its own (inject) are judged as sent, and the parent's answers to them
// close them (Intercepted).
func (c *checker) flushSent(next *cassette.Record) {
	f := c.sentBy
	if f == nil {
		return
	}
	c.sentBy = nil
	var orig []byte
	if next != nil && next.K == cassette.KindEvent && next.Ev == cassette.EventIntercept && next.Ref == f.N && next.Conn == f.Conn {
		orig = originalOf(next)
	}
	c.frame(f, orig)
}

// frame joins the parts of a message and hands whole ones to the Judge.
// sent, when not nil, is the payload to judge instead of the record's: the
// frame as its sender wrote it, before rpctap changed it or took it off
// the wire (its Content-Length header, if the stream has them, recounted).
func (c *checker) frame(rec *cassette.Record, sent []byte) {
	if len(rec.RedactedAt) > 0 || rec.Redacted && !c.portable {
		c.rep.add(redactedFinding(rec))
	}
	cc := c.conn(rec.Conn)
	payload := rec.Payload()
	if sent != nil {
		payload = sent
		switch {
		case rec.Hdr != "":
			rec.Hdr = string(framing.WithLength([]byte(rec.Hdr), len(sent)))
		case cc.lastHdr[rec.D] != "":
			rec.Hdr = string(framing.WithLength([]byte(cc.lastHdr[rec.D]), len(sent)))
		}
	}
	if rec.Hdr != "" {
		cc.lastHdr[rec.D] = rec.Hdr
	}
	if rec.Part {
		if _, ok := cc.partial[rec.D]; !ok {
			cc.partRec[rec.D] = rec.N
			cc.partHdr[rec.D] = rec.Hdr
		}
		cc.partial[rec.D] = append(cc.partial[rec.D], payload...)
		return
	}
	n, hdr := rec.N, rec.Hdr
	if prev, ok := cc.partial[rec.D]; ok {
		payload = append(prev, payload...)
		n, hdr = cc.partRec[rec.D], cc.partHdr[rec.D]
		delete(cc.partial, rec.D)
	}
	c.rep.Frames++
	dir := protocol.DirOf(string(rec.D))
	var h []byte
	if hdr != "" {
		h = []byte(hdr)
	}
	cc.judge.Frame(n, dir, h, payload)
}

// verdict reports the findings about one frame and keeps an excerpt of each
// request for the findings the end of the session may bring.
func (c *checker) verdict(cc *connCheck, conn int, v protocol.Verdict) {
	if c.rep.Protocol == "" {
		c.rep.Protocol, c.rep.ProtocolSource = cc.judge.Protocol()
	}
	c.report(cc, conn, v.Violations, v.Frame, v.Dir.String())
	if v.Info.Kind == protocol.Request && len(cc.excerpts) < maxKeptExcerpts {
		cc.excerpts[v.Record] = shortExcerpt(v.Frame)
		cc.dirs[v.Record] = v.Dir.String()
	}
}

func (c *checker) report(cc *connCheck, conn int, vs []protocol.Violation, frame []byte, dir string) {
	for _, v := range vs {
		f := checkFinding{Code: v.Code, Severity: string(v.Severity), Record: v.Record, Conn: conn, Pointer: v.Pointer, Message: v.Message}
		if frame != nil && v.Record != 0 {
			f.Excerpt, f.Dir = shortExcerpt(frame), dir
		} else if e, ok := cc.excerpts[v.Record]; ok {
			f.Excerpt, f.Dir = e, cc.dirs[v.Record]
		}
		c.rep.add(f)
	}
}

// endConn ends connection n's session: what End finds is reported.
func (c *checker) endConn(n int) {
	cc := c.conns[n]
	if cc == nil {
		return
	}
	if at := c.closedAt[n]; at != 0 {
		cc.judge.ParentClosed(at)
	}
	vs := cc.judge.End()
	if c.rep.Protocol == "" {
		c.rep.Protocol, c.rep.ProtocolSource = cc.judge.Protocol()
	}
	c.report(cc, n, vs, nil, "")
	delete(c.conns, n)
}

// finish ends every session and adds what the cassette as a whole says.
func (c *checker) finish(readErr error) {
	rep := c.rep
	// What was in flight when the recording stopped: requests End finds
	// unanswered, and lines the tap was still reading.
	before, inFlight := rep.Counts[protocol.CodeUnanswered], 0
	for _, cc := range c.conns {
		inFlight += len(cc.partial)
	}
	for _, n := range c.order {
		c.endConn(n)
	}
	inFlight += rep.Counts[protocol.CodeUnanswered] - before
	if c.sawStart && !c.sawExit && !rep.Truncated && !c.lostTail && readErr == nil {
		rep.add(noExitFinding(c.lastN, c.lastT, inFlight))
	}
	if rep.Protocol == "" {
		rep.Protocol, rep.ProtocolSource = "none", "no frames"
		if c.stored != "" {
			rep.Protocol, rep.ProtocolSource = c.stored, "header"
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return rep.Findings[i].Record < rep.Findings[j].Record })
}

// noExitFinding reports a session that holds the child's start event but
// no exit event for it. The tap records the child's exit (code or signal) as soon
// as it reaps it, so only a session whose rpctap died first lacks it:
// rpctap was killed (SIGKILL, the OOM killer; or its whole process group
// with the child) or crashed, and the recorder process finished the
// cassette from what rpctap had forwarded. How the child ended is unknown.
//
// Many parents end every session that way (Go's exec.CommandContext, the
// ACP Go SDK example client kill the agent right after its last reply), and
// such a session is valid: with nothing left in flight it is info. It is a
// warning when the session was cut with work in flight (a request never
// answered, a line half read): then rpctap died in the middle of the
// session, and a CI gate must not pass it as a clean run.
func noExitFinding(lastN uint64, lastT int64, inFlight int) checkFinding {
	f := checkFinding{Code: "cassette.no-exit", Severity: string(protocol.SevInfo), Record: lastN}
	at := fmt.Sprintf("at %ss (record %d, the last)", seconds(lastT, false), lastN)
	if inFlight > 0 {
		f.Severity = string(protocol.SevWarning)
		f.Message = fmt.Sprintf("the session ended without the child's exit event %s with %s in flight: rpctap was killed or crashed mid-session, the child's exit status is unknown", at, plural(inFlight, "request"))
	} else {
		f.Message = fmt.Sprintf("the session ended without the child's exit event %s: rpctap was killed after the last exchange (as parents that end sessions with SIGKILL do), the child's exit status is unknown", at)
	}
	return f
}

// shortExcerpt is a one-line, bounded rendering of a frame: control bytes
// and invalid UTF-8 are shown as \xNN so the report stays one line per
// frame.
func shortExcerpt(b []byte) string {
	var sb strings.Builder
	n := 0
	for len(b) > 0 {
		if n >= excerptLen {
			sb.WriteString("…")
			break
		}
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size <= 1, r < 0x20, r == 0x7f:
			fmt.Fprintf(&sb, "\\x%02x", b[0])
			size = 1
		default:
			sb.Write(b[:size])
		}
		b = b[size:]
		n++
	}
	return sb.String()
}

var sevRank = map[string]int{"error": 0, "warning": 1, "info": 2}

func writeCheckText(w io.Writer, r *checkReport, max int) {
	if r.ReadError != "" && r.Records == 0 {
		fmt.Fprintf(w, "%s: unreadable: %s\n", r.File, r.ReadError)
		return
	}
	src := r.ProtocolSource
	if r.Stored != "" && r.Stored != r.Protocol {
		src += ", recorded as " + r.Stored
	}
	fmt.Fprintf(w, "%s: protocol %s (%s), %d frames: %s, %s, %s\n", r.File, r.Protocol, src, r.Frames,
		plural(r.Errors, "error"), plural(r.Warnings, "warning"), fmt.Sprintf("%d info", r.Infos))
	groups := map[string][]checkFinding{}
	var codes []string
	for _, f := range r.Findings {
		if _, ok := groups[f.Code]; !ok {
			codes = append(codes, f.Code)
		}
		groups[f.Code] = append(groups[f.Code], f)
	}
	sort.Slice(codes, func(i, j int) bool {
		si, sj := sevRank[groups[codes[i]][0].Severity], sevRank[groups[codes[j]][0].Severity]
		if si != sj {
			return si < sj
		}
		return codes[i] < codes[j]
	})
	for _, code := range codes {
		g := groups[code]
		total := r.Counts[code]
		fmt.Fprintf(w, "  %s %s (%d)\n", g[0].Severity, code, total)
		for i, f := range g {
			if max > 0 && i == max {
				fmt.Fprintf(w, "    … %d more (use --max 0 to list all)\n", total-max)
				break
			}
			where := fmt.Sprintf("record %d", f.Record)
			if f.Record == 0 {
				where = "session end"
			}
			if f.Dir != "" {
				where += " " + f.Dir
			}
			if f.Conn != 0 {
				where += fmt.Sprintf(" conn %d", f.Conn)
			}
			if f.Pointer != "" {
				where += " " + f.Pointer
			}
			fmt.Fprintf(w, "    %s: %s\n", where, f.Message)
			if f.Excerpt != "" {
				fmt.Fprintf(w, "      %s\n", f.Excerpt)
			}
		}
	}
	if r.StoredIgnored > 0 {
		fmt.Fprintf(w, "  (%d violations stored at record time were ignored; these are today's rules)\n", r.StoredIgnored)
	}
}

func writeCheckJSON(w io.Writer, reports []*checkReport) {
	if reports == nil {
		reports = []*checkReport{}
	}
	for _, r := range reports {
		if r.Findings == nil {
			r.Findings = []checkFinding{}
		}
		if r.Counts == nil {
			r.Counts = map[string]int{}
		}
	}
	out := struct {
		Files []*checkReport `json:"files"`
	}{reports}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/safefile"
	"github.com/rpctap/rpctap/protocol"
)

// CI assertions on a cassette (rpctap check --expect-method, --forbid-method,
// --max-latency, --baseline). Each one run is a checkAssertion in the
// report (so JUnit can list the passing ones too); each failure is also an
// error-level finding, so it sets the exit status like any error.

// checkAssertion is one assertion's verdict on one cassette.
type checkAssertion struct {
	Name    string `json:"name"` // "expect-method tools/call"
	Passed  bool   `json:"passed"`
	Message string `json:"message,omitempty"`
}

// assertOptions are the assertion flags of check.
type assertOptions struct {
	Expect        []string
	Forbid        []string
	MaxLatency    []string // METHOD=DURATION
	Baseline      string
	WriteBaseline string

	latency []latencyRule
}

type latencyRule struct {
	method string
	max    time.Duration
}

func (a *assertOptions) any() bool {
	return len(a.Expect)+len(a.Forbid)+len(a.MaxLatency) > 0 || a.Baseline != "" || a.WriteBaseline != ""
}

// parse checks the flags' values.
func (a *assertOptions) parse(files int) error {
	for _, s := range a.MaxLatency {
		m, d, ok := strings.Cut(s, "=")
		dur, err := time.ParseDuration(d)
		if !ok || m == "" || err != nil || dur <= 0 {
			return Usagef("--max-latency takes METHOD=DURATION, such as tools/call=2s (got %q)", s)
		}
		a.latency = append(a.latency, latencyRule{m, dur})
	}
	if a.WriteBaseline != "" && files != 1 {
		return Usagef("--write-baseline takes the surface of one cassette (got %d)", files)
	}
	if a.WriteBaseline != "" && a.Baseline != "" {
		return Usagef("--baseline and --write-baseline cannot be used together")
	}
	return nil
}

// baselineFile is the stored surface of a peer (a small JSON document):
// what tools/list and initialize said, item by item.
type baselineFile struct {
	Format   string           `json:"format"` // "rpctap-baseline"
	Version  int              `json:"version"`
	Protocol string           `json:"protocol"`
	Items    protocol.Surface `json:"items"`
}

const baselineFormat = "rpctap-baseline"

// sessionFacts is what the assertions need from one pass over a cassette.
type sessionFacts struct {
	methods map[string]int // requests, notifications and events by method
	slow    map[string][]string
	pending map[string]pendingReq // dir+id -> request
	surface protocol.Surface
}

type pendingReq struct {
	method string
	t      int64
	rec    uint64
}

// gatherFacts reads the cassette once more, using the kind, method and id
// the recorder stored with each frame (or the protocol's Classify for
// cassettes recorded without them).
func gatherFacts(path, proto string, rules []latencyRule) (*sessionFacts, error) {
	rd, err := cassette.Open(path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	p, _ := protocol.Lookup(proto)
	f := &sessionFacts{methods: map[string]int{}, slow: map[string][]string{}, pending: map[string]pendingReq{}}
	limit := map[string]time.Duration{}
	for _, r := range rules {
		limit[r.method] = r.max
	}
	for {
		r, err := rd.Next()
		if err != nil {
			var de *cassette.DamageError
			if errors.As(err, &de) && !de.ToEnd {
				continue // reported by the rules pass
			}
			break
		}
		if r.K != cassette.KindFrame || r.Part {
			continue
		}
		kind, method, id := r.Kind, r.Method, string(r.ID)
		if kind == "" && p != nil && r.JSON != nil {
			dir := protocol.DirOf(string(r.D))
			info := p.Classify(dir, r.JSON)
			kind, method, id = string(info.Kind), info.Method, info.ID
		}
		other := cassette.DirIn
		if r.D == cassette.DirIn {
			other = cassette.DirOut
		}
		switch kind {
		case string(protocol.Request):
			f.methods[method]++
			if id != "" {
				f.pending[string(r.D)+id] = pendingReq{method, r.T, r.N}
			}
		case string(protocol.Response):
			req, ok := f.pending[string(other)+id]
			if !ok {
				continue
			}
			delete(f.pending, string(other)+id)
			if max, ok := limit[req.method]; ok {
				if took := time.Duration(r.T - req.t); took > max {
					f.slow[req.method] = append(f.slow[req.method], fmt.Sprintf("request at record %d answered in %v", req.rec, took.Round(time.Microsecond)))
				}
			}
			if s := protocol.SurfaceOf(proto, req.method, r.JSON); s != nil {
				if f.surface == nil {
					f.surface = protocol.Surface{}
				}
				for k, v := range s {
					f.surface[k] = v
				}
			}
		case "":
		default:
			f.methods[method]++
		}
	}
	for _, req := range f.pending {
		if _, ok := limit[req.method]; ok {
			f.slow[req.method] = append(f.slow[req.method], fmt.Sprintf("request at record %d never answered", req.rec))
		}
	}
	return f, nil
}

// runAssertions adds the assertions' verdicts to rep.
func runAssertions(a *assertOptions, path string, rep *checkReport, stdio Stdio) error {
	if rep.ReadError != "" {
		return nil // the file could not be read: already an error
	}
	facts, err := gatherFacts(path, rep.Protocol, a.latency)
	if err != nil {
		return nil
	}
	verdict := func(name string, ok bool, msg string) {
		rep.Assertions = append(rep.Assertions, checkAssertion{Name: name, Passed: ok, Message: msg})
		if !ok {
			rep.add(checkFinding{Code: "assert." + strings.Fields(name)[0], Severity: string(protocol.SevError), Message: msg})
		}
	}
	for _, m := range a.Expect {
		n := facts.methods[m]
		verdict("expect-method "+m, n > 0, fmt.Sprintf("%s never appears (expected by --expect-method)", m))
	}
	for _, m := range a.Forbid {
		n := facts.methods[m]
		verdict("forbid-method "+m, n == 0, fmt.Sprintf("%s appears %d time(s) (forbidden by --forbid-method)", m, n))
	}
	for _, r := range a.latency {
		slow := facts.slow[r.method]
		msg := ""
		if len(slow) > 0 {
			msg = fmt.Sprintf("%s over %v: %s", r.method, r.max, strings.Join(first(slow, 5), "; "))
		}
		verdict(fmt.Sprintf("max-latency %s=%v", r.method, r.max), len(slow) == 0, msg)
	}
	if a.WriteBaseline != "" {
		if len(facts.surface) == 0 {
			return Inputf("--write-baseline: %s has no tools/list or initialize answer to take a baseline from", path)
		}
		b, _ := json.MarshalIndent(baselineFile{Format: baselineFormat, Version: 1, Protocol: rep.Protocol, Items: facts.surface}, "", "  ")
		b = append(b, '\n')
		err := safefile.Write(a.WriteBaseline, safefile.Options{Perm: 0o644, Verify: func(tmp string) error {
			back, err := os.ReadFile(tmp)
			if err == nil && !bytes.Equal(back, b) {
				err = errors.New("the file read back differs from what was written")
			}
			return err
		}}, func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		})
		if err != nil {
			return writeFailed("check --write-baseline", err)
		}
		fmt.Fprintf(stdio.Err, "rpctap check: wrote the baseline %s (%d items)\n", a.WriteBaseline, len(facts.surface))
	}
	if a.Baseline != "" {
		base, err := readBaseline(a.Baseline)
		if err != nil {
			return err
		}
		drift := surfaceDrift(base.Items, facts.surface)
		verdict("baseline "+a.Baseline, len(drift) == 0, "drift from the baseline: "+strings.Join(first(drift, 10), "; "))
	}
	return nil
}

func first(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(append([]string(nil), xs[:n]...), fmt.Sprintf("(+%d more)", len(xs)-n))
}

func readBaseline(path string) (*baselineFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Inputf("--baseline: %v", err)
	}
	var f baselineFile
	if err := json.Unmarshal(b, &f); err != nil || f.Format != baselineFormat {
		return nil, Inputf("--baseline: %s is not an rpctap baseline (write one with --write-baseline)", path)
	}
	if f.Version > 1 {
		return nil, Inputf("--baseline: %s is baseline version %d; this rpctap reads version 1", path, f.Version)
	}
	return &f, nil
}

// surfaceDrift lists what was added, removed and changed, sorted.
func surfaceDrift(base, now protocol.Surface) []string {
	var out []string
	for k, v := range base {
		w, ok := now[k]
		switch {
		case !ok:
			out = append(out, "removed "+k)
		case !bytes.Equal(compactJSON(v), compactJSON(w)):
			out = append(out, "changed "+k)
		}
	}
	for k := range now {
		if _, ok := base[k]; !ok {
			out = append(out, "added "+k)
		}
	}
	sort.Strings(out)
	return out
}

// compactJSON drops the white space a stored (indented) baseline has.
func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// writeCheckJUnit writes the reports as JUnit XML: one testsuite per
// cassette; in it one testcase for reading the file, one per violation
// code found (a failure when its severity is error; warnings and infos pass
// with their messages as output), and one per assertion.
func writeCheckJUnit(w io.Writer, reports []*checkReport) {
	type failure = junitFailure
	type testcase = junitCase
	type testsuite = junitSuite
	all := junitSuites{Name: "rpctap check"}
	for _, r := range reports {
		s := testsuite{Name: r.File}
		add := func(tc testcase) {
			s.Tests++
			if tc.Failure != nil {
				s.Failures++
			}
			s.Testcases = append(s.Testcases, tc)
		}
		class := "rpctap.check." + r.Protocol
		read := testcase{Name: "readable cassette", Classname: class}
		if r.ReadError != "" {
			read.Failure = &failure{Message: r.ReadError, Type: "cassette.unreadable", Text: r.ReadError}
		}
		add(read)
		byCode := map[string][]checkFinding{}
		var codes []string
		for _, f := range r.Findings {
			if strings.HasPrefix(f.Code, "assert.") || f.Code == "cassette.unreadable" {
				continue
			}
			if byCode[f.Code] == nil {
				codes = append(codes, f.Code)
			}
			byCode[f.Code] = append(byCode[f.Code], f)
		}
		sort.Strings(codes)
		for _, code := range codes {
			fs := byCode[code]
			var text strings.Builder
			for _, f := range fs {
				fmt.Fprintf(&text, "record %d %s: %s\n", f.Record, f.Dir, f.Message)
			}
			tc := testcase{Name: code, Classname: class}
			if fs[0].Severity == string(protocol.SevError) {
				tc.Failure = &failure{Message: fmt.Sprintf("%d× %s", r.Counts[code], fs[0].Message), Type: code, Text: text.String()}
			} else {
				tc.SystemOut = fs[0].Severity + ": " + text.String()
			}
			add(tc)
		}
		if len(codes) == 0 && r.ReadError == "" {
			add(testcase{Name: "protocol rules (" + r.Protocol + ")", Classname: class})
		}
		for _, a := range r.Assertions {
			tc := testcase{Name: a.Name, Classname: "rpctap.check.assert"}
			if !a.Passed {
				tc.Failure = &failure{Message: a.Message, Type: "assert", Text: a.Message}
			}
			add(tc)
		}
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Suites = append(all.Suites, s)
	}
	io.WriteString(w, all.xml())
}

// The JUnit document. The xml tags say what encoding/xml would write for
// these types; junitSuites.xml writes exactly that by hand
// (TestJUnitXMLAsEncodingXML compares the two), because linking
// encoding/xml for this one report cost 116 KB of binary, paid in startup
// RSS by every tap and sink (docs/performance.md, "Startup").
type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Testcases []junitCase `xml:"testcase"`
}

type junitSuites struct {
	XMLName  struct{}     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

// xml returns the document as encoding/xml's Encoder with Indent("", "  ")
// writes it, after the standard XML header and followed by a newline:
// elements without children are written <e ...></e>, text and attribute
// values escaped as xml.EscapeText does (newlines, tabs and CRs as
// character references, characters XML cannot carry as U+FFFD).
func (all junitSuites) xml() string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	b.WriteString("<testsuites")
	xmlAttr(&b, "name", all.Name)
	xmlAttr(&b, "tests", strconv.Itoa(all.Tests))
	xmlAttr(&b, "failures", strconv.Itoa(all.Failures))
	b.WriteString(">")
	for _, s := range all.Suites {
		b.WriteString("\n  <testsuite")
		xmlAttr(&b, "name", s.Name)
		xmlAttr(&b, "tests", strconv.Itoa(s.Tests))
		xmlAttr(&b, "failures", strconv.Itoa(s.Failures))
		xmlAttr(&b, "errors", strconv.Itoa(s.Errors))
		b.WriteString(">")
		for _, tc := range s.Testcases {
			b.WriteString("\n    <testcase")
			xmlAttr(&b, "name", tc.Name)
			xmlAttr(&b, "classname", tc.Classname)
			b.WriteString(">")
			inner := false
			if f := tc.Failure; f != nil {
				b.WriteString("\n      <failure")
				xmlAttr(&b, "message", f.Message)
				xmlAttr(&b, "type", f.Type)
				b.WriteString(">")
				xmlText(&b, f.Text)
				b.WriteString("</failure>")
				inner = true
			}
			if tc.SystemOut != "" {
				b.WriteString("\n      <system-out>")
				xmlText(&b, tc.SystemOut)
				b.WriteString("</system-out>")
				inner = true
			}
			if inner {
				b.WriteString("\n    ")
			}
			b.WriteString("</testcase>")
		}
		if len(s.Testcases) > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString("</testsuite>")
	}
	if len(all.Suites) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("</testsuites>\n")
	return b.String()
}

func xmlAttr(b *strings.Builder, name, value string) {
	b.WriteString(" ")
	b.WriteString(name)
	b.WriteString(`="`)
	xmlText(b, value)
	b.WriteString(`"`)
}

// xmlText writes s escaped as xml.EscapeText escapes it.
func xmlText(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		i += width
		switch r {
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\t':
			b.WriteString("&#x9;")
		case '\n':
			b.WriteString("&#xA;")
		case '\r':
			b.WriteString("&#xD;")
		default:
			inRange := r == 0x09 || r == 0x0A || r == 0x0D ||
				r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
			if !inRange || (r == utf8.RuneError && width == 1) {
				b.WriteString("\uFFFD")
			} else {
				b.WriteString(s[i-width : i])
			}
		}
	}
}

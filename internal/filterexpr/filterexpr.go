// Package filterexpr is rpctap's filter language: the expressions the
// viewer's filter bar takes, the breakpoints of an intercepting tap
// (`rpctap record --intercept`, `rpctap ctl SOCKET break EXPR`) and the
// selectors of rewrite and fault rules. It matches cassette records; the tap
// side builds a record for a frame it holds (FrameRecord) and knows nothing
// of later frames, so a breakpoint is parsed with ParseBreakpoint, which
// refuses the terms that need them.
package filterexpr

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
)

// Filter selects records. The zero Filter matches everything.
//
// Parse reads it from the filter bar: terms separated by spaces or
// "&", all of which must hold; "!" before a term negates it.
//
//	m:TEXT          method or type contains TEXT (m:tools/ for every tools/ call)
//	m=METHOD        method or type is METHOD (m= alone: frames with none)
//	dir:in, dir:out frames parent -> child, child -> parent (also in, out, >, <)
//	kind:K          K is request, response, notification, event, handshake,
//	                invalid, or a record kind: stderr, violation, meta, header, end
//	id:ID           the frame's id is ID (quotes optional: id:7, id:s1)
//	err             error responses, invalid frames, frames with violations
//	slow>DUR        responses answered after more than DUR (slow>100ms, slow>2s)
//	v, violations   frames with violations (and violation records)
//	chunk           streamed chunks (-chunks hides them: !chunk)
//	-aux            hide stderr lines, process events and cassette records
//	/REGEXP/        the payload matches the regular expression
//	anything else   the payload contains it (case-insensitive)
//
// Examples: "m:tools/call & slow>1s", "!m:session/update err",
// "dir:out kind:request".
type Filter struct {
	Dir            cassette.Dir
	Method         string
	MethodExact    bool     // Method is the whole method (m=), not a part of it (m:)
	Text           []string // lower-case words, all must appear
	Regex          *regexp.Regexp
	ViolationsOnly bool
	HideChunks     bool
	HideAux        bool
	Expr           string // what Parse was given
	// terms are the expression-language terms (kind:, id:, err, slow>,
	// and any negated term), all of which must hold.
	terms []term
}

// term is one test of the filter expression.
type term struct {
	neg  bool
	test func(r *cassette.Record, m MatchInfo) bool
}

// MatchInfo is what the analysis knows about a record that its bytes do
// not say.
type MatchInfo struct {
	Violations bool   // violation records refer to it
	Latency    int64  // a paired response: ns since its request (0: none)
	Method     string // a paired response: its request's method, when the record names none
	Protocol   string // the session's protocol (what its chunks and failures look like)
}

// Parse parses a filter expression (the filter bar's text).
func Parse(expr string) (Filter, error) {
	f := Filter{Expr: strings.TrimSpace(expr)}
	words := strings.Fields(strings.ReplaceAll(expr, "&", " "))
	for _, w := range words {
		neg := false
		for strings.HasPrefix(w, "!") {
			neg, w = !neg, w[1:]
		}
		if w == "" {
			return Filter{}, fmt.Errorf("a lone %q: put it before a term (!err, !m:session/update)", "!")
		}
		lw := strings.ToLower(w)
		if !neg {
			// The simple positive terms keep their fast fields (the
			// violations-only view walks only violation references).
			switch {
			case lw == "in" || lw == ">" || lw == "dir:in":
				f.Dir = cassette.DirIn
				continue
			case lw == "out" || lw == "<" || lw == "dir:out":
				f.Dir = cassette.DirOut
				continue
			case lw == "v" || lw == "violations":
				f.ViolationsOnly = true
				continue
			case lw == "-chunks":
				f.HideChunks = true
				continue
			case lw == "-aux":
				f.HideAux = true
				continue
			case strings.HasPrefix(lw, "m:") && len(w) > 2:
				f.Method = w[2:]
				continue
			case strings.HasPrefix(lw, "m=") && len(w) > 2:
				f.Method, f.MethodExact = w[2:], true
				continue
			case len(w) >= 2 && w[0] == '/' && w[len(w)-1] == '/':
				re, err := regexp.Compile(w[1 : len(w)-1])
				if err != nil {
					return Filter{}, fmt.Errorf("bad regular expression %s: %v", w, err)
				}
				f.Regex = re
				continue
			}
		}
		test, err := parseTerm(w, lw)
		if err != nil {
			return Filter{}, err
		}
		if test == nil { // free text
			if !neg {
				f.Text = append(f.Text, lw)
				continue
			}
			test = func(r *cassette.Record, _ MatchInfo) bool {
				return bytes.Contains(bytes.ToLower(Text(r)), []byte(lw))
			}
		}
		f.terms = append(f.terms, term{neg: neg, test: test})
	}
	return f, nil
}

// parseTerm parses one term of the expression language; nil, nil for free
// text.
func parseTerm(w, lw string) (func(*cassette.Record, MatchInfo) bool, error) {
	switch {
	case lw == "in" || lw == ">" || lw == "dir:in":
		return dirTest(cassette.DirIn), nil
	case lw == "out" || lw == "<" || lw == "dir:out":
		return dirTest(cassette.DirOut), nil
	case strings.HasPrefix(lw, "dir:"):
		return nil, fmt.Errorf("dir:%s: want dir:in or dir:out", w[4:])
	case lw == "v" || lw == "violations":
		return func(r *cassette.Record, m MatchInfo) bool { return m.Violations || r.K == cassette.KindViolation }, nil
	case lw == "chunk" || lw == "chunks" || lw == "-chunks":
		return func(r *cassette.Record, m MatchInfo) bool { return IsChunk(m.Protocol, r) }, nil
	case lw == "-aux" || lw == "aux":
		return func(r *cassette.Record, _ MatchInfo) bool {
			return r.K != cassette.KindFrame && r.K != cassette.KindViolation
		}, nil
	case strings.HasPrefix(lw, "m="):
		// The whole method (case-insensitive); m= alone: frames that name
		// none (and whose request named none).
		m := w[2:]
		return func(r *cassette.Record, mi MatchInfo) bool {
			return r.K == cassette.KindFrame && strings.EqualFold(methodOf(r, mi), m)
		}, nil
	case strings.HasPrefix(lw, "m:") && len(w) > 2:
		m := strings.ToLower(w[2:])
		return func(r *cassette.Record, mi MatchInfo) bool {
			return strings.Contains(strings.ToLower(methodOf(r, mi)), m)
		}, nil
	case strings.HasPrefix(lw, "kind:") && len(w) > 5:
		k, ok := kindNames[lw[5:]]
		if !ok {
			return nil, fmt.Errorf("%s: kind: is one of request (req), response (resp), notification (notif), event, handshake (hello), invalid, stderr, violation, header, meta, end", w)
		}
		return func(r *cassette.Record, _ MatchInfo) bool {
			if r.K == cassette.KindFrame {
				return r.Kind == k || r.Kind == "" && k == "invalid" && r.JSON == nil
			}
			return string(r.K) == k
		}, nil
	case strings.HasPrefix(lw, "id:") && len(w) > 3:
		id := strings.Trim(w[3:], `"`)
		return func(r *cassette.Record, _ MatchInfo) bool {
			return r.K == cassette.KindFrame && len(r.ID) > 0 && strings.Trim(string(r.ID), `"`) == id
		}, nil
	case lw == "err" || lw == "error" || lw == "errors":
		return func(r *cassette.Record, m MatchInfo) bool {
			return m.Violations || r.K == cassette.KindViolation || IsError(m.Protocol, r)
		}, nil
	case strings.HasPrefix(lw, "slow>"):
		d, err := time.ParseDuration(w[5:])
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%s: want a duration after slow>, e.g. slow>100ms", w)
		}
		return func(_ *cassette.Record, m MatchInfo) bool { return m.Latency > int64(d) }, nil
	case strings.HasPrefix(lw, "/") && strings.HasSuffix(lw, "/") && len(w) >= 2:
		re, err := regexp.Compile(w[1 : len(w)-1])
		if err != nil {
			return nil, fmt.Errorf("bad regular expression %s: %v", w, err)
		}
		return func(r *cassette.Record, _ MatchInfo) bool { return re.Match(Text(r)) }, nil
	case strings.Contains(lw, ":") && knownPrefix(lw):
		return nil, fmt.Errorf("%s: empty value", w)
	}
	return nil, nil
}

// kindNames are what kind: accepts: the frame kinds (protocol.Kind, with
// the list's abbreviations) and the record kinds (cassette.Kind).
var kindNames = map[string]string{
	"request": "request", "req": "request",
	"response": "response", "resp": "response",
	"notification": "notification", "notif": "notification",
	"event": "event", "handshake": "handshake", "hello": "handshake", "invalid": "invalid",
	"stderr": "stderr", "violation": "violation", "header": "header", "meta": "meta", "end": "end",
}

func knownPrefix(lw string) bool {
	for _, p := range []string{"m:", "kind:", "id:", "dir:"} {
		if lw == p {
			return true
		}
	}
	return false
}

// methodOf is r's method, or for a response that names none, its request's.
func methodOf(r *cassette.Record, m MatchInfo) string {
	if r.Method == "" {
		return m.Method
	}
	return r.Method
}

func dirTest(d cassette.Dir) func(*cassette.Record, MatchInfo) bool {
	return func(r *cassette.Record, _ MatchInfo) bool { return r.K == cassette.KindFrame && r.D == d }
}

// IsError: a frame that reports a failure its protocol's way
// (protocol.Failed: a JSON-RPC error, an MCP tool result with isError, a
// success:false response, a synaps error event, a failed tool event), or
// one that is not valid for its protocol.
func IsError(proto string, r *cassette.Record) bool {
	if r.K != cassette.KindFrame {
		return false
	}
	if r.Kind == "invalid" || r.JSON == nil {
		return true
	}
	info := protocol.Info{Kind: protocol.Kind(r.Kind), Method: r.Method, ID: string(r.ID)}
	return protocol.Failed(proto, protocol.DirOf(string(r.D)), info, r.JSON)
}

// NeedsAnalysis reports whether the filter asks what the analysis finds
// (err, slow>, a negated v): a view should be filled once the analysis has
// caught up.
func (f Filter) NeedsAnalysis() bool {
	for _, w := range strings.Fields(strings.ToLower(strings.ReplaceAll(f.Expr, "&", " "))) {
		w = strings.TrimLeft(w, "!")
		if w == "err" || w == "error" || w == "errors" || strings.HasPrefix(w, "slow>") || w == "v" || w == "violations" {
			return true
		}
	}
	return false
}

// Active reports whether the filter excludes anything.
func (f Filter) Active() bool {
	return f.Dir != "" || f.Method != "" || len(f.Text) > 0 || f.Regex != nil || f.ViolationsOnly || f.HideChunks || f.HideAux ||
		len(f.terms) > 0
}

// String is a short description for the status line.
func (f Filter) String() string {
	var parts []string
	if f.Expr != "" {
		parts = append(parts, f.Expr)
	} else {
		if f.ViolationsOnly {
			parts = append(parts, "v")
		}
		if f.HideChunks {
			parts = append(parts, "-chunks")
		}
		if f.HideAux {
			parts = append(parts, "-aux")
		}
	}
	return strings.Join(parts, " ")
}

// Match reports whether r (already classified) passes the filter. m is
// what the analysis knows about r.
func (f *Filter) Match(r *cassette.Record, m MatchInfo) bool {
	hasViol := m.Violations
	aux := r.K != cassette.KindFrame && r.K != cassette.KindViolation
	if f.HideAux && aux {
		return false
	}
	if f.ViolationsOnly && !hasViol && r.K != cassette.KindViolation {
		return false
	}
	if f.Dir != "" && (r.K != cassette.KindFrame || r.D != f.Dir) {
		return false
	}
	if f.Method != "" {
		if method := methodOf(r, m); f.MethodExact && !strings.EqualFold(method, f.Method) ||
			!f.MethodExact && !strings.Contains(strings.ToLower(method), strings.ToLower(f.Method)) {
			return false
		}
	}
	if f.HideChunks && IsChunk(m.Protocol, r) {
		return false
	}
	if len(f.Text) > 0 || f.Regex != nil {
		hay := Text(r)
		if f.Regex != nil && !f.Regex.Match(hay) {
			return false
		}
		if len(f.Text) > 0 {
			low := bytes.ToLower(hay)
			for _, w := range f.Text {
				if !bytes.Contains(low, []byte(w)) {
					return false
				}
			}
		}
	}
	for _, t := range f.terms {
		if t.test(r, m) == t.neg {
			return false
		}
	}
	return true
}

// Text is what free-text filters and searches look at: the payload and,
// for other records, their one-line description.
func Text(r *cassette.Record) []byte {
	switch r.K {
	case cassette.KindFrame, cassette.KindStderr:
		if r.B64 != nil {
			return []byte("base64:" + base64.StdEncoding.EncodeToString(r.B64))
		}
		return r.Payload()
	case cassette.KindEvent:
		return []byte(EventText(r))
	case cassette.KindViolation:
		return []byte(r.Code + " " + r.Msg + " " + r.Pointer)
	}
	return []byte(Label(r))
}

// Label is the one-line description of a header, meta or end record (""
// for other kinds).
func Label(r *cassette.Record) string {
	switch r.K {
	case cassette.KindHeader:
		if r.Header != nil {
			return fmt.Sprintf("%s %s %s", r.Header.Format, r.Header.Version, strings.Join(r.Header.Argv, " "))
		}
		return "cassette header"
	case cassette.KindMeta:
		return "protocol " + r.Protocol
	case cassette.KindEnd:
		return fmt.Sprintf("end of cassette (%d records)", r.Records)
	}
	return ""
}

// EventText is a one-line description of an event record.
func EventText(r *cassette.Record) string {
	switch r.Ev {
	case cassette.EventStart:
		return fmt.Sprintf("start pid %d: %s", r.PID, strings.Join(r.Argv, " "))
	case cassette.EventExit:
		if r.Signal != "" {
			return "exit: killed by " + r.Signal
		}
		if r.Exit != nil {
			return fmt.Sprintf("exit %d", *r.Exit)
		}
		return "exit"
	case cassette.EventSignal:
		return "signal " + r.Signal + " forwarded"
	case cassette.EventGap:
		return fmt.Sprintf("gap: %d bytes of %s not recorded", r.Bytes, r.D)
	case cassette.EventWarning:
		return "warning: " + r.Msg
	case cassette.EventConnOpen, cassette.EventConnClose:
		return fmt.Sprintf("%s %d", r.Ev, r.Conn)
	case cassette.EventIntercept:
		return InterceptText(r)
	}
	s := r.Ev
	if r.Msg != "" {
		s += ": " + r.Msg
	}
	return s
}

// InterceptText describes an intercept event (format 1.2): what rpctap
// did with a frame of its direction, how long it held it and why.
func InterceptText(r *cassette.Record) string {
	what := map[string]string{
		"forward": "held, then forwarded unchanged", "edit": "held, then an edited frame sent instead",
		"drop": "held, then dropped", "timeout": "held, forwarded unchanged at the timeout",
		"release": "held, forwarded unchanged when its controller or the child went away",
		"inject":  "a frame of the user's, injected", "take": "the answer to an injected request, taken off the wire",
		"rewrite": "changed by a rewrite rule",
	}[r.Act]
	if what == "" {
		what = r.Act
	}
	s := fmt.Sprintf("intercept %s: %s", r.D, what)
	if r.Held > 0 {
		s += fmt.Sprintf(" after %s", time.Duration(r.Held).Round(time.Millisecond))
	}
	if r.BP != "" {
		s += " (" + r.BP + ")"
	}
	if r.Ref != 0 {
		s += fmt.Sprintf(", sent as #%d", r.Ref)
	}
	if r.Orig != nil || r.OrigText != "" {
		s += "; original kept"
	}
	return s
}

// InterceptMark is the short mark of a frame an intercepting tap sent
// (its icpt member), "" for any other record.
func InterceptMark(r *cassette.Record) string {
	switch r.Icpt {
	case "":
		return ""
	case "edit":
		return "[edited]"
	case "inject":
		return "[injected]"
	case "rewrite":
		return "[rewritten]"
	}
	return "[held]"
}

// IsChunk reports whether a frame of a session in protocol proto is one
// piece of a streamed answer (protocol.IsChunk: ACP message/thought chunks,
// synaps and pi message_update, opi MessageUpdate, MCP progress
// notifications).
func IsChunk(proto string, r *cassette.Record) bool {
	if r.K != cassette.KindFrame || r.JSON == nil {
		return false
	}
	return protocol.IsChunk(proto, r.Method, r.JSON)
}

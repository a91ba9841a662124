// Package export turns a cassette into formats other tools open: HAR 1.2
// (browsers' and proxies' viewers), Chrome/Perfetto trace JSON, and
// OpenTelemetry OTLP/JSON spans. It streams: records are read once, only the
// requests still awaiting their answer are held, and each pair is written as
// soon as its answer arrives, so a 1 GiB cassette exports in bounded memory.
//
// Pairing, kinds and methods come from what the recorder stored with each
// frame (kind, method, id); per-protocol facts (an MCP tool's name, an ACP
// session id) come from package protocol.
package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/redact"
	"github.com/rpctap/rpctap/protocol"
)

// Exchange is one request with its answer (Response nil when none came), or
// one notification or event (Request is then that frame, Notification true).
type Exchange struct {
	Request, Response *Frame
	Notification      bool
	// CutOff, for a request without Response, says why no answer can be
	// told from a missing one: the cassette ends early (no end record) or
	// is damaged to its end while the request waited (CutOffEnd,
	// CutOffDamage). "" means the recording went on and no answer came.
	CutOff string
}

// Why a request's answer is missing although it may have come (see
// Exchange.CutOff).
const (
	CutOffEnd    = "cut off by the end of the recording"
	CutOffDamage = "cut off by damage at the end of the cassette"
)

// Frame is one frame as exported.
type Frame struct {
	Record  uint64
	T       int64  // ns since the session started
	Dir     string // "in" (parent -> child) or "out"
	Kind    string // request, response, notification, event, handshake
	Method  string
	ID      string // raw JSON id, "" when none
	Payload []byte // the frame's bytes (redacted)
	// Intercept is the frame's icpt mark (format 1.2): edit, inject,
	// rewrite, or forward/timeout/release for a held frame; "" when rpctap
	// forwarded it as the other side wrote it.
	Intercept string
}

// Options shape an export.
type Options struct {
	Redactor *redact.Redactor // applied to every payload; nil: redact.Default()
	Payloads bool             // OTLP: include request and response bodies as attributes
	// observe, when set, sees every record read (RunLinked builds its
	// linked.Map from the parent's records in the same pass).
	observe func(*cassette.Record)
}

// Session is what a writer needs besides the exchanges.
type Session struct {
	File     string
	Protocol string
	Created  time.Time // wall clock of record 0
}

// Writer is one output format.
type Writer interface {
	Begin(s Session) error
	Exchange(x *Exchange) error
	End() error
}

// RequestWatcher is implemented by writers that want to know of a request
// when it is read, before its answer (the OTLP writer: the spans of what
// happens during an ACP prompt are children of the prompt's span).
type RequestWatcher interface {
	Request(f *Frame)
}

// Noter is implemented by writers that say in their output what was wrong
// with the cassette they read (a damaged range, an early end): Note is
// called once per problem, after the last exchange was read and before the
// requests still waiting are handed over and End is called.
type Noter interface {
	Note(msg string)
}

// Report is what Run found wrong with the cassette: the damaged ranges it
// went past (every readable record around them was exported), the early
// end of a cassette without its end record, and how many requests were
// waiting for an answer when the records ran out that way.
type Report struct {
	Damaged   []*cassette.DamageError
	Truncated *cassette.TruncatedError
	CutOff    int
}

// TruncatedNote is the one line that says a cassette ends early.
func (r *Report) TruncatedNote() string {
	if r.Truncated == nil {
		return ""
	}
	msg := r.Truncated.Error() + ": the recording ends early"
	switch r.CutOff {
	case 0:
	case 1:
		msg += "; 1 request cut off by its end"
	default:
		msg += fmt.Sprintf("; %d requests cut off by its end", r.CutOff)
	}
	return msg
}

// Progress is how far an export is: bytes of the cassette read of its size,
// and records read.
type Progress struct {
	Read, Size int64
	Records    uint64
}

// WriteError is a failure of the Writer (writing the output, or sending
// it), as against reading the cassette: the command reports it without
// blaming the cassette.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// writeErrors marks the errors of its Writer as WriteErrors.
type writeErrors struct{ w Writer }

func (x writeErrors) Begin(s Session) error      { return wrapWrite(x.w.Begin(s)) }
func (x writeErrors) Exchange(e *Exchange) error { return wrapWrite(x.w.Exchange(e)) }
func (x writeErrors) End() error                 { return wrapWrite(x.w.End()) }

func wrapWrite(err error) error {
	if err == nil {
		return nil
	}
	return &WriteError{err}
}

// Run reads the cassette at path and hands every exchange to w, in the order
// their last frame was recorded. progress, when not nil, is called every
// 16 Ki records and once at the end. An error of w comes back as a
// *WriteError; any other is the cassette's. A damaged range or an early end
// does not stop the export: see RunReport, which says what they were.
func Run(path string, w Writer, o Options, progress func(Progress)) error {
	_, err := RunReport(path, w, o, progress)
	return err
}

// RunReport is Run, and reports the damage and the early end it read past
// (each told to w first when w is a Noter). Requests still waiting for an
// answer when the records ran out early are handed over with CutOff set,
// not as unanswered.
func RunReport(path string, w Writer, o Options, progress func(Progress)) (rep Report, err error) {
	err = run(path, w, o, progress, &rep)
	return rep, err
}

func run(path string, w Writer, o Options, progress func(Progress), rep *Report) error {
	watch, _ := w.(RequestWatcher)
	noter, _ := w.(Noter)
	w = writeErrors{w}
	rd, err := cassette.Open(path)
	if err != nil {
		return err
	}
	defer rd.Close()
	var size int64
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	h := rd.Header()
	created, _ := time.Parse(time.RFC3339Nano, h.Created)
	s := Session{File: path, Protocol: h.Protocol, Created: created}
	base := o.Redactor
	if base == nil {
		base = redact.Default()
	}
	red, redFor := base, ""
	pending := map[string]*Frame{} // dir+id -> request
	var order []string             // pending keys in arrival order, for the requests never answered
	begun := false
	cutOff := "" // why the requests still waiting at the end got no answer
	var n uint64
	for {
		r, err := rd.Next()
		if err != nil {
			var de *cassette.DamageError
			if errors.As(err, &de) {
				rep.Damaged = append(rep.Damaged, de)
				if !de.ToEnd {
					continue
				}
				cutOff = CutOffDamage
				break
			}
			var te *cassette.TruncatedError
			if errors.As(err, &te) {
				rep.Truncated = te
				cutOff = CutOffEnd
				break
			}
			if err == io.EOF {
				break
			}
			return err
		}
		n++
		if o.observe != nil {
			o.observe(r)
		}
		if progress != nil && n%(16<<10) == 0 {
			progress(Progress{Read: rd.Offset(), Size: size, Records: n})
		}
		if r.K == cassette.KindMeta && r.Protocol != "" && s.Protocol == "" {
			s.Protocol = r.Protocol
		}
		if r.K != cassette.KindFrame || r.Part {
			continue
		}
		if !begun {
			if err := w.Begin(s); err != nil {
				return err
			}
			begun = true
		}
		payload := r.Payload()
		if s.Protocol != redFor {
			// The protocol's not-secret fields (LSP's progress tokens)
			// are shown as the recorder keeps them.
			redFor = s.Protocol
			if p, err := protocol.Lookup(s.Protocol); err == nil {
				red = base.WithPublic(protocol.NotSecret(p))
			}
		}
		if red.Enabled() {
			if out, changed := red.Line(payload); changed {
				payload = out
			}
		}
		f := &Frame{Record: r.N, T: r.T, Dir: string(r.D), Kind: r.Kind, Method: r.Method, ID: string(r.ID), Payload: append([]byte(nil), payload...), Intercept: r.Icpt}
		if f.Kind == "" && r.JSON != nil {
			// Recorded before its protocol was known (or written by a
			// tool): classify with the protocol's rules now.
			if p, err := protocol.Lookup(s.Protocol); err == nil {
				dir := protocol.DirOf(f.Dir)
				info := p.Classify(dir, r.JSON)
				f.Kind, f.Method, f.ID = string(info.Kind), info.Method, info.ID
			}
		}
		other := "out"
		if f.Dir == "out" {
			other = "in"
		}
		switch {
		case f.Kind == "request" && f.ID != "" && f.ID != "null":
			k := f.Dir + f.ID
			pending[k] = f
			order = append(order, k)
			if watch != nil {
				watch.Request(f)
			}
		case f.Kind == "response" && pending[other+f.ID] != nil:
			req := pending[other+f.ID]
			delete(pending, other+f.ID)
			if f.Method == "" {
				f.Method = req.Method
			}
			if err := w.Exchange(&Exchange{Request: req, Response: f}); err != nil {
				return err
			}
		default:
			if err := w.Exchange(&Exchange{Request: f, Notification: f.Kind != "request"}); err != nil {
				return err
			}
		}
		if len(order) > 4096 && len(order) > 4*len(pending) {
			order = compact(order, pending)
		}
	}
	if !begun {
		if err := w.Begin(s); err != nil {
			return err
		}
	}
	if progress != nil {
		progress(Progress{Read: size, Size: size, Records: n})
	}
	if cutOff != "" {
		rep.CutOff = len(pending)
	}
	if noter != nil {
		for _, d := range rep.Damaged {
			noter.Note(d.Error())
		}
		if msg := rep.TruncatedNote(); msg != "" {
			noter.Note(msg)
		}
	}
	for _, k := range order {
		if req := pending[k]; req != nil {
			delete(pending, k)
			if err := w.Exchange(&Exchange{Request: req, CutOff: cutOff}); err != nil {
				return err
			}
		}
	}
	return w.End()
}

func compact(order []string, pending map[string]*Frame) []string {
	out := order[:0]
	for _, k := range order {
		if pending[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// errorOf returns the code and message of the failure an exchange's
// answer reports, ok false when it reports none: a JSON-RPC error
// response's code and message, or, for a failure its protocol reports
// another way (protocol.Failed: an MCP tool result with isError, a DAP or pi
// response with success false), code 0 and the answer's summary.
func errorOf(proto string, x *Exchange) (code int64, msg string, ok bool) {
	r := x.Response
	var e struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(r.Payload, &e) != nil {
		return 0, "", false
	}
	if e.Error != nil {
		return e.Error.Code, e.Error.Message, true
	}
	dir, info := protocol.DirOf(r.Dir), protocol.Info{Kind: protocol.Response, Method: x.Request.Method, ID: r.ID}
	if !protocol.Failed(proto, dir, info, r.Payload) {
		return 0, "", false
	}
	if msg = protocol.Summarize(proto, dir, info, r.Payload); msg == "" {
		msg = "failed"
	}
	return 0, msg, true
}

// at is the wall-clock time of a frame.
func at(s Session, t int64) time.Time { return s.Created.Add(time.Duration(t)) }

package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/protocol"
)

// Recording is a cassette read into memory, ready to be replayed any number
// of times (it is never modified by a replay).
type Recording struct {
	Name     string          // path or label shown in reports
	Header   cassette.Header // record 0 (zero when the records had none)
	Records  []cassette.Record
	Protocol string // from the header or a meta record; "" when the cassette does not say
	// Complete is false when the cassette has no end record (the recorder
	// was cut off, as when a parent SIGKILLs its child). The complete
	// records are still replayed; see docs/replay.md.
	Complete bool
	// Truncated describes a torn tail the reader skipped ("" when none).
	Truncated string
}

// ErrEmpty is returned for a cassette with no frames to replay.
var ErrEmpty = errors.New("cassette holds no frames")

// FromRecords builds a Recording from records (a header first, when there is
// one). name labels the recording in reports.
func FromRecords(name string, recs []cassette.Record) *Recording {
	r := &Recording{Name: name}
	for i := range recs {
		rec := &recs[i]
		if rec.K != cassette.KindHeader {
			r.add(rec)
			continue
		}
		if rec.Header != nil {
			r.Header = *rec.Header
			if r.Protocol == "" {
				r.Protocol = rec.Header.Protocol
			}
		}
	}
	return r
}

// add appends a record other than the header, taking the protocol a meta
// record names and noting the end record.
func (r *Recording) add(x *cassette.Record) {
	switch x.K {
	case cassette.KindMeta:
		if x.Protocol != "" {
			r.Protocol = x.Protocol
		}
	case cassette.KindEnd:
		r.Complete = true
	}
	r.Records = append(r.Records, *x)
}

// Conns lists the connection numbers that carry frames (socket mode);
// a stdio cassette yields [0].
func (r *Recording) Conns() []int {
	seen := map[int]bool{}
	for i := range r.Records {
		if r.Records[i].K == cassette.KindFrame {
			seen[r.Records[i].Conn] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

type stepKind uint8

const (
	stepFrame  stepKind = iota // a frame in either direction
	stepStderr                 // a line the child wrote to stderr
	stepEOF                    // the parent closed the child's stdin
	stepExit                   // the child exited
	stepSignal                 // the parent had rpctap forward a signal to the child
)

// step is one element of the causal sequence of a session.
type step struct {
	kind  stepKind
	frame *Frame // stepFrame (and stepStderr: Raw holds the line)
	eol   string // the line ending recorded after the payload
	t     int64  // ns since start
	// pair links a response to the request it answers (and back): the index
	// of the other step, or -1.
	pair int
	exit *Exit  // stepExit
	sig  string // stepSignal: "SIGINT", ...
}

// Exit is how a (recorded or live) child ended.
type Exit struct {
	Code   int    `json:"code"`             // exit code, or 128+n for a signal
	Signal string `json:"signal,omitempty"` // e.g. "SIGTERM" when it died of a signal
}

// session is one connection's steps with the dialect that reads them.
type session struct {
	rec   *Recording
	conn  int
	d     dialect
	steps []step
}

// prepare selects one connection of r and builds its causal sequence.
// protoOverride, when set, must agree with the cassette's own protocol.
func (r *Recording) prepare(conn int, connSet bool, protoOverride string) (*session, error) {
	conns := r.Conns()
	if len(conns) == 0 {
		return nil, fmt.Errorf("%s: %w", r.Name, ErrEmpty)
	}
	if !connSet {
		if len(conns) > 1 {
			return nil, fmt.Errorf("%s records %d connections (%s); choose one with --conn", r.Name, len(conns), joinInts(conns))
		}
		conn = conns[0]
	} else if !containsInt(conns, conn) {
		return nil, fmt.Errorf("%s has no connection %d (it has %s)", r.Name, conn, joinInts(conns))
	}

	s := &session{rec: r, conn: conn}
	var frames []*Frame
	partial := map[cassette.Dir]int{} // a line split into parts, being joined: its step index
	joined := map[int]bool{}          // steps assembled from parts (JSON-ness unknown)
	for i := range r.Records {
		rec := &r.Records[i]
		if rec.Conn != conn && rec.K != cassette.KindEvent {
			continue
		}
		switch rec.K {
		case cassette.KindFrame:
			if rec.D != dirIn && rec.D != dirOut {
				continue
			}
			payload := payloadOf(rec)
			if pi, ok := partial[rec.D]; ok {
				p := &s.steps[pi]
				p.frame.Raw = append(p.frame.Raw, payload...)
				joined[pi] = true
				p.eol = rec.EOL
				if !rec.Part {
					delete(partial, rec.D)
				}
				continue
			}
			f := &Frame{Record: rec.N, Dir: rec.D, Raw: payload, json: rec.JSON != nil}
			st := step{kind: stepFrame, frame: f, eol: rec.EOL, t: rec.T, pair: -1}
			s.steps = append(s.steps, st)
			frames = append(frames, f)
			if rec.Part {
				partial[rec.D] = len(s.steps) - 1
			}
		case cassette.KindStderr:
			s.steps = append(s.steps, step{kind: stepStderr, frame: &Frame{Record: rec.N, Dir: cassette.DirErr, Raw: payloadOf(rec)}, eol: rec.EOL, t: rec.T, pair: -1})
		case cassette.KindEvent:
			switch {
			case rec.Ev == cassette.EventStdinEOF && rec.Conn == conn:
				s.steps = append(s.steps, step{kind: stepEOF, t: rec.T, pair: -1, frame: &Frame{Record: rec.N, Dir: dirIn, Kind: "eof"}})
			case rec.Ev == cassette.EventConnClose && rec.Conn == conn && conn != 0:
				s.steps = append(s.steps, step{kind: stepEOF, t: rec.T, pair: -1, frame: &Frame{Record: rec.N, Dir: dirIn, Kind: "eof"}})
			case rec.Ev == cassette.EventSignal && rec.Conn == conn && rec.Signal != "":
				s.steps = append(s.steps, step{kind: stepSignal, t: rec.T, pair: -1, sig: rec.Signal,
					frame: &Frame{Record: rec.N, Dir: dirIn, Kind: "signal", Method: rec.Signal}})
			case rec.Ev == cassette.EventExit && conn == 0:
				ex := &Exit{}
				if rec.Exit != nil {
					ex.Code = *rec.Exit
				} else if rec.Signal != "" {
					ex.Signal = rec.Signal
					ex.Code = 128 + signalNumber(rec.Signal)
				}
				s.steps = append(s.steps, step{kind: stepExit, t: rec.T, pair: -1, exit: ex})
			}
		}
	}
	for i, st := range s.steps {
		if st.kind == stepFrame {
			recorded := st.frame.json
			if joined[i] {
				recorded = json.Valid(st.frame.Raw)
			}
			st.frame.json = isJSONPayload(st.frame.Raw, recorded)
		}
	}
	s.exitLast()

	proto := r.Protocol
	if proto == "" {
		proto = detect(frames)
	}
	if protoOverride != "" && protoOverride != proto {
		if r.Protocol != "" || !compatible(protoOverride, proto) {
			return nil, fmt.Errorf("%s records a %s session, not %s", r.Name, proto, protoOverride)
		}
		proto = protoOverride
	}
	s.d = dialectFor(proto)
	for _, st := range s.steps {
		if st.kind == stepFrame {
			s.d.classify(st.frame, st.frame.Dir == dirIn)
		}
	}
	s.pairResponses()
	return s, nil
}

// exitLast moves the exit event after everything else: a child writes
// nothing after it exits, so output recorded after the exit event was
// written before it and only read later (the tap drains the pipes after
// reaping the child). Replaying the exit where it was recorded would cut
// that output off.
func (s *session) exitLast() {
	for i, st := range s.steps {
		if st.kind != stepExit || i == len(s.steps)-1 {
			continue
		}
		last := s.steps[len(s.steps)-1].t
		copy(s.steps[i:], s.steps[i+1:])
		st.t = max(st.t, last)
		s.steps[len(s.steps)-1] = st
		return
	}
}

// compatible: a sniffed protocol may be refined by --protocol within the
// same family (a JSON-RPC cassette can be replayed as acp or mcp).
func compatible(asked, sniffed string) bool {
	return dialectFor(asked).family == dialectFor(sniffed).family && dialectFor(asked).family != famGeneric ||
		sniffed == "raw"
}

// pairResponses links each response to the request it answers: the latest
// earlier request from the other side with the same id that is not yet
// answered. Responses copy the request's method (JSON-RPC responses carry
// none).
func (s *session) pairResponses() {
	if !s.d.idKeyed() {
		return
	}
	type key struct {
		dir cassette.Dir
		id  string
	}
	open := map[key][]int{}
	for i := range s.steps {
		st := &s.steps[i]
		if st.kind != stepFrame || st.frame.ID == "" {
			continue
		}
		f := st.frame
		switch f.Kind {
		case kindRequest:
			k := key{f.Dir, f.ID}
			open[k] = append(open[k], i)
		case kindResponse:
			other := dirIn
			if f.Dir == dirIn {
				other = dirOut
			}
			k := key{other, f.ID}
			if q := open[k]; len(q) > 0 {
				j := q[len(q)-1]
				open[k] = q[:len(q)-1]
				st.pair = j
				s.steps[j].pair = i
				if f.Method == "" {
					f.Method = s.steps[j].frame.Method
				}
			}
		}
	}
}

// isJSONPayload: a payload recorded as JSON (the recorder checked it) that
// is an object or an array.
func isJSONPayload(raw []byte, recordedJSON bool) bool {
	i := jsonscan.SkipWS(raw, 0)
	return recordedJSON && i < len(raw) && (raw[i] == '{' || raw[i] == '[')
}

// detect names the protocol of a cassette whose header and meta records do
// not: the protocol package's Detector over the first frames.
func detect(frames []*Frame) string {
	var df []protocol.DirFrame
	for _, f := range frames {
		dir := protocol.FromChild
		if f.Dir == dirIn {
			dir = protocol.FromParent
		}
		df = append(df, protocol.DirFrame{Dir: dir, Frame: f.Raw})
		if len(df) == protocol.DetectFrames {
			break
		}
	}
	if name := protocol.Detect(df); name != "" {
		return name
	}
	return "raw"
}

func payloadOf(rec *cassette.Record) []byte {
	return append([]byte(nil), rec.Payload()...)
}

var signals = map[string]int{"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGKILL": 9, "SIGUSR1": 10,
	"SIGSEGV": 11, "SIGUSR2": 12, "SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGABRT": 6}

func signalNumber(name string) int {
	if n, ok := signals[strings.ToUpper(name)]; ok {
		return n
	}
	return 0
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

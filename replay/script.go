package replay

import (
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
	// Damage lists the damaged ranges Open read past (their records are
	// missing; the rest is there). A command reports each and fails.
	Damage []*cassette.DamageError
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
		if sessionRecord(&r.Records[i]) {
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

// sessionRecord tells whether x is part of a session that can be replayed:
// a frame, a stderr line, or the child's start or exit. A child that died
// before saying anything (record -- sh -c 'exit 3') left only the last
// kinds, and its session still replays: the fake child exits the same way.
func sessionRecord(x *cassette.Record) bool {
	switch x.K {
	case cassette.KindFrame, cassette.KindStderr:
		return true
	case cassette.KindEvent:
		return x.Ev == cassette.EventStart || x.Ev == cassette.EventExit
	}
	return false
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
	hdr   []byte // the Content-Length header block recorded before it (nil: a line)
	t     int64  // ns since start
	prevT int64  // t of the step before it in the sequence (its own t for the first)
	// pair links a response to the request it answers (nil when none).
	pair *estep
	exit *Exit  // stepExit
	sig  string // stepSignal: "SIGINT", ...
	// linger (stepSignal): the parent sent the signal after it had closed
	// the child's stdin, lingerGap ns after that close: it answered a child
	// that had not exited at stdin EOF. A child that exits at EOF is owed
	// no such signal (replay), and a fake parent sends it only to a child
	// that lingers as long (verify).
	linger    bool
	lingerGap int64

	stored bool // kind, method and id came from the record (see protocol.Wire.RecordedKinds)
	parts  bool // a line still being joined from part records
	joined bool // assembled from parts (JSON-ness unknown until complete)
}

// Exit is how a (recorded or live) child ended.
type Exit struct {
	Code   int    `json:"code"`             // exit code, or 128+n for a signal
	Signal string `json:"signal,omitempty"` // e.g. "SIGTERM" when it died of a signal
}

// compatible: a sniffed protocol may be refined by --protocol within the
// same family (a JSON-RPC cassette can be replayed as acp or mcp).
func compatible(asked, sniffed string) bool {
	a, s := dialectFor(asked).w.Style, dialectFor(sniffed).w.Style
	return a == s && a != protocol.StyleWhole || sniffed == "raw"
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
		df = append(df, protocol.DirFrame{Dir: protocol.DirOf(string(f.Dir)), Frame: f.Raw})
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
	// The record's own bytes (never written to: the cap keeps the append
	// that joins part records from reaching past them).
	p := rec.Payload()
	return p[:len(p):len(p)]
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

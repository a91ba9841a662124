// Package replaytest builds cassettes by hand, for tests of replay and of
// parents that use it: a Builder appends records the way the recorder would
// (numbered, 1 ms apart unless told otherwise), Interleave turns a pair of
// per-direction captures into one causal sequence, and WriteFile writes a
// cassette file.
package replaytest

import (
	"encoding/json"
	"os"

	"github.com/rpctap/rpctap/cassette"
)

// Builder accumulates records, the header first.
type Builder struct {
	Records []cassette.Record
	T       int64 // time of the last record, ns
	Step    int64 // added to T before each record (default 1 ms)
}

// New starts a cassette of the given protocol ("" lets replay detect it).
func New(protocol string) *Builder {
	b := &Builder{Step: 1e6}
	b.Records = append(b.Records, cassette.Record{K: cassette.KindHeader, Header: &cassette.Header{
		Format: cassette.FormatName, Version: "1.0", Protocol: protocol, Created: "2026-01-01T00:00:00Z", Mode: "stdio"}})
	return b
}

// Add appends r, numbering and timing it.
func (b *Builder) Add(r cassette.Record) *Builder {
	b.T += b.Step
	r.N = uint64(len(b.Records))
	r.T = b.T
	b.Records = append(b.Records, r)
	return b
}

// Wait makes the next record come d ns later than it would.
func (b *Builder) Wait(d int64) *Builder { b.T += d; return b }

// In appends a frame the parent sent; Out one the child sent.
func (b *Builder) In(line string) *Builder  { return b.frame(cassette.DirIn, line) }
func (b *Builder) Out(line string) *Builder { return b.frame(cassette.DirOut, line) }

func (b *Builder) frame(d cassette.Dir, line string) *Builder {
	return b.Add(cassette.NewLineRecord(cassette.KindFrame, d, []byte(line), "\n"))
}

// Stderr appends a line the child wrote to stderr.
func (b *Builder) Stderr(line string) *Builder {
	return b.Add(cassette.NewLineRecord(cassette.KindStderr, cassette.DirErr, []byte(line), "\n"))
}

// Event appends a process event (cassette.EventStart, EventStdinEOF, ...).
func (b *Builder) Event(ev string) *Builder {
	return b.Add(cassette.Record{K: cassette.KindEvent, Ev: ev})
}

// Exit appends the child's exit with code.
func (b *Builder) Exit(code int) *Builder {
	return b.Add(cassette.Record{K: cassette.KindEvent, Ev: cassette.EventExit, Exit: &code})
}

// End appends the end record and returns the records.
func (b *Builder) End() []cassette.Record {
	b.Add(cassette.Record{K: cassette.KindEnd})
	return b.Records
}

// Interleave appends a JSON-RPC capture pair (parent lines, child lines)
// the way a sequential parent produces it: each parent request is followed
// by the child's frames up to its response, and a child request is
// followed at once by the parent's answer to it. Captures with only the
// order within each direction (two tees) become a plausible causal order.
func (b *Builder) Interleave(in, out []string) *Builder {
	used := make([]bool, len(in))
	j := 0
	answer := func(id string) {
		for k, l := range in {
			if !used[k] {
				if lid, resp, _ := classify(l); resp && lid == id {
					used[k] = true
					b.In(l)
					return
				}
			}
		}
	}
	for i, l := range in {
		if used[i] {
			continue
		}
		used[i] = true
		b.In(l)
		id, _, req := classify(l)
		if !req {
			continue
		}
		for j < len(out) {
			o := out[j]
			j++
			b.Out(o)
			oid, oresp, oreq := classify(o)
			if oreq {
				answer(oid)
			}
			if oresp && oid == id {
				break
			}
		}
	}
	for ; j < len(out); j++ {
		b.Out(out[j])
	}
	return b
}

func classify(line string) (id string, isResp, isReq bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &m) != nil {
		return "", false, false
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if raw, ok := m["id"]; ok && string(raw) != "null" {
		id = string(raw)
	}
	return id, id != "" && !hasMethod && (hasResult || hasError), id != "" && hasMethod
}

// WriteFile writes recs (header first) as a cassette at path, one batch per
// record as a live recorder writes. With end false the end record is left
// out, as when the recorder is killed.
func WriteFile(path string, recs []cassette.Record, end bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := cassette.NewWriter(f, *recs[0].Header, nil)
	if err != nil {
		return err
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].K == cassette.KindEnd {
			continue
		}
		r := recs[i]
		if err := w.Append(&r); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if end {
		return w.Close()
	}
	return f.Sync()
}

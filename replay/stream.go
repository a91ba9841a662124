package replay

import (
	"bytes"
	"fmt"
	"time"
)

// A protocol's Wire.Stream names the events that carry pieces of a byte
// stream: DAP's output event, whose text is the debuggee's stdout or stderr
// as the adapter happened to read it. debugpy sends "result 42\n" as one
// event in one run and as "result" and " 42\n" in the next, so such events
// are not matched one by one: the live side's pieces of each stream are
// joined, and the recorded pieces of that stream are covered by the joined
// text in order, each marked matched once all its bytes came. A byte that
// differs is one mismatch (the recorded and live text from there); live
// text no recorded piece covers is reported at the end.

// stream is one byte stream being compared (a DAP output category).
type stream struct {
	rec  []*estep // recorded pieces claimed, in order, not yet covered
	off  int      // bytes of rec[0].text already covered
	live string   // live text not yet covered by a recorded piece
	pos  int      // bytes of the stream covered so far (for reports)
}

// livePiece handles f (a live frame, raw only) when it is a piece of a
// byte stream, and reports whether it was.
func (e *engine) livePiece(f *Frame, t time.Time) bool {
	sw := e.d.w.Stream
	if sw.Method == "" || !bytes.Contains(f.Raw, []byte(`"`+sw.Method+`"`)) {
		return false
	}
	v, ok := decodeJSON(f.Raw)
	if !ok {
		return false
	}
	c := &Frame{Raw: f.Raw, Value: v, json: true}
	e.d.classify(c, f.Dir == dirIn)
	if c.Kind != kindEvent {
		return false
	}
	key, text, ok := sw.Piece(c.Method, v)
	if !ok {
		return false
	}
	if sw.IsLog(key) {
		// The peer's own log: chatter, whether or not the recording has
		// it (the recorded pieces are optional).
		e.res.Chatter++
		return true
	}
	if e.streams == nil {
		e.streams = map[string]*stream{}
	}
	s := e.streams[key]
	if s == nil {
		s = &stream{}
		e.streams[key] = s
	}
	s.live += text
	e.lastProgress = t
	e.cover(key, s, t)
	return true
}

// cover matches the live text of stream key against its recorded pieces,
// claiming the next ones as needed.
func (e *engine) cover(key string, s *stream, t time.Time) {
	for s.live != "" {
		if len(s.rec) == 0 {
			st := e.nextPiece(key)
			if st == nil {
				return // more than the recording has here: kept, reported at the end
			}
			st.claimed = true
			s.rec = append(s.rec, st)
		}
		st := s.rec[0]
		r := st.text[s.off:]
		k := commonPrefix(r, s.live)
		switch {
		case k == len(r): // the piece's bytes all came
			s.rec, s.off, s.live, s.pos = s.rec[1:], 0, s.live[k:], s.pos+k
			e.pieceDone(st, t)
		case k == len(s.live): // a part of it came
			s.off, s.live, s.pos = s.off+k, "", s.pos+k
		default:
			// A byte differs: one mismatch, shown from the first byte of
			// the piece not yet covered. The piece counts as answered by
			// as many live bytes, so a changed value ("43" for "42")
			// costs one difference and the comparison goes on in step.
			n := min(len(r), len(s.live))
			e.diverge(Divergence{Kind: Mismatch, Record: st.frame.Record, FrameKind: st.frame.Kind, Method: st.frame.Method,
				Recorded: showFrame(st.frame),
				Diff: []PathDiff{{Path: "/" + e.d.w.Stream.Body + "/" + e.d.w.Stream.Text,
					Recorded: short(r), Live: short(s.live[:n])}},
				Message: fmt.Sprintf("%s %s (%s) differs from record #%d at byte %d of the %s stream: %s -> %s",
					st.frame.Kind, st.frame.Method, key, st.frame.Record, s.pos+k, key, short(r), short(s.live[:n]))}, nil)
			s.rec, s.off, s.live, s.pos = s.rec[1:], 0, s.live[n:], s.pos+len(r)
			e.pieceDone(st, t)
		}
	}
}

// nextPiece returns the first recorded piece of stream key not claimed:
// among the steps given up on, then ahead as far as the window reaches
// (counting the frames that are not pieces, as matching does).
func (e *engine) nextPiece(key string) *estep {
	for _, st := range e.waived {
		if st.piece && !st.done && !st.claimed && st.cat == key {
			return st
		}
	}
	n := 0
	for i := e.open; n < e.o.window && e.load(i, true); i++ {
		st := e.at(i)
		if !st.theirs || st.done || st.kind != stepFrame {
			continue
		}
		if !st.piece {
			if !st.waived {
				n++
			}
			continue
		}
		if !st.claimed && st.cat == key {
			return st
		}
	}
	return nil
}

func (e *engine) pieceDone(st *estep, t time.Time) {
	st.done = true
	st.liveT = t
	e.lastProgress = t
	e.res.Matched++
}

// finishStreams reports live text that no recorded piece covered.
func (e *engine) finishStreams() {
	for key, s := range e.streams {
		if s.live == "" {
			continue
		}
		m := e.d.w.Stream.Method
		e.diverge(Divergence{Kind: Unexpected, FrameKind: kindEvent, Method: m,
			Diff:    []PathDiff{{Path: "/" + e.d.w.Stream.Body + "/" + e.d.w.Stream.Text, Live: short(s.live)}},
			Message: fmt.Sprintf("the %s sent %s (%s) the recording does not have, after byte %d of that stream: %s", e.liveName(), m, key, s.pos, short(s.live))}, nil)
		s.live = ""
	}
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

package viewer

import (
	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
)

// The transcript's model is the protocol package's (protocol.Transcript: it
// knows how each protocol streams); the viewer feeds it records and renders
// its turns (render_text.go).
type (
	EntryKind = protocol.EntryKind
	Entry     = protocol.Entry
	Turn      = protocol.Turn
)

// Entry kinds (protocol.EntryKind).
const (
	EntryText       = protocol.EntryText
	EntryThought    = protocol.EntryThought
	EntryUser       = protocol.EntryUser
	EntryTool       = protocol.EntryTool
	EntryPermission = protocol.EntryPermission
	EntryProgress   = protocol.EntryProgress
	EntryNote       = protocol.EntryNote
	EntryPlan       = protocol.EntryPlan
)

// Transcript folds a session's records into turns.
type Transcript struct{ protocol.Transcript }

// NewTranscript folds the records of a session in protocol proto ("": the
// header or meta record fed first names it).
func NewTranscript(proto string) *Transcript {
	return &Transcript{protocol.Transcript{Protocol: proto}}
}

// Add feeds the next record. Only whole JSON frames matter; a header or
// meta record names the protocol when none was given; others are ignored.
func (tr *Transcript) Add(r *cassette.Record) {
	if tr.Protocol == "" {
		if r.K == cassette.KindHeader && r.Header != nil {
			tr.Protocol = r.Header.Protocol
		} else if r.K == cassette.KindMeta {
			tr.Protocol = r.Protocol
		}
	}
	if r.K != cassette.KindFrame || r.JSON == nil || r.Part {
		return
	}
	dir := protocol.DirOf(string(r.D))
	tr.Transcript.Add(protocol.TranscriptFrame{N: r.N, T: r.T, Dir: dir, JSON: r.JSON})
}

// FoldTranscript folds records into a transcript (a convenience for tests
// and small cassettes; the App feeds a Transcript incrementally).
func FoldTranscript(recs []cassette.Record) *Transcript {
	tr := NewTranscript("")
	for i := range recs {
		tr.Add(&recs[i])
	}
	return tr
}

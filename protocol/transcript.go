package protocol

import (
	"encoding/json"
	"errors"
	"strings"
)

// EntryKind is what one transcript entry is.
type EntryKind uint8

const (
	EntryText       EntryKind = iota // the agent's answer, folded from chunks
	EntryThought                     // the agent's reasoning, folded from chunks
	EntryUser                        // the user's prompt (or replayed user chunks)
	EntryTool                        // a tool call or its progress/result
	EntryPermission                  // a permission request or its answer
	EntryProgress                    // MCP progress, folded per token
	EntryNote                        // errors and stop reasons
	EntryPlan                        // an agent's plan
)

// Entry is one paragraph or line of a transcript.
type Entry struct {
	Kind EntryKind
	Rec  uint64 // the first record it came from
	T    int64
	Text string
	key  string // what later chunks must match to fold into it
}

// Turn is one prompt and everything the agent streamed until it answered.
type Turn struct {
	N      int    // 1, 2, ... (0: frames before any prompt)
	Rec    uint64 // the prompt's record
	T      int64
	Method string
	// FirstChunk is the ns from the prompt to the first text or thought
	// chunk, -1 when none came.
	FirstChunk int64
	// Done is the ns from the prompt to the end of the turn, -1 while open.
	Done    int64
	Entries []Entry
}

// Transcriber is implemented by protocols whose sessions fold into prompt
// turns. Each Transcript asks for a folder of its own, so a folder may
// keep state (an open prompt's id, tool titles by id).
type Transcriber interface {
	NewTranscriptFolder() TranscriptFolder
}

// TranscriptFolder folds one protocol's frames into a Transcript, through
// its StartTurn, Append and EndTurn.
type TranscriptFolder interface {
	Fold(tr *Transcript, f TranscriptFrame)
}

// Transcript folds a session's frames into turns: a prompt, then what the
// agent streamed until it answered (text and thoughts folded from their
// chunks, tool calls, permission questions, progress, errors). How a
// protocol streams is its own (its Transcriber: ACP session/update, MCP
// tools/call and progress, synaps/opi/pi message updates and tool events);
// a session of a protocol without one (generic JSON-RPC) has no turns.
// Set Protocol, then feed frames in record order with Add; it keeps only
// the folded text. The viewer's transcript pane and the HTML report read it.
type Transcript struct {
	// Protocol is the session's protocol name; it is read at the first
	// Add and may not change after.
	Protocol string
	Turns    []*Turn
	cur      *Turn
	folder   TranscriptFolder
	asked    bool
}

func (tr *Transcript) turn(t int64) *Turn {
	if tr.cur == nil {
		tr.cur = &Turn{N: 0, T: t, FirstChunk: -1, Done: -1}
		tr.Turns = append(tr.Turns, tr.cur)
	}
	return tr.cur
}

// Current is the turn frames fold into now (nil before the first).
func (tr *Transcript) Current() *Turn { return tr.cur }

// StartTurn opens the next turn at frame r: a prompt of method whose text
// (prompt, "" for none) becomes its first entry. It ends the open turn.
func (tr *Transcript) StartTurn(r TranscriptFrame, method, prompt string) {
	n := 1
	if tr.cur != nil {
		n = tr.cur.N + 1
		if tr.cur.Done < 0 && tr.cur.N > 0 {
			tr.cur.Done = r.T - tr.cur.T
		}
	}
	tr.cur = &Turn{N: n, Rec: r.N, T: r.T, Method: method, FirstChunk: -1, Done: -1}
	tr.Turns = append(tr.Turns, tr.cur)
	if prompt != "" {
		tr.cur.Entries = append(tr.cur.Entries, Entry{Kind: EntryUser, Rec: r.N, T: r.T, Text: prompt})
	}
}

// EndTurn ends the open turn at t (ns since the session started).
func (tr *Transcript) EndTurn(t int64) {
	if tr.cur != nil && tr.cur.Done < 0 && tr.cur.N > 0 {
		tr.cur.Done = t - tr.cur.T
	}
}

// Append adds text of kind from frame r to the current turn. With fold, it
// joins the last entry when that is of the same kind and key: text and
// thoughts are appended to it, progress replaces it.
func (tr *Transcript) Append(r TranscriptFrame, kind EntryKind, key, text string, fold bool) {
	t := tr.turn(r.T)
	if (kind == EntryText || kind == EntryThought) && t.FirstChunk < 0 && t.N > 0 {
		t.FirstChunk = r.T - t.T
	}
	if fold && len(t.Entries) > 0 {
		last := &t.Entries[len(t.Entries)-1]
		if last.Kind == kind && last.key == key {
			if kind == EntryProgress {
				last.Text = text
			} else {
				last.Text += text
			}
			return
		}
	}
	t.Entries = append(t.Entries, Entry{Kind: kind, Rec: r.N, T: r.T, Text: text, key: key})
}

// TranscriptFrame is one frame as the Transcript reads it.
type TranscriptFrame struct {
	N    uint64 // record number
	T    int64  // ns since the session started
	Dir  Dir
	JSON []byte // the frame; only JSON frames count
}

// Add feeds the next frame.
func (tr *Transcript) Add(r TranscriptFrame) {
	if r.JSON == nil {
		return
	}
	if !tr.asked {
		tr.asked = true
		if t, ok := lookupKnown(tr.Protocol).(Transcriber); ok {
			tr.folder = t.NewTranscriptFolder()
		}
	}
	if tr.folder != nil {
		tr.folder.Fold(tr, r)
	}
}

// decodeLoose decodes a frame into v for a folder: a member of an
// unexpected type (pi's "error" is a string where JSON-RPC has an object)
// leaves the others filled in. It reports whether v is worth reading.
func decodeLoose(frame []byte, v any) bool {
	err := json.Unmarshal(frame, v)
	if err == nil {
		return true
	}
	var ute *json.UnmarshalTypeError
	return errors.As(err, &ute)
}

type transcriptBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
	URI  string `json:"uri"`
}

// blockText is one content block as text: its text, or its type (and
// URI) in brackets.
func blockText(raw json.RawMessage) string {
	var b transcriptBlock
	if json.Unmarshal(raw, &b) != nil {
		return ""
	}
	if b.Type == "text" || b.Type == "" {
		return b.Text
	}
	if b.URI != "" {
		return "[" + b.Type + " " + b.URI + "]"
	}
	return "[" + b.Type + "]"
}

// messageText is a JSON string's value, "" for anything else.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// clip cuts s to max bytes and turns control characters into spaces.
func clip(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

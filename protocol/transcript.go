package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
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

	promptID string // ACP: the id whose response ends the turn
}

// Transcript folds a session's frames into turns: a prompt, then what the
// agent streamed until it answered (text and thoughts folded from their
// chunks, tool calls, permission questions, progress, errors). It knows how
// each protocol streams: ACP session/update, MCP tools/call and progress,
// synaps/opi/pi message updates and tool events. Feed it frames in record
// order with Add; it keeps only the folded text. The viewer's transcript
// pane and export's prompt-turn spans read it.
type Transcript struct {
	Turns []*Turn
	cur   *Turn
	tools map[string]string // ACP toolCallId -> title, for updates that carry no title
}

func (tr *Transcript) turn(t int64) *Turn {
	if tr.cur == nil {
		tr.cur = &Turn{N: 0, T: t, FirstChunk: -1, Done: -1}
		tr.Turns = append(tr.Turns, tr.cur)
	}
	return tr.cur
}

func (tr *Transcript) start(r TranscriptFrame, method, prompt, id string) {
	n := 1
	if tr.cur != nil {
		n = tr.cur.N + 1
		if tr.cur.Done < 0 && tr.cur.N > 0 {
			tr.cur.Done = r.T - tr.cur.T
		}
	}
	tr.cur = &Turn{N: n, Rec: r.N, T: r.T, Method: method, FirstChunk: -1, Done: -1, promptID: id}
	tr.Turns = append(tr.Turns, tr.cur)
	if prompt != "" {
		tr.cur.Entries = append(tr.cur.Entries, Entry{Kind: EntryUser, Rec: r.N, T: r.T, Text: prompt})
	}
}

func (tr *Transcript) end(t int64) {
	if tr.cur != nil && tr.cur.Done < 0 && tr.cur.N > 0 {
		tr.cur.Done = t - tr.cur.T
	}
}

// add appends text to the turn, folding it into the last entry when that
// is of the same kind and key.
func (tr *Transcript) add(r TranscriptFrame, kind EntryKind, key, text string, fold bool) {
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

// transcriptFrame is the union of the fields the transcript reads, across
// protocols.
type transcriptFrame struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Type   string          `json:"type"`
	Params struct {
		Prompt []transcriptBlock `json:"prompt"`
		Update struct {
			SessionUpdate string          `json:"sessionUpdate"`
			Content       json.RawMessage `json:"content"`
			Title         string          `json:"title"`
			ToolCallID    string          `json:"toolCallId"`
			Kind          string          `json:"kind"`
			Status        string          `json:"status"`
			Entries       []any           `json:"entries"`
		} `json:"update"`
		ToolCall struct {
			Title      string `json:"title"`
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Name     string `json:"name"`
		} `json:"options"`
		// MCP
		Name          string          `json:"name"`
		Arguments     json.RawMessage `json:"arguments"`
		Progress      float64         `json:"progress"`
		Total         float64         `json:"total"`
		Message       string          `json:"message"`
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"params"`
	Result struct {
		StopReason string `json:"stopReason"`
		Outcome    struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`

	// synaps, opi, pi
	Message              json.RawMessage `json:"message"`
	Command              string          `json:"command"`
	Success              *bool           `json:"success"`
	OK                   *bool           `json:"ok"`
	Event                *streamEvent    `json:"event"`
	AssistantEvent       *streamEvent    `json:"assistant_event"`
	AssistantMessageEvnt *streamEvent    `json:"assistantMessageEvent"`
	ToolName             string          `json:"tool_name"`
	ToolNameCamel        string          `json:"toolName"`
}

type streamEvent struct {
	Type     string `json:"type"`
	Delta    string `json:"delta"`
	ToolName string `json:"tool_name"`
	ToolID   string `json:"tool_id"`
	Result   string `json:"result"`
	ToolCall *struct {
		Name string `json:"name"`
	} `json:"tool_call"`
	ToolCallCamel *struct {
		Name string `json:"name"`
	} `json:"toolCall"`
}

type transcriptBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
	URI  string `json:"uri"`
}

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

func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

func errorText(raw json.RawMessage) string {
	return messageText(raw)
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
	var f transcriptFrame
	if err := json.Unmarshal(r.JSON, &f); err != nil {
		// A field of an unexpected type (pi's "error" is a string where
		// JSON-RPC has an object) leaves the others filled in.
		var ute *json.UnmarshalTypeError
		if !errors.As(err, &ute) {
			return
		}
	}
	var extra struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(r.JSON, &extra)
	in := r.Dir == FromParent
	if f.Method != "" || f.Type == "" {
		tr.addJSONRPC(r, &f, in)
		return
	}
	tr.addTyped(r, &f, extra.Error, in)
}

// addJSONRPC folds an ACP or MCP frame (and other JSON-RPC).
func (tr *Transcript) addJSONRPC(r TranscriptFrame, f *transcriptFrame, in bool) {
	switch f.Method {
	case "session/prompt":
		var parts []string
		for _, b := range f.Params.Prompt {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			} else {
				parts = append(parts, "["+b.Type+"]")
			}
		}
		tr.start(r, f.Method, strings.Join(parts, " "), string(f.ID))
		return
	case "session/update":
		u := f.Params.Update
		switch u.SessionUpdate {
		case "agent_message_chunk":
			tr.add(r, EntryText, "", blockText(u.Content), true)
		case "agent_thought_chunk":
			tr.add(r, EntryThought, "", blockText(u.Content), true)
		case "user_message_chunk":
			tr.add(r, EntryUser, "", blockText(u.Content), true)
		case "tool_call":
			if tr.tools == nil {
				tr.tools = map[string]string{}
			}
			if len(tr.tools) < 1<<16 {
				tr.tools[u.ToolCallID] = u.Title
			}
			s := "tool " + u.Title
			if u.Kind != "" {
				s += " (" + u.Kind + ")"
			}
			if u.Status != "" {
				s += " " + u.Status
			}
			tr.add(r, EntryTool, "", s, false)
		case "tool_call_update":
			if u.Status != "" {
				title := u.Title
				if title == "" {
					title = tr.tools[u.ToolCallID]
				}
				if title == "" {
					title = u.ToolCallID
				}
				tr.add(r, EntryTool, "", "tool "+title+" "+u.Status, false)
			}
		case "plan":
			tr.add(r, EntryPlan, "", fmt.Sprintf("plan: %d entries", len(u.Entries)), false)
		}
		return
	case "session/request_permission":
		var opts []string
		for _, o := range f.Params.Options {
			opts = append(opts, o.OptionID)
		}
		title := f.Params.ToolCall.Title
		if title == "" {
			title = f.Params.ToolCall.ToolCallID
		}
		tr.add(r, EntryPermission, "", fmt.Sprintf("permission? %s [%s]", title, strings.Join(opts, " / ")), false)
		return
	case "tools/call":
		s := "tool call " + f.Params.Name
		if len(f.Params.Arguments) > 0 {
			s += " " + clip(string(f.Params.Arguments), 120)
		}
		tr.add(r, EntryTool, "", s, false)
		return
	case "notifications/progress":
		s := fmt.Sprintf("progress %g", f.Params.Progress)
		if f.Params.Total > 0 {
			s += fmt.Sprintf("/%g", f.Params.Total)
		}
		if f.Params.Message != "" {
			s += " " + f.Params.Message
		}
		tr.add(r, EntryProgress, string(f.Params.ProgressToken), s, true)
		return
	}
	if f.Method == "" && f.Type == "" && len(f.ID) > 0 {
		// A JSON-RPC response: the end of an ACP turn, or a permission answer.
		if tr.cur != nil && tr.cur.promptID != "" && tr.cur.promptID == string(f.ID) && !in {
			if f.Result.StopReason != "" {
				tr.add(r, EntryNote, "", "stop: "+f.Result.StopReason, false)
			}
			if f.Error != nil {
				tr.add(r, EntryNote, "", "error: "+f.Error.Message, false)
			}
			tr.end(r.T)
			return
		}
		if in && f.Result.Outcome.Outcome != "" {
			s := "permission → " + f.Result.Outcome.Outcome
			if f.Result.Outcome.OptionID != "" {
				s += " " + f.Result.Outcome.OptionID
			}
			tr.add(r, EntryPermission, "", s, false)
		}
		return
	}
}

// addTyped folds a synaps, opi or pi frame ("type"-tagged).
func (tr *Transcript) addTyped(r TranscriptFrame, f *transcriptFrame, errRaw json.RawMessage, in bool) {
	switch f.Type {
	case "prompt", "follow_up", "steer":
		if in {
			tr.start(r, f.Type, messageText(f.Message), "")
		}
		return
	case "message_update", "MessageUpdate":
		ev := f.Event
		if ev == nil {
			ev = f.AssistantEvent
		}
		if ev == nil {
			ev = f.AssistantMessageEvnt
		}
		if ev == nil {
			return
		}
		switch ev.Type {
		case "text_delta":
			tr.add(r, EntryText, "", ev.Delta, true)
		case "thinking_delta":
			tr.add(r, EntryThought, "", ev.Delta, true)
		case "toolcall_start":
			tr.add(r, EntryTool, "", "tool "+ev.ToolName, false)
		case "toolcall_result":
			tr.add(r, EntryTool, "", "tool result: "+clip(ev.Result, 120), false)
		case "tool_call_end", "toolcall_end":
			name := ""
			if ev.ToolCall != nil {
				name = ev.ToolCall.Name
			} else if ev.ToolCallCamel != nil {
				name = ev.ToolCallCamel.Name
			}
			tr.add(r, EntryTool, "", "tool "+name, false)
		}
		return
	case "ToolExecutionStart", "tool_execution_start":
		name := f.ToolName
		if name == "" {
			name = f.ToolNameCamel
		}
		tr.add(r, EntryTool, "", "run "+name, false)
		return
	case "agent_end", "AgentEnd":
		tr.end(r.T)
		return
	case "response":
		failed := (f.Success != nil && !*f.Success) || (f.OK != nil && !*f.OK)
		if failed && (f.Command == "prompt" || f.Command == "follow_up") {
			msg := errorText(errRaw)
			tr.add(r, EntryNote, "", "error: "+clip(msg, 200), false)
			tr.end(r.T)
		}
		return
	case "error":
		tr.add(r, EntryNote, "", "error: "+clip(messageText(f.Message), 200), false)
		return
	}
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

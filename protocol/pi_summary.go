package protocol

import "encoding/json"

// What rpctap says about pi frames beyond their rules (pi.go): the stream
// event a message_update carries, a response's command and outcome, failed
// responses and tool executions, the transcript of prompts.

// Catalogue: the commands and events of pi.go's table.
func (piProto) Catalogue() []string { return catalogueOf(piCat().table.in, piCat().table.out) }

func (piProto) Summarize(_ Dir, _ Info, frame []byte) string {
	if s, ok := streamEventSummary(frame, "assistantMessageEvent"); ok {
		return s
	}
	if str(memberOf(frame, "type")) == "response" {
		return commandOutcome(frame, "success")
	}
	return ""
}

// IsChunk: message_update streams the answer.
func (piProto) IsChunk(method string, frame []byte) bool {
	if method == "" {
		method = str(memberOf(frame, "type"))
	}
	return method == "message_update"
}

// Failed: a response with "success": false, a tool_execution_end with
// "isError": true.
func (piProto) Failed(_ Dir, _ Info, frame []byte) bool {
	return string(memberOf(frame, "success")) == "false" || string(memberOf(frame, "isError")) == "true"
}

func (piProto) NewTranscriptFolder() TranscriptFolder { return piFolder{} }

// piFolder: prompt, follow_up and steer open a turn; text and thinking
// deltas fold; tool calls and executions are lines; agent_end closes the
// turn, a failed prompt response notes why.
type piFolder struct{}

func (piFolder) Fold(tr *Transcript, r TranscriptFrame) {
	var f struct {
		Type     string          `json:"type"`
		Message  json.RawMessage `json:"message"`
		Command  string          `json:"command"`
		Success  *bool           `json:"success"`
		Error    json.RawMessage `json:"error"`
		ToolName string          `json:"toolName"`
		Event    *struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			ToolCall *struct {
				Name string `json:"name"`
			} `json:"toolCall"`
		} `json:"assistantMessageEvent"`
	}
	if !decodeLoose(r.JSON, &f) {
		return
	}
	switch f.Type {
	case "prompt", "follow_up", "steer":
		if r.Dir == FromParent {
			tr.StartTurn(r, f.Type, messageText(f.Message))
		}
	case "message_update":
		if ev := f.Event; ev != nil {
			switch ev.Type {
			case "text_delta":
				tr.Append(r, EntryText, "", ev.Delta, true)
			case "thinking_delta":
				tr.Append(r, EntryThought, "", ev.Delta, true)
			case "toolcall_end":
				name := ""
				if ev.ToolCall != nil {
					name = ev.ToolCall.Name
				}
				tr.Append(r, EntryTool, "", "tool "+name, false)
			}
		}
	case "tool_execution_start":
		tr.Append(r, EntryTool, "", "run "+f.ToolName, false)
	case "agent_end":
		tr.EndTurn(r.T)
	case "response":
		if f.Success != nil && !*f.Success && (f.Command == "prompt" || f.Command == "follow_up") {
			tr.Append(r, EntryNote, "", "error: "+clip(messageText(f.Error), 200), false)
			tr.EndTurn(r.T)
		}
	}
}

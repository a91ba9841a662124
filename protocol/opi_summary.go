package protocol

import "encoding/json"

// What rpctap says about opi frames beyond their rules (opi.go): the stream
// event a MessageUpdate carries, a response's command and outcome, failed
// responses and tool executions, the transcript of prompts.

// Catalogue: the commands and events of opi.go's table.
func (opiProto) Catalogue() []string { return catalogueOf(opiCat().table.in, opiCat().table.out) }

func (opiProto) Summarize(_ Dir, _ Info, frame []byte) string {
	if s, ok := streamEventSummary(frame, "assistant_event"); ok {
		return s
	}
	if str(memberOf(frame, "type")) == "response" {
		return commandOutcome(frame, "success")
	}
	return ""
}

// IsChunk: MessageUpdate streams the answer.
func (opiProto) IsChunk(method string, frame []byte) bool {
	if method == "" {
		method = str(memberOf(frame, "type"))
	}
	return method == "MessageUpdate"
}

// Failed: a response with "success": false (SdkResponse), a
// ToolExecutionEnd with "is_error": true.
func (opiProto) Failed(_ Dir, _ Info, frame []byte) bool {
	return string(memberOf(frame, "success")) == "false" || string(memberOf(frame, "is_error")) == "true"
}

func (opiProto) NewTranscriptFolder() TranscriptFolder { return opiFolder{} }

// opiFolder: prompt, follow_up and steer open a turn; text and thinking
// deltas fold; tool calls and executions are lines; AgentEnd closes the
// turn, a failed prompt response notes why.
type opiFolder struct{}

func (opiFolder) Fold(tr *Transcript, r TranscriptFrame) {
	var f struct {
		Type     string          `json:"type"`
		Message  json.RawMessage `json:"message"`
		Command  string          `json:"command"`
		Success  *bool           `json:"success"`
		Error    json.RawMessage `json:"error"`
		ToolName string          `json:"tool_name"`
		Event    *struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			ToolCall *struct {
				Name string `json:"name"`
			} `json:"tool_call"`
		} `json:"assistant_event"`
	}
	if !decodeLoose(r.JSON, &f) {
		return
	}
	switch f.Type {
	case "prompt", "follow_up", "steer":
		if r.Dir == FromParent {
			tr.StartTurn(r, f.Type, messageText(f.Message))
		}
	case "MessageUpdate":
		if ev := f.Event; ev != nil {
			switch ev.Type {
			case "text_delta":
				tr.Append(r, EntryText, "", ev.Delta, true)
			case "thinking_delta":
				tr.Append(r, EntryThought, "", ev.Delta, true)
			case "tool_call_end":
				name := ""
				if ev.ToolCall != nil {
					name = ev.ToolCall.Name
				}
				tr.Append(r, EntryTool, "", "tool "+name, false)
			}
		}
	case "ToolExecutionStart":
		tr.Append(r, EntryTool, "", "run "+f.ToolName, false)
	case "AgentEnd":
		tr.EndTurn(r.T)
	case "response":
		if f.Success != nil && !*f.Success && (f.Command == "prompt" || f.Command == "follow_up") {
			tr.Append(r, EntryNote, "", "error: "+clip(messageText(f.Error), 200), false)
			tr.EndTurn(r.T)
		}
	}
}

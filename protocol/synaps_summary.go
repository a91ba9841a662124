package protocol

import "encoding/json"

// What rpctap says about synaps frames beyond their rules (synaps.go): the
// stream event a message_update carries, a response's command and outcome,
// error events, the transcript of prompts and what streamed their answers.

// Catalogue: the commands and events of synaps.go's table.
func (synapsProto) Catalogue() []string {
	return catalogueOf(synapsCat().table.in, synapsCat().table.out)
}

func (synapsProto) Summarize(_ Dir, _ Info, frame []byte) string {
	if s, ok := streamEventSummary(frame, "event"); ok {
		return s
	}
	switch str(memberOf(frame, "type")) {
	case "response":
		return commandOutcome(frame, "ok")
	case "error":
		return quoteWords(jsonText(memberOf(frame, "message")))
	}
	return ""
}

// IsChunk: message_update streams the answer.
func (synapsProto) IsChunk(method string, frame []byte) bool {
	if method == "" {
		method = str(memberOf(frame, "type"))
	}
	return method == "message_update"
}

// Failed: an "error" event from the child (RpcEvent::Error).
func (synapsProto) Failed(dir Dir, _ Info, frame []byte) bool {
	return dir == FromChild && str(memberOf(frame, "type")) == "error"
}

func (synapsProto) NewTranscriptFolder() TranscriptFolder { return synapsFolder{} }

// synapsFolder: prompt and follow_up open a turn; text and thinking deltas
// fold; tool calls and their results are lines; agent_end closes the turn, a
// failed prompt response or an error note why.
type synapsFolder struct{}

func (synapsFolder) Fold(tr *Transcript, r TranscriptFrame) {
	var f struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
		Command string          `json:"command"`
		OK      *bool           `json:"ok"`
		Error   json.RawMessage `json:"error"`
		Event   *struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			ToolName string `json:"tool_name"`
			Result   string `json:"result"`
		} `json:"event"`
	}
	if !decodeLoose(r.JSON, &f) {
		return
	}
	switch f.Type {
	case "prompt", "follow_up":
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
			case "toolcall_start":
				tr.Append(r, EntryTool, "", "tool "+ev.ToolName, false)
			case "toolcall_result":
				tr.Append(r, EntryTool, "", "tool result: "+clip(ev.Result, 120), false)
			}
		}
	case "agent_end":
		tr.EndTurn(r.T)
	case "response":
		if f.OK != nil && !*f.OK && (f.Command == "prompt" || f.Command == "follow_up") {
			tr.Append(r, EntryNote, "", "error: "+clip(messageText(f.Error), 200), false)
			tr.EndTurn(r.T)
		}
	case "error":
		tr.Append(r, EntryNote, "", "error: "+clip(messageText(f.Message), 200), false)
	}
}

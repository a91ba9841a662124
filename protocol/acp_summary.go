package protocol

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// What rpctap says about ACP frames beyond their rules: their summary in
// lists, which updates are streamed chunks, which stream into an open
// prompt, the transcript of prompt turns, the agent's capability surface
// and the facts telemetry records (acp.go holds the rules).

// Catalogue: the methods of the ACP schema (acp_types.go).
func (acpProto) Catalogue() []string { return catalogueOf(acpMethods()) }

// acpChunkKind reports whether a sessionUpdate kind streams a message in
// pieces (schema.json SessionUpdate: the ContentChunk variants).
func acpChunkKind(kind string) bool {
	switch kind {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
		return true
	}
	return false
}

func (acpProto) Summarize(_ Dir, info Info, frame []byte) string {
	params, result := memberOf(frame, "params"), memberOf(frame, "result")
	switch info.Method {
	case "session/update":
		return acpUpdateSummary(memberOf(params, "update"))
	case "session/prompt":
		if info.Kind == Request {
			return quoteWords(blocksText(memberOf(params, "prompt")))
		}
		return "stop " + str(memberOf(result, "stopReason"))
	case "session/request_permission":
		if info.Kind == Request {
			return "permission? " + str(memberOf(memberOf(params, "toolCall"), "title"))
		}
		o := memberOf(result, "outcome")
		return strings.TrimSpace("→ " + str(memberOf(o, "outcome")) + " " + str(memberOf(o, "optionId")))
	case "session/new":
		if info.Kind == Response {
			return "session " + str(memberOf(result, "sessionId"))
		}
		return str(memberOf(params, "cwd"))
	case "initialize":
		if info.Kind == Response {
			if ai := memberOf(result, "agentInfo"); ai != nil {
				return str(memberOf(ai, "name"))
			}
		}
	}
	return ""
}

// acpUpdateSummary: the sessionUpdate kind, then the first words of its
// text, a tool call's title and status, a plan's size.
func acpUpdateSummary(u []byte) string {
	kind := str(memberOf(u, "sessionUpdate"))
	switch kind {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
		return kind + " " + quoteWords(str(memberOf(memberOf(u, "content"), "text")))
	case "tool_call", "tool_call_update":
		s := kind
		for _, k := range []string{"title", "kind", "status"} {
			if v := str(memberOf(u, k)); v != "" {
				s += " " + v
			}
		}
		return s
	case "plan":
		return kind + " " + count(memberOf(u, "entries"), "entry")
	}
	return kind
}

// IsChunk: message, thought and user chunks of session/update.
func (acpProto) IsChunk(method string, frame []byte) bool {
	if method == "" {
		method = str(memberOf(frame, "method"))
	}
	if method != "session/update" {
		return false
	}
	return acpChunkKind(str(nestedMember(memberOf(frame, "params"), "update", "sessionUpdate")))
}

// StreamsInto: the session/update notifications of the prompt's session
// while a session/prompt is open ("the Agent reports the model's output to
// the Client via session/update notifications" until it answers the prompt).
func (acpProto) StreamsInto(req string, reqFrame []byte, notif string, frame []byte) bool {
	if req != "session/prompt" || notif != "session/update" {
		return false
	}
	want := nestedMember(reqFrame, "params", "sessionId")
	return want != nil && string(nestedMember(frame, "params", "sessionId")) == string(want)
}

// ---- transcript

func (acpProto) NewTranscriptFolder() TranscriptFolder { return &acpFolder{} }

// acpFolder folds ACP prompt turns: session/prompt opens one, its answer
// (the stop reason) ends it; session/update chunks fold into text and
// thoughts, tool calls and plans become lines, permission questions and
// their answers too.
type acpFolder struct {
	promptID string
	turn     *Turn
	tools    map[string]string // toolCallId -> title, for updates that carry no title
}

type acpFrame struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
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
		} `json:"options"`
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
}

func (a *acpFolder) Fold(tr *Transcript, r TranscriptFrame) {
	var f acpFrame
	if !decodeLoose(r.JSON, &f) {
		return
	}
	in := r.Dir == FromParent
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
		tr.StartTurn(r, f.Method, strings.Join(parts, " "))
		a.promptID, a.turn = string(f.ID), tr.Current()
	case "session/update":
		u := f.Params.Update
		switch u.SessionUpdate {
		case "agent_message_chunk":
			tr.Append(r, EntryText, "", blockText(u.Content), true)
		case "agent_thought_chunk":
			tr.Append(r, EntryThought, "", blockText(u.Content), true)
		case "user_message_chunk":
			tr.Append(r, EntryUser, "", blockText(u.Content), true)
		case "tool_call":
			if a.tools == nil {
				a.tools = map[string]string{}
			}
			if len(a.tools) < 1<<16 {
				a.tools[u.ToolCallID] = u.Title
			}
			s := "tool " + u.Title
			if u.Kind != "" {
				s += " (" + u.Kind + ")"
			}
			if u.Status != "" {
				s += " " + u.Status
			}
			tr.Append(r, EntryTool, "", s, false)
		case "tool_call_update":
			if u.Status != "" {
				title := u.Title
				if title == "" {
					title = a.tools[u.ToolCallID]
				}
				if title == "" {
					title = u.ToolCallID
				}
				tr.Append(r, EntryTool, "", "tool "+title+" "+u.Status, false)
			}
		case "plan":
			tr.Append(r, EntryPlan, "", fmt.Sprintf("plan: %d entries", len(u.Entries)), false)
		}
	case "session/request_permission":
		var opts []string
		for _, o := range f.Params.Options {
			opts = append(opts, o.OptionID)
		}
		title := f.Params.ToolCall.Title
		if title == "" {
			title = f.Params.ToolCall.ToolCallID
		}
		tr.Append(r, EntryPermission, "", fmt.Sprintf("permission? %s [%s]", title, strings.Join(opts, " / ")), false)
	case "":
		if len(f.ID) == 0 {
			return
		}
		// A response: the end of the turn, or a permission answer.
		if a.turn != nil && a.turn == tr.Current() && a.promptID != "" && a.promptID == string(f.ID) && !in {
			if f.Result.StopReason != "" {
				tr.Append(r, EntryNote, "", "stop: "+f.Result.StopReason, false)
			}
			if f.Error != nil {
				tr.Append(r, EntryNote, "", "error: "+f.Error.Message, false)
			}
			tr.EndTurn(r.T)
			return
		}
		if in && f.Result.Outcome.Outcome != "" {
			s := "permission → " + f.Result.Outcome.Outcome
			if f.Result.Outcome.OptionID != "" {
				s += " " + f.Result.Outcome.OptionID
			}
			tr.Append(r, EntryPermission, "", s, false)
		}
	}
}

// ---- capability surface and telemetry

// SurfaceOf: an initialize result's "agentCapabilities" and the ids of its
// "authMethods" (ACP InitializeResponse).
func (acpProto) SurfaceOf(method string, result []byte) Surface {
	if method != "initialize" {
		return nil
	}
	s := Surface{}
	if c := nestedTop(result, "agentCapabilities"); c != nil {
		s["agentCapabilities"] = canonicalRaw(c)
	}
	var r struct {
		AuthMethods []struct {
			ID string `json:"id"`
		} `json:"authMethods"`
	}
	if json.Unmarshal(result, &r) == nil && r.AuthMethods != nil {
		ids := make([]string, 0, len(r.AuthMethods))
		for _, m := range r.AuthMethods {
			ids = append(ids, m.ID)
		}
		sort.Strings(ids)
		s["authMethods"] = canonical(ids)
	}
	return s
}

// CallFacts: every session method carries params.sessionId (the
// conversation); session/prompt is an agent invocation (invoke_agent) and
// opens a turn; a session/update reports a tool call's progress; a
// session/request_permission asks about one tool call.
func (acpProto) CallFacts(method string, request []byte) CallFacts {
	params := nestedTop(request, "params")
	var f CallFacts
	f.Conversation = str(nestedTop(params, "sessionId"))
	switch method {
	case "session/prompt":
		f.Operation, f.OpensTurn = "invoke_agent", true
	case "session/update":
		f.ToolUpdate = acpToolUpdate(params)
	case "session/request_permission":
		f.ToolCall = str(nestedMember(params, "toolCall", "toolCallId"))
	}
	return f
}

// acpToolUpdate reads a session/update's tool call ("tool_call" starts one,
// "tool_call_update" changes it; "completed" and "failed" end it: ACP
// ToolCallStatus); nil for any other update.
func acpToolUpdate(params []byte) *ToolCallUpdate {
	u := memberOf(params, "update")
	kind := str(memberOf(u, "sessionUpdate"))
	if kind != "tool_call" && kind != "tool_call_update" {
		return nil
	}
	id := str(memberOf(u, "toolCallId"))
	if id == "" {
		return nil
	}
	status := str(memberOf(u, "status"))
	// Not gen_ai.tool.type: its values are function, extension and
	// datastore; ACP's kind (read, edit, execute...) is another axis.
	return &ToolCallUpdate{ID: id, Title: str(memberOf(u, "title")), Start: kind == "tool_call",
		End: status == "completed" || status == "failed", Failed: status == "failed",
		Attrs: [][2]string{{"rpctap.acp.tool.kind", str(memberOf(u, "kind"))}, {"rpctap.acp.tool.status", status}}}
}

// FinishReasons: a session/prompt answer's stopReason.
func (acpProto) FinishReasons(method string, response []byte) []string {
	if method != "session/prompt" {
		return nil
	}
	if r := str(nestedMember(response, "result", "stopReason")); r != "" {
		return []string{r}
	}
	return nil
}

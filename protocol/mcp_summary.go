package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
)

// What rpctap says about MCP frames beyond their rules (mcp.go): their
// summary, progress as streamed chunks of a request, failed tool results,
// the transcript of tool calls, the server's surface and the facts the MCP
// semantic conventions name.

// Catalogue: the methods of the MCP schema (mcp_types.go).
func (mcpProto) Catalogue() []string { return catalogueOf(mcpMethods()) }

func (mcpProto) Summarize(_ Dir, info Info, frame []byte) string {
	params, result := memberOf(frame, "params"), memberOf(frame, "result")
	switch info.Method {
	case "tools/call":
		if info.Kind == Request {
			return "tool " + str(memberOf(params, "name"))
		}
		if string(memberOf(result, "isError")) == "true" {
			return "isError " + quoteWords(blocksText(memberOf(result, "content")))
		}
		return quoteWords(blocksText(memberOf(result, "content")))
	case "tools/list":
		if info.Kind == Response {
			return count(memberOf(result, "tools"), "tool")
		}
	case "notifications/progress":
		s := "progress " + string(memberOf(params, "progress"))
		if t := memberOf(params, "total"); t != nil {
			s += "/" + string(t)
		}
		return strings.TrimSpace(s + " " + str(memberOf(params, "message")))
	case "notifications/message":
		return str(memberOf(params, "level")) + " " + quoteWords(jsonText(memberOf(params, "data")))
	case "initialize":
		if info.Kind == Response {
			if si := memberOf(result, "serverInfo"); si != nil {
				return str(memberOf(si, "name"))
			}
		}
	}
	return ""
}

// IsChunk: progress notifications are pieces of a request's answer.
func (mcpProto) IsChunk(method string, frame []byte) bool {
	if method == "" {
		method = str(memberOf(frame, "method"))
	}
	return method == "notifications/progress"
}

// StreamsInto: notifications/progress carrying the progressToken the
// request put in its params._meta (MCP, Progress: "the receiver MAY send
// progress notifications containing the original progress token").
func (mcpProto) StreamsInto(_ string, reqFrame []byte, notif string, frame []byte) bool {
	if notif != "notifications/progress" {
		return false
	}
	tok := memberOf(memberOf(memberOf(reqFrame, "params"), "_meta"), "progressToken")
	return tok != nil && string(nestedMember(frame, "params", "progressToken")) == string(tok)
}

// Failed: a JSON-RPC error, or a tool result with "isError": true (the tool
// ran and failed: MCP spec, Tools, "Error Handling").
func (mcpProto) Failed(_ Dir, _ Info, frame []byte) bool {
	return rpcFailed(frame) || string(memberOf(memberOf(frame, "result"), "isError")) == "true"
}

// ---- transcript

func (mcpProto) NewTranscriptFolder() TranscriptFolder { return mcpFolder{} }

// mcpFolder: a tools/call is a line with its arguments; progress folds per
// token into one line that shows the latest report.
type mcpFolder struct{}

func (mcpFolder) Fold(tr *Transcript, r TranscriptFrame) {
	var f struct {
		Method string `json:"method"`
		Params struct {
			Name          string          `json:"name"`
			Arguments     json.RawMessage `json:"arguments"`
			Progress      float64         `json:"progress"`
			Total         float64         `json:"total"`
			Message       string          `json:"message"`
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"params"`
	}
	if !decodeLoose(r.JSON, &f) {
		return
	}
	switch f.Method {
	case "tools/call":
		s := "tool call " + f.Params.Name
		if len(f.Params.Arguments) > 0 {
			s += " " + clip(string(f.Params.Arguments), 120)
		}
		tr.Append(r, EntryTool, "", s, false)
	case "notifications/progress":
		s := fmt.Sprintf("progress %g", f.Params.Progress)
		if f.Params.Total > 0 {
			s += fmt.Sprintf("/%g", f.Params.Total)
		}
		if f.Params.Message != "" {
			s += " " + f.Params.Message
		}
		tr.Append(r, EntryProgress, string(f.Params.ProgressToken), s, true)
	}
}

// ---- capability surface and telemetry

// SurfaceOf: tools/list gives each tool (its description, inputSchema and
// outputSchema) as "tool:NAME" (MCP 2025-11-25, Tools: "To discover
// available tools, clients send a tools/list request"); initialize (and
// server/discover) the server's "capabilities".
func (mcpProto) SurfaceOf(method string, result []byte) Surface {
	s := Surface{}
	switch method {
	case "tools/list":
		var r struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(result, &r) != nil {
			return nil
		}
		for _, t := range r.Tools {
			var name string
			if json.Unmarshal(t["name"], &name) != nil || name == "" {
				continue
			}
			keep := map[string]json.RawMessage{}
			for _, k := range []string{"description", "inputSchema", "outputSchema"} {
				if v, ok := t[k]; ok {
					keep[k] = v
				}
			}
			s["tool:"+name] = canonical(keep)
		}
	case "initialize", "server/discover":
		if c := nestedTop(result, "capabilities"); c != nil {
			s["capabilities"] = canonicalRaw(c)
		}
	}
	return s
}

// CallFacts: tools/call names the tool (params.name; operation
// execute_tool), prompts/get a prompt (params.name), resources/read and
// resources/subscribe a resource (params.uri): the MCP semantic conventions
// name spans "{mcp.method.name} {target}".
func (mcpProto) CallFacts(method string, request []byte) CallFacts {
	params := nestedTop(request, "params")
	f := CallFacts{MethodAttr: "mcp.method.name"}
	switch method {
	case "tools/call":
		name := str(nestedTop(params, "name"))
		f.Target, f.Tool, f.Operation = name, name, "execute_tool"
	case "prompts/get":
		f.Target = str(nestedTop(params, "name"))
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		f.Target = str(nestedTop(params, "uri"))
	}
	return f
}

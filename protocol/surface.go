package protocol

import (
	"bytes"
	"encoding/json"
	"sort"
)

// Surface is what a peer offers, as a baseline for drift checks in CI
// (rpctap check --baseline): named items and their JSON (compacted, keys
// sorted), e.g. "tool:echo" -> its inputSchema and description, or
// "agentCapabilities" -> that object.
type Surface map[string]json.RawMessage

// SurfaceOf returns what the response frame (a result, as recorded, to a
// request of method) says about the child's surface in protocol proto, or
// nil when it says nothing:
//
//   - mcp tools/list: each tool (its description, inputSchema and
//     outputSchema) as "tool:NAME"; MCP 2025-11-25, Tools: "To discover
//     available tools, clients send a tools/list request";
//   - mcp initialize (and server/discover): the server's "capabilities";
//   - acp initialize: "agentCapabilities" and the ids of "authMethods"
//     (ACP InitializeResponse).
func SurfaceOf(proto, method string, response []byte) Surface {
	result := nestedTop(response, "result")
	if result == nil {
		return nil
	}
	s := Surface{}
	switch {
	case proto == "mcp" && method == "tools/list":
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
	case proto == "mcp" && (method == "initialize" || method == "server/discover"):
		if c := nestedTop(result, "capabilities"); c != nil {
			s["capabilities"] = canonicalRaw(c)
		}
	case proto == "acp" && method == "initialize":
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
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

// nestedTop returns the raw value of member key of the JSON object b.
func nestedTop(b []byte, key string) []byte {
	var val []byte
	forEachMember(b, func(k, v []byte) bool {
		if string(k) == key {
			val = v
			return false
		}
		return true
	})
	return val
}

// canonicalRaw re-encodes raw JSON with sorted keys and no white space, so
// that two equal values compare equal as bytes.
func canonicalRaw(raw []byte) json.RawMessage {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return canonical(v)
}

func canonical(v any) json.RawMessage {
	if m, ok := v.(map[string]json.RawMessage); ok {
		out := map[string]any{}
		for k, r := range m {
			var x any
			dec := json.NewDecoder(bytes.NewReader(r))
			dec.UseNumber()
			if dec.Decode(&x) == nil {
				out[k] = x
			}
		}
		v = out
	}
	b, _ := json.Marshal(v) // encoding/json sorts map keys
	return b
}

// CallFacts are what telemetry conventions name about one request: the
// target in a span name ("tools/call get_weather"), the GenAI tool and
// operation, and the conversation (ACP session) it belongs to.
type CallFacts struct {
	Target       string // tool, prompt or resource the call is about
	Tool         string // gen_ai.tool.name
	Operation    string // gen_ai.operation.name
	Conversation string // gen_ai.conversation.id
	// MethodAttr is the attribute the protocol's semantic conventions
	// name the method by ("mcp.method.name"), "" when they name none.
	MethodAttr string
	// RPCSystem is the rpc.system the protocol speaks ("jsonrpc" for the
	// JSON-RPC protocols), "" for others.
	RPCSystem string
}

// CallFactsOf reads them from a request frame of method in protocol proto:
//   - mcp: tools/call names the tool (params.name; operation execute_tool),
//     prompts/get a prompt (params.name), resources/read and
//     resources/subscribe a resource (params.uri) — the MCP semantic
//     conventions name spans "{mcp.method.name} {target}";
//   - acp: every session method carries params.sessionId (the
//     conversation); session/prompt is an agent invocation (invoke_agent).
func CallFactsOf(proto, method string, request []byte) CallFacts {
	params := nestedTop(request, "params")
	str := func(key string) string {
		s, _ := rawString(nestedTop(params, key))
		return s
	}
	var f CallFacts
	if WireOf(proto).Style == StyleJSONRPC {
		f.RPCSystem = "jsonrpc"
	}
	switch proto {
	case "mcp":
		f.MethodAttr = "mcp.method.name"
		switch method {
		case "tools/call":
			f.Target, f.Tool, f.Operation = str("name"), str("name"), "execute_tool"
		case "prompts/get":
			f.Target = str("name")
		case "resources/read", "resources/subscribe", "resources/unsubscribe":
			f.Target = str("uri")
		}
	case "acp":
		f.Conversation = str("sessionId")
		if method == "session/prompt" {
			f.Operation = "invoke_agent"
		}
	}
	return f
}

// ToolCallUpdate is what an ACP session/update says of a tool call.
type ToolCallUpdate struct {
	ID, Title, Kind, Status string
	Start                   bool // sessionUpdate "tool_call" (not "tool_call_update")
}

// ToolCallUpdateOf reads an ACP session/update notification's tool call
// ("tool_call" starts one, "tool_call_update" changes its status); the zero
// value for any other frame.
func ToolCallUpdateOf(frame []byte) ToolCallUpdate {
	u := nestedMember(frame, "params", "update")
	kind := str(memberOf(u, "sessionUpdate"))
	if kind != "tool_call" && kind != "tool_call_update" {
		return ToolCallUpdate{}
	}
	return ToolCallUpdate{ID: str(memberOf(u, "toolCallId")), Title: str(memberOf(u, "title")), Kind: str(memberOf(u, "kind")),
		Status: str(memberOf(u, "status")), Start: kind == "tool_call"}
}

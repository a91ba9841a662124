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

// Surfacer is implemented by protocols whose responses describe what the
// child offers (SurfaceOf).
type Surfacer interface {
	// SurfaceOf reads result, the "result" member of a response to a
	// request of method; nil or empty when it says nothing.
	SurfaceOf(method string, result []byte) Surface
}

// SurfaceOf returns what the response frame (as recorded, to a request of
// method) says about the child's surface in protocol proto (its Surfacer:
// MCP's tools and capabilities, ACP's agentCapabilities and authMethods), or
// nil when it says nothing or the protocol has no Surfacer.
func SurfaceOf(proto, method string, response []byte) Surface {
	sf, ok := lookupKnown(proto).(Surfacer)
	if !ok {
		return nil
	}
	result := nestedTop(response, "result")
	if result == nil {
		return nil
	}
	if s := sf.SurfaceOf(method, result); len(s) > 0 {
		return s
	}
	return nil
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

// CallFacts are what telemetry conventions name about one request or
// notification: the target in a span name ("tools/call get_weather"), the
// GenAI tool and operation, the conversation (ACP session) it belongs to,
// and how it nests: a request that opens a turn of its conversation (its
// span is the parent of what happens in that conversation until it is
// answered), tool calls reported by notifications, a frame about one tool
// call (a child of that tool call's span).
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
	// OpensTurn: the request starts a turn of Conversation that its
	// answer ends.
	OpensTurn bool
	// ToolUpdate is the tool call this notification starts or changes.
	ToolUpdate *ToolCallUpdate
	// ToolCall is the id of the tool call the frame is about.
	ToolCall string
}

// ToolCallUpdate is what a notification says of a tool call an agent runs.
type ToolCallUpdate struct {
	ID, Title string
	Start     bool // it starts the tool call
	End       bool // it ends it
	Failed    bool // it ends it in failure
	// Attrs are the tool call's other attributes (key, value) in the order
	// a span lists them, every key in every update; "" leaves a value as
	// an earlier update set it.
	Attrs [][2]string
}

// CallFacter is implemented by protocols with telemetry conventions
// (CallFactsOf).
type CallFacter interface {
	CallFacts(method string, frame []byte) CallFacts
}

// Finisher is implemented by protocols whose answers say why a turn
// finished (gen_ai.response.finish_reasons).
type Finisher interface {
	FinishReasons(method string, response []byte) []string
}

// CallFactsOf reads them from a request or notification frame of method
// in protocol proto (its CallFacter); every JSON-RPC protocol's rpc.system
// is "jsonrpc".
func CallFactsOf(proto, method string, frame []byte) CallFacts {
	var f CallFacts
	if cf, ok := lookupKnown(proto).(CallFacter); ok {
		f = cf.CallFacts(method, frame)
	}
	if WireOf(proto).Style == StyleJSONRPC {
		f.RPCSystem = "jsonrpc"
	}
	return f
}

// FinishReasonsOf returns why the turn a response (to a request of method,
// in protocol proto) answers finished, nil when it does not say.
func FinishReasonsOf(proto, method string, response []byte) []string {
	if f, ok := lookupKnown(proto).(Finisher); ok {
		return f.FinishReasons(method, response)
	}
	return nil
}

// catalogueOf lists the keys of a protocol's method or type tables.
func catalogueOf[V any](tables ...map[string]V) []string {
	var names []string
	for _, t := range tables {
		for k := range t {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

package protocol

import (
	"fmt"
	"strings"
	"sync"
)

// synaps: the synaps-bridge RPC v1 (`synaps rpc`), NDJSON over the child's
// stdio. Parent -> child: RpcCommand, child -> parent: RpcEvent, both
// internally tagged by "type" (serde). Catalogue:
// ../shared/protocols/synaps.md; documentation: docs/protocols/synaps.md.

const synapsMaxFrame = 1 << 20 // MAX_FRAME_BYTES: 1 MiB, measured without the newline

type synapsProto struct{}

//go:noinline
func synapsIDOnly() []fld { return []fld{req("id", tString)} }

// synapsCat is the catalogue (evTable) and what else the checks need of it,
// built on first use: built at init, it ran in every rpctap process.
type synapsCatalogue struct {
	table evTable
}

var synapsCat = sync.OnceValue(func() *synapsCatalogue {
	var synapsAttachment = tObj(
		req("path", tString),
		optNull("name", tString),
		optNull("mime", tString),
	)
	var synapsTurnUsage = tObj(
		req("input_tokens", tUint),
		req("output_tokens", tUint),
		opt("cache_read_input_tokens", tUint),     // #[serde(default)]
		opt("cache_creation_input_tokens", tUint), // #[serde(default)]
		optNull("cache_creation_5m", tUint),       // [later]
		optNull("cache_creation_1h", tUint),       // [later]
		optNull("model", tString),
	)
	var synapsAssistantEvent = tTagged("type", map[string][]fld{
		"text_delta":           {req("delta", tString)},
		"thinking_delta":       {req("delta", tString)},
		"toolcall_start":       {req("tool_id", tString), req("tool_name", tString)},
		"toolcall_input_delta": {req("tool_id", tString), req("delta", tString)},
		"toolcall_input":       {req("tool_id", tString), reqNull("input", tAny)},
		"toolcall_result":      {req("tool_id", tString), req("result", tString)},
	})
	var synapsEventPayload = tObj(
		req("id", tString), req("source", tString), req("severity", tString),
		req("content_type", tString), req("text", tString), req("timestamp", tString),
		req("formatted", tString),
	)
	var synapsTable = evTable{
		in: map[string][]fld{
			"prompt":               {req("id", tString), req("message", tString), opt("attachments", tArr(synapsAttachment))},
			"follow_up":            {req("id", tString), req("message", tString)},
			"compact":              synapsIDOnly(),
			"new_session":          synapsIDOnly(),
			"get_messages":         synapsIDOnly(),
			"set_model":            {req("id", tString), req("model", tString)},
			"get_available_models": synapsIDOnly(),
			"abort":                synapsIDOnly(),
			"get_session_stats":    synapsIDOnly(),
			"get_state":            synapsIDOnly(),
			"shutdown":             {},
			"tools_list":           {optNull("id", tString)}, // [later]
		},
		out: map[string][]fld{
			"ready":           {req("session_id", tString), req("model", tString), req("protocol_version", tUint)},
			"message_update":  {req("event", synapsAssistantEvent)},
			"subagent_start":  {req("subagent_id", tUint), req("agent_name", tString), req("task_preview", tString)},
			"subagent_update": {req("subagent_id", tUint), req("agent_name", tString), req("status", tString)},
			"subagent_done":   {req("subagent_id", tUint), req("agent_name", tString), req("result_preview", tString), req("duration_secs", tNumber)},
			"agent_end":       {req("usage", synapsTurnUsage)},
			"response":        {req("id", tString), req("command", tString)},
			"error":           {req("message", tString), optNull("id", tString)},
			"event":           {req("payload", synapsEventPayload)}, // [later]
		},
	}
	return &synapsCatalogue{table: synapsTable}
})

// synapsBodies are the flattened response bodies src/cmd/rpc.rs produces,
// by `command`. The wire type is an untyped serde_json::Value, so a body
// that differs is a warning, not an error.
var synapsBodies = sync.OnceValue(func() map[string][]fld {
	return map[string][]fld{
		"prompt":               {req("ok", tBool), opt("cancelled", tBool), opt("error", tString), optNull("outcome", tAny)},
		"auto_turn":            {req("ok", tBool), opt("cancelled", tBool), opt("error", tString), optNull("outcome", tAny)},
		"compact":              {req("summary", tString), optNull("disclosure", tAny)},
		"new_session":          {req("session_id", tString)},
		"get_messages":         {req("messages", tArr(tObjAny))},
		"set_model":            {req("model", tString)},
		"get_available_models": {req("models", tArr(tObj(req("provider", tString), req("model_id", tString), req("model_name", tString))))},
		"abort":                {req("ok", tBool)},
		"get_session_stats": {req("input_tokens", tUint), req("output_tokens", tUint), req("cost", tNumber),
			req("message_count", tUint), req("model", tString), req("session_id", tString)},
		"get_state":  {req("streaming", tBool), req("model", tString), req("session_id", tString), req("message_count", tUint)},
		"tools_list": {req("ok", tBool), req("tools", tArr(tObj(req("name", tString), opt("description", tString), optNull("input_schema", tAny))))},
	}
})

func (synapsProto) Name() string  { return "synaps" }
func (synapsProto) MaxFrame() int { return synapsMaxFrame }

func (synapsProto) Wire() Wire {
	return Wire{Style: StyleSynaps, RequestID: "id", ResponseID: "id", Opening: "ready", Volatile: []string{"/session_id", "/**/timestamp"}}
}

func (synapsProto) Classify(dir Dir, frame []byte) Info {
	t, ok := evScanTop(frame)
	if !ok || t.typ == "" {
		return Info{Kind: Invalid, ID: string(t.id)}
	}
	info := Info{Method: t.typ, ID: string(t.id)}
	if dir == FromParent {
		info.Kind = Request
		if t.typ == "shutdown" {
			info.Kind = Notification // no id, no response
		}
		return info
	}
	return evChildInfo(info, "ready", t.command)
}

func (p synapsProto) Validate(dir Dir, frame []byte, info Info) []Violation {
	return evValidate(p, false, dir, frame, info)
}

func (p synapsProto) validateValidJSON(dir Dir, frame []byte, info Info) []Violation {
	return evValidate(p, true, dir, frame, info)
}

func (synapsProto) check(c *checker, dir Dir, frame []byte, info Info) {
	o, typ := c.top(dir, frame, &synapsCat().table)
	switch typ {
	case "ready":
		if n, ok := o.get("protocol_version"); ok && jsonType(n) == "number" && !rawIsInt(n, 1) {
			c.add(SevError, "unsupported-version", "/protocol_version",
				fmt.Sprintf("ready announces protocol_version %s; synaps-bridge RPC v1 requires 1 and the parent must refuse anything else", n))
		}
	case "shutdown":
		if o.has("id") {
			c.add(SevWarning, "unexpected-id", "/id", "shutdown carries no id and is never answered; a parent waiting for a response to this id will wait forever")
		}
	case "response":
		cmd, _ := o.str("command")
		if body, ok := synapsBodies()[cmd]; ok {
			sub := checker{p: "synaps"}
			sub.fields(o, body, "", "response to "+cmd)
			for _, v := range sub.out {
				c.add(SevWarning, "response-body", v.Pointer, v.Message+" (the body src/cmd/rpc.rs sends for "+cmd+")")
			}
		}
	}
}

// Handshaker: the child opens with `ready`.
func (synapsProto) HandshakeDir() Dir { return FromChild }
func (synapsProto) IsHandshake(dir Dir, info Info) bool {
	return dir == FromChild && info.Kind == Handshake
}

// Pair: commands open their id; `response` closes it. A tools_list without
// id is answered with "id":"" ([later]), so it opens the key `""`.
// Responses that answer nothing the parent sent are not paired: internal
// auto-turns (ids "auto:…", command auto_turn) and the compact disclosure
// that precedes the final compact response with the same id. An `error`
// frame with an id answers that command (catalogue: a second prompt,
// follow_up or new_session while a prompt is in flight "gets
// {"type":"error","id":<its id>,…}"; a compact failure is an "error frame
// with id"), and the response that may still follow it is accepted (a
// prompt's runtime error comes "after an error frame with the prompt id and
// an agent_end"): PairRefuse.
func (synapsProto) Pair(dir Dir, info Info) (string, PairRole) {
	if dir == FromParent {
		if info.Kind != Request {
			return "", PairNone
		}
		if info.ID == "" || info.ID == "null" {
			if info.Method == "tools_list" { // Option<String>: absent or null, answered with "id":""
				return `""`, PairOpen
			}
			return "", PairNone
		}
		return info.ID, PairOpen
	}
	if info.Method == "error" && info.ID != "" && info.ID != "null" {
		return info.ID, PairRefuse
	}
	if info.Kind != Response || info.ID == "" {
		return "", PairNone
	}
	if strings.HasPrefix(info.ID, `"auto:`) || info.Method == "auto_turn" || info.Method == "compact.disclosure" {
		return "", PairNone
	}
	return info.ID, PairClose
}

// sniffSynaps scores one of the first frames.
func sniffSynaps(dir Dir, frame []byte) int {
	t, ok := evScanTop(frame)
	if !ok || t.keys&evKeyJSONRPC != 0 || t.typ == "" {
		return 0
	}
	if dir == FromChild {
		switch t.typ {
		case "ready":
			if t.keys&evKeyProtocolVersion != 0 {
				return 100
			}
			return 50
		case "response":
			if t.keys&evKeySuccess == 0 && t.command != "" && len(t.id) > 0 {
				return 70 // opi/pi responses carry "success"
			}
			return 0
		case "message_update":
			if evTopValue(frame, "event") != nil {
				return 70 // pi's message_update carries message/assistantMessageEvent
			}
		case "agent_end":
			if evTopValue(frame, "usage") != nil {
				return 70
			}
		case "subagent_start", "subagent_update", "subagent_done":
			return 80
		case "error":
			if t.keys&evKeyError == 0 && evTopValue(frame, "message") != nil {
				return 30
			}
		}
		return 0
	}
	fs, known := synapsCat().table.in[t.typ]
	if !known {
		return 0
	}
	switch t.typ {
	case "shutdown":
		return 40 // opi says quit, pi has neither
	case "tools_list":
		return 50
	case "set_model":
		if evTopValue(frame, "model") != nil && evTopValue(frame, "modelId") == nil {
			return 35 // pi: provider+modelId
		}
		return 0
	}
	if len(fs) > 0 && evRawIsString(t.id) {
		return 20 // every synaps command but shutdown carries a string id; pi's are optional
	}
	return 0
}

func init() {
	internNames(func() *evTable { return &synapsCat().table })
	register(synapsProto{}, 50, sniffSynaps)
}

package protocol

import (
	"fmt"
	"strings"
	"sync"
)

// opi: the RPC JSONL mode of opi (`opi --rpc`, a Rust port of pi).
// stdin: SdkCommand tagged by "type" (snake_case, every command with an
// optional id); stdout: the rpc_ready header, `response` objects and the
// agent events, whose "type" values are PascalCase (serde's default for
// AgentEvent). Catalogue: ../shared/protocols/opi.md; documentation:
// docs/protocols/opi.md.

type opiProto struct{}

//go:noinline
func opiIDAnd(fs ...fld) []fld { return append([]fld{optNull("id", tString)}, fs...) }

// opiCat is the catalogue (evTable) and what else the checks need of it,
// built on first use: built at init, it ran in every rpctap process.
type opiCatalogue struct {
	table         evTable
	opiDiagnostic *vt
}

var opiCat = sync.OnceValue(func() *opiCatalogue {
	var (
		opiStopReason = tEnum("stop", "length", "tool_use", "error", "aborted")
		opiAPI        = tEnum("Anthropic", "OpenAi", "Google", "Mistral")
		opiUsage      = tObj(req("input_tokens", tUint), req("output_tokens", tUint),
			opt("cache_read_tokens", tUint), opt("cache_write_tokens", tUint))
		opiImageSource = tTagged("type", map[string][]fld{
			"url":    {req("url", tString)},
			"base64": {req("data", tString)},
			"bytes":  {req("data", tArr(tUint))},
		})
		opiContent = tTagged("type", map[string][]fld{ // InputContent and OutputContent
			"text":  {req("text", tString)},
			"image": {req("source", opiImageSource), req("media_type", tEnum("image/png", "image/jpeg", "image/gif", "image/webp"))},
		})
		opiAssistantContent = tTagged("type", map[string][]fld{
			"text":      {req("text", tString)},
			"thinking":  {req("thinking", tString)},
			"tool_call": {req("tool_call", tObj(req("id", tString), req("name", tString), req("arguments", tString)))},
		})
		opiAssistantFields = []fld{req("content", tArr(opiAssistantContent)), req("api", opiAPI),
			req("provider", tString), req("model", tString), optNull("response_model", tString),
			optNull("response_id", tString), req("usage", opiUsage), req("stop_reason", opiStopReason),
			optNull("error_message", tString), req("timestamp_ms", tInt)}
		opiAssistantMessage = tObj(opiAssistantFields...)
		opiToolResultFields = []fld{req("tool_call_id", tString), req("tool_name", tString),
			req("content", tArr(opiContent)), optNull("details", tAny), req("is_error", tBool),
			opt("truncated", tBool), req("timestamp_ms", tInt)}
		// Message, tagged by "role", is flattened into AgentMessage::Llm.
		opiMessage = tTagged("role", map[string][]fld{
			"user":        {req("content", tArr(opiContent)), req("timestamp_ms", tInt)},
			"assistant":   opiAssistantFields,
			"tool_result": opiToolResultFields,
		})
		opiAgentMessage = &vt{kind: vTagged, tag: "type", name: "AgentMessage", vars: map[string][]fld{
			"Llm": {req("role", tString)},
			"CompactionSummary": {req("summary", tString), req("first_kept_entry_id", tString),
				req("tokens_before", tUint), req("tokens_after", tUint)},
			"BranchSummary": {req("parent_session_id", tString), req("summary", tString), req("entry_count", tUint)},
			"Custom":        {req("kind", tString), reqNull("data", tAny), req("include_in_llm_context", tBool)},
		}, also: map[string]*vt{"Llm": opiMessage}}
		opiToolResultMessage = tObj(opiToolResultFields...)

		opiDelta = []fld{req("content_index", tUint), req("delta", tString), req("partial", opiAssistantMessage)}
		opiEnd   = []fld{req("content_index", tUint), req("content", tString), req("partial", opiAssistantMessage)}
		opiStart = []fld{req("content_index", tUint), req("partial", opiAssistantMessage)}
		// AssistantStreamEvent, inside MessageUpdate.assistant_event.
		opiStreamEvent = tTagged("type", streamEvents([]string{"text_", "thinking_", "tool_call_"}, opiStart, opiDelta, opiEnd,
			map[string][]fld{
				"start":         {req("partial", opiAssistantMessage)},
				"tool_call_end": {req("content_index", tUint), req("tool_call", tObjAny), req("partial", opiAssistantMessage)},
				"done":          {req("reason", opiStopReason), req("message", opiAssistantMessage)},
				"error":         {req("reason", opiStopReason), req("message", opiAssistantMessage)},
			}))
		opiDiagnostic = tObj(req("severity", tEnum("info", "warning", "error")), req("code", tString),
			req("source", tString), req("message", tString), optNull("details", tAny), optNull("action", tString))
		opiCompactionReason = tEnum("manual", "threshold", "overflow")
		opiCompactionResult = tObj(req("summary", tString), req("first_kept_entry_id", tString),
			req("tokens_before", tUint), req("tokens_after", tUint))
	)
	var opiTable = evTable{
		in: map[string][]fld{
			"prompt":             opiIDAnd(req("message", tString)),
			"continue":           opiIDAnd(req("message", tString)),
			"steer":              opiIDAnd(req("message", tString)),
			"follow_up":          opiIDAnd(req("message", tString)),
			"abort":              opiIDAnd(),
			"set_model":          opiIDAnd(req("model", tString)),
			"set_thinking_level": opiIDAnd(req("level", tString)),
			"compact":            opiIDAnd(),
			"session_info":       opiIDAnd(),
			"quit":               opiIDAnd(),
			"extension_command":  opiIDAnd(req("name", tString), reqNull("args", tAny)), // >= 4bef4fb
			"trace":              opiIDAnd(),                                            // >= b32c289
		},
		out: map[string][]fld{
			"rpc_ready": {req("schema_version", tUint), req("mode", tString), req("version", tString),
				opt("startup_diagnostics", tArr(opiDiagnostic))},
			// SdkResponse: id, error, error_code and data are skip_serializing_if
			// None, so never null on the wire.
			"response": {req("command", tString), req("success", tBool), opt("id", tString),
				opt("error", tString), opt("error_code", tString), opt("data", tAny)},
			"AgentStart":         {},
			"AgentEnd":           {req("messages", tArr(opiAgentMessage))},
			"TurnStart":          {},
			"TurnEnd":            {req("message", opiAgentMessage), req("tool_results", tArr(opiToolResultMessage))},
			"MessageStart":       {req("message", opiAgentMessage)},
			"MessageUpdate":      {req("message", opiAgentMessage), req("assistant_event", opiStreamEvent)},
			"MessageEnd":         {req("message", opiAgentMessage)},
			"ToolExecutionStart": {req("tool_call_id", tString), req("tool_name", tString), reqNull("args", tAny)},
			"ToolExecutionUpdate": {req("tool_call_id", tString), req("tool_name", tString), reqNull("args", tAny),
				reqNull("partial_result", tAny)},
			"ToolExecutionEnd": {req("tool_call_id", tString), req("tool_name", tString), reqNull("result", tAny),
				optNull("details", tAny), req("is_error", tBool), opt("truncated", tBool),
				opt("diagnostics", tArr(tObj(req("code", tString), req("message", tString), optNull("context", tAny))))},
			"QueueUpdate":     {req("steering", tArr(tString)), req("follow_up", tArr(tString))},
			"AutoRetryStart":  {req("attempt", tUint), req("max_attempts", tUint), req("delay_ms", tUint), req("error_message", tString)},
			"AutoRetryEnd":    {req("success", tBool), req("attempt", tUint), optNull("final_error", tString)},
			"CompactionStart": {req("reason", opiCompactionReason)},
			"CompactionEnd": {req("reason", opiCompactionReason), optNull("result", opiCompactionResult),
				req("aborted", tBool), optNull("error_message", tString)},
			"SessionPersistError":   {req("message", tString)},
			"SdkSerializationError": {req("message", tString)},
			"run_summary":           {req("diagnostics", tObj(req("info", tUint), req("warning", tUint), req("error", tUint)))}, // >= b32c289
		},
	}
	return &opiCatalogue{table: opiTable, opiDiagnostic: opiDiagnostic}
})

// opiErrorCodes are the error_code values SdkResponse::error_with_code uses.
var opiErrorCodes = []string{"agent_busy", "harness_unavailable", "compaction_failed",
	"extension_command_not_handled", "unsupported_trace_request"}

// opiData are the `data` shapes of successful responses, by command (built
// on first use, like the catalogue).
var opiData = sync.OnceValue(func() map[string]*vt {
	return map[string]*vt{
		"set_model":          tObj(req("model", tString)),
		"set_thinking_level": tObj(req("level", tString), req("enabled", tBool), optNull("budget_tokens", tUint)),
		"compact": tObj(req("summary", tString), req("first_kept_entry_id", tString),
			req("tokens_before", tUint), req("tokens_after", tUint), opt("diagnostics", tArr(opiCat().opiDiagnostic))),
		"session_info": tObj(req("model", tString), req("resources", tObjAny), optNull("session_id", tString)),
		"trace":        tObj(req("schema_version", tUint), req("records", tArr(tAny))),
	}
})

// opiThinkingLevels are the levels the coding harness accepts.
var opiThinkingLevels = []string{"off", "low", "medium", "high"}

func (opiProto) Name() string  { return "opi" }
func (opiProto) MaxFrame() int { return 0 }

func (opiProto) Wire() Wire { return opiWire }

// opiWire is shared by opi and pi (pi's RPC mode is opi's ancestor).
var opiWire = Wire{Style: StyleOPI, RequestID: "id", ResponseID: "id", Opening: "rpc_ready", Volatile: []string{
	"/**/sessionId", "/**/session_id", "/**/timestamp", "/**/timestamp_ms", "/data/sessionFile"}}

func (opiProto) Classify(dir Dir, frame []byte) Info {
	t, ok := evScanTop(frame)
	if !ok || t.typ == "" {
		return Info{Kind: Invalid, ID: string(t.id)}
	}
	info := Info{Method: t.typ, ID: string(t.id)}
	if dir == FromParent {
		info.Kind = Request
		return info
	}
	return evChildInfo(info, "rpc_ready", t.command)
}

func (p opiProto) Validate(dir Dir, frame []byte, info Info) []Violation {
	return evValidate(p, false, dir, frame, info)
}

func (p opiProto) validateValidJSON(dir Dir, frame []byte, info Info) []Violation {
	return evValidate(p, true, dir, frame, info)
}

func (opiProto) check(c *checker, dir Dir, frame []byte, info Info) {
	o, typ := c.top(dir, frame, &opiCat().table)
	switch typ {
	case "rpc_ready":
		if v, ok := o.get("schema_version"); ok && jsonType(v) == "number" && !rawIsInt(v, 2) && !rawIsInt(v, 3) {
			c.add(SevError, "unsupported-version", "/schema_version",
				fmt.Sprintf("rpc_ready announces schema_version %s; known opi schemas are 2 and 3 and clients must check it", v))
		}
		if m, ok := o.str("mode"); ok && m != "rpc" {
			c.add(SevError, "invalid-value", "/mode", fmt.Sprintf("rpc_ready mode is %q, expected \"rpc\"", m))
		}
	case "set_thinking_level":
		if l, ok := o.str("level"); ok && !contains(opiThinkingLevels, l) {
			c.add(SevWarning, "unsupported-level", "/level",
				fmt.Sprintf("thinking level %q: the coding harness accepts %s and answers anything else with an error", l, strings.Join(quoteAll(opiThinkingLevels), ", ")))
		}
	case "response":
		opiCheckResponse(c, o)
	}
}

func opiCheckResponse(c *checker, o robj) {
	ok, _ := o.boolean("success")
	hasErr := o.has("error")
	switch {
	case !ok && !hasErr:
		c.add(SevWarning, "response-inconsistent", "/error", "a failed response (success:false) without an error message")
	case ok && hasErr:
		c.add(SevWarning, "response-inconsistent", "/error", "a successful response (success:true) carries an error")
	}
	if code, isStr := o.str("error_code"); isStr && !contains(opiErrorCodes, code) {
		c.add(SevWarning, "unknown-error-code", "/error_code",
			fmt.Sprintf("error_code %q is not one opi defines (%s)", code, strings.Join(opiErrorCodes, ", ")))
	}
	if cmd, _ := o.str("command"); cmd == "parse" {
		if o.has("id") {
			c.add(SevWarning, "response-inconsistent", "/id", "a parse-error response carries an id; opi cannot know the id of a line it could not parse")
		}
		if ok {
			c.add(SevWarning, "response-inconsistent", "/success", "a parse response reports success")
		}
	}
	cmd, _ := o.str("command")
	if d, has := o.get("data"); has && ok && !isNullRaw(d) {
		if shape := opiData()[cmd]; shape != nil {
			if cmd == "compact" {
				// later versions answer "nothing compacted" with a success
				if m, isObj := members(d); isObj {
					if m.has("compacted") {
						shape = tObj(req("compacted", tBool), opt("diagnostics", tArr(opiCat().opiDiagnostic)))
					}
				}
			}
			sub := checker{p: "opi"}
			sub.value(d, shape, "/data", "response to "+cmd)
			for _, v := range sub.out {
				c.add(SevWarning, "response-body", v.Pointer, v.Message)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Handshaker: the child's first stdout line is rpc_ready.
func (opiProto) HandshakeDir() Dir { return FromChild }
func (opiProto) IsHandshake(dir Dir, info Info) bool {
	return dir == FromChild && info.Kind == Handshake
}

// Pair: a command with an id opens it and the response carrying that id
// closes it. A command without an id (or with "id":null, which serde reads
// as no id) is answered by a response without an id naming the command:
// those queue up per command name, first in, first out. A command type opi
// does not know is answered by a `parse` response, which names no command,
// so it opens nothing, and a `parse` response closes nothing.
func (opiProto) Pair(dir Dir, info Info) (string, PairRole) {
	switch {
	case info.Kind == Request && dir == FromParent:
		if _, known := opiCat().table.in[info.Method]; !known {
			return "", PairNone
		}
		if info.ID == "" || info.ID == "null" {
			return info.Method, PairOpenQueue
		}
		return info.ID, PairOpen
	case info.Kind == Response && dir == FromChild:
		if info.ID != "" && info.ID != "null" {
			return info.ID, PairClose
		}
		if info.Method == "" || info.Method == "parse" {
			return "", PairNone
		}
		return info.Method, PairCloseQueue
	}
	return "", PairNone
}

// opiOnly are commands opi has and pi has not.
var opiOnly = map[string]bool{"continue": true, "session_info": true, "quit": true, "extension_command": true, "trace": true}

func sniffOpi(dir Dir, frame []byte) int {
	t, ok := evScanTop(frame)
	if !ok || t.keys&evKeyJSONRPC != 0 || t.typ == "" {
		return 0
	}
	if dir == FromChild {
		switch t.typ {
		case "rpc_ready":
			return 100
		case "response":
			if t.keys&evKeySuccess == 0 || t.command == "" {
				return 0
			}
			if opiOnly[t.command] {
				return 60
			}
			return 30 // pi answers in the same shape
		}
		if _, known := opiCat().table.out[t.typ]; known {
			return 90 // PascalCase events and run_summary are opi's own
		}
		return 0
	}
	if _, known := opiCat().table.in[t.typ]; !known {
		return 0
	}
	if opiOnly[t.typ] {
		return 40
	}
	if t.typ == "set_model" {
		if m, _ := rawString(evTopValue(frame, "model")); strings.Contains(m, ":") {
			return 35 // "provider:model"
		}
	}
	return 10
}

func init() {
	internNames(func() *evTable { return &opiCat().table })
	register(opiProto{}, 50, sniffOpi)
}

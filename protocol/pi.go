package protocol

import "sync"

import "fmt"

// pi: the pi coding agent's `--mode rpc` (@mariozechner/pi-coding-agent,
// TypeScript). stdin: commands tagged by "type" with an optional id, and
// extension_ui_response; stdout: `type:"response"` objects carrying the
// command name, the agent's snake_case events and extension_ui_request.
// No handshake, no size limit. Derived from ../shared/traffic/pi-rpc.*,
// pi's RPC documentation (docs/rpc.md of pi-mono) and what opi (a port of
// pi) shares; documentation: docs/protocols/pi.md.

type piProto struct{}

//go:noinline
func piIDAnd(fs ...fld) []fld { return append([]fld{optNull("id", tString)}, fs...) }

// piCat is the catalogue (evTable) and what else the checks need of it,
// built on first use: built at init, it ran in every rpctap process.
type piCatalogue struct {
	table       evTable
	piUIRequest *vt
	piDialog    map[string]bool
}

var piCat = sync.OnceValue(func() *piCatalogue {
	var (
		piQueueMode        = tEnum("all", "one-at-a-time")
		piThinkingLevel    = tEnum("off", "minimal", "low", "medium", "high", "xhigh")
		piImage            = tObj(req("type", tString))
		piMessage          = tObj(req("role", tString)) // AgentMessage: role-tagged and extensible (custom messages)
		piStopReason       = tEnum("stop", "length", "toolUse", "error", "aborted")
		piCompactionReason = tEnum("manual", "threshold", "overflow")

		piDelta = []fld{req("contentIndex", tUint), req("delta", tString), req("partial", tObjAny)}
		piStart = []fld{req("contentIndex", tUint), req("partial", tObjAny)}
		piEnd   = []fld{req("contentIndex", tUint), req("content", tString), req("partial", tObjAny)}
		// assistantMessageEvent (pi-ai AssistantMessageEvent), inside message_update.
		piStreamEvent = tTagged("type", streamEvents([]string{"text_", "thinking_", "toolcall_"}, piStart, piDelta, piEnd,
			map[string][]fld{
				"start":        {req("partial", tObjAny)},
				"toolcall_end": {req("contentIndex", tUint), req("toolCall", tObjAny), req("partial", tObjAny)},
				"done":         {req("reason", piStopReason), req("message", tObjAny)},
				"error":        {req("reason", piStopReason), opt("error", tObjAny)},
			}))

		// extension_ui_request, tagged by "method" (besides "type").
		piUIRequest = tTagged("method", map[string][]fld{
			"select":          {req("title", tString), req("options", tArr(tString)), optNull("timeout", tNumber)},
			"confirm":         {req("title", tString), req("message", tString), optNull("timeout", tNumber)},
			"input":           {req("title", tString), optNull("placeholder", tString), optNull("timeout", tNumber)},
			"editor":          {req("title", tString), optNull("prefill", tString)},
			"notify":          {req("message", tString), optNull("notifyType", tEnum("info", "warning", "error"))},
			"setStatus":       {req("statusKey", tString), optNull("statusText", tString)},
			"setWidget":       {req("widgetKey", tString), optNull("widgetLines", tArr(tString))},
			"setTitle":        {req("title", tString)},
			"set_editor_text": {req("text", tString)},
		})
	)
	// piDialog are the extension_ui_request methods that wait for an
	// extension_ui_response; the others are fire-and-forget.
	var piDialog = map[string]bool{"select": true, "confirm": true, "input": true, "editor": true}
	var piTable = evTable{
		in: map[string][]fld{
			"prompt": piIDAnd(req("message", tString), opt("images", tArr(piImage)),
				opt("streamingBehavior", tEnum("steer", "followUp"))),
			"steer":                   piIDAnd(req("message", tString), opt("images", tArr(piImage))),
			"follow_up":               piIDAnd(req("message", tString), opt("images", tArr(piImage))),
			"abort":                   piIDAnd(),
			"new_session":             piIDAnd(opt("parentSession", tString)),
			"get_state":               piIDAnd(),
			"set_model":               piIDAnd(req("provider", tString), req("modelId", tString)),
			"cycle_model":             piIDAnd(),
			"get_available_models":    piIDAnd(),
			"set_thinking_level":      piIDAnd(req("level", piThinkingLevel)),
			"cycle_thinking_level":    piIDAnd(),
			"set_steering_mode":       piIDAnd(req("mode", piQueueMode)),
			"set_follow_up_mode":      piIDAnd(req("mode", piQueueMode)),
			"compact":                 piIDAnd(opt("customInstructions", tString)),
			"set_auto_compaction":     piIDAnd(req("enabled", tBool)),
			"set_auto_retry":          piIDAnd(req("enabled", tBool)),
			"abort_retry":             piIDAnd(),
			"bash":                    piIDAnd(req("command", tString)),
			"abort_bash":              piIDAnd(),
			"get_session_stats":       piIDAnd(),
			"export_html":             piIDAnd(opt("outputPath", tString)),
			"switch_session":          piIDAnd(req("sessionPath", tString)),
			"fork":                    piIDAnd(req("entryId", tString)),
			"get_fork_messages":       piIDAnd(),
			"get_last_assistant_text": piIDAnd(),
			"set_session_name":        piIDAnd(req("name", tString)),
			"get_messages":            piIDAnd(),
			"get_commands":            piIDAnd(),
			"extension_ui_response": {req("id", tString), opt("value", tString), opt("confirmed", tBool),
				opt("cancelled", tBool)},
		},
		out: map[string][]fld{
			"response": {req("command", tString), req("success", tBool), optNull("id", tString),
				optNull("data", tAny), opt("error", tString)},
			"agent_start":           {},
			"agent_end":             {req("messages", tArr(piMessage))},
			"turn_start":            {},
			"turn_end":              {req("message", piMessage), req("toolResults", tArr(piMessage))},
			"message_start":         {req("message", piMessage)},
			"message_update":        {req("message", piMessage), req("assistantMessageEvent", piStreamEvent)},
			"message_end":           {req("message", piMessage)},
			"tool_execution_start":  {req("toolCallId", tString), req("toolName", tString), optNull("args", tAny)},
			"tool_execution_update": {req("toolCallId", tString), req("toolName", tString), optNull("args", tAny), optNull("partialResult", tAny)},
			"tool_execution_end":    {req("toolCallId", tString), req("toolName", tString), optNull("result", tAny), req("isError", tBool)},
			// auto_compaction_* (pi's RPC docs) were renamed compaction_* by 0.73,
			// which also added queue_update, session_info_changed and
			// thinking_level_changed to AgentSessionEvent; both generations pass.
			"auto_compaction_start": {req("reason", tEnum("threshold", "overflow"))},
			"auto_compaction_end": {reqNull("result", tObjAny), req("aborted", tBool), opt("willRetry", tBool),
				optNull("errorMessage", tString)},
			"compaction_start": {req("reason", piCompactionReason)},
			"compaction_end": {req("reason", piCompactionReason), optNull("result", tObjAny), req("aborted", tBool),
				req("willRetry", tBool), optNull("errorMessage", tString)},
			"queue_update":           {req("steering", tArr(tString)), req("followUp", tArr(tString))},
			"session_info_changed":   {optNull("name", tString)},
			"thinking_level_changed": {req("level", piThinkingLevel)},
			"auto_retry_start":       {req("attempt", tNumber), req("maxAttempts", tNumber), req("delayMs", tNumber), req("errorMessage", tString)},
			"auto_retry_end":         {req("success", tBool), req("attempt", tNumber), optNull("finalError", tString)},
			"extension_error":        {req("extensionPath", tString), req("event", tString), req("error", tString)},
			"extension_ui_request":   {req("id", tString), req("method", tString)},
		},
		// pi answers an unknown command with an error response and carries on
		// (a warning: the parent sent something pi does not do); its event set
		// grows from release to release and a parent must ignore types it does
		// not know, so an unknown event is info.
		unknownIn:  evUnknown{"unknown-command", SevWarning},
		unknownOut: evUnknown{"unknown-event", SevInfo},
	}
	return &piCatalogue{table: piTable, piUIRequest: piUIRequest, piDialog: piDialog}
})

func (piProto) Name() string  { return "pi" }
func (piProto) MaxFrame() int { return 0 }

func (piProto) Wire() Wire { return opiWire }

func (piProto) Classify(dir Dir, frame []byte) Info {
	t, ok := evScanTop(frame)
	if !ok || t.typ == "" {
		return Info{Kind: Invalid, ID: string(t.id)}
	}
	info := Info{Method: t.typ, ID: string(t.id)}
	if dir == FromParent {
		info.Kind = Request
		if t.typ == "extension_ui_response" {
			info.Kind = Response
		}
		return info
	}
	switch t.typ {
	case "response":
		info.Kind = Response
		info.Method = t.command
	case "extension_ui_request":
		info.Kind = Event
		if piCat().piDialog[t.method] {
			info.Kind = Request // waits for extension_ui_response
		}
	default:
		info.Kind = Event
	}
	return info
}

func (p piProto) Validate(dir Dir, frame []byte, info Info) []Violation {
	return evValidate(p, false, dir, frame, info)
}

func (p piProto) validateValidJSON(dir Dir, frame []byte, info Info) []Violation {
	return evValidate(p, true, dir, frame, info)
}

func (piProto) check(c *checker, dir Dir, frame []byte, info Info) {
	o, typ := c.top(dir, frame, &piCat().table)
	switch typ {
	case "response":
		ok, _ := o.boolean("success")
		if !ok && !o.has("error") {
			c.add(SevWarning, "response-inconsistent", "/error", "a failed response (success:false) without an error message")
		}
		if cmd, _ := o.str("command"); cmd == "parse" && ok {
			c.add(SevWarning, "response-inconsistent", "/success", "a parse response reports success")
		}
	case "extension_ui_request":
		if _, isStr := o.str("method"); isStr {
			c.tagged(o, piCat().piUIRequest, "", "extension_ui_request")
		}
	case "extension_ui_response":
		if !o.has("value") && !o.has("confirmed") && !o.has("cancelled") {
			c.add(SevError, "missing-field", "", `extension_ui_response carries none of "value", "confirmed", "cancelled"`)
		}
	}
	if typ != "" && dir == FromParent && typ != "extension_ui_response" && info.ID == "null" {
		// Info: legal (pi echoes the null back and answers by name), style.
		c.add(SevInfo, "null-id", "/id", fmt.Sprintf("%s has \"id\":null; omit the id instead, pi echoes it as given", typ))
	}
}

// Pair: a known command with an id opens it and the response carrying that
// id closes it. A command without an id (or with "id":null, which pi echoes
// back as given) is answered by a response without an id naming the
// command: those queue up per command name, first in, first out. An unknown
// command is answered with "Unknown command" by name and without its id, so
// it queues by name whether it has an id or not. A `parse` response answers
// a line that was not JSON and closes nothing. The child's dialog
// extension_ui_request opens its id and the parent's extension_ui_response
// closes it.
func (piProto) Pair(dir Dir, info Info) (string, PairRole) {
	noID := info.ID == "" || info.ID == "null"
	switch info.Kind {
	case Request:
		if dir == FromParent {
			if _, known := piCat().table.in[info.Method]; !known || noID {
				return info.Method, PairOpenQueue
			}
			return info.ID, PairOpen
		}
		if noID {
			return "", PairNone
		}
		return info.ID, PairOpen
	case Response:
		if !noID {
			return info.ID, PairClose
		}
		if dir == FromParent || info.Method == "" || info.Method == "parse" {
			return "", PairNone
		}
		return info.Method, PairCloseQueue
	}
	return "", PairNone
}

func sniffPi(dir Dir, frame []byte) int {
	t, ok := evScanTop(frame)
	if !ok || t.keys&evKeyJSONRPC != 0 || t.typ == "" {
		return 0
	}
	if dir == FromChild {
		switch t.typ {
		case "response":
			if t.keys&evKeySuccess == 0 || t.command == "" {
				return 0 // synaps responses have no "success"
			}
			if _, opiCmd := opiCat().table.in[t.command]; !opiCmd && t.command != "parse" {
				return 60 // get_state, get_available_models, ... and unknown-command answers
			}
			return 35
		case "message_update":
			if evTopValue(frame, "assistantMessageEvent") != nil {
				return 90
			}
			return 0
		case "agent_end":
			if evTopValue(frame, "messages") != nil {
				return 80
			}
			return 0
		case "extension_ui_request":
			return 90
		}
		if _, known := piCat().table.out[t.typ]; known {
			return 80
		}
		return 0
	}
	if _, known := piCat().table.in[t.typ]; !known {
		return 0
	}
	// synaps and opi parents wait for the child's ready / rpc_ready (they
	// must check its version), which scores 100 for them; pi has no
	// handshake, so commands before any handshake point to pi.
	_, opiCmd := opiCat().table.in[t.typ]
	_, synapsCmd := synapsCat().table.in[t.typ]
	switch {
	case t.typ == "extension_ui_response":
		return 90
	case t.typ == "set_model":
		if evTopValue(frame, "modelId") != nil {
			return 60 // synaps and opi name the model in "model"
		}
		return 0
	case !opiCmd && !synapsCmd:
		return 60 // cycle_model, bash, set_steering_mode, get_commands, ...
	case !opiCmd && len(t.id) == 0:
		return 55 // synaps commands always carry an id
	case !opiCmd:
		return 50 // get_state, get_messages, ...: pi or a synaps parent that did not wait for ready
	}
	return 25 // prompt, steer, abort, ...: shared with opi
}

func init() {
	internNames(func() *evTable { return &piCat().table })
	register(piProto{}, 50, sniffPi)
}

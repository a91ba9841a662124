package protocol

import (
	"fmt"
	"strconv"
	"sync"
)

// brainwires: the TUI viewer <-> agent IPC of brainwires-framework
// (crates/brainwires-network/src/ipc/protocol.rs), plaintext NDJSON over a
// Unix socket. The viewer (it connects; "in", the parent side) opens with
// the untagged Handshake, the agent ("out") answers with the untagged
// HandshakeResponse; after that ViewerMessage and AgentMessage, tagged by
// "type" in snake_case. Catalogue: ../shared/protocols/brainwires.md;
// documentation: docs/protocols/brainwires.md.

const brainwiresMaxFrame = 16 << 20 // MAX_MESSAGE_SIZE

type brainwiresProto struct{}

// brainwiresCat is the catalogue (evTable) and what else the checks need of it,
// built on first use: built at init, it ran in every rpctap process.
type brainwiresCatalogue struct {
	table               evTable
	bwHandshake         []fld
	bwHandshakeResponse []fld
}

var brainwiresCat = sync.OnceValue(func() *brainwiresCatalogue {
	// ToolMode (brainwires_core::ToolMode) has no serde attributes: externally
	// tagged, unit variants as plain strings, the newtype variant Explicit as a
	// one-member object.
	var brainwiresToolMode = tOneOf(`ToolMode ("Full", "Smart", "Core", "None" or {"Explicit": [tool names]})`,
		tEnum("Full", "Smart", "Core", "None"),
		tObj(req("Explicit", tArr(tString))),
	)
	var (
		bwLockType = tEnum("build", "test", "build_test", "git_index", "git_commit",
			"git_remote_write", "git_remote_merge", "git_branch", "git_destructive")
		bwLockChange   = tEnum("acquired", "released", "stale")
		bwNotifyAction = tEnum("shutdown_if_idle", "force_shutdown", "detach")
		bwSignal       = tEnum("parent_exiting", "shutdown", "detached")
		bwDisplayMsg   = tObj(req("role", tString), req("content", tString), req("created_at", tInt))
		bwLockInfo     = tObj(req("agent_id", tString), req("resource_type", bwLockType), req("scope", tString),
			req("description", tString), req("status", tString), req("held_for_secs", tUint))
		bwAgentMeta = tObj(req("session_id", tString), optNull("parent_agent_id", tString), optNull("spawn_reason", tString),
			req("model", tString), req("created_at", tInt), req("last_activity", tInt), req("working_directory", tString),
			req("is_busy", tBool), optNull("pid", tUint))
	)
	// Handshake / HandshakeResponse: plain structs, no tag.
	var (
		bwHandshake = []fld{req("version", tUint), req("is_reattach", tBool),
			optNull("session_id", tString), optNull("session_token", tString)}
		bwHandshakeResponse = []fld{req("accepted", tBool), req("session_id", tString),
			optNull("session_token", tString), optNull("error", tString)}
	)
	var brainwiresTable = evTable{
		in: map[string][]fld{
			"user_input":             {req("content", tString), opt("context_files", tArr(tString))},
			"cancel":                 {},
			"sync_request":           {},
			"detach":                 {req("exit_when_done", tBool)},
			"exit":                   {},
			"slash_command":          {req("command", tString), req("args", tArr(tString))},
			"set_tool_mode":          {req("mode", brainwiresToolMode)},
			"queue_message":          {req("content", tString)},
			"acquire_lock":           {req("resource_type", bwLockType), req("scope", tString), req("description", tString)},
			"release_lock":           {req("resource_type", bwLockType), req("scope", tString)},
			"query_locks":            {optNull("scope", tString)},
			"update_lock_status":     {req("resource_type", bwLockType), req("scope", tString), req("status", tString)},
			"list_agents":            {},
			"spawn_agent":            {optNull("model", tString), optNull("reason", tString), optNull("working_directory", tString)},
			"notify_children":        {req("action", bwNotifyAction)},
			"parent_signal":          {req("signal", bwSignal), req("parent_session_id", tString)},
			"disconnect":             {},
			"enter_plan_mode":        {optNull("focus", tString)},
			"exit_plan_mode":         {},
			"plan_mode_user_input":   {req("content", tString), opt("context_files", tArr(tString))},
			"plan_mode_sync_request": {},
		},
		out: map[string][]fld{
			"stream_chunk":    {req("text", tString)},
			"stream_end":      {optNull("finish_reason", tString)},
			"tool_call_start": {req("id", tString), req("name", tString), optNull("server", tString), reqNull("input", tAny)},
			"tool_progress":   {req("name", tString), req("message", tString), optNull("progress", tNumber)},
			"tool_result":     {req("id", tString), req("name", tString), optNull("output", tString), optNull("error", tString)},
			"conversation_sync": {req("session_id", tString), req("model", tString), req("messages", tArr(bwDisplayMsg)),
				req("status", tString), req("is_busy", tBool), req("tool_mode", brainwiresToolMode), req("mcp_servers", tArr(tString))},
			"message_added": {req("message", bwDisplayMsg)},
			"status_update": {req("status", tString)},
			"task_update":   {req("task_tree", tString), req("task_count", tUint), req("completed_count", tUint)},
			"error":         {req("message", tString), req("fatal", tBool)},
			"exiting":       {req("reason", tString)},
			"ack":           {req("command", tString)},
			"slash_command_result": {req("command", tString), req("success", tBool), optNull("output", tString),
				optNull("action_taken", tString), optNull("error", tString), opt("blocked", tBool)},
			"toast":       {req("message", tString), req("duration_ms", tUint)},
			"seal_status": {req("enabled", tBool), req("entity_count", tUint), optNull("last_resolution", tString), req("quality_score", tNumber)},
			"lock_result": {req("success", tBool), req("resource_type", bwLockType), req("scope", tString),
				optNull("error", tString), optNull("blocking_agent", tString)},
			"lock_released": {req("resource_type", bwLockType), req("scope", tString)},
			"lock_status":   {req("locks", tArr(bwLockInfo))},
			"lock_changed":  {req("change", bwLockChange), req("lock", bwLockInfo)},
			"agent_spawned": {req("new_session_id", tString), req("parent_session_id", tString),
				req("spawn_reason", tString), req("model", tString)},
			"agent_list":              {req("agents", tArr(bwAgentMeta))},
			"agent_exiting":           {req("session_id", tString), req("reason", tString), req("children_notified", tArr(tString))},
			"parent_signal_received":  {req("signal", bwSignal), req("parent_session_id", tString)},
			"plan_mode_entered":       {req("plan_session_id", tString), req("messages", tArr(bwDisplayMsg)), req("status", tString)},
			"plan_mode_exited":        {optNull("summary", tString)},
			"plan_mode_sync":          {req("plan_session_id", tString), req("main_session_id", tString), req("messages", tArr(bwDisplayMsg)), req("status", tString), req("is_busy", tBool)},
			"plan_mode_message_added": {req("message", bwDisplayMsg)},
			"plan_mode_stream_chunk":  {req("text", tString)},
			"plan_mode_stream_end":    {optNull("finish_reason", tString)},
		},
	}
	return &brainwiresCatalogue{table: brainwiresTable, bwHandshake: bwHandshake, bwHandshakeResponse: bwHandshakeResponse}
})

func (brainwiresProto) Name() string  { return "brainwires" }
func (brainwiresProto) MaxFrame() int { return brainwiresMaxFrame }

// Wire: brainwires frames carry no request ids; they are matched whole.
func (brainwiresProto) Wire() Wire {
	return Wire{Style: StyleWhole, Volatile: []string{"/session_id", "/session_token", "/**/timestamp"}}
}

// bwIsHandshakeShape reports whether an untagged frame looks like the
// Handshake (viewer) or HandshakeResponse (agent) of its direction.
func bwIsHandshakeShape(dir Dir, t *evTop) bool {
	if t.hasType {
		return false
	}
	if dir == FromParent {
		return t.keys&(evKeyVersion|evKeyIsReattach) != 0
	}
	return t.keys&evKeyAccepted != 0
}

func (brainwiresProto) Classify(dir Dir, frame []byte) Info {
	t, ok := evScanTop(frame)
	if !ok {
		return Info{Kind: Invalid}
	}
	if bwIsHandshakeShape(dir, &t) {
		if dir == FromParent {
			return Info{Kind: Handshake, Method: "handshake"}
		}
		return Info{Kind: Handshake, Method: "handshake_response"}
	}
	if t.typ == "" {
		return Info{Kind: Invalid}
	}
	if dir == FromParent {
		return Info{Kind: Notification, Method: t.typ}
	}
	return Info{Kind: Event, Method: t.typ}
}

func (p brainwiresProto) Validate(dir Dir, frame []byte, info Info) []Violation {
	return evValidate(p, false, dir, frame, info)
}

func (p brainwiresProto) validateValidJSON(dir Dir, frame []byte, info Info) []Violation {
	return evValidate(p, true, dir, frame, info)
}

func (brainwiresProto) check(c *checker, dir Dir, frame []byte, info Info) {
	t, _ := evScanTop(frame)
	if bwIsHandshakeShape(dir, &t) {
		o, ok := c.object(frame)
		if !ok {
			return
		}
		if dir == FromParent {
			c.fields(o, brainwiresCat().bwHandshake, "", "Handshake")
			bwCheckHandshake(c, o)
		} else {
			c.fields(o, brainwiresCat().bwHandshakeResponse, "", "HandshakeResponse")
			// Info, not a warning: the token is "returned to new sessions
			// for later reattachment" (seed 002, HandshakeResponse), so a
			// reattach is rightly accepted without one, and a response
			// alone does not say which it answers.
			if acc, _ := o.boolean("accepted"); acc && o.isNull("session_token") {
				c.add(SevInfo, "no-session-token", "/session_token",
					"HandshakeResponse accepts the viewer without a session_token: right for a reattach; a new session's viewer could not reattach later")
			}
		}
		return
	}
	o, typ := c.top(dir, frame, &brainwiresCat().table)
	switch typ {
	case "set_tool_mode":
		bwCheckToolModeObject(c, o, "mode")
	case "conversation_sync":
		bwCheckToolModeObject(c, o, "tool_mode")
	case "tool_progress":
		if p, ok := o.get("progress"); ok && jsonType(p) == "number" {
			if f, err := strconv.ParseFloat(string(p), 64); err == nil && (f < 0 || f > 1) {
				c.add(SevWarning, "progress-out-of-range", "/progress", fmt.Sprintf("tool_progress: progress is %v, expected a fraction from 0.0 to 1.0", f))
			}
		}
	}
}

// bwCheckHandshake applies the agent's acceptance rules to a Handshake.
func bwCheckHandshake(c *checker, o robj) {
	if v, ok := o.get("version"); ok && jsonType(v) == "number" && !rawIsInt(v, 2) && !rawIsInt(v, 1) {
		c.add(SevError, "unsupported-version", "/version",
			fmt.Sprintf("Handshake version %s: the agent speaks version 2 (and accepts 1) and rejects anything else", v))
	}
	if re, _ := o.boolean("is_reattach"); re {
		if tok, _ := o.str("session_token"); tok == "" {
			c.add(SevError, "missing-session-token", "/session_token",
				"a reattaching Handshake must carry the session_token the agent issued; the agent answers \"Session token required for reattachment\"")
		}
		if id, _ := o.str("session_id"); id == "" {
			c.add(SevError, "missing-field", "/session_id", "a reattaching Handshake must name the session_id to reattach to")
		}
	}
}

// bwCheckToolModeObject: the object form of an externally tagged enum has
// exactly one member.
func bwCheckToolModeObject(c *checker, o robj, name string) {
	v, _ := o.get(name)
	if m, ok := members(v); ok && len(m) != 1 {
		c.add(SevError, "invalid-value", "/"+name, fmt.Sprintf("ToolMode object has %d members; serde's externally tagged form is exactly {\"Explicit\": [...]}", len(m)))
	}
}

// Handshaker and MultiHandshaker: the viewer opens with the Handshake and
// the agent's first frame is the HandshakeResponse; the Session tracks each
// side's handshake on its own. HandshakeDir is the side that speaks first.
func (brainwiresProto) HandshakeDir() Dir { return FromParent }
func (brainwiresProto) IsHandshake(dir Dir, info Info) bool {
	return info.Kind == Handshake
}

// HandshakeDirs lists every side that opens with a handshake: both.
func (brainwiresProto) HandshakeDirs() []Dir { return []Dir{FromParent, FromChild} }

func sniffBrainwires(dir Dir, frame []byte) int {
	t, ok := evScanTop(frame)
	if !ok || t.keys&evKeyJSONRPC != 0 {
		return 0
	}
	if !t.hasType {
		if dir == FromParent && t.keys&evKeyVersion != 0 && t.keys&evKeyIsReattach != 0 {
			return 100
		}
		if dir == FromChild && t.keys&evKeyAccepted != 0 && t.keys&evKeySessionID != 0 {
			return 100
		}
		return 0
	}
	tab := brainwiresCat().table.in
	if dir == FromChild {
		tab = brainwiresCat().table.out
	}
	if _, known := tab[t.typ]; !known {
		return 0
	}
	if t.typ == "error" {
		return 20 // synaps has an error event too
	}
	return 50
}

func init() {
	internNames(func() *evTable { return &brainwiresCat().table })
	register(brainwiresProto{}, 50, sniffBrainwires)
}

package protocol

import (
	"strings"
	"testing"
)

func TestBrainwiresValidSessions(t *testing.T) { testValidSessions(t, "brainwires") }

const (
	bwHello    = `in {"version":2,"is_reattach":false,"session_id":null,"session_token":null}`
	bwAccepted = `out {"accepted":true,"session_id":"abc","session_token":"0123456789abcdef","error":null}`
)

func TestBrainwiresBroken(t *testing.T) {
	hs := []string{bwHello, bwAccepted}
	ack := []string{bwAccepted} // the agent answers, so the session is complete
	lock := `{"agent_id":"a","resource_type":"build","scope":"g","description":"d","status":"s","held_for_secs":1}`
	big := `out {"type":"stream_chunk","text":"` + strings.Repeat("y", brainwiresMaxFrame) + `"}`
	cases := []brokenCase{
		// handshake shapes
		{name: "handshake without version", suffix: ack, frame: `in {"is_reattach":false,"session_id":null}`, code: "brainwires.missing-field"},
		{name: "handshake version 3", suffix: ack, frame: `in {"version":3,"is_reattach":false,"session_id":null}`, code: "brainwires.unsupported-version"},
		{name: "handshake is_reattach a string", suffix: ack, frame: `in {"version":2,"is_reattach":"no","session_id":null}`, code: "brainwires.wrong-type"},
		{name: "reattach without token", suffix: ack, frame: `in {"version":2,"is_reattach":true,"session_id":"abc","session_token":null}`, code: "brainwires.missing-session-token"},
		{name: "reattach without session id", suffix: ack, frame: `in {"version":2,"is_reattach":true,"session_id":null,"session_token":"t"}`, code: "brainwires.missing-field"},
		{name: "response without session_id", prefix: []string{bwHello}, frame: `out {"accepted":true,"session_token":"t","error":null}`, code: "brainwires.missing-field"},
		{name: "response accepted a string", prefix: []string{bwHello}, frame: `out {"accepted":"yes","session_id":"abc","error":null}`, code: "brainwires.wrong-type"},
		{name: "accepted without a token", prefix: []string{bwHello}, frame: `out {"accepted":true,"session_id":"abc","error":null}`, code: "brainwires.no-session-token", sev: SevInfo},
		{name: "first viewer frame is not the handshake", suffix: ack, frame: `in {"type":"user_input","content":"hi"}`, code: CodeHandshakeMissing},
		{name: "handshake twice", prefix: hs, frame: bwHello, code: CodeHandshakeRepeated, sev: SevWarning},
		// tagged messages
		{name: "untagged frame after the handshake", prefix: hs, frame: `in {"content":"hi"}`, code: "brainwires.missing-type"},
		{name: "unknown viewer message", prefix: hs, frame: `in {"type":"shutdown"}`, code: "brainwires.unknown-type"},
		{name: "unknown agent message", prefix: hs, frame: `out {"type":"stream_start"}`, code: "brainwires.unknown-type"},
		{name: "agent message from the viewer", prefix: hs, frame: `in {"type":"stream_chunk","text":"x"}`, code: "brainwires.wrong-direction"},
		{name: "viewer message from the agent", prefix: hs, frame: `out {"type":"cancel"}`, code: "brainwires.wrong-direction"},
		{name: "PascalCase tag", prefix: hs, frame: `in {"type":"UserInput","content":"hi"}`, code: "brainwires.unknown-type"},
		{name: "user_input without content", prefix: hs, frame: `in {"type":"user_input","context_files":[]}`, code: "brainwires.missing-field"},
		{name: "context_files a string", prefix: hs, frame: `in {"type":"user_input","content":"c","context_files":"a.rs"}`, code: "brainwires.wrong-type"},
		{name: "context_files null", prefix: hs, frame: `in {"type":"plan_mode_user_input","content":"c","context_files":null}`, code: "brainwires.wrong-type"},
		{name: "detach without exit_when_done", prefix: hs, frame: `in {"type":"detach"}`, code: "brainwires.missing-field"},
		{name: "slash_command args not strings", prefix: hs, frame: `in {"type":"slash_command","command":"x","args":[1]}`, code: "brainwires.wrong-type"},
		{name: "ToolMode lower case", prefix: hs, frame: `in {"type":"set_tool_mode","mode":"smart"}`, code: "brainwires.invalid-value"},
		{name: "ToolMode internally tagged", prefix: hs, frame: `in {"type":"set_tool_mode","mode":{"type":"Explicit","tools":["a"]}}`, code: "brainwires.missing-field"},
		{name: "ToolMode Explicit not a list", prefix: hs, frame: `in {"type":"set_tool_mode","mode":{"Explicit":"read_file"}}`, code: "brainwires.wrong-type"},
		{name: "ToolMode object with two variants", prefix: hs, frame: `in {"type":"set_tool_mode","mode":{"Explicit":["a"],"Full":null}}`, code: "brainwires.invalid-value"},
		{name: "ToolMode a number", prefix: hs, frame: `in {"type":"set_tool_mode","mode":1}`, code: "brainwires.wrong-type"},
		{name: "ToolMode missing", prefix: hs, frame: `in {"type":"set_tool_mode"}`, code: "brainwires.missing-field"},
		{name: "conversation_sync tool_mode bad", prefix: hs, frame: `out {"type":"conversation_sync","session_id":"a","model":"m","messages":[],"status":"s","is_busy":false,"tool_mode":"Everything","mcp_servers":[]}`, code: "brainwires.invalid-value"},
		{name: "unknown lock type", prefix: hs, frame: `in {"type":"acquire_lock","resource_type":"deploy","scope":"g","description":"d"}`, code: "brainwires.invalid-value"},
		{name: "query_locks without scope is legal but scope 1 is not", prefix: hs, frame: `in {"type":"query_locks","scope":1}`, code: "brainwires.wrong-type"},
		{name: "notify_children bad action", prefix: hs, frame: `in {"type":"notify_children","action":"kill"}`, code: "brainwires.invalid-value"},
		{name: "parent_signal bad signal", prefix: hs, frame: `in {"type":"parent_signal","signal":"SIGTERM","parent_session_id":"p"}`, code: "brainwires.invalid-value"},
		{name: "spawn_agent model a number", prefix: hs, frame: `in {"type":"spawn_agent","model":4,"reason":null,"working_directory":null}`, code: "brainwires.wrong-type"},
		{name: "message created_at fractional", prefix: hs, frame: `out {"type":"message_added","message":{"role":"user","content":"c","created_at":1.5}}`, code: "brainwires.wrong-type"},
		{name: "message without role", prefix: hs, frame: `out {"type":"plan_mode_message_added","message":{"content":"c","created_at":1}}`, code: "brainwires.missing-field"},
		{name: "toast negative duration", prefix: hs, frame: `out {"type":"toast","message":"m","duration_ms":-5}`, code: "brainwires.invalid-value"},
		{name: "seal quality_score a string", prefix: hs, frame: `out {"type":"seal_status","enabled":true,"entity_count":1,"last_resolution":null,"quality_score":"high"}`, code: "brainwires.wrong-type"},
		{name: "task_count negative", prefix: hs, frame: `out {"type":"task_update","task_tree":"","task_count":-1,"completed_count":0}`, code: "brainwires.invalid-value"},
		{name: "error without fatal", prefix: hs, frame: `out {"type":"error","message":"m"}`, code: "brainwires.missing-field"},
		{name: "tool_call_start without input", prefix: hs, frame: `out {"type":"tool_call_start","id":"t","name":"n"}`, code: "brainwires.missing-field"},
		{name: "tool_result output a number", prefix: hs, frame: `out {"type":"tool_result","id":"t","name":"n","output":3,"error":null}`, code: "brainwires.wrong-type"},
		{name: "progress over 1", prefix: hs, frame: `out {"type":"tool_progress","name":"n","message":"m","progress":1.5}`, code: "brainwires.progress-out-of-range", sev: SevWarning},
		{name: "slash_command_result blocked a string", prefix: hs, frame: `out {"type":"slash_command_result","command":"c","success":true,"blocked":"no"}`, code: "brainwires.wrong-type"},
		{name: "lock_changed bad change", prefix: hs, frame: `out {"type":"lock_changed","change":"moved","lock":` + lock + `}`, code: "brainwires.invalid-value"},
		{name: "lock held_for_secs negative", prefix: hs, frame: `out {"type":"lock_status","locks":[{"agent_id":"a","resource_type":"test","scope":"g","description":"d","status":"s","held_for_secs":-1}]}`, code: "brainwires.invalid-value"},
		{name: "agent metadata pid negative", prefix: hs, frame: `out {"type":"agent_list","agents":[{"session_id":"s","parent_agent_id":null,"spawn_reason":null,"model":"m","created_at":1,"last_activity":1,"working_directory":"/","is_busy":false,"pid":-1}]}`, code: "brainwires.invalid-value"},
		{name: "agent_exiting children not strings", prefix: hs, frame: `out {"type":"agent_exiting","session_id":"s","reason":"r","children_notified":[1]}`, code: "brainwires.wrong-type"},
		{name: "plan_mode_sync without is_busy", prefix: hs, frame: `out {"type":"plan_mode_sync","plan_session_id":"p","main_session_id":"m","messages":[],"status":"s"}`, code: "brainwires.missing-field"},
		// session rules
		{name: "frame over 16 MiB", prefix: hs, frame: big, code: CodeFrameTooLarge},
		{name: "non-JSON from the agent", prefix: hs, frame: `out Connected to MCP server`, code: CodeNonJSONStdout},
	}
	testBroken(t, brainwiresProto{}, cases)
}

func TestBrainwiresClassify(t *testing.T) {
	p := brainwiresProto{}
	cases := []struct {
		dir  Dir
		in   string
		want Info
	}{
		{FromParent, `{"version":2,"is_reattach":false,"session_id":null,"session_token":null}`, Info{Kind: Handshake, Method: "handshake"}},
		{FromChild, `{"accepted":false,"session_id":"","error":"Invalid session token"}`, Info{Kind: Handshake, Method: "handshake_response"}},
		{FromParent, `{"type":"user_input","content":"Hello"}`, Info{Kind: Notification, Method: "user_input"}},
		{FromChild, `{"type":"stream_chunk","text":"World"}`, Info{Kind: Event, Method: "stream_chunk"}},
		{FromChild, `{"version":2,"is_reattach":false}`, Info{Kind: Invalid}}, // a Handshake from the agent side
		{FromParent, `{"content":"x"}`, Info{Kind: Invalid}},
	}
	for _, c := range cases {
		if got := p.Classify(c.dir, []byte(c.in)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.in, got, c.want)
		}
	}
	// a rejected handshake: accepted:false with an error is a legal frame
	vs := p.Validate(FromChild, []byte(`{"accepted":false,"session_id":"","session_token":null,"error":"Protocol version mismatch: expected 2, got 3"}`), Info{})
	if len(vs) != 0 {
		t.Errorf("rejection: %s", fmtViolations(vs))
	}
}

// TestBrainwiresTwoSidedHandshake: both sides open with their handshake
// (the viewer's Handshake, the agent's HandshakeResponse), each checked on
// its own.
func TestBrainwiresTwoSidedHandshake(t *testing.T) {
	sync := `out {"type":"conversation_sync","session_id":"abc","model":"m","messages":[],"status":"Idle","is_busy":false,"tool_mode":"Full","mcp_servers":[]}`
	input := `in {"type":"user_input","content":"hi"}`
	rejected := `out {"accepted":false,"session_id":"","session_token":null,"error":"Invalid session token"}`
	cases := []sessionCase{
		{"both handshakes first", []string{bwHello, bwAccepted, sync, input}, nil},
		{"a rejection is the agent's handshake too", []string{bwHello, rejected}, nil},
		{"agent's first frame is not the HandshakeResponse", []string{bwHello, sync, input},
			[]string{CodeHandshakeMissing + "@2"}},
		{"agent's HandshakeResponse after other frames", []string{bwHello, sync, bwAccepted},
			[]string{CodeHandshakeMissing + "@2", CodeHandshakeLate + "@3"}},
		{"agent answers twice", []string{bwHello, bwAccepted, sync, bwAccepted},
			[]string{CodeHandshakeRepeated + "@4"}},
		{"agent never answers", []string{bwHello},
			[]string{CodeHandshakeMissing + "@0"}},
		{"viewer skips its handshake, agent does not", []string{input, bwAccepted},
			[]string{CodeHandshakeMissing + "@1"}},
		{"neither side opens with its handshake", []string{input, sync},
			[]string{CodeHandshakeMissing + "@1", CodeHandshakeMissing + "@2"}},
		{"viewer's handshake late, agent's on time", []string{input, bwAccepted, bwHello},
			[]string{CodeHandshakeMissing + "@1", CodeHandshakeLate + "@3"}},
	}
	runSessionCases(t, brainwiresProto{}, cases)

	// The messages name the side.
	for _, c := range []struct {
		steps []string
		side  string
	}{
		{[]string{bwHello, sync}, "child"},
		{[]string{input, bwAccepted}, "parent"},
		{[]string{bwHello}, "child"},
	} {
		vs, _ := runSteps(brainwiresProto{}, mustSteps(t, c.steps...))
		if len(vs) != 1 || vs[0].Code != CodeHandshakeMissing || !strings.Contains(vs[0].Message, "from the "+c.side) {
			t.Errorf("%v: want one %s naming the %s:%s", c.steps, CodeHandshakeMissing, c.side, fmtViolations(vs))
		}
	}
}

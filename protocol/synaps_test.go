package protocol

import (
	"strings"
	"testing"
)

func TestSynapsValidSessions(t *testing.T) { testValidSessions(t, "synaps") }

const synapsReady = `out {"type":"ready","session_id":"s","model":"m","protocol_version":1}`

func TestSynapsBroken(t *testing.T) {
	r := []string{synapsReady}
	big := `in {"type":"prompt","id":"big","message":"` + strings.Repeat("x", synapsMaxFrame) + `"}`
	cases := []brokenCase{
		// frame shape
		{name: "not an object", prefix: r, frame: `in ["prompt"]`, code: "synaps.not-object"},
		{name: "no type", prefix: r, frame: `in {"id":"1","message":"x"}`, code: "synaps.missing-type"},
		{name: "type not a string", prefix: r, frame: `in {"type":7,"id":"1"}`, code: "synaps.wrong-type"},
		{name: "unknown command", prefix: r, frame: `in {"type":"reset","id":"1"}`, code: "synaps.unknown-type"},
		{name: "unknown event", prefix: r, frame: `out {"type":"tool_call","id":"1"}`, code: "synaps.unknown-type"},
		{name: "event sent by the parent", prefix: r, frame: `in {"type":"agent_end","usage":{"input_tokens":1,"output_tokens":1}}`, code: "synaps.wrong-direction"},
		{name: "command sent by the child", prefix: r, frame: `out {"type":"abort","id":"1"}`, code: "synaps.wrong-direction"},
		{name: "prompt without message", prefix: r, frame: `in {"type":"prompt","id":"1"}`, code: "synaps.missing-field"},
		{name: "prompt without id", prefix: r, frame: `in {"type":"prompt","message":"hi"}`, code: "synaps.missing-field"},
		{name: "numeric id", prefix: r, frame: `in {"type":"get_state","id":1}`, code: "synaps.wrong-type"},
		{name: "set_model without model", prefix: r, frame: `in {"type":"set_model","id":"1"}`, code: "synaps.missing-field"},
		{name: "attachments not an array", prefix: r, frame: `in {"type":"prompt","id":"1","message":"m","attachments":{"path":"/a"}}`, code: "synaps.wrong-type"},
		{name: "attachment without path", prefix: r, frame: `in {"type":"prompt","id":"1","message":"m","attachments":[{"name":"a"}]}`, code: "synaps.missing-field"},
		{name: "attachments null", prefix: r, frame: `in {"type":"prompt","id":"1","message":"m","attachments":null}`, code: "synaps.wrong-type"},
		{name: "ready without model", frame: `out {"type":"ready","session_id":"s","protocol_version":1}`, code: "synaps.missing-field"},
		{name: "ready protocol_version 2", frame: `out {"type":"ready","session_id":"s","model":"m","protocol_version":2}`, code: "synaps.unsupported-version"},
		{name: "ready protocol_version string", frame: `out {"type":"ready","session_id":"s","model":"m","protocol_version":"1"}`, code: "synaps.wrong-type"},
		{name: "unknown assistant event", prefix: r, frame: `out {"type":"message_update","event":{"type":"image_delta","delta":"x"}}`, code: "synaps.invalid-value"},
		{name: "assistant event without tag", prefix: r, frame: `out {"type":"message_update","event":{"delta":"x"}}`, code: "synaps.missing-field"},
		{name: "text_delta without delta", prefix: r, frame: `out {"type":"message_update","event":{"type":"text_delta"}}`, code: "synaps.missing-field"},
		{name: "toolcall_input without input", prefix: r, frame: `out {"type":"message_update","event":{"type":"toolcall_input","tool_id":"t"}}`, code: "synaps.missing-field"},
		{name: "toolcall_result result not a string", prefix: r, frame: `out {"type":"message_update","event":{"type":"toolcall_result","tool_id":"t","result":{"ok":1}}}`, code: "synaps.wrong-type"},
		{name: "negative subagent_id", prefix: r, frame: `out {"type":"subagent_start","subagent_id":-1,"agent_name":"a","task_preview":"p"}`, code: "synaps.invalid-value"},
		{name: "fractional subagent_id", prefix: r, frame: `out {"type":"subagent_update","subagent_id":1.5,"agent_name":"a","status":"s"}`, code: "synaps.wrong-type"},
		{name: "duration_secs a string", prefix: r, frame: `out {"type":"subagent_done","subagent_id":1,"agent_name":"a","result_preview":"r","duration_secs":"2s"}`, code: "synaps.wrong-type"},
		{name: "usage without output_tokens", prefix: r, frame: `out {"type":"agent_end","usage":{"input_tokens":1}}`, code: "synaps.missing-field"},
		{name: "usage cache counter null", prefix: r, frame: `out {"type":"agent_end","usage":{"input_tokens":1,"output_tokens":1,"cache_read_input_tokens":null}}`, code: "synaps.wrong-type"},
		{name: "error without message", prefix: r, frame: `out {"type":"error","id":"1"}`, code: "synaps.missing-field"},
		{name: "event payload without text", prefix: r, frame: `out {"type":"event","payload":{"id":"e","source":"s","severity":"info","content_type":"c","timestamp":"t","formatted":"f"}}`, code: "synaps.missing-field"},
		{name: "response without command", prefix: append(r, `in {"type":"abort","id":"1"}`), frame: `out {"type":"response","id":"1","ok":true}`, code: "synaps.missing-field"},
		{name: "shutdown with id", prefix: r, frame: `in {"type":"shutdown","id":"9"}`, code: "synaps.unexpected-id", sev: SevWarning},
		{name: "get_state body without streaming", prefix: append(r, `in {"type":"get_state","id":"1"}`), frame: `out {"type":"response","id":"1","command":"get_state","model":"m","session_id":"s","message_count":0}`, code: "synaps.response-body", sev: SevWarning},
		{name: "prompt body ok not bool", prefix: append(r, `in {"type":"prompt","id":"1","message":"m"}`), frame: `out {"type":"response","id":"1","command":"prompt","ok":"yes"}`, code: "synaps.response-body", sev: SevWarning},
		// session rules
		{name: "first stdout frame is not ready", frame: `out {"type":"message_update","event":{"type":"text_delta","delta":"x"}}`, code: CodeHandshakeMissing},
		{name: "ready after other frames", prefix: []string{`out {"type":"error","message":"boot"}`}, frame: synapsReady, code: CodeHandshakeLate, sev: SevWarning, earlier: true},
		{name: "ready twice", prefix: r, frame: synapsReady, code: CodeHandshakeRepeated, sev: SevWarning},
		{name: "response to an unknown id", prefix: r, frame: `out {"type":"response","id":"nope","command":"abort","ok":true}`, code: CodeUnknownResponseID},
		{name: "response to an answered id", prefix: append(r, `in {"type":"abort","id":"1"}`, `out {"type":"response","id":"1","command":"abort","ok":true}`), frame: `out {"type":"response","id":"1","command":"abort","ok":true}`, code: CodeUnknownResponseID},
		{name: "duplicate in-flight id", prefix: append(r, `in {"type":"prompt","id":"1","message":"a"}`), frame: `in {"type":"get_state","id":"1"}`, code: CodeDuplicateID},
		{name: "command unanswered at exit", prefix: r, frame: `in {"type":"get_messages","id":"q"}`, code: CodeUnanswered, sev: SevWarning},
		{name: "frame over 1 MiB", prefix: r, frame: big, code: CodeFrameTooLarge},
		{name: "log line on stdout", prefix: r, frame: `out INFO starting agent`, code: CodeNonJSONStdout},
		{name: "ANSI before JSON on stdout", prefix: r, frame: "out \x1b[32m{\"type\":\"error\",\"message\":\"x\"}", code: CodeANSIBeforeJSON},
		{name: "non-JSON from the parent", prefix: r, frame: `in hello`, code: CodeNonJSONStdin, sev: SevWarning},
	}
	testBroken(t, synapsProto{}, cases)
}

func TestSynapsFrameLimitBoundary(t *testing.T) {
	// exactly 1 MiB (without the newline) is allowed
	head, tail := `{"type":"prompt","id":"b","message":"`, `"}`
	f := head + strings.Repeat("x", synapsMaxFrame-len(head)-len(tail)) + tail
	if len(f) != synapsMaxFrame {
		t.Fatalf("built %d bytes", len(f))
	}
	vs, _ := runSteps(synapsProto{}, append(mustSteps(t, synapsReady), evStep{dir: FromParent, frame: []byte(f)}))
	for _, v := range vs {
		if v.Code == CodeFrameTooLarge {
			t.Errorf("a frame of exactly 1 MiB was reported: %s", v.Message)
		}
	}
}

func TestSynapsClassify(t *testing.T) {
	p := synapsProto{}
	cases := []struct {
		dir  Dir
		in   string
		want Info
	}{
		{FromChild, `{"type":"ready","session_id":"s","model":"m","protocol_version":1}`, Info{Kind: Handshake, Method: "ready"}},
		{FromParent, `{"type":"prompt","id":"abc","message":"hello"}`, Info{Kind: Request, Method: "prompt", ID: `"abc"`}},
		{FromParent, `{"type":"shutdown"}`, Info{Kind: Notification, Method: "shutdown"}},
		{FromChild, `{"type":"response","id":"abc","command":"prompt","ok":true}`, Info{Kind: Response, Method: "prompt", ID: `"abc"`}},
		{FromChild, `{"type":"error","id":"abc","message":"busy"}`, Info{Kind: Event, Method: "error", ID: `"abc"`}},
		{FromChild, `{"type":"message_update","event":{"type":"text_delta","delta":"hi"}}`, Info{Kind: Event, Method: "message_update"}},
		{FromChild, `INFO x`, Info{Kind: Invalid}},
		{FromParent, `{"id":"1"}`, Info{Kind: Invalid, ID: `"1"`}},
	}
	for _, c := range cases {
		if got := p.Classify(c.dir, []byte(c.in)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.in, got, c.want)
		}
	}
	// pairing exceptions
	for _, c := range []struct {
		dir  Dir
		info Info
		role PairRole
		key  string
	}{
		{FromParent, Info{Kind: Request, Method: "tools_list"}, PairOpen, `""`},
		{FromParent, Info{Kind: Request, Method: "tools_list", ID: "null"}, PairOpen, `""`},
		{FromParent, Info{Kind: Request, Method: "tools_list", ID: `"t"`}, PairOpen, `"t"`},
		{FromParent, Info{Kind: Notification, Method: "shutdown"}, PairNone, ""},
		{FromChild, Info{Kind: Response, Method: "auto_turn", ID: `"auto:3"`}, PairNone, ""},
		{FromChild, Info{Kind: Response, Method: "compact.disclosure", ID: `"7"`}, PairNone, ""},
		{FromChild, Info{Kind: Response, Method: "compact", ID: `"7"`}, PairClose, `"7"`},
		{FromChild, Info{Kind: Event, Method: "error", ID: `"7"`}, PairRefuse, `"7"`},
		{FromChild, Info{Kind: Event, Method: "error"}, PairNone, ""},
	} {
		if k, r := p.Pair(c.dir, c.info); k != c.key || r != c.role {
			t.Errorf("Pair(%v, %+v) = %q, %v; want %q, %v", c.dir, c.info, k, r, c.key, c.role)
		}
	}
}

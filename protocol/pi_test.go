package protocol

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestPiValidSessions(t *testing.T) { testValidSessions(t, "pi") }

// TestPiTraffic: pi sessions in --mode rpc are detected as pi and have no
// error-level violation: testdata/traffic/pi-session (written from pi's RPC
// documentation) and, when ../shared is there, the real capture of pi 0.73.1.
//
// The captures keep only the order within each direction. Each stdout
// answers the `parse` error of the non-JSON line, the LAST line of stdin,
// before later commands, so the writer had written all of stdin before pi
// answered anything: the faithful session order is every stdin frame, then
// every stdout frame.
func TestPiTraffic(t *testing.T) {
	ins := captureIns("pi-*.in")
	if len(ins) == 0 {
		t.Fatal("no pi captures in testdata/traffic")
	}
	for _, inPath := range ins {
		t.Run(filepath.Base(inPath), func(t *testing.T) { checkPiCapture(t, inPath) })
	}
}

func checkPiCapture(t *testing.T, inPath string) {
	in := readLines(t, inPath)
	out := readLines(t, strings.TrimSuffix(inPath, ".in")+".out")
	var seq []DirFrame
	var steps []evStep
	for _, f := range in {
		seq = append(seq, DirFrame{FromParent, f})
		steps = append(steps, evStep{dir: FromParent, frame: f})
	}
	for _, f := range out {
		seq = append(seq, DirFrame{FromChild, f})
		steps = append(steps, evStep{dir: FromChild, frame: f})
	}
	if got := Detect(seq); got != "pi" {
		t.Fatalf("detected %q, want pi (scores %v)", got, sniffMax(steps))
	}
	// stdout alone (a recording that starts late) is pi as well
	if got := Detect(seq[len(in):]); got != "pi" {
		t.Errorf("stdout only: detected %q, want pi", got)
	}
	vs, infos := runSteps(piProto{}, steps)
	seen := map[string]Severity{}
	for _, v := range vs {
		seen[v.Code] = v.Severity
		if v.Severity == SevError {
			t.Errorf("error-level violation: rec %d %s %s: %s", v.Record, v.Code, v.Pointer, v.Message)
		} else {
			t.Logf("rec %d %s %s: %s", v.Record, v.Severity, v.Code, v.Message)
		}
	}
	// The parent's deliberate mistakes are seen, as warnings.
	if seen["pi.unknown-command"] != SevWarning {
		t.Errorf("the unknown command not reported as a pi.unknown-command warning: %v", seen)
	}
	if seen[CodeNonJSONStdin] != SevWarning {
		t.Errorf("the non-JSON line on stdin not reported as a %s warning: %v", CodeNonJSONStdin, seen)
	}
	// Every response with an id found its command.
	responses := 0
	for i, in := range infos {
		if in.Kind == Response {
			responses++
			if in.Method == "" {
				t.Errorf("rec %d: response without a command name", i+1)
			}
		}
	}
	if want := bytes.Count(bytes.Join(out, []byte("\n")), []byte(`"type":"response"`)); responses != want {
		t.Errorf("%d responses classified, the capture's stdout has %d", responses, want)
	}
	if _, ok := seen[CodeUnanswered]; ok {
		t.Errorf("a command was left unanswered: %s", fmtViolations(vs))
	}
}

func TestPiBroken(t *testing.T) {
	cases := []brokenCase{
		// commands
		{name: "unknown command", frame: `in {"type":"bogus_cmd"}`, code: "pi.unknown-command", sev: SevWarning},
		{name: "response sent by the parent", frame: `in {"type":"response","command":"x","success":true}`, code: "pi.wrong-direction"},
		{name: "no type", frame: `in {"id":"1","message":"hi"}`, code: "pi.missing-type"},
		{name: "not an object", frame: `in [1,2]`, code: "pi.not-object"},
		{name: "prompt without message", frame: `in {"id":"1","type":"prompt"}`, code: "pi.missing-field"},
		{name: "prompt bad streamingBehavior", frame: `in {"type":"prompt","message":"m","streamingBehavior":"queue"}`, code: "pi.invalid-value"},
		{name: "prompt images not an array", frame: `in {"type":"prompt","message":"m","images":"a.png"}`, code: "pi.wrong-type"},
		{name: "numeric id", frame: `in {"id":1,"type":"get_state"}`, code: "pi.wrong-type"},
		{name: "null id", frame: `in {"id":null,"type":"get_state"}`, code: "pi.null-id", sev: SevInfo},
		{name: "set_model opi style", frame: `in {"type":"set_model","model":"anthropic:claude"}`, code: "pi.missing-field"},
		{name: "set_thinking_level max", frame: `in {"type":"set_thinking_level","level":"max"}`, code: "pi.invalid-value"},
		{name: "set_steering_mode bad", frame: `in {"type":"set_steering_mode","mode":"some"}`, code: "pi.invalid-value"},
		{name: "set_follow_up_mode missing", frame: `in {"type":"set_follow_up_mode"}`, code: "pi.missing-field"},
		{name: "set_auto_compaction a string", frame: `in {"type":"set_auto_compaction","enabled":"yes"}`, code: "pi.wrong-type"},
		{name: "set_auto_retry missing", frame: `in {"type":"set_auto_retry"}`, code: "pi.missing-field"},
		{name: "bash without command", frame: `in {"type":"bash"}`, code: "pi.missing-field"},
		{name: "switch_session without path", frame: `in {"type":"switch_session"}`, code: "pi.missing-field"},
		{name: "fork entryId a number", frame: `in {"type":"fork","entryId":3}`, code: "pi.wrong-type"},
		{name: "set_session_name without name", frame: `in {"type":"set_session_name"}`, code: "pi.missing-field"},
		{name: "steer without message", frame: `in {"type":"steer"}`, code: "pi.missing-field"},
		{name: "extension_ui_response without id", frame: `in {"type":"extension_ui_response","confirmed":true}`, code: "pi.missing-field"},
		{name: "extension_ui_response without an answer", prefix: []string{`out {"type":"extension_ui_request","id":"u","method":"input","title":"t"}`}, frame: `in {"type":"extension_ui_response","id":"u"}`, code: "pi.missing-field"},
		// responses and events
		{name: "response without success", prefix: []string{`in {"id":"1","type":"abort"}`}, frame: `out {"id":"1","type":"response","command":"abort"}`, code: "pi.missing-field"},
		{name: "response without command", prefix: []string{`in {"id":"1","type":"abort"}`}, frame: `out {"id":"1","type":"response","success":true}`, code: "pi.missing-field"},
		{name: "failure without error", frame: `out {"type":"response","command":"compact","success":false}`, code: "pi.response-inconsistent", sev: SevWarning},
		{name: "successful parse", frame: `out {"type":"response","command":"parse","success":true}`, code: "pi.response-inconsistent", sev: SevWarning},
		{name: "unknown event", frame: `out {"type":"session_flux"}`, code: "pi.unknown-event", sev: SevInfo},
		{name: "command sent by the child", frame: `out {"type":"get_state"}`, code: "pi.wrong-direction"},
		{name: "PascalCase event", frame: `out {"type":"AgentStart"}`, code: "pi.unknown-event", sev: SevInfo},
		{name: "agent_end without messages", frame: `out {"type":"agent_end"}`, code: "pi.missing-field"},
		{name: "message without role", frame: `out {"type":"message_start","message":{"content":"x"}}`, code: "pi.missing-field"},
		{name: "message_update without assistantMessageEvent", frame: `out {"type":"message_update","message":{"role":"assistant","content":[]}}`, code: "pi.missing-field"},
		{name: "message_update snake_case field", frame: `out {"type":"message_update","message":{"role":"assistant"},"assistant_event":{"type":"start","partial":{}}}`, code: "pi.missing-field"},
		{name: "assistantMessageEvent unknown", frame: `out {"type":"message_update","message":{"role":"assistant"},"assistantMessageEvent":{"type":"tool_call_delta","contentIndex":0,"delta":"x","partial":{}}}`, code: "pi.invalid-value"},
		{name: "text_delta without delta", frame: `out {"type":"message_update","message":{"role":"assistant"},"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"partial":{}}}`, code: "pi.missing-field"},
		{name: "done with opi stop reason", frame: `out {"type":"message_update","message":{"role":"assistant"},"assistantMessageEvent":{"type":"done","reason":"tool_use","message":{}}}`, code: "pi.invalid-value"},
		{name: "turn_end toolResults not an array", frame: `out {"type":"turn_end","message":{"role":"assistant"},"toolResults":{}}`, code: "pi.wrong-type"},
		{name: "tool_execution_end without isError", frame: `out {"type":"tool_execution_end","toolCallId":"c","toolName":"bash","result":{}}`, code: "pi.missing-field"},
		{name: "tool_execution_start snake_case", frame: `out {"type":"tool_execution_start","tool_call_id":"c","tool_name":"bash","args":{}}`, code: "pi.missing-field"},
		{name: "auto_compaction_start manual", frame: `out {"type":"auto_compaction_start","reason":"manual"}`, code: "pi.invalid-value"},
		{name: "compaction_start bad reason", frame: `out {"type":"compaction_start","reason":"auto"}`, code: "pi.invalid-value"},
		{name: "compaction_end without willRetry", frame: `out {"type":"compaction_end","reason":"manual","aborted":false}`, code: "pi.missing-field"},
		{name: "queue_update followUp not strings", frame: `out {"type":"queue_update","steering":[],"followUp":[{"text":"x"}]}`, code: "pi.wrong-type"},
		{name: "thinking_level_changed bad level", frame: `out {"type":"thinking_level_changed","level":"max"}`, code: "pi.invalid-value"},
		{name: "auto_compaction_end without aborted", frame: `out {"type":"auto_compaction_end","result":null}`, code: "pi.missing-field"},
		{name: "auto_retry_start attempt a string", frame: `out {"type":"auto_retry_start","attempt":"1","maxAttempts":3,"delayMs":1,"errorMessage":"e"}`, code: "pi.wrong-type"},
		{name: "auto_retry_end without success", frame: `out {"type":"auto_retry_end","attempt":1}`, code: "pi.missing-field"},
		{name: "extension_error without error", frame: `out {"type":"extension_error","extensionPath":"p","event":"e"}`, code: "pi.missing-field"},
		{name: "extension_ui_request without id", frame: `out {"type":"extension_ui_request","method":"notify","message":"m"}`, code: "pi.missing-field"},
		{name: "extension_ui_request unknown method", frame: `out {"type":"extension_ui_request","id":"u","method":"prompt","title":"t"}`, code: "pi.invalid-value"},
		{name: "select without options", frame: `out {"type":"extension_ui_request","id":"u","method":"select","title":"t"}`, code: "pi.missing-field"},
		{name: "notify bad notifyType", frame: `out {"type":"extension_ui_request","id":"u","method":"notify","message":"m","notifyType":"fatal"}`, code: "pi.invalid-value"},
		// session rules
		{name: "response to an unknown id", frame: `out {"id":"ghost","type":"response","command":"abort","success":true}`, code: CodeUnknownResponseID},
		{name: "duplicate in-flight id", prefix: []string{`in {"id":"d","type":"get_state"}`}, frame: `in {"id":"d","type":"get_messages"}`, code: CodeDuplicateID},
		{name: "command unanswered at exit", frame: `in {"id":"u","type":"get_commands"}`, code: CodeUnanswered, sev: SevWarning},
		{name: "dialog never answered", frame: `out {"type":"extension_ui_request","id":"u","method":"confirm","title":"t","message":"m"}`, code: CodeUnanswered, sev: SevWarning},
		{name: "UI response to an unknown request", frame: `in {"type":"extension_ui_response","id":"zz","cancelled":true}`, code: CodeUnknownResponseID},
		{name: "junk on stdout", frame: `out Debugger attached.`, code: CodeNonJSONStdout},
		{name: "ANSI before JSON on stdout", frame: "out \x1b[2K{\"type\":\"agent_start\"}", code: CodeANSIBeforeJSON},
		{name: "non-JSON from the parent", frame: `in not json`, code: CodeNonJSONStdin, sev: SevWarning},
	}
	testBroken(t, piProto{}, cases)
}

// TestPiUnknownCommandAnswer: pi answers an unknown command without its id
// ("Unknown command: x"); that leaves nothing unanswered and is no unknown
// response.
func TestPiUnknownCommandAnswer(t *testing.T) {
	vs, _ := runSteps(piProto{}, mustSteps(t,
		`in {"id":"q","type":"frobnicate"}`,
		`out {"type":"response","command":"frobnicate","success":false,"error":"Unknown command: frobnicate"}`,
		`in {"id":"w","type":"get_state"}`,
		`out {"id":"w","type":"response","command":"get_state","success":true,"data":{}}`,
	))
	if len(vs) != 1 || vs[0].Code != "pi.unknown-command" || vs[0].Severity != SevWarning || vs[0].Record != 1 {
		t.Errorf("want exactly one pi.unknown-command warning at record 1:%s", fmtViolations(vs))
	}
}

func TestPiClassify(t *testing.T) {
	p := piProto{}
	cases := []struct {
		dir  Dir
		in   string
		want Info
	}{
		{FromParent, `{"id":"s1","type":"get_state"}`, Info{Kind: Request, Method: "get_state", ID: `"s1"`}},
		{FromParent, `{"type":"abort"}`, Info{Kind: Request, Method: "abort"}},
		{FromParent, `{"type":"extension_ui_response","id":"u","value":"x"}`, Info{Kind: Response, Method: "extension_ui_response", ID: `"u"`}},
		{FromChild, `{"id":"s1","type":"response","command":"get_state","success":true}`, Info{Kind: Response, Method: "get_state", ID: `"s1"`}},
		{FromChild, `{"type":"extension_ui_request","id":"u","method":"select","title":"t","options":[]}`, Info{Kind: Request, Method: "extension_ui_request", ID: `"u"`}},
		{FromChild, `{"type":"extension_ui_request","id":"u","method":"notify","message":"m"}`, Info{Kind: Event, Method: "extension_ui_request", ID: `"u"`}},
		{FromChild, `{"type":"agent_start"}`, Info{Kind: Event, Method: "agent_start"}},
		{FromChild, `not json`, Info{Kind: Invalid}},
	}
	for _, c := range cases {
		if got := p.Classify(c.dir, []byte(c.in)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.in, got, c.want)
		}
	}
}

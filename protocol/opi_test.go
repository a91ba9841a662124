package protocol

import "testing"

func TestOpiValidSessions(t *testing.T) { testValidSessions(t, "opi") }

const opiReady = `out {"type":"rpc_ready","schema_version":3,"mode":"rpc","version":"0.6.3","startup_diagnostics":[]}`

func TestOpiBroken(t *testing.T) {
	r := []string{opiReady}
	asst := `{"content":[],"api":"Anthropic","provider":"p","model":"m","usage":{"input_tokens":1,"output_tokens":1},"stop_reason":"stop","timestamp_ms":1}`
	llm := `{"type":"Llm","role":"assistant","content":[],"api":"Anthropic","provider":"p","model":"m","usage":{"input_tokens":1,"output_tokens":1},"stop_reason":"stop","timestamp_ms":1}`
	cases := []brokenCase{
		// header
		{name: "rpc_ready schema 4", frame: `out {"type":"rpc_ready","schema_version":4,"mode":"rpc","version":"1.0.0"}`, code: "opi.unsupported-version"},
		{name: "rpc_ready schema as string", frame: `out {"type":"rpc_ready","schema_version":"3","mode":"rpc","version":"0.6.3"}`, code: "opi.wrong-type"},
		{name: "rpc_ready without version", frame: `out {"type":"rpc_ready","schema_version":3,"mode":"rpc"}`, code: "opi.missing-field"},
		{name: "rpc_ready mode json", frame: `out {"type":"rpc_ready","schema_version":3,"mode":"json","version":"0.6.3"}`, code: "opi.invalid-value"},
		{name: "startup diagnostic bad severity", frame: `out {"type":"rpc_ready","schema_version":3,"mode":"rpc","version":"0.6.3","startup_diagnostics":[{"severity":"fatal","code":"c","source":"s","message":"m"}]}`, code: "opi.invalid-value"},
		{name: "first stdout line is not rpc_ready", frame: `out {"type":"AgentStart"}`, code: CodeHandshakeMissing},
		{name: "rpc_ready twice", prefix: r, frame: opiReady, code: CodeHandshakeRepeated, sev: SevWarning},
		// commands
		{name: "not an object", prefix: r, frame: `in "prompt"`, code: "opi.not-object"},
		{name: "no type", prefix: r, frame: `in {"message":"hi"}`, code: "opi.missing-type"},
		{name: "unknown command", prefix: r, frame: `in {"type":"get_state","id":"1"}`, code: "opi.unknown-type"},
		{name: "event sent by the parent", prefix: r, frame: `in {"type":"AgentStart"}`, code: "opi.wrong-direction"},
		{name: "prompt without message", prefix: r, frame: `in {"type":"prompt","id":"1"}`, code: "opi.missing-field"},
		{name: "continue message not a string", prefix: r, frame: `in {"type":"continue","message":["go"]}`, code: "opi.wrong-type"},
		{name: "steer without message", prefix: r, frame: `in {"type":"steer"}`, code: "opi.missing-field"},
		{name: "follow_up without message", prefix: r, frame: `in {"type":"follow_up","id":"f"}`, code: "opi.missing-field"},
		{name: "numeric id", prefix: r, frame: `in {"type":"abort","id":1}`, code: "opi.wrong-type"},
		{name: "set_model pi style", prefix: r, frame: `in {"type":"set_model","provider":"anthropic","modelId":"claude"}`, code: "opi.missing-field"},
		{name: "set_thinking_level without level", prefix: r, frame: `in {"type":"set_thinking_level"}`, code: "opi.missing-field"},
		{name: "set_thinking_level xhigh", prefix: r, frame: `in {"type":"set_thinking_level","level":"xhigh"}`, code: "opi.unsupported-level", sev: SevWarning},
		{name: "extension_command without args", prefix: r, frame: `in {"type":"extension_command","name":"lint"}`, code: "opi.missing-field"},
		{name: "extension_command name a number", prefix: r, frame: `in {"type":"extension_command","name":1,"args":null}`, code: "opi.wrong-type"},
		// responses
		{name: "response without success", prefix: append(r, `in {"type":"abort","id":"1"}`), frame: `out {"type":"response","command":"abort","id":"1"}`, code: "opi.missing-field"},
		{name: "response without command", prefix: append(r, `in {"type":"abort","id":"1"}`), frame: `out {"type":"response","success":true,"id":"1"}`, code: "opi.missing-field"},
		{name: "response id null", prefix: r, frame: `out {"type":"response","command":"abort","success":true,"id":null}`, code: "opi.wrong-type"},
		{name: "response error null", prefix: r, frame: `out {"type":"response","command":"abort","success":false,"error":null}`, code: "opi.wrong-type"},
		{name: "failure without error", prefix: r, frame: `out {"type":"response","command":"compact","success":false}`, code: "opi.response-inconsistent", sev: SevWarning},
		{name: "success with error", prefix: r, frame: `out {"type":"response","command":"abort","success":true,"error":"x"}`, code: "opi.response-inconsistent", sev: SevWarning},
		{name: "parse response with id", prefix: r, frame: `out {"type":"response","command":"parse","success":false,"id":"p","error":"failed to parse command"}`, code: "opi.response-inconsistent", sev: SevWarning},
		{name: "unknown error_code", prefix: r, frame: `out {"type":"response","command":"prompt","success":false,"error":"busy","error_code":"busy"}`, code: "opi.unknown-error-code", sev: SevWarning},
		{name: "set_model data without model", prefix: append(r, `in {"type":"set_model","id":"m","model":"a:b"}`), frame: `out {"type":"response","command":"set_model","success":true,"id":"m","data":{"name":"a:b"}}`, code: "opi.response-body", sev: SevWarning},
		{name: "compact data tokens negative", prefix: append(r, `in {"type":"compact","id":"c"}`), frame: `out {"type":"response","command":"compact","success":true,"id":"c","data":{"summary":"s","first_kept_entry_id":"e","tokens_before":-1,"tokens_after":0}}`, code: "opi.response-body", sev: SevWarning},
		// events
		{name: "snake_case event name", prefix: r, frame: `out {"type":"agent_start"}`, code: "opi.unknown-type"},
		{name: "AgentEnd messages not an array", prefix: r, frame: `out {"type":"AgentEnd","messages":{}}`, code: "opi.wrong-type"},
		{name: "AgentMessage unknown type", prefix: r, frame: `out {"type":"MessageStart","message":{"type":"Bash","command":"ls"}}`, code: "opi.invalid-value"},
		{name: "Llm message unknown role", prefix: r, frame: `out {"type":"MessageStart","message":{"type":"Llm","role":"system","content":[]}}`, code: "opi.invalid-value"},
		{name: "user message without timestamp", prefix: r, frame: `out {"type":"MessageEnd","message":{"type":"Llm","role":"user","content":[{"type":"text","text":"x"}]}}`, code: "opi.missing-field"},
		{name: "assistant api unknown", prefix: r, frame: `out {"type":"MessageEnd","message":{"type":"Llm","role":"assistant","content":[],"api":"anthropic-messages","provider":"p","model":"m","usage":{"input_tokens":1,"output_tokens":1},"stop_reason":"stop","timestamp_ms":1}}`, code: "opi.invalid-value"},
		{name: "stop_reason camelCase", prefix: r, frame: `out {"type":"MessageEnd","message":{"type":"Llm","role":"assistant","content":[],"api":"Google","provider":"p","model":"m","usage":{"input_tokens":1,"output_tokens":1},"stop_reason":"toolUse","timestamp_ms":1}}`, code: "opi.invalid-value"},
		{name: "image media type", prefix: r, frame: `out {"type":"MessageStart","message":{"type":"Llm","role":"user","content":[{"type":"image","source":{"type":"url","url":"u"},"media_type":"image/bmp"}],"timestamp_ms":1}}`, code: "opi.invalid-value"},
		{name: "image bytes not u8", prefix: r, frame: `out {"type":"MessageStart","message":{"type":"Llm","role":"user","content":[{"type":"image","source":{"type":"bytes","data":["a"]},"media_type":"image/png"}],"timestamp_ms":1}}`, code: "opi.wrong-type"},
		{name: "tool_call arguments an object", prefix: r, frame: `out {"type":"MessageEnd","message":{"type":"Llm","role":"assistant","content":[{"type":"tool_call","tool_call":{"id":"t","name":"n","arguments":{"a":1}}}],"api":"Mistral","provider":"p","model":"m","usage":{"input_tokens":1,"output_tokens":1},"stop_reason":"stop","timestamp_ms":1}}`, code: "opi.wrong-type"},
		{name: "MessageUpdate without assistant_event", prefix: r, frame: `out {"type":"MessageUpdate","message":` + llm + `}`, code: "opi.missing-field"},
		{name: "stream event camelCase field", prefix: r, frame: `out {"type":"MessageUpdate","message":` + llm + `,"assistant_event":{"type":"text_delta","contentIndex":0,"delta":"x","partial":` + asst + `}}`, code: "opi.missing-field"},
		{name: "stream event unknown", prefix: r, frame: `out {"type":"MessageUpdate","message":` + llm + `,"assistant_event":{"type":"toolcall_delta","content_index":0,"delta":"x","partial":` + asst + `}}`, code: "opi.invalid-value"},
		{name: "done without message", prefix: r, frame: `out {"type":"MessageUpdate","message":` + llm + `,"assistant_event":{"type":"done","reason":"stop"}}`, code: "opi.missing-field"},
		{name: "ToolExecutionEnd without is_error", prefix: r, frame: `out {"type":"ToolExecutionEnd","tool_call_id":"t","tool_name":"n","result":"r","details":null}`, code: "opi.missing-field"},
		{name: "ToolExecutionStart camelCase", prefix: r, frame: `out {"type":"ToolExecutionStart","toolCallId":"t","toolName":"n","args":{}}`, code: "opi.missing-field"},
		{name: "QueueUpdate steering not strings", prefix: r, frame: `out {"type":"QueueUpdate","steering":[1],"follow_up":[]}`, code: "opi.wrong-type"},
		{name: "AutoRetryStart attempt negative", prefix: r, frame: `out {"type":"AutoRetryStart","attempt":-1,"max_attempts":3,"delay_ms":1,"error_message":"e"}`, code: "opi.invalid-value"},
		{name: "AutoRetryEnd without success", prefix: r, frame: `out {"type":"AutoRetryEnd","attempt":1,"final_error":null}`, code: "opi.missing-field"},
		{name: "CompactionStart bad reason", prefix: r, frame: `out {"type":"CompactionStart","reason":"auto"}`, code: "opi.invalid-value"},
		{name: "CompactionEnd without aborted", prefix: r, frame: `out {"type":"CompactionEnd","reason":"manual","result":null,"error_message":null}`, code: "opi.missing-field"},
		{name: "SessionPersistError without message", prefix: r, frame: `out {"type":"SessionPersistError"}`, code: "opi.missing-field"},
		{name: "run_summary counts not integers", prefix: r, frame: `out {"type":"run_summary","diagnostics":{"info":"1","warning":0,"error":0}}`, code: "opi.wrong-type"},
		{name: "TurnEnd tool_results wrong role shape", prefix: r, frame: `out {"type":"TurnEnd","message":` + llm + `,"tool_results":[{"tool_call_id":"t","tool_name":"n","content":[],"is_error":"no","timestamp_ms":1}]}`, code: "opi.wrong-type"},
		// session rules
		{name: "response to an unknown id", prefix: r, frame: `out {"type":"response","command":"abort","success":true,"id":"ghost"}`, code: CodeUnknownResponseID},
		{name: "duplicate in-flight id", prefix: append(r, `in {"type":"session_info","id":"d"}`), frame: `in {"type":"trace","id":"d"}`, code: CodeDuplicateID},
		{name: "command unanswered at exit", prefix: r, frame: `in {"type":"session_info","id":"u"}`, code: CodeUnanswered, sev: SevWarning},
		{name: "log line on stdout", prefix: r, frame: `out warning: config not found`, code: CodeNonJSONStdout},
		{name: "ANSI before JSON", prefix: r, frame: "out \x1b[0m{\"type\":\"AgentStart\"}", code: CodeANSIBeforeJSON},
		{name: "non-JSON from the parent", prefix: r, frame: `in garbage`, code: CodeNonJSONStdin, sev: SevWarning},
	}
	testBroken(t, opiProto{}, cases)
}

func TestOpiClassify(t *testing.T) {
	p := opiProto{}
	cases := []struct {
		dir  Dir
		in   string
		want Info
	}{
		{FromChild, `{"type":"rpc_ready","schema_version":2,"mode":"rpc","version":"0.5.0"}`, Info{Kind: Handshake, Method: "rpc_ready"}},
		{FromParent, `{"type":"quit","id":"test-42"}`, Info{Kind: Request, Method: "quit", ID: `"test-42"`}},
		{FromParent, `{"type":"prompt","message":"hello"}`, Info{Kind: Request, Method: "prompt"}},
		{FromChild, `{"type":"response","command":"quit","success":true,"id":"test-42"}`, Info{Kind: Response, Method: "quit", ID: `"test-42"`}},
		{FromChild, `{"type":"response","command":"parse","success":false,"error":"e"}`, Info{Kind: Response, Method: "parse"}},
		{FromChild, `{"type":"TurnStart"}`, Info{Kind: Event, Method: "TurnStart"}},
	}
	for _, c := range cases {
		if got := p.Classify(c.dir, []byte(c.in)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.in, got, c.want)
		}
	}
}

package protocol

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// sessionCase is a whole session and every violation it must raise, each
// as "code@record" (End's findings carry the record of the frame they are
// about), in any order; nothing else may be reported.
type sessionCase struct {
	name  string
	steps []string
	want  []string
}

// wantSeverity is the severity each code in these tests must have
// (docs/protocols.md).
var wantSeverity = map[string]Severity{
	CodeUnknownResponseID: SevError,
	CodeDuplicateID:       SevError,
	CodeUnanswered:        SevWarning,
	CodeHandshakeMissing:  SevError,
	CodeHandshakeLate:     SevWarning,
	CodeHandshakeRepeated: SevWarning,
	"pi.null-id":          SevInfo,
	"pi.unknown-command":  SevWarning,
	"opi.unknown-type":    SevError,
	"opi.missing-field":   SevError,
}

func runSessionCases(t *testing.T, p Protocol, cases []sessionCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, _ := runSteps(p, mustSteps(t, c.steps...))
			got := make([]string, 0, len(vs))
			for _, v := range vs {
				got = append(got, fmt.Sprintf("%s@%d", v.Code, v.Record))
				if w, ok := wantSeverity[v.Code]; !ok {
					t.Errorf("unexpected code %s (add its severity to wantSeverity)", v.Code)
				} else if v.Severity != w {
					t.Errorf("%s has severity %s, want %s", v.Code, v.Severity, w)
				}
				if v.Message == "" {
					t.Errorf("%s has no message", v.Code)
				}
			}
			want := slices.Clone(c.want)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v:%s", got, want, fmtViolations(vs))
			}
		})
	}
}

func TestOpiQueuePairing(t *testing.T) {
	ready := opiReady
	resp := func(cmd string) string {
		return `out {"type":"response","command":"` + cmd + `","success":true}`
	}
	cases := []sessionCase{
		{"id-less commands answered in order", []string{ready,
			`in {"type":"steer","message":"a"}`,
			`in {"type":"steer","message":"b"}`,
			resp("steer"), resp("steer"),
		}, nil},
		{"different commands answered out of order", []string{ready,
			`in {"type":"steer","message":"a"}`,
			`in {"type":"follow_up","message":"b"}`,
			resp("follow_up"), resp("steer"),
		}, nil},
		{"id and no id for the same command", []string{ready,
			`in {"type":"abort","id":"a1"}`,
			`in {"type":"abort"}`,
			resp("abort"),
			`out {"type":"response","command":"abort","success":true,"id":"a1"}`,
		}, nil},
		{"null id is no id", []string{ready,
			`in {"type":"abort","id":null}`,
			resp("abort"),
		}, nil},
		// FIFO: the one answer closes the older command, the newer (record 3)
		// is left unanswered.
		{"first in, first out", []string{ready,
			`in {"type":"steer","message":"a"}`,
			`in {"type":"steer","message":"b"}`,
			resp("steer"),
		}, []string{CodeUnanswered + "@3"}},
		{"id-less command never answered", []string{ready,
			`in {"type":"compact"}`,
		}, []string{CodeUnanswered + "@2"}},
		{"id-less answer to nothing", []string{ready,
			resp("steer"),
		}, []string{CodeUnknownResponseID + "@2"}},
		{"id-less answer to a command sent with an id", []string{ready,
			`in {"type":"abort","id":"a1"}`,
			resp("abort"),
		}, []string{CodeUnknownResponseID + "@3", CodeUnanswered + "@2"}},
		{"id-less answer names another command", []string{ready,
			`in {"type":"steer","message":"a"}`,
			resp("follow_up"),
		}, []string{CodeUnknownResponseID + "@3", CodeUnanswered + "@2"}},
		{"one answer too many", []string{ready,
			`in {"type":"abort"}`,
			resp("abort"), resp("abort"),
		}, []string{CodeUnknownResponseID + "@4"}},
		{"unknown command is answered by parse", []string{ready,
			`in {"type":"get_state"}`,
			`out {"type":"response","command":"parse","success":false,"error":"failed to parse command: unknown variant"}`,
		}, []string{"opi.unknown-type@2"}},
		{"parse answers a line that is not a command", []string{ready,
			`out {"type":"response","command":"parse","success":false,"error":"failed to parse command"}`,
		}, nil},
		// a known command missing a field is answered by parse too; the
		// Session cannot tell, so the command stays open (a warning).
		{"known command opi cannot parse", []string{ready,
			`in {"type":"steer"}`,
			`out {"type":"response","command":"parse","success":false,"error":"failed to parse command: missing field"}`,
		}, []string{"opi.missing-field@2", CodeUnanswered + "@2"}},
	}
	runSessionCases(t, opiProto{}, cases)
}

func TestPiQueuePairing(t *testing.T) {
	resp := func(cmd string) string {
		return `out {"type":"response","command":"` + cmd + `","success":true}`
	}
	cases := []sessionCase{
		{"id-less commands answered in order", []string{
			`in {"type":"steer","message":"a"}`,
			`in {"type":"steer","message":"b"}`,
			resp("steer"), resp("steer"),
		}, nil},
		{"different commands answered out of order", []string{
			`in {"type":"get_state"}`,
			`in {"type":"get_messages"}`,
			resp("get_messages"), resp("get_state"),
		}, nil},
		{"id and no id for the same command", []string{
			`in {"id":"g","type":"get_state"}`,
			`in {"type":"get_state"}`,
			`out {"id":"g","type":"response","command":"get_state","success":true}`,
			resp("get_state"),
		}, nil},
		{"null id echoed as null", []string{
			`in {"id":null,"type":"get_state"}`,
			`out {"id":null,"type":"response","command":"get_state","success":true}`,
		}, []string{"pi.null-id@1"}},
		{"first in, first out", []string{
			`in {"type":"steer","message":"a"}`,
			`in {"type":"steer","message":"b"}`,
			resp("steer"),
		}, []string{CodeUnanswered + "@2"}},
		{"id-less command never answered", []string{
			`in {"type":"get_commands"}`,
		}, []string{CodeUnanswered + "@1"}},
		{"id-less answer to nothing", []string{
			resp("get_state"),
		}, []string{CodeUnknownResponseID + "@1"}},
		{"id-less answer to a command sent with an id", []string{
			`in {"id":"s","type":"get_state"}`,
			resp("get_state"),
		}, []string{CodeUnknownResponseID + "@2", CodeUnanswered + "@1"}},
		{"one answer too many", []string{
			`in {"type":"abort"}`,
			resp("abort"), resp("abort"),
		}, []string{CodeUnknownResponseID + "@3"}},
		{"unknown command without id answered by name", []string{
			`in {"type":"bogus_cmd"}`,
			`out {"type":"response","command":"bogus_cmd","success":false,"error":"Unknown command: bogus_cmd"}`,
		}, []string{"pi.unknown-command@1"}},
		{"unknown command never answered", []string{
			`in {"id":"x","type":"bogus_cmd"}`,
		}, []string{"pi.unknown-command@1", CodeUnanswered + "@1"}},
		{"parse answers a line that was not JSON", []string{
			`out {"type":"response","command":"parse","success":false,"error":"Failed to parse command"}`,
		}, nil},
		{"dialog still paired by id", []string{
			`out {"type":"extension_ui_request","id":"u","method":"confirm","title":"t","message":"m"}`,
			`in {"type":"extension_ui_response","id":"u","confirmed":true}`,
		}, nil},
	}
	runSessionCases(t, piProto{}, cases)
}

// TestQueueMessages: a queued answer is classified with its
// command and the unanswered message says the request had no id.
func TestQueueMessages(t *testing.T) {
	vs, infos := runSteps(piProto{}, mustSteps(t,
		`in {"type":"cycle_model"}`,
		`out {"type":"response","command":"cycle_model","success":true,"data":null}`,
		`in {"type":"abort_bash"}`,
	))
	if infos[1].Kind != Response || infos[1].Method != "cycle_model" {
		t.Errorf("answer classified as %+v", infos[1])
	}
	if len(vs) != 1 || vs[0].Code != CodeUnanswered || vs[0].Record != 3 ||
		!strings.Contains(vs[0].Message, `"abort_bash"`) || !strings.Contains(vs[0].Message, "no id") {
		t.Errorf("want one unanswered abort_bash without id at record 3:%s", fmtViolations(vs))
	}
}

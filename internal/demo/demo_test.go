package demo

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestSession runs the client against the agent over in-memory pipes and
// checks both the human transcript and the wire.
func TestSession(t *testing.T) {
	for _, deny := range []bool{false, true} {
		toAgentR, toAgentW := io.Pipe()
		fromAgentR, fromAgentW := io.Pipe()
		var wire bytes.Buffer
		tee := io.TeeReader(fromAgentR, &wire)
		agentDone := make(chan error, 1)
		go func() {
			err := RunAgent(toAgentR, fromAgentW, AgentOptions{})
			fromAgentW.Close()
			agentDone <- err
		}()
		var out strings.Builder
		if err := RunClient(tee, toAgentW, ClientOptions{Out: &out, Deny: deny}); err != nil {
			t.Fatalf("client: %v", err)
		}
		if err := <-agentDone; err != nil {
			t.Fatalf("agent: %v", err)
		}
		want := []string{"connected to rpctap-demo-agent (ACP v1)", "session sess_demo_0001", "(agent reads README.md)", "turn ended: end_turn"}
		if deny {
			want = append(want, "-> reject", "left it unchanged")
		} else {
			want = append(want, "-> allow", "< I read README.md and added a greeting to it.")
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("deny=%v: transcript lacks %q:\n%s", deny, w, out.String())
			}
		}
		// Every frame the agent wrote is one JSON-RPC 2.0 object per line.
		methods := map[string]int{}
		for _, line := range strings.Split(strings.TrimSuffix(wire.String(), "\n"), "\n") {
			var m message
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" {
				t.Fatalf("bad frame %q: %v", line, err)
			}
			methods[m.Method]++
		}
		if methods["session/update"] < 8 || methods["session/request_permission"] != 1 || methods["fs/read_text_file"] != 1 {
			t.Errorf("unexpected agent frames: %v", methods)
		}
	}
}

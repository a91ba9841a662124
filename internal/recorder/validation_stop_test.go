package recorder

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

// Issue 20 item 8: once validation stopped (the validator fell behind under
// a burst), the end of the session must not bring findings the validator
// could not know: requests answered after the stop are not unanswered.
func TestValidationStoppedNoEndFindings(t *testing.T) {
	w := &memWriter{}
	release := make(chan struct{})
	r, _ := newTestRecorder(t, w, WithProtocol("mcp", true), func(o *Options) {
		// The validator is stuck (a slow machine, a burst) until the
		// session is over, so the recorder stops validating.
		o.validatorWait = func() { <-release }
	})
	ft := &fakeTap{}
	pad := strings.Repeat("x", 900)
	send := func(s tap.Stream, line string) { r.Observe(ft.chunk(s, []byte(line+"\n"))) }
	send(tap.Stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	send(tap.Stdout, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`)
	send(tap.Stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 1
	for block := 0; block < 100; block++ {
		// 64 requests in flight, then their answers.
		for i := 0; i < 64; i++ {
			send(tap.Stdin, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"s":"%s"}}}`, id+i, pad))
		}
		for i := 0; i < 64; i++ {
			send(tap.Stdout, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}]}}`, id+i, pad))
		}
		id += 64
	}
	close(release)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	stopped, unanswered, end := 0, 0, 0
	for _, rec := range w.records() {
		if rec.K != cassette.KindViolation {
			continue
		}
		switch rec.Code {
		case "recorder.validation-stopped":
			stopped++
		case protocol.CodeUnanswered:
			unanswered++
		default:
			end++
		}
	}
	if stopped != 1 {
		t.Fatalf("%d validation-stopped records, want 1: the test did not make the validator fall behind", stopped)
	}
	if unanswered > 0 || end > 0 {
		t.Errorf("%d session.unanswered and %d other findings after validation stopped; every request was answered", unanswered, end)
	}
}

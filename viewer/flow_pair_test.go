package viewer

import (
	"strings"
	"testing"
)

// TestFlowsPairLikeTheList: a flow's response is the one the Store paired
// with its request (the list's LATENCY), also where ids do not say it:
// opi commands without an id are answered by command in order, and the
// same id on two connections (a socket session) names two requests.
func TestFlowsPairLikeTheList(t *testing.T) {
	b := newRB("opi")
	b.at(ms).in(`{"type":"get_state"}`)                                                     // #1
	b.at(ms).in(`{"type":"get_state"}`)                                                     // #2
	b.at(5 * ms).out(`{"type":"response","command":"get_state","success":true}`)            // #3 answers #1
	b.at(7 * ms).out(`{"type":"response","command":"get_state","success":true}`)            // #4 answers #2
	b.at(ms).in(`{"type":"prompt","message":"hi"}`)                                         // #5
	b.at(ms).out(`{"type":"response","command":"prompt","success":false,"error":"no key"}`) // #6 answers #5
	h := newHarness(t, NewMemSource(b.recs...), Options{})
	h.keys("o")
	h.settle()
	got := map[uint64]uint64{}
	for _, f := range h.app.flows {
		got[f.First] = f.Response
		if p, ok := h.app.store.Pair(int(f.First)); f.Response != 0 && (!ok || uint64(p) != f.Response) {
			t.Errorf("flow #%d ends at #%d, the list pairs it with #%d (%v)", f.First, f.Response, p, ok)
		}
	}
	want := map[uint64]uint64{1: 3, 2: 4, 5: 6}
	for req, resp := range want {
		if got[req] != resp {
			t.Errorf("flow of #%d: response #%d, want #%d (flows %v)", req, got[req], resp, got)
		}
	}
	if len(h.app.flows) != 3 {
		t.Errorf("%d flows, want 3 (each answer in its request's flow): %+v", len(h.app.flows), h.app.flows)
	}
	for _, f := range h.app.flows {
		if f.First == 5 && !f.Error {
			t.Error("the failed prompt's flow is not marked as an error")
		}
	}

	// The same id on two connections.
	c := newRB("jsonrpc")
	for conn := 1; conn <= 2; conn++ {
		c.at(ms).in(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		c.recs[len(c.recs)-1].Conn = conn
	}
	c.at(ms).out(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	c.recs[len(c.recs)-1].Conn = 2
	c.at(ms).out(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	c.recs[len(c.recs)-1].Conn = 1
	h = newHarness(t, NewMemSource(c.recs...), Options{})
	h.keys("o")
	h.settle()
	got = map[uint64]uint64{}
	for _, f := range h.app.flows {
		got[f.First] = f.Response
	}
	if got[1] != 4 || got[2] != 3 {
		t.Errorf("flows over two connections: %v, want #1 answered by #4 (conn 1), #2 by #3 (conn 2)", got)
	}
}

// TestFlowKeepsCountOfLongStreams: a prompt answered in 120 chunks is one
// flow that counts them all but remembers only the first
// flowStreamedKept; the table and the detail say 120.
func TestFlowKeepsCountOfLongStreams(t *testing.T) {
	b := newRB("acp")
	b.at(ms).in(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"go"}]}}`)
	for i := range 120 {
		b.at(ms).out(sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"w%d "}}}}`, i))
	}
	b.at(ms).out(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	h := newHarness(t, NewMemSource(b.recs...), Options{})
	h.keys("o")
	h.settle()
	if len(h.app.flows) != 1 {
		t.Fatalf("%d flows, want 1", len(h.app.flows))
	}
	f := h.app.flows[0]
	if f.StreamedN != 120 || len(f.Streamed) != flowStreamedKept || f.Response != 122 {
		t.Errorf("flow: %d streamed (%d kept), response #%d; want 120 (%d kept), #122", f.StreamedN, len(f.Streamed), f.Response, flowStreamedKept)
	}
	if row := h.screen(); !strings.Contains(row, " 120 ") {
		t.Errorf("the STREAMED column does not say 120:\n%s", row)
	}
	h.app.flowTable.Select(1, 0)
	h.keys("<enter>")
	if d := h.app.text.GetText(true); !strings.Contains(d, "streamed: 120 notification(s)") || !strings.Contains(d, "… 70 more") {
		t.Errorf("flow detail:\n%s", d)
	}
}

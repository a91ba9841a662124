package replay

import (
	"encoding/json"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

// TestStepperUsesRecordedKinds: for a protocol whose recorded classification
// is the wire's own (JSON-RPC, DAP), replay takes kind, method and id from
// the record instead of scanning the frame again; for the event-style
// protocols it classifies by its own rules.
func TestStepperUsesRecordedKinds(t *testing.T) {
	frame := func(d cassette.Dir, body, kind, method, id string) cassette.Record {
		r := cassette.NewLineRecord(cassette.KindFrame, d, []byte(body), "\n")
		r.Kind, r.Method = kind, method
		if id != "" {
			r.ID = json.RawMessage(id)
		}
		return r
	}
	recs := []cassette.Record{
		// The record says method "stored/name" (a later recorder's answer);
		// the frame's bytes say "x". Replay must believe the record.
		frame(dirIn, `{"jsonrpc":"2.0","id":7,"method":"x"}`, "request", "stored/name", "7"),
		frame(dirOut, `{"jsonrpc":"2.0","id":7,"result":{}}`, "response", "stored/name", "7"),
	}
	for i := range recs {
		recs[i].N = uint64(i + 1)
	}
	sp := newStepper(&sliceSource{recs: recs}, 0, dialectFor("lsp"), roleChild)
	req, resp := sp.next(), sp.next()
	if req == nil || resp == nil {
		t.Fatal("steps missing")
	}
	if req.frame.Method != "stored/name" || req.frame.Kind != kindRequest || req.frame.ID != "7" || !req.stored {
		t.Errorf("request step %+v: not the recorded classification", req.frame)
	}
	if resp.pair != req || resp.frame.Method != "stored/name" {
		t.Errorf("the response was not paired with its request: pair %v method %q", resp.pair, resp.frame.Method)
	}
	// synaps: an error with an id answers its command for replay, whatever
	// the session rules stored.
	recs = []cassette.Record{frame(dirOut, `{"type":"error","id":"3","message":"no"}`, "event", "error", `"3"`)}
	recs[0].N = 1
	st := newStepper(&sliceSource{recs: recs}, 0, dialectFor("synaps"), roleChild).next()
	if st == nil || st.stored || st.frame.Kind != kindResponse {
		t.Errorf("synaps error step %+v: want replay's own classification (a response)", st)
	}
}

package cassette

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestInterceptFieldsRoundTrip: the format 1.2 members of an intercept
// event (act, held, bp, orig or orig_text, ref) and the header's control
// survive encoding and decoding, by the fast decoder and by encoding/json.
func TestInterceptFieldsRoundTrip(t *testing.T) {
	for _, r := range []Record{
		{N: 5, T: 9, K: KindEvent, D: DirOut, Ev: EventIntercept, Act: "edit", Held: 1500000, BP: "1 m:tools/call",
			Orig: json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{}}`), Ref: 4},
		{N: 6, T: 10, K: KindEvent, D: DirIn, Ev: EventIntercept, Act: "drop", BP: "2 dir:in", OrigText: "not json \x01"},
	} {
		line := r.AppendJSON(nil)
		var back Record
		if err := back.UnmarshalJSON(line); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if back.Act != r.Act || back.Held != r.Held || back.BP != r.BP || !bytes.Equal(back.Orig, r.Orig) || back.OrigText != r.OrigText || back.Ref != r.Ref || back.D != r.D {
			t.Errorf("round trip of %s gave %+v", line, back)
		}
		var slow wire
		if err := json.Unmarshal(line, &slow); err != nil || slow.Act != r.Act || slow.BP != r.BP {
			t.Errorf("encoding/json reads %s as %+v (%v)", line, slow, err)
		}
	}
	f := Record{N: 4, T: 8, K: KindFrame, D: DirOut, JSON: json.RawMessage(`{"a":1}`), EOL: "\n", Icpt: "edit"}
	var fb Record
	if err := fb.UnmarshalJSON(f.AppendJSON(nil)); err != nil || fb.Icpt != "edit" {
		t.Errorf("frame icpt: %+v %v", fb, err)
	}
	// A non-JSON original given as Orig is written as orig_text.
	r := Record{N: 1, K: KindEvent, Ev: EventIntercept, Act: "drop", Orig: json.RawMessage("{broken")}
	line := r.AppendJSON(nil)
	if !bytes.Contains(line, []byte(`"orig_text":"{broken"`)) {
		t.Errorf("non-JSON original: %s", line)
	}
	h := Record{N: 0, K: KindHeader, Header: &Header{Format: FormatName, Version: "1.2", Created: "x", Control: "/run/user/0/rpctap/s-1/ctl.sock"}}
	var back Record
	if err := back.UnmarshalJSON(h.AppendJSON(nil)); err != nil || back.Header == nil || back.Header.Control != h.Header.Control {
		t.Errorf("header control: %+v %v", back.Header, err)
	}
}

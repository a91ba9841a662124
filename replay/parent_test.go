package replay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// runPair runs a fake parent replaying parentRecs against a fake child
// replaying childRecs, all in-process.
func runPair(t *testing.T, parentRecs, childRecs []cassette.Record, opts ...Option) *Result {
	t.Helper()
	child, err := StartChild(FromRecords("child", childRecs), WithSpeed(0))
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	res, err := RunParent(context.Background(), FromRecords("parent", parentRecs), child.Stdout, child.Stdin, nil, opts...)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	return res
}

func TestParentAgainstSameRecording(t *testing.T) {
	res := runPair(t, acpRecording(t), acpRecording(t))
	if len(res.Divergences) != 0 || res.Matched != 12 || res.Sent != 4 {
		t.Fatalf("%+v", res)
	}
}

func TestParentReportsDifferentChild(t *testing.T) {
	var recs []cassette.Record
	for _, r := range acpRecording(t) {
		if r.JSON != nil {
			s := strings.Replace(string(r.JSON), "Perfect!", "Done.", 1)
			s = strings.ReplaceAll(s, "sess_d19697b4d00049da84f8ab34", "sess_live")
			r.JSON = []byte(s)
		}
		recs = append(recs, r)
	}
	res := runPair(t, acpRecording(t), recs)
	if len(res.Divergences) != 1 {
		t.Fatalf("%v", res.Divergences)
	}
	d := res.Divergences[0]
	if d.Kind != Mismatch || d.Record != 16 || len(d.Diff) != 1 || d.Diff[0].Path != "/params/update/content/text" {
		t.Fatalf("%+v", d)
	}
	// The child's session id differed: ignored, and carried into the
	// parent's session/prompt, which the fake child matched (no divergence
	// on its side either).
}

func TestParentTimesOutOnMissingChildFrame(t *testing.T) {
	var recs []cassette.Record
	for _, r := range acpRecording(t) {
		if r.JSON != nil && strings.Contains(string(r.JSON), `"id":2,"result"`) {
			continue // the child never answers session/new
		}
		recs = append(recs, r)
	}
	start := time.Now()
	res := runPair(t, acpRecording(t), recs, WithTimeout(100*time.Millisecond))
	if time.Since(start) < 100*time.Millisecond {
		t.Fatal("gave up before the timeout")
	}
	var late int
	for _, d := range res.Divergences {
		if d.Kind == Late && d.Record == 5 && d.Method == "session/new" {
			late++
		}
	}
	if late != 1 {
		t.Fatalf("%v", res.Divergences)
	}
}

// TestParentTextAfterEOFIsNotOwed: bytes from the child that are no
// message, recorded after its stdin closed, are the tail of a last write
// its exit cut short (gopls's last log line, now and then: a fresh-clone CI
// run failed verify with "1 recorded child frame(s) never sent: #25 text").
// A run without them is no difference; the same bytes before the close
// are still owed.
func TestParentTextAfterEOFIsNotOwed(t *testing.T) {
	rec := func(tail bool, before bool) []cassette.Record {
		b := replaytest.New("jsonrpc")
		b.Event(cassette.EventStart)
		b.In(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		b.Out(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		if before {
			b.Out(`Content-Len`)
		}
		b.Event(cassette.EventStdinEOF)
		if tail {
			b.Out(`Content-Len`)
		}
		return b.Exit(0).End()
	}
	res := runPair(t, rec(true, false), rec(false, false), WithTimeout(300*time.Millisecond))
	if len(res.Divergences) != 0 {
		t.Fatalf("a cut tail after the close counted: %v", res.Divergences)
	}
	res = runPair(t, rec(false, false), rec(true, false), WithTimeout(300*time.Millisecond))
	if len(res.Divergences) != 0 {
		t.Fatalf("a cut tail the live child wrote after the close counted: %v", res.Divergences)
	}
	res = runPair(t, rec(false, true), rec(false, false), WithTimeout(300*time.Millisecond))
	if len(res.Divergences) == 0 {
		t.Fatal("text the child wrote before its stdin closed is no longer owed")
	}
}

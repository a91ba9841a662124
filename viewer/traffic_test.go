package viewer

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

// trafficCassette writes a capture pair from testdata/traffic as a
// cassette, leaving the frames unclassified so that the viewer classifies
// them with the protocol package, as it does for cassettes recorded before
// a protocol was known.
func trafficCassette(t *testing.T, name, proto string) *IndexSource {
	t.Helper()
	recs := trafficRecords(t, name)
	recs[0].Header.Protocol = proto
	for i := range recs {
		if recs[i].K == cassette.KindFrame {
			recs[i].Kind, recs[i].Method, recs[i].ID = "", "", nil
		}
	}
	path := filepath.Join(t.TempDir(), name+".cassette")
	writeCassette(t, path, recs, true)
	src, err := OpenCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func TestTrafficACPGo(t *testing.T) {
	h := newHarness(t, trafficCassette(t, "acp-go", "acp"), Options{Name: "acp-go.cassette"})
	scr := h.golden("traffic-acp-go-list")
	for _, want := range []string{"initialize", "session/new", "session/prompt", "session/request_permission"} {
		if !strings.Contains(scr, want) {
			t.Errorf("list lacks %s", want)
		}
	}
	// The agent's request_permission (id 1) pairs with the client's answer,
	// not with the client's initialize (also id 1).
	h.keys("/m:request_permission<enter>")
	req := h.selected()
	h.keys("p")
	resp := h.selected()
	r, _ := h.app.store.Record(resp)
	if resp == req || r.D != cassette.DirIn || r.Kind != "response" {
		t.Errorf("p from the permission request #%d went to #%d (%s %s)", req, resp, r.D, r.Kind)
	}
	h.keys("t")
	h.golden("traffic-acp-go-transcript")
}

func TestTrafficMCPProgress(t *testing.T) {
	h := newHarness(t, trafficCassette(t, "mcp-progress", "mcp"), Options{Name: "mcp.cassette"})
	h.keys("s")
	scr := h.golden("traffic-mcp-stats")
	if !strings.Contains(scr, "tools/call") {
		t.Error("stats lack tools/call")
	}
	h.keys("t")
	if scr := h.screen(); !strings.Contains(scr, "· progress") {
		t.Errorf("transcript lacks folded progress:\n%s", scr)
	}
}

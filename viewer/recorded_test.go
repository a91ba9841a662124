package viewer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordedCassettes shows golden screens of cassettes recorded by
// `rpctap record` from the bundled demo and from the ACP Go SDK example
// peers, kept in testdata/ (cmd/rpctap's TestViewRealPeers with
// -record-view-testdata writes them).
func TestRecordedCassettes(t *testing.T) {
	for _, name := range []string{"demo", "acp-sdk"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name+".cassette")
			if _, err := os.Stat(path); err != nil {
				t.Skipf("no %s yet: record it with go test ./cmd/rpctap -run TestViewRealPeers -record-view-testdata", path)
			}
			src, err := OpenCassette(path)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			h := newHarness(t, src, Options{Name: name + ".cassette"})
			list := h.golden(name + "-list")
			if !strings.Contains(list, "session/prompt") {
				t.Errorf("list lacks session/prompt")
			}
			h.keys("/m:session/prompt<enter><enter>")
			h.golden(name + "-detail")
			h.keys("p")
			if r, _ := h.app.store.Record(h.selected()); r.Kind != "response" {
				t.Errorf("p from the prompt went to a %s", r.Kind)
			}
			h.keys("<esc>fm:session/update -chunks<enter>")
			h.golden(name + "-filter")
			h.keys("t")
			h.golden(name + "-transcript")
			h.keys("s")
			h.golden(name + "-stats")
		})
	}
}

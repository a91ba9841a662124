package viewer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

// writeCassette writes records (header first, as from rb) with
// cassette.Writer; end decides whether it is closed cleanly.
func writeCassette(t testing.TB, path string, recs []cassette.Record, end bool) {
	t.Helper()
	writeCassetteOpts(t, path, recs, end, &cassette.Options{BatchSize: 512})
}

func writeCassetteOpts(t testing.TB, path string, recs []cassette.Record, end bool, o *cassette.Options) {
	t.Helper()
	h := *recs[0].Header
	w, err := cassette.Create(path, h, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].K == cassette.KindEnd {
			continue
		}
		r := recs[i]
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if end {
		if err := w.CloseAt(recs[len(recs)-1].T); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestCassetteFileMatchesMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acp.cassette")
	writeCassette(t, path, acpSession(), true)
	src, err := OpenCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := newHarness(t, src, Options{})
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "list.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.screen(); got != string(want) {
		t.Errorf("the cassette file shows differently from the same records in memory:\n%s\nwant\n%s", got, want)
	}
	h.keys("Gkkkkkkk<enter>p")
	if h.selected() != 7 {
		t.Errorf("pair jump from the file's #17 went to #%d, want #7", h.selected())
	}
}

func TestTruncatedCassetteShowsTheCut(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.cassette")
	writeCassette(t, full, acpSession(), false)
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.cassette")
	if err := os.WriteFile(cut, data[:len(data)-7], 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := OpenCassette(cut)
	if err != nil {
		t.Fatalf("a truncated cassette must open: %v", err)
	}
	defer src.Close()
	h := newHarness(t, src, Options{})
	scr := h.screen()
	msg := src.Truncated()
	if !strings.HasPrefix(msg, "truncated after record") || !strings.Contains(scr, msg) {
		t.Errorf("title bar does not show the cut %q:\n%s", msg, scr)
	}
	if src.Len() < 2 {
		t.Errorf("only %d records before the cut", src.Len())
	}
}

func TestCorruptMiddleShowsRowsAndError(t *testing.T) {
	// Many small frames, then a flipped byte in the middle of the file.
	b := newRB("acp")
	for i := range 400 {
		b.at(ms).out(sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"n":%d,"pad":"%s"}}`, i, strings.Repeat("y", 200)))
	}
	b.end()
	// Small zstd frames (4 KiB): damage to one leaves the others readable.
	path := filepath.Join(t.TempDir(), "c.cassette")
	writeCassetteOpts(t, path, b.recs, true, &cassette.Options{BatchSize: 512, FrameSize: 4096})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(data) / 2; i < len(data)/2+64; i++ {
		data[i] ^= 0x55
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := OpenCassette(path)
	if err != nil {
		t.Skipf("the index refuses this damage at open (%v): rpctap view reports it with exit 4", err)
	}
	defer src.Close()
	h := newHarness(t, src, Options{})
	// Walk the whole list: every row draws, damaged ones say so.
	var sawBad bool
	for range src.Len() / 20 {
		h.keys("<pgdn>")
		if strings.Contains(h.screen(), "unreadable") {
			sawBad = true
		}
	}
	if got := h.app.store.Scanned(); got != src.Len() {
		t.Errorf("the analysis stopped at the damage: %d of %d records", got, src.Len())
	}
	if !sawBad {
		t.Errorf("damage in the middle shows no unreadable rows; title: %s", strings.SplitN(h.screen(), "\n", 2)[0])
	}
	// Rows after the damaged frame are still readable.
	h.keys("G")
	if scr := h.screen(); !strings.Contains(scr, "end of cassette") {
		t.Errorf("the end of the file is not shown after the damage:\n%s", scr)
	}
}

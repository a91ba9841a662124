package cassette

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
)

// countingReaderAt counts ReadAt calls: the footer's point is how few there are.
type countingReaderAt struct {
	ra    io.ReaderAt
	calls atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	return c.ra.ReadAt(p, off)
}

// A closed cassette with many frames ends with a footer; indexing through it
// gives exactly what following the chain of index frames gives, with a
// handful of reads instead of one per frame. A damaged footer is ignored.
func TestFooter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.cassette")
	writeMix(t, path, 3000, 7, &Options{FrameSize: 8 << 10})
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	size := st.Size()

	entries := readFooter(f, size)
	if len(entries) < footerMinFrames {
		t.Fatalf("footer holds %d index frames; want a footer for this %d-byte cassette", len(entries), size)
	}
	footerLen := 8 + int64(len(entries))*indexFrameSize + footerTrailerSize
	if last := entries[len(entries)-1]; last.Self+indexFrameSize != size-footerLen || last.Flags&flagEnd == 0 {
		t.Fatalf("last footer entry %+v does not end the data at %d", last, size-footerLen)
	}

	cf := &countingReaderAt{ra: f}
	viaFooter, err := BuildIndex(cf, size)
	if err != nil {
		t.Fatal(err)
	}
	footerReads := cf.calls.Load()
	// The same file without its footer: the chain is followed.
	cc := &countingReaderAt{ra: f}
	viaChain, err := BuildIndex(cc, size-footerLen)
	if err != nil {
		t.Fatal(err)
	}
	chainReads := cc.calls.Load()
	if !reflect.DeepEqual(viaFooter.Frames(), viaChain.Frames()) || viaFooter.Len() != viaChain.Len() || !viaFooter.Ended() {
		t.Fatalf("index via footer: %d frames, %d records, ended %v; via chain: %d frames, %d records",
			len(viaFooter.Frames()), viaFooter.Len(), viaFooter.Ended(), len(viaChain.Frames()), viaChain.Len())
	}
	if viaFooter.TailError() != nil || viaFooter.Truncated() != nil {
		t.Errorf("footer read as damage: %v / %v", viaFooter.TailError(), viaFooter.Truncated())
	}
	if footerReads > 8 || chainReads < int64(len(entries)) {
		t.Errorf("reads to index: %d via the footer, %d via the chain (%d frames)", footerReads, chainReads, len(entries))
	}
	t.Logf("%d frames: %d reads via the footer, %d via the chain", len(entries), footerReads, chainReads)

	// Every record reads back, and the streaming reader skips the footer.
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(t, r)
	r.Close()
	if err != io.EOF || uint64(len(recs)) != viaFooter.Len() {
		t.Fatalf("streaming read %d records then %v; the index has %d", len(recs), err, viaFooter.Len())
	}

	// A damaged footer (a byte of its first entry) is ignored: the chain
	// gives the same index, and nothing is reported as damage.
	b, _ := os.ReadFile(path)
	b[size-footerLen+8+40] ^= 0xFF
	bad := filepath.Join(t.TempDir(), "bad.cassette")
	os.WriteFile(bad, b, 0o600)
	if readFooter(bytesReaderAt(b), size) != nil {
		t.Fatal("a damaged footer was accepted")
	}
	x, err := OpenIndex(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if !reflect.DeepEqual(x.Frames(), viaChain.Frames()) || x.TailError() != nil {
		t.Errorf("with a damaged footer: %d frames (want %d), tail error %v", len(x.Frames()), len(viaChain.Frames()), x.TailError())
	}
}

// A footer cut while being written (rpctap killed inside Close's last
// write) hides nothing: every record reads back and nothing is reported as
// truncated, through the index and the stream alike.
func TestTornFooter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.cassette")
	writeMix(t, path, 3000, 7, &Options{FrameSize: 8 << 10})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := readFooter(bytesReaderAt(b), int64(len(b)))
	if entries == nil {
		t.Fatal("no footer")
	}
	start := entries[len(entries)-1].Self + indexFrameSize
	for _, cut := range []int64{start + 3, start + 8, start + 500, int64(len(b)) - 1} {
		torn := b[:cut]
		x, err := BuildIndex(bytesReaderAt(torn), cut)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if x.Truncated() != nil || x.TailError() != nil || !x.Ended() || x.Len() != 3002 {
			t.Errorf("cut at %d (footer at %d): truncated %v, damage %v, ended %v, %d records",
				cut, start, x.Truncated(), x.TailError(), x.Ended(), x.Len())
		}
		p := filepath.Join(t.TempDir(), "torn.cassette")
		os.WriteFile(p, torn, 0o600)
		r, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readAll(t, r)
		r.Close()
		if err != io.EOF || len(recs) != 3002 {
			t.Errorf("cut at %d: streaming read %d records, then %v", cut, len(recs), err)
		}
	}
}

// A small cassette gets no footer: the chain is a few reads anyway.
func TestNoFooterWhenSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.cassette")
	writeMix(t, path, 50, 7, nil)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if readFooter(bytesReaderAt(b), int64(len(b))) != nil {
		t.Error("a small cassette has a footer")
	}
}

func bytesReaderAt(b []byte) io.ReaderAt { return bytes.NewReader(b) }

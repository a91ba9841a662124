package cassette

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// flushPoint is the file size and record count after one flush.
type flushPoint struct {
	off     int64
	records uint64
}

// smallCassette writes a multi-frame cassette in memory and returns its
// bytes, the encoded records and the flush points.
func smallCassette(t testing.TB, n int) ([]byte, [][]byte, []flushPoint) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Argv: []string{"x"}}, &Options{FrameSize: 1500})
	if err != nil {
		t.Fatal(err)
	}
	points := []flushPoint{{0, 0}, {w.off, w.next}}
	g := newAgentMix(77)
	for i := 0; i < n; i++ {
		r := g.record()
		if i%5 == 1 {
			r = NewLineRecord(KindFrame, DirIn, []byte("not json \xff"), "")
			r.T = g.t
		}
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			points = append(points, flushPoint{w.off, w.next})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	points = append(points, flushPoint{w.off, w.next})
	data := buf.Bytes()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var encs [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		encs = append(encs, rec.AppendJSON(nil))
	}
	return data, encs, points
}

// TestTruncateEveryOffset cuts a multi-frame cassette at every byte: the
// streaming reader and the index return exactly the records whose data is
// complete (a prefix), and report the cut after the last of them.
func TestTruncateEveryOffset(t *testing.T) {
	data, encs, points := smallCassette(t, 40)
	if len(points) < 10 {
		t.Fatalf("only %d flushes", len(points))
	}
	prevN := 0
	for c := 0; c <= len(data); c++ {
		cut := data[:c]
		// Bounds from the flush points: everything flushed before the cut
		// is there; at most the batch being cut may also be (its blocks
		// can be complete before its frame end and index frame are).
		var lo, hi uint64
		for i, p := range points {
			if p.off <= int64(c) {
				lo = p.records
				hi = p.records
				if i+1 < len(points) {
					hi = points[i+1].records
				}
			}
		}
		r, err := NewReader(bytes.NewReader(cut))
		var got [][]byte
		if err == nil {
			for {
				rec, e := r.Next()
				if e != nil {
					err = e
					break
				}
				got = append(got, rec.AppendJSON(nil))
			}
		}
		n := uint64(len(got))
		switch {
		case c == 0:
			if err != ErrEmpty {
				t.Fatalf("cut 0: %v", err)
			}
		case c == len(data):
			if err != io.EOF || int(n) != len(encs) {
				t.Fatalf("whole file: %d records, %v", n, err)
			}
		default:
			var te *TruncatedError
			if !errors.As(err, &te) {
				if err == io.EOF && int(n) == len(encs) {
					break // only the last index frame is cut: the data is complete
				}
				t.Fatalf("cut %d: %T %v", c, err, err)
			}
			if te.Records != n {
				t.Fatalf("cut %d: error says %d records, %d returned", c, te.Records, n)
			}
		}
		if c > 0 && c < len(data) && (n < lo || n > hi) {
			t.Fatalf("cut %d: %d records, want %d..%d", c, n, lo, hi)
		}
		if int(n) < prevN {
			t.Fatalf("cut %d: %d records, fewer than the %d of a shorter cut", c, n, prevN)
		}
		prevN = int(n)
		for i := range got {
			if !bytes.Equal(got[i], encs[i]) {
				t.Fatalf("cut %d: record %d differs", c, i)
			}
		}
		// The index agrees with the streaming reader.
		x, err := BuildIndex(bytes.NewReader(cut), int64(c))
		if n == 0 {
			if err == nil {
				t.Fatalf("cut %d: index built without a header", c)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut %d: index: %v", c, err)
		}
		if x.Count() != n {
			t.Fatalf("cut %d: index has %d records, reader %d", c, x.Count(), n)
		}
		recs, err := x.Records(0, 1000)
		if err != nil || uint64(len(recs)) != n {
			t.Fatalf("cut %d: index Records: %d, %v", c, len(recs), err)
		}
		for i := range recs {
			if !bytes.Equal(recs[i].AppendJSON(nil), encs[i]) {
				t.Fatalf("cut %d: index record %d differs", c, i)
			}
		}
		if tr := x.Truncated(); (tr == nil) != (int(n) == len(encs)) || tr != nil && tr.Records != n {
			t.Fatalf("cut %d: index Truncated %v with %d records", c, tr, n)
		}
		if x.TailError() != nil {
			t.Fatalf("cut %d: TailError %v", c, x.TailError())
		}
		x.Close()
	}
}

func TestIndexRandomAccess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.cassette")
	const n = 20000
	writeMix(t, path, n, 9, &Options{FrameSize: 64 << 10})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	all, err := readAll(t, r)
	r.Close()
	if err != io.EOF {
		t.Fatal(err)
	}
	x, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	x.cache.max = 256 << 10 // force evictions
	if x.Count() != uint64(len(all)) || !x.Ended() || x.Truncated() != nil || x.TailError() != nil {
		t.Fatalf("len %d (want %d) ended %v trunc %v tail %v", x.Count(), len(all), x.Ended(), x.Truncated(), x.TailError())
	}
	if len(x.Frames()) < 20 {
		t.Fatalf("only %d frames", len(x.Frames()))
	}
	if h := x.Header(); h.Argv[0] != "agent" {
		t.Errorf("header %+v", h)
	}
	for _, from := range []uint64{0, 1, 17, n / 2, n - 3, n, n + 1, n + 5} {
		recs, err := x.Records(from, 40)
		if err != nil {
			t.Fatal(err)
		}
		want := max(0, min(40, len(all)-int(from)))
		if len(recs) != want {
			t.Fatalf("Records(%d, 40): %d records, want %d", from, len(recs), want)
		}
		for i := range recs {
			if !bytes.Equal(recs[i].AppendJSON(nil), all[int(from)+i].AppendJSON(nil)) {
				t.Fatalf("record %d differs", int(from)+i)
			}
		}
	}
	if x.cache.bytes > x.cache.max+(2<<20) {
		t.Errorf("cache holds %d bytes, bound %d", x.cache.bytes, x.cache.max)
	}
	// FindTime against a linear scan.
	for _, t0 := range []int64{-1, 0, all[1].T, all[1].T + 1, all[n/3].T, all[n/3].T + 1, all[n].T, all[n].T + 1} {
		want := uint64(len(all))
		for i, rec := range all {
			if rec.T >= t0 {
				want = uint64(i)
				break
			}
		}
		if got := x.FindTime(t0); got != want {
			t.Errorf("FindTime(%d) = %d, want %d", t0, got, want)
		}
	}
	if _, err := x.Record(uint64(len(all))); err == nil {
		t.Error("Record past the end succeeded")
	}
}

// TestIndexLive follows a cassette while it is written: each Refresh shows
// every flushed record, before any frame or the file is closed.
func TestIndexLive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cassette")
	w, err := Create(path, Header{}, &Options{FrameSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Count() != 1 || x.Truncated() == nil {
		t.Fatalf("fresh cassette: %d records, trunc %v", x.Count(), x.Truncated())
	}
	g := newAgentMix(9)
	var want [][]byte
	for step := 0; step < 60; step++ {
		for i := 0; i < 1+step%7; i++ {
			r := g.record()
			if err := w.Append(&r); err != nil {
				t.Fatal(err)
			}
			want = append(want, r.AppendJSON(nil))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		grew, err := x.Refresh()
		if err != nil || !grew {
			t.Fatalf("step %d: Refresh %v %v", step, grew, err)
		}
		if x.Count() != uint64(len(want))+1 {
			t.Fatalf("step %d: %d records, want %d", step, x.Count(), len(want)+1)
		}
		recs, err := x.Records(x.Count()-3, 3)
		if err != nil || len(recs) != 3 && len(want) >= 3 {
			t.Fatalf("step %d: tail %d %v", step, len(recs), err)
		}
		for i, rec := range recs {
			if !bytes.Equal(rec.AppendJSON(nil), want[len(want)-len(recs)+i]) {
				t.Fatalf("step %d: tail record differs", step)
			}
		}
		// The streaming reader sees the same live file.
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			if _, err := r.Next(); err != nil {
				var te *TruncatedError
				if !errors.As(err, &te) || te.Records != uint64(len(want)+1) {
					t.Fatalf("step %d: reader %v after %d", step, err, n)
				}
				break
			}
			n++
		}
		r.Close()
	}
	if grew, _ := x.Refresh(); grew {
		t.Error("Refresh without new data grew")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Refresh(); err != nil {
		t.Fatal(err)
	}
	if !x.Ended() || x.Truncated() != nil || x.Count() != uint64(len(want))+2 {
		t.Errorf("after close: ended %v trunc %v count %d", x.Ended(), x.Truncated(), x.Count())
	}
}

// TestIndexBadChain: a damaged index frame in the middle is found, the
// records before it stay available and the damage is reported.
func TestIndexBadChain(t *testing.T) {
	data, encs, _ := smallCassette(t, 40)
	x, err := BuildIndex(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	fr := x.Frames()
	mid := fr[len(fr)/2]
	bad := append([]byte{}, data...)
	bad[mid.Offset+mid.Len+20] ^= 1 // inside the index frame after the middle data frame
	x, err = BuildIndex(bytes.NewReader(bad), int64(len(bad)))
	if err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if !errors.As(x.TailError(), &ce) || ce.Offset != mid.Offset+mid.Len {
		t.Fatalf("TailError %v, want corruption at %d", x.TailError(), mid.Offset+mid.Len)
	}
	if x.Count() != mid.First+mid.Count {
		t.Errorf("%d records available, want %d", x.Count(), mid.First+mid.Count)
	}
	recs, err := x.Records(0, 1000)
	if err != nil || len(recs) != int(x.Count()) {
		t.Fatal(len(recs), err)
	}
	for i := range recs {
		if !bytes.Equal(recs[i].AppendJSON(nil), encs[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
	if _, err := BuildIndex(bytes.NewReader([]byte("nope, not this")), 14); err != ErrNotCassette {
		t.Errorf("foreign: %v", err)
	}
	if _, err := BuildIndex(bytes.NewReader(nil), 0); err != ErrEmpty {
		t.Errorf("empty: %v", err)
	}
	if _, err := OpenIndex(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestIndexConcurrent: a viewer reads while a follower refreshes and the
// recorder writes (run with -race).
func TestIndexConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cassette")
	w, err := Create(path, Header{}, &Options{FrameSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	done := make(chan struct{})
	errs := make(chan error, 2)
	go func() { // follower
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			if _, err := x.Refresh(); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() { // viewer
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			n := x.Len()
			recs, err := x.Records(n-min(n, 20), 20)
			if err != nil {
				errs <- err
				return
			}
			for i, r := range recs {
				if r.N != n-min(n, 20)+uint64(i) {
					errs <- errors.New("record out of place")
					return
				}
			}
			x.FindTime(int64(n) * 1000)
		}
	}()
	g := newAgentMix(11)
	for i := 0; i < 3000; i++ {
		r := g.record()
		w.Append(&r)
		if i%5 == 4 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close()
	close(done)
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	x.Refresh()
	if x.Len() != 3002 || !x.Ended() {
		t.Errorf("final: %d records, ended %v", x.Len(), x.Ended())
	}
}

// TestIndexTailEvicted: the open tail frame, evicted from a small cache, is
// decoded again from its complete blocks.
func TestIndexTailEvicted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cassette")
	w, err := Create(path, Header{}, &Options{FrameSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	g := newAgentMix(5)
	var want [][]byte
	for i := 0; i < 203; i++ {
		r := g.record()
		w.Append(&r)
		want = append(want, r.AppendJSON(nil))
		if i%2 == 1 {
			w.Flush()
		}
	}
	w.Flush()
	for !w.frameOpen { // leave the last frame open (no Close)
		r := g.record()
		w.Append(&r)
		want = append(want, r.AppendJSON(nil))
		w.Flush()
	}
	x, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fr := x.Frames()
	if fr[len(fr)-1].Closed {
		t.Fatal("the last frame should be open")
	}
	x.cache.max = 1 // keep one frame only
	for _, from := range []uint64{1, x.Len() - 1, 1, x.Len() - 2} {
		recs, err := x.Records(from, 1)
		if err != nil || len(recs) != 1 || !bytes.Equal(recs[0].AppendJSON(nil), want[from-1]) {
			t.Fatalf("Records(%d): %v %d", from, err, len(recs))
		}
	}
	if n := uint64(len(want) + 1); x.Len() != n || x.Truncated() == nil || x.Truncated().Records != n {
		t.Errorf("len %d trunc %v", x.Len(), x.Truncated())
	}
}

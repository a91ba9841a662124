package cassette

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzReader feeds arbitrary, truncated and corrupted files to the
// streaming reader and the index: they never panic, every error is one of
// the documented types, and the reader never misreports: read through
// every damaged range as rpctap's commands do, its records are numbered
// exactly as its damage reports account for (readThrough checks that),
// each re-encodes to one JSON line, and every record the index (the
// viewer's reader) can read from any frame is one the streaming reader
// returned too, byte for byte: going on past damage loses nothing that
// view shows.
func FuzzReader(f *testing.F) {
	for _, s := range readerSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, dmg, err := readThrough(t, data)
		if err != io.EOF {
			checkTyped(t, -1, err)
		}
		for n, line := range recs {
			var rec Record
			if err := rec.UnmarshalJSON(line); err != nil {
				t.Fatalf("record %d was returned but its line does not decode: %v", n, err)
			}
			enc := rec.AppendJSON(nil)
			if !json.Valid(enc) || bytes.IndexByte(enc, '\n') >= 0 {
				t.Fatalf("record re-encodes to %q", enc)
			}
		}
		for _, d := range dmg {
			if d.Error() == "" {
				t.Fatal("empty damage message")
			}
		}
		x, err := BuildIndex(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			checkTyped(t, -1, err)
			return
		}
		defer x.Close()
		clean := x.TailError() == nil
		var shown uint64
		for _, fr := range x.Frames() {
			got, err := x.Records(fr.First, int(fr.Count))
			if err != nil {
				checkTyped(t, -1, err)
				clean = false
				continue
			}
			for _, rec := range got {
				line, ok := recs[rec.N]
				if !ok {
					t.Fatalf("the index reads record %d, the streaming reader lost it (damage %v)", rec.N, dmg)
				}
				var mine Record
				if err := mine.UnmarshalJSON(line); err != nil || !bytes.Equal(mine.AppendJSON(nil), rec.AppendJSON(nil)) {
					t.Fatalf("record %d: the index and the streaming reader differ:\n%s\n%s", rec.N, rec.AppendJSON(nil), line)
				}
				shown++
			}
		}
		if clean && len(dmg) == 0 && shown != uint64(len(recs)) {
			t.Fatalf("index has %d records, reader %d", shown, len(recs))
		}
		x.FindTime(0)
		x.FindTime(1 << 62)
	})
}

// FuzzRecordRoundTrip: any line bytes survive encode -> decode -> Line(),
// and decoding any bytes as a record line never panics.
func FuzzRecordRoundTrip(f *testing.F) {
	for _, s := range lineCases {
		f.Add([]byte(s), uint8(0))
	}
	f.Add([]byte(`{"n":3,"t":1,"k":"frame","d":"in","text":"x","eol":""}`), uint8(1))
	f.Add([]byte(`{"n":4,"t":2,"k":"frame","d":"out","hdr":"Content-Length: 2\r\n\r\n","json":{},"eol":""}`), uint8(2))
	f.Add([]byte(`{"n":5,"t":2,"k":"frame","d":"in","hdr":"Content-Length: 9\r\n\u0000\r\n","b64":"/w==","eol":"","part":true}`), uint8(2))
	f.Add([]byte(`{"n":0,"t":0,"k":"header","format":"rpctap-cassette","version":"1.0"}`), uint8(2))
	f.Fuzz(func(t *testing.T, p []byte, sel uint8) {
		checkLineRoundTrip(t, p, []string{"\n", "\r\n", ""}[sel%3])
		var r Record
		if err := r.UnmarshalJSON(p); err == nil {
			enc := r.AppendJSON(nil)
			if !json.Valid(enc) || bytes.IndexByte(enc, '\n') >= 0 {
				t.Fatalf("decoded %q re-encodes to %q", p, enc)
			}
			var again Record
			if err := again.UnmarshalJSON(enc); err != nil {
				t.Fatalf("re-encoded %q does not decode: %v", enc, err)
			}
			if isLine(r.K) && !bytes.Equal(again.Line(), r.Line()) {
				t.Fatalf("line changed: %q -> %q", r.Line(), again.Line())
			}
		}
	})
}

// readerSeeds builds seed files from a real multi-frame cassette: whole, cut
// at several offsets (inside the signature, the header, a block, between
// frames, inside an index frame) and with flipped bytes.
func readerSeeds(t testing.TB) [][]byte {
	data, _, points := smallCassette(t, 12)
	seeds := [][]byte{data, nil, []byte("hello\n")}
	for _, c := range []int{3, 10, sigFrameSize, sigFrameSize + 20, len(data) / 3, len(data) / 2, len(data) - 50, len(data) - 1} {
		seeds = append(seeds, data[:c])
	}
	for _, p := range points[1:4] {
		seeds = append(seeds, data[:p.off], data[:p.off+5])
	}
	for _, off := range []int{6, sigFrameSize + 2, len(data) / 4, len(data) / 2, len(data) - 40, len(data) - 3} {
		b := append([]byte{}, data...)
		b[off] ^= 0x20
		seeds = append(seeds, b)
	}
	// Damage the reader goes on past: one bit in the middle, the magic, the
	// frame header and the first block header of a data frame, in its
	// index frame; two frames in a row; a damaged frame before a torn one.
	x, err := BuildIndex(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	fr := x.Frames()
	x.Close()
	flip := func(b []byte, offs ...int64) []byte {
		b = append([]byte{}, b...)
		for _, o := range offs {
			b[o] ^= 1 << (o % 8)
		}
		return b
	}
	for _, k := range []int{1, len(fr) / 2, len(fr) - 1} {
		f := fr[k]
		for _, o := range []int64{f.Offset + f.Len/2, f.Offset, f.Offset + 4, f.Offset + 6, f.Offset + f.Len - 1, f.Offset + f.Len + 40} {
			seeds = append(seeds, flip(data, o))
		}
	}
	a, b := fr[2], fr[3]
	seeds = append(seeds, flip(data, a.Offset+a.Len/2, b.Offset+b.Len/2))
	c := fr[len(fr)-2]
	seeds = append(seeds, flip(data[:c.Offset+c.Len-4], a.Offset+a.Len/2), flip(data[:c.Offset+c.Len-4], c.Offset+c.Len/2))
	return seeds
}

// TestWriteFuzzSeeds regenerates the committed seed corpus under
// testdata/fuzz when RPCTAP_WRITE_SEEDS=1; otherwise it checks that the
// corpus exists, so that `go test` runs the seeds as regression tests.
func TestWriteFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	if os.Getenv("RPCTAP_WRITE_SEEDS") != "1" {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(files) < 10 {
			t.Fatalf("seed corpus %s has %d files; run with RPCTAP_WRITE_SEEDS=1", dir, len(files))
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range readerSeeds(t) {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rdir := filepath.Join("testdata", "fuzz", "FuzzRecordRoundTrip")
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range lineCases {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nuint8(%d)\n", strconv.Quote(s), i%3)
		if err := os.WriteFile(filepath.Join(rdir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzFastDecode: the hand-written decoder agrees with encoding/json on
// every input it accepts.
func FuzzFastDecode(f *testing.F) {
	for _, s := range lineCases {
		r := NewLineRecord(KindFrame, DirIn, []byte(s), "\r\n")
		f.Add(r.AppendJSON(nil))
	}
	f.Add([]byte(`{"n":1,"t":-0,"k":"event","ev":"exit","exit":-3,"argv":["a","\ud83d\ude00","\ud800x"],"text":null}`))
	f.Add([]byte(`{"n":0,"t":0,"k":"header","format":"rpctap-cassette","version":"1.0","argv":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var w1, w2 wire
		if !fastDecode(b, &w1) {
			return
		}
		if err := json.Unmarshal(b, &w2); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", b, err)
		}
		j1, _ := json.Marshal(w1)
		j2, _ := json.Marshal(w2)
		if !bytes.Equal(j1, j2) || !bytes.Equal(w1.JSON, w2.JSON) || !bytes.Equal(w1.ID, w2.ID) {
			t.Fatalf("decoders differ on %q:\nfast %s\nslow %s", b, j1, j2)
		}
	})
}

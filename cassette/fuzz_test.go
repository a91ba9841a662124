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
// the documented types, every record they return re-encodes to one JSON
// line, and the two agree on how many records there are.
func FuzzReader(f *testing.F) {
	for _, s := range readerSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			checkTyped(t, -1, err)
		} else {
			for {
				rec, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					checkTyped(t, -1, err)
					break
				}
				enc := rec.AppendJSON(nil)
				if !json.Valid(enc) || bytes.IndexByte(enc, '\n') >= 0 {
					t.Fatalf("record re-encodes to %q", enc)
				}
				n++
			}
			r.Close()
		}
		x, err := BuildIndex(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			checkTyped(t, -1, err)
			return
		}
		defer x.Close()
		recs, err := x.Records(0, 1<<20)
		if err != nil {
			checkTyped(t, -1, err)
		}
		if err == nil && x.TailError() == nil && len(recs) != n {
			t.Fatalf("index has %d records, reader %d", len(recs), n)
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

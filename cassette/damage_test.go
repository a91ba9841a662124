package cassette

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// readThrough reads a cassette with the streaming reader the way rpctap's
// commands do: past every *DamageError to the end. It returns the records
// by number (their stored lines), the damage reports and the final error
// (io.EOF, a *TruncatedError, ...). It fails the test when the reader
// misreports: a record numbered other than the one the accounting expects
// (the one after the last record, or after the last damaged range), or a
// damaged range that does not start where the records stopped.
func readThrough(t testing.TB, data []byte) (map[uint64][]byte, []*DamageError, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	recs := map[uint64][]byte{}
	var dmg []*DamageError
	var next uint64
	toEnd := false
	for {
		rec, err := r.Next()
		var d *DamageError
		if errors.As(err, &d) {
			if d.First != next || d.End <= d.Offset || toEnd {
				t.Fatalf("damage report %+v after record %d (next expected %d, to end %v)", d, int64(next)-1, next, toEnd)
			}
			dmg = append(dmg, d)
			next = d.First + d.Lost
			toEnd = d.ToEnd
			continue
		}
		if err != nil {
			return recs, dmg, err
		}
		if rec.N != next || toEnd {
			t.Fatalf("record %d where %d was expected (to end %v)", rec.N, next, toEnd)
		}
		next = rec.N + 1
		recs[rec.N] = append([]byte(nil), r.Line()...)
	}
}

// TestDamageEveryFrame flips one bit in each data frame (and each index
// frame) of a multi-frame cassette in turn, at every third byte of the
// frame (every 11th with -short or -race): the streaming reader reports the damage once, with the offset of
// the damaged frame and how many records it lost, returns every record of
// every other frame byte for byte, never a wrong one, and ends cleanly at
// the end record (whose frame the index frame vouches for when the end
// record itself is lost).
func TestDamageEveryFrame(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.cassette")
	writeMix(t, path, 120, 4, &Options{FrameSize: 1500})
	good := readFile(t, path)
	want, dmg, err := readThrough(t, good)
	if err != io.EOF || len(dmg) != 0 {
		t.Fatalf("intact cassette: %v, damage %v", err, dmg)
	}
	x, err := BuildIndex(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	frames := x.Frames()
	x.Close()
	if len(frames) < 10 {
		t.Fatalf("only %d frames: the test needs a multi-frame cassette", len(frames))
	}
	flips, exact, harmless := 0, 0, 0
	stride := int64(3)
	if raceEnabled || testing.Short() {
		stride = 11 // the race detector makes each read ~10x slower
	}
	for k, f := range frames {
		idxEnd := f.Offset + f.Len + indexFrameSize // the frame's index frame ends here
		for off := f.Offset; off < idxEnd; off += stride {
			bad := append([]byte(nil), good...)
			bad[off] ^= 1 << (off % 8)
			flips++
			got, dmg, err := readThrough(t, bad)
			if k == 0 && off < f.Offset+f.Len {
				// The header frame: nothing can be read without it.
				var ce *CorruptError
				if err == nil || !errors.As(err, &ce) {
					t.Fatalf("flip at %d in the header frame: %v, want a *CorruptError", off, err)
				}
				continue
			}
			if err != io.EOF {
				t.Fatalf("frame %d, flip at %d: ends with %v, want io.EOF", k, off, err)
			}
			if len(dmg) == 0 && len(got) == len(want) {
				// A bit the decoder does not use (a padding bit of an
				// entropy-coded stream): the content and its checksum
				// are intact.
				for n, line := range want {
					if !bytes.Equal(got[n], line) {
						t.Fatalf("flip at %d: record %d differs and no damage was reported:\n%s\n%s", off, n, got[n], line)
					}
				}
				harmless++
				continue
			}
			if len(dmg) != 1 {
				t.Fatalf("frame %d, flip at %d: %d damage reports %v, want 1", k, off, len(dmg), dmg)
			}
			d := dmg[0]
			if d.Offset < f.Offset || d.Offset >= idxEnd || d.End > idxEnd+1 {
				t.Fatalf("frame %d [%d, %d), flip at %d: damage reported at %d-%d", k, f.Offset, idxEnd, off, d.Offset, d.End)
			}
			// Every record comes back except the lost ones, all of frame k.
			for n, line := range want {
				g, ok := got[n]
				if !ok {
					if n < f.First || n >= f.First+f.Count {
						t.Fatalf("frame %d, flip at %d: record %d of another frame lost", k, off, n)
					}
					continue
				}
				if !bytes.Equal(g, line) {
					t.Fatalf("flip at %d: record %d differs:\n%s\n%s", off, n, g, line)
				}
			}
			if lost := uint64(len(want) - len(got)); d.Lost != lost {
				t.Fatalf("frame %d, flip at %d: %d records lost, reported %d (%v)", k, off, lost, d.Lost, d)
			}
			if off >= f.Offset+f.Len {
				// An index frame: nothing is lost.
				if d.Lost != 0 || d.Offset != f.Offset+f.Len {
					t.Fatalf("flip at %d in the index frame at %d: %v", off, f.Offset+f.Len, d)
				}
				continue
			}
			if d.Offset == f.Offset && d.First == f.First && d.Lost == f.Count {
				exact++
			}
		}
	}
	// Most flips land in compressed data: the whole frame is lost and said
	// so exactly. (A flip in a frame header's checksum flag, say, loses
	// nothing: the frame still decodes, its 4 checksum bytes are the damage.)
	if exact < flips/3 {
		t.Errorf("only %d of %d flips reported exactly as the damaged frame's records", exact, flips)
	}
	t.Logf("%d frames, %d flips: %d reported as exactly the frame's records, %d harmless", len(frames), flips, exact, harmless)
}

// TestDamageConsecutiveFrames: two damaged frames in a row are one range;
// two apart are two, each reported before the records that follow it.
func TestDamageConsecutiveFrames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.cassette")
	writeMix(t, path, 120, 4, &Options{FrameSize: 1500})
	good := readFile(t, path)
	x, err := BuildIndex(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	fr := x.Frames()
	x.Close()
	mid := func(f FrameInfo) int64 { return f.Offset + f.Len/2 }

	bad := append([]byte(nil), good...)
	bad[mid(fr[3])] ^= 0x10
	bad[mid(fr[4])] ^= 0x10
	_, dmg, err := readThrough(t, bad)
	if err != io.EOF || len(dmg) != 1 {
		t.Fatalf("two adjacent frames: %v, %v", err, dmg)
	}
	if d := dmg[0]; d.Offset != fr[3].Offset || d.First != fr[3].First || d.Lost != fr[3].Count+fr[4].Count || d.End != fr[4].Offset+fr[4].Len {
		t.Fatalf("two adjacent frames: %+v; want offset %d, records %d+%d from %d", d, fr[3].Offset, fr[3].Count, fr[4].Count, fr[3].First)
	}

	bad = append([]byte(nil), good...)
	bad[mid(fr[2])] ^= 0x10
	bad[mid(fr[6])] ^= 0x10
	_, dmg, err = readThrough(t, bad)
	if err != io.EOF || len(dmg) != 2 || dmg[0].Offset != fr[2].Offset || dmg[1].Offset != fr[6].Offset {
		t.Fatalf("two frames apart: %v, %v", err, dmg)
	}
}

// TestDamageTail: damage in the open frame of a cassette whose recorder was
// killed (no index frame after it) runs to the end of the file: reported
// once, with the number of the first record lost and "to the end".
func TestDamageTail(t *testing.T) {
	data, _, _ := smallCassette(t, 40)
	x, err := BuildIndex(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	fr := x.Frames()
	x.Close()
	// Cut the file inside its last frame but one: no checksum, no index
	// frame, as a recorder killed in the middle of a write leaves it.
	last := fr[len(fr)-2]
	torn := append([]byte(nil), data[:last.Offset+last.Len-4]...)
	recs, dmg, err := readThrough(t, torn)
	var te *TruncatedError
	if !errors.As(err, &te) || len(dmg) != 0 || uint64(len(recs)) != last.First+last.Count {
		t.Fatalf("torn tail: %v, %v, %d records; want a cut after record %d", err, dmg, len(recs), last.First+last.Count-1)
	}
	torn[last.Offset] ^= 0x01 // its magic
	recs, dmg, err = readThrough(t, torn)
	if err != io.EOF || len(dmg) != 1 || !dmg[0].ToEnd || dmg[0].First != last.First || dmg[0].Offset != last.Offset || dmg[0].End != int64(len(torn)) {
		t.Fatalf("damaged torn tail: %v, %+v", err, dmg)
	}
	if uint64(len(recs)) != last.First {
		t.Fatalf("damaged torn tail: %d records, want the %d before the damaged frame", len(recs), last.First)
	}
	if msg := dmg[0].Error(); !strings.Contains(msg, "every record from") || !strings.Contains(msg, "to the end of the file") {
		t.Errorf("message %q", msg)
	}
}

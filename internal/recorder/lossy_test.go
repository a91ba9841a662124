package recorder

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/tap"
)

// burst is a parent that floods the child with small requests, cut into
// chunks at arbitrary places (a read returns what the pipe holds, not whole
// lines), with the child's small answers now and then.
type burst struct {
	in, out []byte
	sent    map[cassette.Dir]map[string]bool // every line each side sent
	chunks  []tap.Chunk
}

func makeBurst(inBytes int) *burst {
	b := &burst{sent: map[cassette.Dir]map[string]bool{cassette.DirIn: {}, cassette.DirOut: {}}}
	rng := rand.New(rand.NewSource(7))
	var seq uint64
	add := func(st tap.Stream, d []byte) {
		seq++
		b.chunks = append(b.chunks, tap.Chunk{Stream: st, Seq: seq, T: int64(seq) * 1000, Data: d})
	}
	for i := 0; len(b.in) < inBytes; i++ {
		l := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"n%d","arguments":{"k":"%s"}}}`+"\n",
			i, i, bytes.Repeat([]byte{'a' + byte(i%26)}, rng.Intn(60)))
		b.in = append(b.in, l...)
		b.sent[cassette.DirIn][l[:len(l)-1]] = true
	}
	for off := 0; off < len(b.in); {
		n := min(len(b.in)-off, 1+rng.Intn(3000))
		add(tap.Stdin, b.in[off:off+n])
		off += n
		if rng.Intn(4) == 0 {
			l := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`+"\n", len(b.chunks))
			b.out = append(b.out, l...)
			b.sent[cassette.DirOut][l[:len(l)-1]] = true
			add(tap.Stdout, []byte(l))
		}
	}
	return b
}

// joinedFrames returns the frames of direction d as a reader sees them: a
// part is joined with the records of d that follow it, as check and replay
// join them.
func joinedFrames(recs []cassette.Record, d cassette.Dir) []string {
	var out []string
	var part []byte
	inPart := false
	for i := range recs {
		r := &recs[i]
		if r.K != cassette.KindFrame || r.D != d {
			continue
		}
		part = append(part, r.Payload()...)
		inPart = r.Part
		if !r.Part {
			out = append(out, string(part))
			part = part[:0]
		}
	}
	if inPart {
		out = append(out, string(part))
	}
	return out
}

// Issue 20 item 7: record --lossy under a burst of small requests through a
// slow sink. More than 4,096 gaps pile up waiting for room in the ctl pipe;
// every gap must still be recorded on the stream it happened on with its
// exact byte count, and no recorded frame may join bytes from both sides of
// a gap (a frame the parent never sent).
func TestSinkLossyBurstGapsOnTheirStream(t *testing.T) {
	b := makeBurst(12 << 20)
	path := filepath.Join(t.TempDir(), "burst.cassette")
	o, ws := startTestSink(t, path, func(cfg *SinkConfig) {
		cfg.Lossy = true
		cfg.NoValidate = true
		cfg.Env = append(cfg.Env, "RPCTAP_TEST_SLOW_SINK=200us")
	})
	for _, c := range b.chunks {
		o.Observe(c)
	}
	o.Close()
	if w := ws.list(); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	if o.overflowed.Load() == 0 {
		t.Fatalf("the burst never had more than %d gaps pending: the test did not test the overflow", maxPendGap)
	}
	_, recs, trunc := readCassette(t, path)
	if trunc != nil {
		t.Fatal(trunc)
	}
	gaps := map[cassette.Dir]int64{}
	nGaps := 0
	for _, r := range recs {
		if r.K == cassette.KindEvent && r.Ev == cassette.EventGap {
			gaps[r.D] += r.Bytes
			nGaps++
		}
	}
	for _, c := range []struct {
		d    cassette.Dir
		want []byte
	}{{cassette.DirIn, b.in}, {cassette.DirOut, b.out}} {
		got := int64(len(streamOf(recs, 0, c.d)))
		if got+gaps[c.d] != int64(len(c.want)) {
			t.Errorf("%s: %d recorded + %d in gaps, %d forwarded", c.d, got, gaps[c.d], len(c.want))
		}
		bad := 0
		frames := joinedFrames(recs, c.d)
		for _, f := range frames {
			if !b.sent[c.d][f] {
				if bad < 3 {
					t.Errorf("%s: recorded a frame that was never sent: %.200q", c.d, f)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d recorded frames were never sent", c.d, bad, len(frames))
		}
		t.Logf("%s: %d frames recorded, %d bytes in gaps, %d forwarded", c.d, len(frames), gaps[c.d], len(c.want))
	}
	t.Logf("%d gap records, %d gaps overflowed the pending bound", nGaps, o.overflowed.Load())
}

package recorder

import (
	"io"
	"os"
	"testing"

	"github.com/rpctap/rpctap/tap"
)

// TestObserveAllocatesNothing: handing a chunk to the sink allocates
// nothing in the tap process. One small allocation per chunk was enough
// to make rpctap's resident memory grow with the session's length (the
// garbage collector lets the heap reach its goal before it runs).
func TestObserveAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	o := &PipeObserver{}
	var rds []*os.File
	for i := 0; i < 4; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p, err := newWirePipe(w)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			o.ctl = p
		} else {
			o.data[i-1] = p
		}
		rds = append(rds, r)
		go io.Copy(io.Discard, r)
	}
	defer func() {
		o.closePipes()
		for _, r := range rds {
			r.Close()
		}
	}()
	data := make([]byte, 32<<10)
	seq := uint64(0)
	allocs := testing.AllocsPerRun(200, func() {
		seq++
		o.Observe(tap.Chunk{Stream: tap.Stdout, Seq: seq, T: int64(seq), Data: data})
	})
	if allocs != 0 {
		t.Errorf("Observe allocates %.1f times per chunk, want 0", allocs)
	}
}

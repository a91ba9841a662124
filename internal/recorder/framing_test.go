package recorder

import (
	"math/rand"
	"testing"

	"github.com/rpctap/rpctap/internal/framing"
)

func BenchmarkFraming(b *testing.B) {
	data := agentMix(b, 8<<20)
	s := framing.NewSplitter(framing.Lines, MaxLine)
	lines := 0
	emit := func(h, p []byte, eol string, part bool) { lines++ }
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(data); off += 64 << 10 {
			end := min(off+64<<10, len(data))
			s.Feed(data[off:end], emit)
		}
		s.End(emit)
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

// TestHoldHeap: the reorder hold pops chunks in Seq order whatever order
// they were pushed in.
func TestHoldHeap(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var h holdHeap
	want := uint64(1)
	pushed := uint64(0)
	for round := 0; round < 50; round++ {
		perm := rng.Perm(1 + rng.Intn(40))
		for _, p := range perm {
			h.push(item{seq: pushed + uint64(p) + 1})
		}
		pushed += uint64(len(perm))
		for n := rng.Intn(len(h) + 1); n > 0; n-- {
			if got := h.pop().seq; got != want {
				t.Fatalf("popped seq %d, want %d", got, want)
			}
			want++
		}
	}
	for len(h) > 0 {
		if got := h.pop().seq; got != want {
			t.Fatalf("popped seq %d, want %d", got, want)
		}
		want++
	}
	if want != pushed+1 {
		t.Fatalf("popped %d of %d", want-1, pushed)
	}
}

//go:build unix && !race

package tap

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// countingObserver counts what it is handed and keeps nothing.
type countingObserver struct{ chunks, bytes atomic.Int64 }

func (o *countingObserver) Observe(c Chunk) { o.chunks.Add(1); o.bytes.Add(int64(len(c.Data))) }
func (o *countingObserver) Event(Event)     {}
func (o *countingObserver) Close() error    { return nil }

// TestPumpAllocatesNothingPerChunk: forwarding and observing a chunk
// allocates nothing, so the tap process's memory does not grow with the
// session's length (one small allocation per chunk made rpctap's resident
// memory grow from 11.5 to 14.6 MiB between a 10 MB and a 1 GiB session:
// the collector lets the heap reach its goal before it runs). The pump
// holds one ChunkSize buffer, however many chunks pass.
func TestPumpAllocatesNothingPerChunk(t *testing.T) {
	var in, out [2]int
	if err := unix.Pipe2(in[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := unix.Pipe2(out[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	cut, err := newCutter(1)
	if err != nil {
		t.Fatal(err)
	}
	defer cut.release()
	obs := &countingObserver{}
	p := &pump{s: newSession(obs, nil, time.Time{}), stream: Stdout, src: newRawFD(in[0], cut), dst: newRawFD(out[1], cut)}

	const chunks, size = 8000, 4 << 10
	start := make(chan struct{})
	pumped, drained := make(chan struct{}), make(chan int64, 1)
	go func() { // the child: writes chunks, then EOF
		msg := make([]byte, size)
		<-start
		for range chunks {
			for rest := msg; len(rest) > 0; {
				n, err := unix.Write(in[1], rest)
				if err != nil && err != unix.EINTR {
					t.Error(err)
					return
				}
				rest = rest[max(n, 0):]
			}
		}
		unix.Close(in[1])
	}()
	go func() { // the pump
		<-start
		p.copy()
		p.dst.(*rawFD).close()
		close(pumped)
	}()
	go func() { // the parent: reads everything
		buf := make([]byte, 64<<10)
		var total int64
		<-start
		for {
			n, err := unix.Read(out[0], buf)
			if n > 0 {
				total += int64(n)
			}
			if n == 0 && err == nil || err != nil && err != unix.EINTR {
				break
			}
		}
		drained <- total
	}()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	inUse := BuffersInUse()
	close(start)
	<-pumped
	total := <-drained
	runtime.ReadMemStats(&after)
	unix.Close(in[0])
	unix.Close(out[0])

	if total != chunks*size || obs.bytes.Load() != total || p.eof() == false {
		t.Fatalf("forwarded %d, observed %d bytes (eof %v); want %d", total, obs.bytes.Load(), p.eof(), chunks*size)
	}
	n := obs.chunks.Load()
	// A few allocations come from the test's own goroutines starting up;
	// one per chunk would be thousands.
	if mallocs := after.Mallocs - before.Mallocs; mallocs > 64 {
		t.Errorf("%d allocations while %d chunks were forwarded and observed; want none per chunk", mallocs, n)
	}
	if got := BuffersInUse(); got != inUse {
		t.Errorf("%d pump buffers in use after the pump ended, %d before", got, inUse)
	}
}

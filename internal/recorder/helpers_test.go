package recorder

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/tap"
)

// memWriter is a cassette Writer that keeps records in memory. Records are
// visible to the test only once flushed, as they would be on disk.
type memWriter struct {
	mu       sync.Mutex
	pending  []cassette.Record
	flushed  []cassette.Record
	flushes  int
	closed   bool
	failAt   int           // fail Append when this many records were appended (0: never)
	failErr  error         //
	block    chan struct{} // Append waits on it when non-nil
	appended int
}

func (w *memWriter) Append(r *cassette.Record) error {
	if w.block != nil {
		<-w.block
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("append after close")
	}
	w.appended++
	if w.failAt > 0 && w.appended >= w.failAt {
		return w.failErr
	}
	c := *r
	c.JSON = bytes.Clone(r.JSON)
	c.B64 = bytes.Clone(r.B64)
	c.N = uint64(w.appended)
	r.N = c.N
	w.pending = append(w.pending, c)
	return nil
}

func (w *memWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failAt > 0 && w.appended >= w.failAt {
		return w.failErr
	}
	w.flushed = append(w.flushed, w.pending...)
	w.pending = nil
	w.flushes++
	return nil
}

func (w *memWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.failAt > 0 && w.appended >= w.failAt {
		return w.failErr
	}
	w.flushed = append(w.flushed, w.pending...)
	w.pending = nil
	return nil
}

func (w *memWriter) records() []cassette.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]cassette.Record(nil), w.flushed...)
}

// streamOf concatenates the lines of one direction (and connection).
func streamOf(recs []cassette.Record, conn int, d cassette.Dir) []byte {
	var out []byte
	for i := range recs {
		r := &recs[i]
		if (r.K == cassette.KindFrame || r.K == cassette.KindStderr) && r.D == d && r.Conn == conn {
			out = r.AppendLine(out)
		}
	}
	return out
}

// warnings collects warnings.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(m string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, m)
	w.mu.Unlock()
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// fakeTap stamps chunks like the tap does: one Seq counter and one clock for
// all streams, taken under a lock when the "read" returns.
type fakeTap struct {
	mu  sync.Mutex
	seq uint64
	t   int64
}

func (f *fakeTap) stamp() (uint64, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	f.t += 1000
	return f.seq, f.t
}

func (f *fakeTap) chunk(s tap.Stream, data []byte) tap.Chunk {
	seq, t := f.stamp()
	return tap.Chunk{Stream: s, Seq: seq, T: t, Data: data}
}

// traffic returns the NDJSON captures (parent and child bytes) of
// testdata/traffic, and of ../shared/traffic when it is beside the checkout,
// keyed by file name ("shared-" before the third-party ones).
func traffic(t testing.TB) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range testpeers.CaptureFiles() {
		if strings.Contains(f, "lsp-") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		if filepath.Base(filepath.Dir(filepath.Dir(f))) == "shared" {
			name = "shared-" + name
		}
		m[name] = b
	}
	if len(m) == 0 {
		t.Fatal("no captures in testdata/traffic")
	}
	return m
}

// agentMix builds about size bytes of distinct agent-like NDJSON: the real
// captures, then generated ACP, synaps and opi frames with random text:
// many small streamed events, 1-50 KB tool results, and a 900 KB frame every
// ~4 MB. Nothing repeats, so compression is not flattered.
func agentMix(t testing.TB, size int) []byte {
	rng := rand.New(rand.NewSource(1))
	var b bytes.Buffer
	dir := testpeers.TestdataTraffic()
	for _, n := range []string{"acp-go.in", "acp-go.out", "mcp-go-session.out", "pi-session.out", "mcp-go-everything.out"} {
		if data, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			b.Write(data)
		}
	}
	words := strings.Fields("the a file function return error value test agent tool call read write session prompt model token stream chunk update user assistant code go rust json rpc line byte buffer pipe process signal exit status result")
	text := func(n int) string {
		var s strings.Builder
		for s.Len() < n {
			s.WriteString(words[rng.Intn(len(words))])
			if rng.Intn(9) == 0 {
				fmt.Fprintf(&s, " %d", rng.Intn(100000))
			}
			s.WriteByte(' ')
		}
		return s.String()
	}
	id, next900 := 0, 4<<20
	for b.Len() < size {
		id++
		switch k := rng.Intn(100); {
		case b.Len() > next900:
			next900 += 4 << 20
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%q}]}}`+"\n", id, text(900<<10))
		case k < 70:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_%08x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}}}`+"\n", rng.Uint32(), text(20+rng.Intn(200)))
		case k < 80:
			fmt.Fprintf(&b, `{"type":"text_delta","delta":%q}`+"\n", text(10+rng.Intn(80)))
		case k < 88:
			fmt.Fprintf(&b, `{"type":"message_update","message":{"role":"assistant","content":[{"type":"text","text":%q}]},"timestamp":%d}`+"\n", text(50+rng.Intn(300)), 1700000000000+rng.Intn(1e9))
		case k < 95:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"fs/read_text_file","params":{"sessionId":"sess_%08x","path":"/home/dev/src/p%d/main.go"}}`+"\n", id, rng.Uint32(), rng.Intn(1000))
		default:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"result":{"content":%q}}`+"\n", id, text(1<<10+rng.Intn(49<<10)))
		}
	}
	return b.Bytes()
}

func filepathSafe(i int) string { return fmt.Sprintf("c%d.cassette", i) }

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// envInt reads an integer environment variable (tests).
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name))); err == nil {
		return v
	}
	return def
}

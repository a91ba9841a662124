package replay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// engineRun is an engine replaying a streamed cassette as a fake child,
// over pipes.
type engineRun struct {
	s    *Stream
	e    *engine
	in   *io.PipeWriter
	out  *bufio.Reader
	res  *Result
	done chan error
}

func startEngine(t *testing.T, path string, opts ...Option) *engineRun {
	t.Helper()
	s, err := OpenStream(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(s, roleChild, defaults(append([]Option{WithSpeed(0)}, opts...)...))
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	e.out = outW
	r := &engineRun{s: s, e: e, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		var err error
		r.res, err = e.run(context.Background(), inR)
		outW.Close()
		inR.CloseWithError(io.ErrClosedPipe)
		r.done <- err
	}()
	return r
}

func (r *engineRun) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (r *engineRun) read(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := r.out.ReadSlice('\n'); err != nil {
			t.Fatalf("reading answer %d of %d: %v", i+1, n, err)
		}
	}
}

// wait closes the parent's end and waits for the engine to finish.
func (r *engineRun) wait(t *testing.T) *Result {
	t.Helper()
	r.in.Close()
	go io.Copy(io.Discard, r.out)
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
	return r.res
}

// replayHeld replays a generated session (writeSessionCassette) with a
// parent that sends the recorded requests and reads the answers, and
// returns the most steps and frame bytes the engine held at once.
// closeAfter > 0 closes the parent's end after that many turns (the rest is
// read through at the end, not held).
func replayHeld(t *testing.T, path string, turns, closeAfter int) (steps, bytes int, res *Result) {
	t.Helper()
	r := startEngine(t, path)
	n := turns
	if closeAfter > 0 {
		n = closeAfter
	}
	for i := 1; i <= n; i++ {
		r.send(t, turnRequest(i))
		r.read(t, 3)
	}
	res = r.wait(t)
	if r.e.pf.peak > prefetchBytes+4<<10 {
		t.Errorf("the prefetcher queued up to %d bytes; its bound is %d (plus one frame)", r.e.pf.peak, prefetchBytes)
	}
	return r.e.peakSteps, r.e.peakBytes, res
}

// writeLines writes an acp cassette of frames given as direction, line
// pairs ("in"/"out"), then stdin-eof and exit 0.
func writeLines(t *testing.T, path string, dirLines []string) {
	t.Helper()
	b := replaytest.New("acp")
	for i := 0; i < len(dirLines); i += 2 {
		if dirLines[i] == "in" {
			b.In(dirLines[i+1])
		} else {
			b.Out(dirLines[i+1])
		}
	}
	b.Event(cassette.EventStdinEOF).Exit(0)
	if err := replaytest.WriteFile(path, b.End(), true); err != nil {
		t.Fatal(err)
	}
}

// TestReplayMemoryFlat: the steps and frame bytes a streaming replay holds
// do not grow with the length of the session.
func TestReplayMemoryFlat(t *testing.T) {
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short.cassette"), filepath.Join(dir, "long.cassette")
	ns := writeSessionCassette(t, short, 256<<10)
	nl := writeSessionCassette(t, long, 4<<20)
	ss, sb, res := replayHeld(t, short, ns, 0)
	if res.Diverged() || res.Exit == nil || res.Exit.Code != 0 || res.Matched != ns {
		t.Fatalf("short replay: %+v", res)
	}
	ls, lb, res := replayHeld(t, long, nl, 0)
	if res.Diverged() || res.Exit == nil || res.Exit.Code != 0 || res.Matched != nl {
		t.Fatalf("long replay: %+v", res)
	}
	t.Logf("%d turns: at most %d steps, %d frame bytes held; %d turns: %d steps, %d bytes", ns, ss, sb, nl, ls, lb)
	const maxSteps, maxBytes = 256, 256 << 10
	if ls > maxSteps || lb > maxBytes {
		t.Errorf("%d turns held up to %d steps and %d bytes; want at most %d and %d", nl, ls, lb, maxSteps, maxBytes)
	}
	if ls > ss+ss/4+8 || lb > sb+sb/4+8<<10 {
		t.Errorf("held state grew with the session: %d turns %d steps/%d bytes, %d turns %d steps/%d bytes", ns, ss, sb, nl, ls, lb)
	}

	// A parent that goes away early: the rest is read through to list the
	// missing requests, without being held.
	cs, cb, res := replayHeld(t, long, nl, 10)
	if cs > maxSteps || cb > maxBytes {
		t.Errorf("closing early held up to %d steps and %d bytes", cs, cb)
	}
	if want := nl - 10; len(res.Divergences)+res.Unlisted != want || res.Unlisted != max(0, want-maxListed) {
		t.Errorf("closing early: %d divergences + %d unlisted, want %d missing", len(res.Divergences), res.Unlisted, want)
	}
	if res.Exit == nil || res.Exit.Code != 0 {
		t.Errorf("closing early: exit %+v, want the recorded 0", res.Exit)
	}
}

// TestReplayLookAheadBounded: a request answered by a long run of
// notifications, then requests the parent sends out of order. The window
// still lets them match, and the steps held stay bounded by the look-ahead
// limits, not by the run's length.
func TestReplayLookAheadBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.cassette")
	const run = 6000
	var lines []string
	lines = append(lines, "in", `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":"go"}}`)
	for i := 0; i < run; i++ {
		lines = append(lines, "out", fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"n":%d,"pad":"%s"}}`, i, benchPad(i, 100)))
	}
	lines = append(lines, "out", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`)
	lines = append(lines, "in", `{"jsonrpc":"2.0","id":2,"method":"a","params":{}}`, "in", `{"jsonrpc":"2.0","id":3,"method":"b","params":{}}`)
	lines = append(lines, "out", `{"jsonrpc":"2.0","id":2,"result":{}}`, "out", `{"jsonrpc":"2.0","id":3,"result":{}}`)
	writeLines(t, path, lines)

	r := startEngine(t, path)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":"go"}}`)
	r.read(t, run+1)
	// b before a: matched through the window.
	r.send(t, `{"jsonrpc":"2.0","id":13,"method":"b","params":{}}`)
	r.send(t, `{"jsonrpc":"2.0","id":12,"method":"a","params":{}}`)
	r.read(t, 2)
	res := r.wait(t)
	if res.Diverged() || res.Matched != 3 || res.Sent != run+3 {
		t.Fatalf("%+v", res)
	}
	t.Logf("a run of %d frames: at most %d steps, %d frame bytes held", run, r.e.peakSteps, r.e.peakBytes)
	if r.e.peakSteps > 256 || r.e.peakBytes > 256<<10 {
		t.Errorf("held up to %d steps and %d bytes for a run of %d frames", r.e.peakSteps, r.e.peakBytes, run)
	}

	// A parent that sends b first, before the prompt whose answer is the
	// long run: b is recorded further ahead than the look-ahead reaches, so
	// it is refused (today's limit, documented), and the search for it
	// stops at the bound instead of reading the whole run in.
	r = startEngine(t, path)
	r.send(t, `{"jsonrpc":"2.0","id":13,"method":"b","params":{}}`)
	r.read(t, 1)
	res = r.wait(t)
	if len(res.Divergences) == 0 || res.Divergences[0].Kind != Unexpected {
		t.Fatalf("b beyond the look-ahead: %+v", res)
	}
	t.Logf("a search past a run of %d frames: at most %d steps, %d frame bytes held", run, r.e.peakSteps, r.e.peakBytes)
	if r.e.peakSteps > maxAheadSteps+64 || r.e.peakBytes > maxAheadBytes+64<<10 {
		t.Errorf("held up to %d steps and %d bytes searching past a run of %d frames; the look-ahead bound is %d steps, %d bytes",
			r.e.peakSteps, r.e.peakBytes, run, maxAheadSteps, maxAheadBytes)
	}
}

// TestReplayDamageFoundMidStream: damage the replay reaches only after it
// started does not stop it: the replay goes on with the frames after the
// damaged range, reports the range once (Warn, naming the cassette) and
// lists it in Stream.Damage, from which the CLI exits 4.
func TestReplayDamageFoundMidStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "damaged.cassette")
	turns := writeSessionCassette(t, path, 4<<20)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) * 3 / 4; i < len(b)*3/4+64; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := startEngine(t, path)
	var warnings []string
	r.s.Warn = func(msg string) { warnings = append(warnings, msg) }
	answered := 0
	go io.Copy(io.Discard, r.out)
	for i := 1; i <= turns; i++ {
		if _, err := io.WriteString(r.in, turnRequest(i)+"\n"); err != nil {
			break // the replay stopped
		}
		answered++
	}
	r.in.Close()
	err = <-r.done
	var ce *cassette.CorruptError
	if errors.As(err, &ce) {
		t.Fatalf("replay over damage stopped: %v", err)
	}
	dmg := r.s.Damage()
	if answered != turns || len(dmg) != 1 || dmg[0].Lost == 0 || dmg[0].Offset < int64(len(b)*3/4)-(1<<20) || dmg[0].Offset > int64(len(b)*3/4) {
		t.Fatalf("%d of %d requests sent; damage %v; want all sent and the one range around byte %d", answered, turns, dmg, len(b)*3/4)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], path) || !strings.Contains(warnings[0], "records lost") {
		t.Errorf("warnings %q; want one naming the file and the records lost", warnings)
	}
	t.Logf("%d of %d requests sent; %v; %d divergences", answered, turns, dmg[0], len(r.res.Divergences))
}

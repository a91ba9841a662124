package tap

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness runs a helper child behind an in-process tap whose parent side is
// three pipes owned by the test.
type harness struct {
	t    *testing.T
	cmd  *Cmd
	obs  *collector
	warn *syncBuffer
	in   *os.File // the parent's writing end of the tap's stdin
	out  *os.File // the parent's reading end of the tap's stdout
	err  *os.File // the reading end of the tap's stderr
}

func startTap(t *testing.T, setup func(*Cmd), role string, args ...string) *harness {
	t.Helper()
	argv := helperArgv(role, args...)
	c := Command(argv[0], argv[1:]...)
	c.Env = helperEnv()
	c.Signals = nil // in-process: leave the test binary's signals alone
	h := &harness{t: t, cmd: c, obs: newCollector(), warn: &syncBuffer{}}
	inR, inW := mustPipe(t)
	outR, outW := mustPipe(t)
	errR, errW := mustPipe(t)
	c.Stdin, c.Stdout, c.Stderr = inR, outW, errW
	c.Observer = h.obs
	c.Warn = h.warn
	if setup != nil {
		setup(c)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The tap holds duplicates; ours would hide the EOFs.
	inR.Close()
	outW.Close()
	errW.Close()
	h.in, h.out, h.err = inW, outR, errR
	t.Cleanup(func() { inW.Close(); outR.Close(); errR.Close() })
	return h
}

func mustPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

func readAllAsync(r io.Reader) <-chan []byte {
	c := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		c <- b
	}()
	return c
}

func (h *harness) wait() {
	h.t.Helper()
	if err := h.cmd.Wait(); err != nil {
		h.t.Fatal(err)
	}
}

// roundTrip sends data through a "tee" child and checks that stdout, stderr
// and all three observed streams equal it.
func roundTrip(t *testing.T, data []byte) {
	h := startTap(t, nil, "tee")
	outc, errc := readAllAsync(h.out), readAllAsync(h.err)
	go func() {
		h.in.Write(data)
		h.in.Close()
	}()
	out, errOut := <-outc, <-errc
	h.wait()
	for _, s := range []struct {
		name string
		got  []byte
	}{
		{"stdout", out}, {"stderr", errOut},
		{"observed in", h.obs.data[Stdin].Bytes()},
		{"observed out", h.obs.data[Stdout].Bytes()},
		{"observed err", h.obs.data[Stderr].Bytes()},
	} {
		if !bytes.Equal(s.got, data) {
			t.Errorf("%s: %d bytes differ from the %d sent (first diff at %d)", s.name, len(s.got), len(data), firstDiff(s.got, data))
		}
	}
	h.obs.check(t)
	if code, sig := Status(h.cmd.ProcessState); code != 0 || sig != 0 {
		t.Errorf("child ended with %d/%v", code, sig)
	}
	if k := strings.Join(h.obs.kinds(), ","); k != "start,stdin-eof,exit" {
		t.Errorf("events %s, want start,stdin-eof,exit", k)
	}
	if w := h.warn.String(); w != "" {
		t.Errorf("warnings: %q", w)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestByteExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, 300<<10)
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	big := bytes.Repeat([]byte(`{"a":"0123456789abcdef"}`), (16<<20)/24+1)
	big = append(big[:16<<20], '\n')
	cases := map[string][]byte{
		"empty":            nil,
		"json lines":       []byte("{\"jsonrpc\":\"2.0\",\"id\":1}\n{\"x\":[]}\n"),
		"invalid utf8":     []byte("{\"s\":\"\xff\xfe\xc3\x28\"}\n\x80\n"),
		"crlf":             []byte("a\r\nb\r\n\r\n"),
		"bom":              []byte("\xef\xbb\xbf{\"a\":1}\n"),
		"empty lines":      []byte("\n\n\n{}\n\n"),
		"no final eol":     []byte("{\"a\":1}\n{\"b\":2}"),
		"nul and binary":   []byte{0, 1, 2, 0, '\n', 0xff, 0},
		"random 300 KiB":   junk,
		"16 MiB line":      big,
		"16 MiB no eol":    big[:len(big)-1],
		"ansi before json": []byte("\x1b[2K\x1b[1Gloading...{\"id\":1}\n"),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) { roundTrip(t, data) })
	}
}

// FuzzByteExact: whatever goes in comes out unchanged, both ways, and the
// observer sees exactly that. Seeds in testdata/fuzz/FuzzByteExact.
func FuzzByteExact(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"id\":0}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data) })
}

func TestExitCodes(t *testing.T) {
	for _, want := range []int{0, 3, 7} {
		h := startTap(t, nil, "exit", strconv.Itoa(want))
		h.in.Close()
		h.wait()
		code, sig := Status(h.cmd.ProcessState)
		if code != want || sig != 0 {
			t.Errorf("exit %d: got code %d signal %v", want, code, sig)
		}
		ev := h.obs.event("exit")
		if ev == nil || ev.Exit == nil || *ev.Exit != want {
			t.Errorf("exit %d: exit event %+v", want, ev)
		}
		h.obs.check(t)
	}
}

func TestChildKilledBySignal(t *testing.T) {
	h := startTap(t, nil, "killself")
	h.wait()
	code, sig := Status(h.cmd.ProcessState)
	if sig != syscall.SIGTERM || code != 128+15 {
		t.Errorf("got code %d signal %v, want SIGTERM", code, sig)
	}
	if ev := h.obs.event("exit"); ev == nil || ev.Signal != "SIGTERM" || ev.Exit != nil {
		t.Errorf("exit event %+v", ev)
	}
}

// A child that ignores stdin EOF keeps the tap running, as a pipe would;
// the EOF still reaches it and is recorded.
func TestChildIgnoresEOF(t *testing.T) {
	h := startTap(t, nil, "ignore-eof")
	h.in.Write([]byte("hello\n"))
	h.in.Close()
	line, err := bufio.NewReader(h.out).ReadString('\n')
	if err != nil || line != "eof\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatal("the tap ended while the child still ran")
	case <-time.After(300 * time.Millisecond):
	}
	if h.obs.event("stdin-eof") == nil {
		t.Error("no stdin-eof event")
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the tap did not end after the child was killed")
	}
	if _, sig := Status(h.cmd.ProcessState); sig != syscall.SIGTERM {
		t.Errorf("child ended with %v", sig)
	}
	h.obs.check(t)
}

// A grandchild that keeps the child's stdout open must not hold the tap
// beyond its grace, and the child is reaped (no zombie).
func TestGrandchildHoldsStdout(t *testing.T) {
	const grace = 300 * time.Millisecond
	h := startTap(t, func(c *Cmd) { c.Grace = grace }, "grandchild")
	br := bufio.NewReader(h.out)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	gpid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "grandchild ")))
	if gpid <= 0 {
		t.Fatalf("child said %q", line)
	}
	defer syscall.Kill(gpid, syscall.SIGKILL)
	rest := readAllAsync(br)
	t0 := time.Now()
	h.wait()
	took := time.Since(t0)
	if took > grace+2*time.Second {
		t.Errorf("Wait took %v with a grace of %v", took, grace)
	}
	select {
	case r := <-rest: // the tap let go of the parent's stdout
		if len(r) != 0 {
			// The cutter wakes a blocked read with a byte of its own
			// (see rawFD): it must never be forwarded.
			t.Errorf("the parent got %q after the cut", r)
		}
	case <-time.After(2 * time.Second):
		t.Error("the parent's stdout did not reach EOF after Wait")
	}
	if runtime.GOOS == "linux" && h.cmd.outR.bell != 1 {
		t.Errorf("the stdout pump polled (bell %d): the cut of a blocked read was not tested", h.cmd.outR.bell)
	}
	pid := h.cmd.Process.Pid
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		t.Errorf("child %d still exists after Wait: %s", pid, st)
	}
	if syscall.Kill(gpid, 0) != nil {
		t.Errorf("grandchild %d is gone: the test proves nothing", gpid)
	}
	h.obs.check(t)
}

// A panicking observer is switched off with one warning; forwarding goes on.
func TestObserverPanics(t *testing.T) {
	var calls int
	h := startTap(t, func(c *Cmd) {
		c.Observer.(*collector).observe = func(Chunk) {
			calls++
			panic("disk on fire")
		}
	}, "cat")
	outc := readAllAsync(h.out)
	data := bytes.Repeat([]byte("{\"x\":1}\n"), 100000)
	go func() { h.in.Write(data); h.in.Close() }()
	out := <-outc
	h.wait()
	if !bytes.Equal(out, data) {
		t.Errorf("forwarded %d bytes, want %d", len(out), len(data))
	}
	if w := h.warn.String(); strings.Count(w, "\n") != 1 || !strings.Contains(w, "disk on fire") {
		t.Errorf("warnings %q, want one line", w)
	}
	if calls != 1 {
		t.Errorf("observer called %d times after failing", calls)
	}
}

// An observer that blocks slows forwarding and loses nothing (lossless).
func TestSlowObserverBackpressure(t *testing.T) {
	h := startTap(t, func(c *Cmd) {
		c.Observer.(*collector).observe = func(Chunk) { time.Sleep(time.Millisecond) }
	}, "cat")
	outc := readAllAsync(h.out)
	data := bytes.Repeat([]byte("0123456789abcde\n"), 64<<10) // 1 MiB
	go func() { h.in.Write(data); h.in.Close() }()
	out := <-outc
	h.wait()
	if !bytes.Equal(out, data) || !bytes.Equal(h.obs.data[Stdout].Bytes(), data) {
		t.Errorf("lost bytes: out %d, observed %d, sent %d", len(out), h.obs.data[Stdout].Len(), len(data))
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	noexec := dir + "/noexec"
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	for _, tc := range []struct {
		name                    string
		notFound, notExecutable bool
	}{
		{"rpctap-no-such-command", true, false},
		{dir + "/missing", true, false},
		{noexec, false, true},
		{dir, false, true},
	} {
		obs := newCollector()
		c := Command(tc.name)
		c.Signals = nil
		c.Observer = obs
		err := c.Start()
		var se *StartError
		if !errors.As(err, &se) || se.NotFound() != tc.notFound || se.NotExecutable() != tc.notExecutable {
			t.Errorf("%s: Start: %v (%T)", tc.name, err, err)
		}
		if obs.closes != 1 {
			t.Errorf("%s: observer closed %d times after a failed Start", tc.name, obs.closes)
		}
		_, lerr := LookPath(tc.name)
		if !errors.As(lerr, &se) || se.NotFound() != tc.notFound || se.NotExecutable() != tc.notExecutable {
			t.Errorf("%s: LookPath: %v", tc.name, lerr)
		}
	}
}

// The tap never changes the parent's descriptors' flags (they belong to
// descriptions shared with the parent, and a flag changed by a tap killed
// with SIGKILL would stay changed): blocking pipes stay blocking, and
// non-blocking ones non-blocking, while the tap runs and after.
func TestParentFlagsUnchanged(t *testing.T) {
	for _, nb := range []bool{false, true} {
		pipe := func() (*os.File, *os.File, int, int) {
			var p [2]int
			if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			if nb {
				unix.SetNonblock(p[0], true)
				unix.SetNonblock(p[1], true)
			}
			return os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w"), p[0], p[1]
		}
		nonblock := func(fd int) bool {
			fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			if err != nil {
				t.Fatal(err)
			}
			return fl&unix.O_NONBLOCK != 0
		}
		inR, inW, inFd, _ := pipe()
		outR, outW, _, outFd := pipe()
		argv := helperArgv("cat")
		c := Command(argv[0], argv[1:]...)
		c.Env, c.Signals = helperEnv(), nil
		c.Stdin, c.Stdout = inR, outW
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := inW.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 5)
		if _, err := io.ReadFull(outR, buf); err != nil || string(buf) != "ping\n" {
			t.Fatalf("read %q, %v", buf, err)
		}
		if nonblock(inFd) != nb || nonblock(outFd) != nb {
			t.Errorf("non-blocking %v: stdin/stdout flags changed while the tap runs", nb)
		}
		inW.Close()
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		if nonblock(inFd) != nb || nonblock(outFd) != nb {
			t.Errorf("non-blocking %v: stdin/stdout flags changed after Wait", nb)
		}
		inR.Close()
		outW.Close()
		outR.Close()
	}
}

// The observer gets a chunk after the other side can read it, or before
// with ObserveFirst (the crash-safe hand-over).
func TestObserveOrder(t *testing.T) {
	for _, first := range []bool{false, true} {
		var pending []int              // bytes readable by the parent when Observe ran
		var hp atomic.Pointer[harness] // set before the first write; the pipe alone is no happens-before edge for the race detector
		h := startTap(t, func(c *Cmd) {
			c.ObserveFirst = first
			c.Observer.(*collector).observe = func(ch Chunk) {
				if ch.Stream == Stdout {
					rc, _ := hp.Load().out.SyscallConn()
					rc.Control(func(fd uintptr) {
						n, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
						if err != nil {
							t.Error(err)
						}
						pending = append(pending, n)
					})
				}
			}
		}, "cat")
		hp.Store(h)
		h.in.Write([]byte("ping\n"))
		h.in.Close()
		// The parent reads only once the tap is done (5 bytes fit in the
		// pipe), so what FIONREAD saw during Observe was not read yet.
		h.wait()
		out := readAllAsync(h.out)
		if got := string(<-out); got != "ping\n" {
			t.Fatalf("forwarded %q", got)
		}
		if len(pending) != 1 {
			t.Fatalf("ObserveFirst=%v: %d stdout chunks observed", first, len(pending))
		}
		if first && pending[0] != 0 {
			t.Errorf("ObserveFirst: the parent could read %d bytes before Observe", pending[0])
		}
		if !first && pending[0] != 5 {
			t.Errorf("after forwarding: the parent could read %d bytes during Observe, want 5", pending[0])
		}
	}
}

// Events take their place in the read order: stdin-eof is handed to the
// observer before anything the child wrote in answer to the EOF, every chunk
// observed before an event has a Seq no greater than the event's (with
// ObserveFirst, every chunk observed after it a greater one), exit comes
// last, after the drained output, and T never decreases along that order.
func TestEventOrder(t *testing.T) {
	for _, first := range []bool{false, true} {
		h := startTap(t, func(c *Cmd) { c.ObserveFirst = first }, "ignore-eof")
		h.in.Write([]byte("ping\n"))
		h.in.Close()
		line, err := bufio.NewReader(h.out).ReadString('\n')
		if err != nil || line != "eof\n" {
			t.Fatalf("read %q, %v", line, err)
		}
		h.cmd.Process.Kill()
		out := readAllAsync(h.out)
		h.wait()
		<-out
		o := h.obs
		o.mu.Lock()
		log := slices.Clone(o.log)
		errs := o.errs
		o.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("ObserveFirst=%v: %v", first, errs)
		}
		eof := slices.IndexFunc(log, func(e logEntry) bool { return e.event && e.kind == "stdin-eof" })
		reply := slices.IndexFunc(log, func(e logEntry) bool { return !e.event && e.data == "eof\n" })
		if eof < 0 || reply < 0 {
			t.Fatalf("ObserveFirst=%v: no stdin-eof event or no reply chunk: %+v", first, log)
		}
		if reply < eof || log[reply].seq <= log[eof].seq || log[reply].t < log[eof].t {
			t.Errorf("ObserveFirst=%v: the child's answer to the EOF (%+v) is not after stdin-eof (%+v)", first, log[reply], log[eof])
		}
		var maxSeq uint64
		var maxT int64
		for i, e := range log {
			if !e.event {
				maxSeq, maxT = max(maxSeq, e.seq), max(maxT, e.t)
				continue
			}
			for _, c := range log[:i] {
				if !c.event && c.seq > e.seq {
					t.Errorf("ObserveFirst=%v: chunk %d observed before event %s at Seq %d", first, c.seq, e.kind, e.seq)
				}
			}
			for _, c := range log[i+1:] {
				if first && !c.event && c.seq <= e.seq {
					t.Errorf("ObserveFirst=%v: chunk %d observed after event %s at Seq %d", first, c.seq, e.kind, e.seq)
				}
			}
		}
		last := log[len(log)-1]
		if !last.event || last.kind != "exit" || last.seq != maxSeq || last.t < maxT {
			t.Errorf("ObserveFirst=%v: last observer call %+v, want exit at Seq %d, T >= %d", first, last, maxSeq, maxT)
		}
		// T along the read order: chunks by Seq, an event after the chunk
		// whose Seq it carries.
		ordered := slices.Clone(log)
		slices.SortStableFunc(ordered, func(a, b logEntry) int {
			if a.seq != b.seq {
				return cmp.Compare(a.seq, b.seq)
			}
			return cmp.Compare(btoi(a.event), btoi(b.event))
		})
		for i := 1; i < len(ordered); i++ {
			if ordered[i].t < ordered[i-1].t {
				t.Errorf("ObserveFirst=%v: T decreases from %+v to %+v", first, ordered[i-1], ordered[i])
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

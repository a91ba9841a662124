package recorder

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

// TestMain lets the test binary play the sink (`rpctap __sink`) and a
// feeder (an rpctap that holds a PipeObserver and is killed with SIGKILL).
func TestMain(m *testing.M) {
	switch os.Getenv("RPCTAP_RECORDER_HELPER") {
	case "sink":
		if n := envInt("RPCTAP_TEST_FSIZE", 0); n > 0 {
			// A file size limit makes the cassette's writes fail midway
			// (EFBIG), like a disk that fills up during the session.
			signal.Ignore(syscall.SIGXFSZ)
			unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(n), Max: uint64(n)})
		}
		if d, err := time.ParseDuration(os.Getenv("RPCTAP_TEST_SLOW_SINK")); err == nil {
			sinkMsgDelay = d
		}
		if os.Getenv("RPCTAP_TEST_NOGATHER") != "" {
			gatherDelay, gatherBusy = 0, 0
		}
		if os.Getenv("RPCTAP_TEST_PANIC_VALIDATOR") != "" {
			sinkTestHook = func(o *Options) {
				o.validatorHook = func(int, uint64, protocol.Dir, []byte) []protocol.Violation {
					panic("validator bug for the test")
				}
			}
		}
		if path := os.Getenv("RPCTAP_TEST_SINK_CPUPROFILE"); path != "" {
			// Profile the sink process (BenchmarkSink): the cassette's
			// path with a suffix, one profile per run.
			if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil {
				pprof.StartCPUProfile(f)
				code := SinkMain()
				pprof.StopCPUProfile()
				f.Close()
				os.Exit(code)
			}
		}
		os.Exit(SinkMain())
	case "feeder":
		os.Exit(feederMain())
	case "echo":
		os.Exit(echoMain())
	}
	os.Exit(m.Run())
}

// sinkCommand runs this test binary as the sink.
func sinkConfig(path string) SinkConfig {
	return SinkConfig{
		Path:    path,
		Command: []string{os.Args[0]},
		Env:     []string{"RPCTAP_RECORDER_HELPER=sink"},
		Header:  cassette.Header{Argv: []string{"agent", "--acp"}, Created: time.Now().Format(time.RFC3339Nano)},
	}
}

// session is a recorded exchange for the sink tests: parent lines and child
// lines, interleaved one for one, plus stderr.
type session struct {
	in, out, errb []byte
	chunks        []tap.Chunk
}

// makeSession cuts size bytes of the agent mix into a parent and a child
// stream and into chunks in a plausible read order (each parent line, then
// the child's answer, stderr now and then), stamped like the tap stamps.
func makeSession(t testing.TB, size int) *session {
	return sessionOf(agentMix(t, size))
}

func sessionOf(mix []byte) *session {
	lines := bytes.SplitAfter(mix, []byte("\n"))
	s := &session{}
	var seq uint64
	add := func(st tap.Stream, b []byte) {
		for len(b) > 0 { // chunks of at most 64 KiB, like the tap's reads
			n := min(len(b), 64<<10)
			seq++
			s.chunks = append(s.chunks, tap.Chunk{Stream: st, Seq: seq, T: int64(seq) * 1000, Data: b[:n]})
			b = b[n:]
		}
	}
	for i, l := range lines {
		if len(l) == 0 {
			continue
		}
		switch {
		case i%7 == 3:
			e := []byte(fmt.Sprintf("log %d: working\n", i))
			s.errb = append(s.errb, e...)
			add(tap.Stderr, e)
			fallthrough
		case i%2 == 0:
			s.in = append(s.in, l...)
			add(tap.Stdin, l)
		default:
			s.out = append(s.out, l...)
			add(tap.Stdout, l)
		}
	}
	// A last child line without newline.
	tail := []byte(`{"jsonrpc":"2.0","method":"bye"}`)
	s.out = append(s.out, tail...)
	add(tap.Stdout, tail)
	return s
}

// feed plays the session into an observer from three concurrent pumps (one
// per stream), each calling Observe in its stream's order.
func (s *session) feed(o tap.Observer) {
	var wg sync.WaitGroup
	for st := tap.Stdin; st <= tap.Stderr; st++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range s.chunks {
				if c.Stream == st {
					o.Observe(c)
				}
			}
		}()
	}
	wg.Wait()
}

// readCassette reads every record; truncated is the reader's complaint
// about a missing end record, if any.
func readCassette(t testing.TB, path string) (h cassette.Header, recs []cassette.Record, truncated error) {
	t.Helper()
	h, recs, truncated, err := tryReadCassette(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return h, recs, truncated
}

// tryReadCassette is readCassette for a cassette that may still be being
// written: err is set when it cannot be read (yet).
func tryReadCassette(path string) (h cassette.Header, recs []cassette.Record, truncated, err error) {
	r, err := cassette.Open(path)
	if err != nil {
		return h, nil, nil, err
	}
	defer r.Close()
	h = r.Header()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return h, recs, nil, nil
		}
		var te *cassette.TruncatedError
		if errors.As(err, &te) {
			return h, recs, err, nil
		}
		if err != nil {
			return h, recs, nil, err
		}
		if rec.K != cassette.KindHeader {
			recs = append(recs, *rec)
		}
	}
}

func (s *session) check(t testing.TB, recs []cassette.Record) {
	t.Helper()
	for _, c := range []struct {
		d    cassette.Dir
		want []byte
	}{{cassette.DirIn, s.in}, {cassette.DirOut, s.out}, {cassette.DirErr, s.errb}} {
		got := streamOf(recs, 0, c.d)
		if !bytes.Equal(got, c.want) {
			i := 0
			for i < len(got) && i < len(c.want) && got[i] == c.want[i] {
				i++
			}
			t.Fatalf("%s: recorded %d bytes, want %d; first difference at byte %d", c.d, len(got), len(c.want), i)
		}
	}
}

func TestSinkEndToEnd(t *testing.T) {
	s := makeSession(t, 3<<20)
	path := filepath.Join(t.TempDir(), "s.cassette")
	o, ws := startTestSink(t, path, func(c *SinkConfig) { c.Nice = 10 })
	// The sink runs at the niceness asked, in its own process group, and
	// holds none of our standard streams.
	pid := o.sink.cmd.Process.Pid
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		if len(f) > 16 && f[16] != "10" {
			t.Errorf("sink nice %s, want 10", f[16])
		}
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("sink process group %d (%v), want its own (%d)", pgid, err, pid)
	}
	for fd := 0; fd <= 2; fd++ {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd)); err == nil && l != "/dev/null" {
			t.Errorf("sink fd %d is %s, want /dev/null", fd, l)
		}
	}
	o.Event(tap.Event{T: 1, Kind: cassette.EventStart, Argv: []string{"agent"}, PID: 42, Cwd: "/w"})
	s.feed(o)
	o.Event(tap.Event{T: 1 << 40, Kind: cassette.EventStdinEOF})
	code := 3
	o.Event(tap.Event{T: 1<<40 + 1, Kind: cassette.EventExit, Exit: &code})
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if w := ws.list(); len(w) != 0 {
		t.Fatalf("warnings: %q", w)
	}
	if res := o.Result(); !res.Done || res.Records == 0 || res.PeakRSS == 0 {
		t.Errorf("sink result %+v", res)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cassette %v, mode %v", err, st.Mode())
	}
	h, recs, trunc := readCassette(t, path)
	if trunc != nil {
		t.Fatalf("cassette not finalized: %v", trunc)
	}
	if len(h.Argv) != 2 || h.Argv[1] != "--acp" {
		t.Errorf("header %+v", h)
	}
	s.check(t, recs)
	if recs[0].K != cassette.KindEvent || recs[0].Ev != cassette.EventStart || recs[0].PID != 42 || recs[0].Argv[0] != "agent" {
		t.Errorf("first record %+v, want the start event", recs[0])
	}
	var exit *cassette.Record
	var lastSeqT int64
	for i := range recs {
		r := &recs[i]
		if r.K == cassette.KindEvent && r.Ev == cassette.EventExit {
			exit = r
		}
		if r.K == cassette.KindFrame && r.EOL != "" {
			if r.T < lastSeqT {
				t.Fatalf("record %d out of read order", r.N)
			}
			lastSeqT = r.T
		}
	}
	if exit == nil || exit.Exit == nil || *exit.Exit != 3 {
		t.Errorf("exit event %+v", exit)
	}
}

// feederMain is an rpctap stand-in: it feeds a session into a PipeObserver,
// says "done" on stdout once every chunk was handed over, and waits to be
// killed.
func feederMain() int {
	mix, err := os.ReadFile(os.Getenv("RPCTAP_TEST_MIX"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := sessionOf(mix)
	cfg := sinkConfig(os.Getenv("RPCTAP_TEST_CASSETTE"))
	o, err := StartSink(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o.Event(tap.Event{T: 1, Kind: cassette.EventStart, Argv: []string{"agent"}})
	s.feed(o)
	os.Stdout.WriteString("done\n")
	time.Sleep(time.Minute)
	return 0
}

// TestSinkSurvivesSIGKILL: the process holding the PipeObserver is killed
// with SIGKILL right after its last Observe returned, as ACP clients end
// their agents. The sink must still write everything to the cassette.
func TestSinkSurvivesSIGKILL(t *testing.T) {
	runs := envInt("RPCTAP_TEST_KILL_RUNS", 50)
	if testing.Short() {
		runs = 10
	}
	// Small sessions end with the sink idle; every fifth is 3 MiB, so the
	// sink is still behind (pipes full) when the feeder dies.
	small, big := 256<<10, 3<<20
	dir := t.TempDir()
	sessions := map[int]*session{}
	mixes := map[int]string{}
	for _, size := range []int{small, big} {
		mix := agentMix(t, size)
		sessions[size] = sessionOf(mix)
		mixes[size] = filepath.Join(dir, fmt.Sprintf("mix%d", size))
		if err := os.WriteFile(mixes[size], mix, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ok := 0
	for run := 0; run < runs; run++ {
		size := small
		if run%5 == 4 {
			size = big
		}
		s := sessions[size]
		path := filepath.Join(dir, fmt.Sprintf("k%d.cassette", run))
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "RPCTAP_RECORDER_HELPER=feeder", "RPCTAP_TEST_MIX="+mixes[size], "RPCTAP_TEST_CASSETTE="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if line != "done\n" {
			t.Fatalf("run %d: feeder said %q, stderr %q", run, line, stderr.String())
		}
		// The sink finishes on its own once the pipes are closed.
		deadline := time.Now().Add(20 * time.Second)
		var recs []cassette.Record
		for {
			var trunc, err error
			_, recs, trunc, err = tryReadCassette(path)
			if err == nil && trunc == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: the sink did not finalize the cassette: %v %v", run, err, trunc)
			}
			time.Sleep(5 * time.Millisecond)
		}
		s.check(t, recs)
		ok++
	}
	t.Logf("SIGKILL right after the last Observe: %d/%d cassettes complete", ok, runs)
}

func TestSinkUnwritablePath(t *testing.T) {
	for _, path := range []string{"/dev/full", "/etc/passwd/sub/x.cassette"} {
		o, ws := startTestSink(t, path, nil)
		s := makeSession(t, 2<<20)
		done := make(chan struct{})
		go func() { s.feed(o); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Observe blocked after the recorder gave up", path)
		}
		o.Event(tap.Event{Kind: cassette.EventExit})
		if err := o.Close(); err != nil {
			t.Errorf("%s: Close: %v", path, err)
		}
		w := ws.list()
		if len(w) != 1 || !strings.Contains(w[0], "forwarding only") {
			t.Errorf("%s: warnings %q, want exactly one", path, w)
		}
		if path == "/dev/full" && len(w) == 1 && !strings.Contains(w[0], "no space left") {
			t.Errorf("%s: warning %q does not say the disk is full", path, w[0])
		}
		if len(w) == 1 && strings.Contains(w[0], "\n") {
			t.Errorf("multi-line warning %q", w[0])
		}
	}
}

func TestSinkValidatorPanic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.cassette")
	o, ws := startTestSink(t, path, func(cfg *SinkConfig) {
		cfg.Protocol = "acp"
		cfg.Env = append(cfg.Env, "RPCTAP_TEST_PANIC_VALIDATOR=1")
	})
	s := makeSession(t, 64<<10)
	s.feed(o)
	o.Close()
	w := ws.list()
	if len(w) != 1 || !strings.Contains(w[0], "validator") || !strings.Contains(w[0], "recording continues") {
		t.Errorf("warnings %q, want one about the validator", w)
	}
	_, recs, trunc := readCassette(t, path)
	if trunc != nil {
		t.Fatal(trunc)
	}
	s.check(t, recs)
}

// The disk fills up in the middle of the session: one warning, the rest of
// the session is forwarded without waiting, and the cassette holds a
// readable prefix.
func TestSinkDiskFullMidSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.cassette")
	o, ws := startTestSink(t, path, func(cfg *SinkConfig) {
		cfg.Env = append(cfg.Env, "RPCTAP_TEST_FSIZE=200000")
	})
	s := makeSession(t, 4<<20)
	done := make(chan struct{})
	go func() { s.feed(o); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Observe blocked after the disk filled up")
	}
	// The sink exited after its warning, so rpctap stopped feeding it.
	deadline := time.Now().Add(10 * time.Second)
	for !o.dead.Load() && time.Now().Before(deadline) {
		o.Observe(tap.Chunk{Stream: tap.Stderr, Seq: 1 << 40, Data: []byte("more\n")})
		time.Sleep(time.Millisecond)
	}
	if !o.dead.Load() {
		t.Error("rpctap still feeds a sink whose cassette failed")
	}
	o.Close()
	w := ws.list()
	if len(w) != 1 || !strings.Contains(w[0], "file too large") || !strings.Contains(w[0], "forwarding continues") {
		t.Fatalf("warnings %q, want exactly one about the write failure", w)
	}
	_, recs, trunc, err := tryReadCassette(path)
	if err != nil || trunc == nil {
		t.Fatalf("cassette: err %v, truncation %v; want a readable, truncated prefix", err, trunc)
	}
	if len(recs) == 0 {
		t.Fatal("nothing recorded before the disk filled up")
	}
	in := streamOf(recs, 0, cassette.DirIn)
	if !bytes.HasPrefix(s.in, in) {
		t.Error("the recorded prefix is not a prefix of the parent's bytes")
	}
}

// Lossy mode: with the sink stopped (SIGSTOP), Observe never waits; what
// did not fit into the pipes becomes gap records, and recorded bytes plus
// gaps add up to what was forwarded.
func TestSinkLossy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.cassette")
	o, ws := startTestSink(t, path, func(cfg *SinkConfig) {
		cfg.Lossy = true
	})
	pid := o.sink.cmd.Process.Pid
	syscall.Kill(pid, syscall.SIGSTOP)
	s := makeSession(t, 8<<20)
	done := make(chan struct{})
	go func() { s.feed(o); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(pid, syscall.SIGCONT)
		t.Fatal("lossy Observe blocked behind a stopped sink")
	}
	syscall.Kill(pid, syscall.SIGCONT)
	o.Close()
	if w := ws.list(); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	_, recs, trunc := readCassette(t, path)
	if trunc != nil {
		t.Fatal(trunc)
	}
	gaps := map[cassette.Dir]int64{}
	for _, r := range recs {
		if r.K == cassette.KindEvent && r.Ev == cassette.EventGap {
			gaps[r.D] += r.Bytes
		}
	}
	total := int64(0)
	for _, c := range []struct {
		d    cassette.Dir
		want []byte
	}{{cassette.DirIn, s.in}, {cassette.DirOut, s.out}, {cassette.DirErr, s.errb}} {
		got := int64(len(streamOf(recs, 0, c.d)))
		if got+gaps[c.d] != int64(len(c.want)) {
			t.Errorf("%s: %d recorded + %d in gaps, %d forwarded", c.d, got, gaps[c.d], len(c.want))
		}
		total += gaps[c.d]
	}
	if total == 0 {
		t.Error("no gap although the sink was stopped for 8 MiB")
	}
}

// The sink dies in the middle of the session (OOM killer, a stray kill -9):
// one warning at once, and the session goes on without waiting.
func TestSinkKilledMidSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.cassette")
	o, ws := startTestSink(t, path, nil)
	s := makeSession(t, 4<<20)
	half := len(s.chunks) / 2
	for _, c := range s.chunks[:half] {
		o.Observe(c)
	}
	syscall.Kill(o.sink.cmd.Process.Pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for len(ws.list()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range s.chunks[half:] {
			o.Observe(c)
		}
		o.Event(tap.Event{Kind: cassette.EventExit})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Observe blocked after the sink died")
	}
	o.Close()
	w := ws.list()
	if len(w) != 1 || !strings.Contains(w[0], "ended unexpectedly") {
		t.Errorf("warnings %q, want exactly one saying the recorder ended", w)
	}
	if res := o.Result(); res.Done {
		t.Errorf("result %+v claims the sink finished", res)
	}
}

// startTestSink starts a sink writing path whose warnings are collected;
// tune, when not nil, adjusts the configuration first.
func startTestSink(t *testing.T, path string, tune func(*SinkConfig)) (*PipeObserver, *warnings) {
	t.Helper()
	ws := &warnings{}
	cfg := sinkConfig(path)
	cfg.Warn = ws.add
	if tune != nil {
		tune(&cfg)
	}
	o, err := StartSink(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o, ws
}

// The sink pauses long between light reads (wake-ups cost more than the
// lag) and briefly in a busy stream (the pipe would fill during a long one).
func TestGatherPause(t *testing.T) {
	d := &drainReader{r: bytes.NewReader(make([]byte, 1<<20))}
	buf := make([]byte, 1<<10)
	d.Read(buf)
	if got := d.nextPause(); got != gatherDelay {
		t.Errorf("after 1 KiB: pause %v, want the light pause %v", got, gatherDelay)
	}
	for range 128 {
		d.Read(buf)
	}
	if got := d.nextPause(); got != gatherBusy {
		t.Errorf("after 128 KiB: pause %v, want the busy pause %v", got, gatherBusy)
	}
	if got := d.nextPause(); got != gatherDelay {
		t.Errorf("after nothing since the last pause: %v, want %v", got, gatherDelay)
	}
	if gatherBusy >= gatherDelay || gatherDelay > 10*time.Millisecond {
		t.Errorf("pauses %v (light) and %v (busy): the busy one must be the shorter, and neither long", gatherDelay, gatherBusy)
	}
}

// TestHoldHurriesReaders: a chunk that arrives before one with a smaller Seq
// is held, and the hold wakes the sink's pipe readers from their gathering
// pause (the missing chunk is in one of their pipes; every chunk held
// meanwhile is memory). A woken pause returns at once; a pause nobody wakes
// lasts its time.
func TestHoldHurriesReaders(t *testing.T) {
	var file bytes.Buffer
	w, err := cassette.NewWriter(&file, cassette.Header{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := New(w, WithProtocol("acp", true), WithWarn(func(m string) { t.Error(m) }))
	r.Observe(tap.Chunk{Stream: tap.Stdout, Seq: 2, T: 2, Data: []byte("{\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n")})
	deadline := time.Now().Add(10 * time.Second)
	for len(r.hurry) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a held chunk did not hurry the pipe readers")
		}
		time.Sleep(time.Millisecond)
	}
	const long = 10 * time.Second
	saved := gatherDelay
	gatherDelay = long
	defer func() { gatherDelay = saved }()
	d := &drainReader{}
	start := time.Now()
	d.pause(r.hurry) // a token is waiting: returns at once
	if el := time.Since(start); el > long/2 {
		t.Fatalf("a hurried pause took %v", el)
	}
	gatherDelay = 20 * time.Millisecond
	start = time.Now()
	d.pause(make(chan struct{}))
	if el := time.Since(start); el < gatherDelay {
		t.Fatalf("an unhurried pause took %v, want %v", el, gatherDelay)
	}
	r.Observe(tap.Chunk{Stream: tap.Stdout, Seq: 1, T: 1, Data: []byte("{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n")})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	cr, err := cassette.NewReader(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for {
		rec, err := cr.Next()
		if err != nil {
			break
		}
		if rec.K == cassette.KindFrame {
			methods = append(methods, rec.Method)
		}
	}
	if strings.Join(methods, ",") != "a,b" {
		t.Fatalf("frames %v, want a,b (in Seq order)", methods)
	}
}

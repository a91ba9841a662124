package tap

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as every child process the tests need, the
// os/exec TestHelperProcess way: with RPCTAP_TAP_HELPER=1 in its environment
// it plays the role named by its first argument instead of running tests.
func TestMain(m *testing.M) {
	if os.Getenv("RPCTAP_TAP_HELPER") == "1" {
		os.Exit(helperMain(os.Args[1], os.Args[2:]))
	}
	os.Exit(m.Run())
}

// helperArgs returns the executable and arguments that run role.
func helperArgv(role string, args ...string) []string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return append([]string{exe, role}, args...)
}

func helperEnv(extra ...string) []string {
	// The race detector sleeps a second in every exiting process by default.
	return append(append(os.Environ(), "RPCTAP_TAP_HELPER=1", "GORACE=atexit_sleep_ms=0"), extra...)
}

func helperMain(role string, args []string) int {
	switch role {
	case "tee": // stdin to stdout and stderr
		buf := make([]byte, 32<<10)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				os.Stdout.Write(buf[:n])
				os.Stderr.Write(buf[:n])
			}
			if err != nil {
				return 0
			}
		}
	case "cat":
		io.Copy(os.Stdout, os.Stdin)
		return 0
	case "exit":
		n, _ := strconv.Atoi(args[0])
		return n
	case "line-exit": // reads one line, says it, exits while stdin stays open
		l, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		os.Stdout.WriteString("got " + l)
		return 0
	case "killself":
		os.Stdout.WriteString("dying\n")
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(10 * time.Second)
		return 99
	case "ignore-eof": // reads stdin to EOF, says so, then keeps running
		io.Copy(io.Discard, os.Stdin)
		os.Stdout.WriteString("eof\n")
		time.Sleep(60 * time.Second)
		return 98
	case "sleep":
		time.Sleep(60 * time.Second)
		return 0
	case "grandchild": // leaves a grandchild holding stdout and stderr open
		argv := helperArgv("sleep")
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = helperEnv()
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("grandchild %d\n", c.Process.Pid)
		return 0
	case "signals": // prints the name of each signal it gets; exits on SIGTERM
		c := make(chan os.Signal, 8)
		signal.Notify(c, ForwardedSignals...)
		os.Stdout.WriteString("ready\n")
		for s := range c {
			fmt.Println(SignalName(s.(syscall.Signal)))
			if s == syscall.SIGTERM {
				return 0
			}
		}
	case "pdeath": // writes $MARK when it gets SIGTERM
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		os.Stdout.WriteString("ready\n")
		select {
		case <-c:
			os.WriteFile(os.Getenv("MARK"), []byte("SIGTERM\n"), 0o600)
			return 0
		case <-time.After(20 * time.Second):
			return 97
		}
	case "flood": // writes to stdout forever, counting in $PROGRESS
		buf := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
		var total int64
		f, _ := os.Create(os.Getenv("PROGRESS"))
		for {
			n, err := os.Stdout.Write(buf)
			total += int64(n)
			f.WriteAt([]byte(fmt.Sprintf("%020d\n", total)), 0)
			if err != nil {
				return 0
			}
		}
	case "tap": // rpctap record in miniature: the tap with a collecting observer
		obs := newCollector()
		obs.discard = os.Getenv("DISCARD") == "1"
		c := Command(args[0], args[1:]...)
		c.Observer = obs
		if g := os.Getenv("GRACE"); g != "" {
			c.Grace, _ = time.ParseDuration(g)
		}
		if err := c.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "rpctap: %v\n", err)
			return 127
		}
		if p := os.Getenv("OBS"); p != "" {
			obs.dump(p)
		}
		ExitLike(c.ProcessState)
	}
	fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
	return 2
}

// collector is an Observer that keeps everything and checks the contract:
// per-stream Seq order, no call after Close, Close once.
type collector struct {
	mu      sync.Mutex
	data    [3]bytes.Buffer
	counts  [3]int64
	discard bool              // count bytes only
	lastSeq map[[2]int]uint64 // per connection and stream
	seqs    map[uint64]bool
	events  []Event
	log     []logEntry // every Observe and Event, in call order
	closes  int
	errs    []string
	observe func(c Chunk) // optional hook, called first
}

// logEntry is one observer call: a chunk (without its bytes, but for short
// ones) or an event.
type logEntry struct {
	event  bool
	kind   string // event kind
	stream Stream
	seq    uint64
	t      int64
	data   string // a chunk's bytes, up to 64
}

func newCollector() *collector {
	return &collector{seqs: map[uint64]bool{}, lastSeq: map[[2]int]uint64{}}
}

func (o *collector) Observe(c Chunk) {
	if o.observe != nil {
		o.observe(c)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closes > 0 {
		o.errs = append(o.errs, "Observe after Close")
	}
	key := [2]int{c.Conn, int(c.Stream)}
	if c.Seq <= o.lastSeq[key] {
		o.errs = append(o.errs, fmt.Sprintf("%d/%v: seq %d after %d", c.Conn, c.Stream, c.Seq, o.lastSeq[key]))
	}
	if o.seqs[c.Seq] {
		o.errs = append(o.errs, fmt.Sprintf("seq %d twice", c.Seq))
	}
	if len(c.Data) == 0 || len(c.Data) > ChunkSize {
		o.errs = append(o.errs, fmt.Sprintf("chunk of %d bytes", len(c.Data)))
	}
	o.seqs[c.Seq] = true
	o.lastSeq[key] = c.Seq
	o.log = append(o.log, logEntry{stream: c.Stream, seq: c.Seq, t: c.T, data: string(c.Data[:min(len(c.Data), 64)])})
	o.counts[c.Stream] += int64(len(c.Data))
	if !o.discard {
		o.data[c.Stream].Write(c.Data)
	}
}

func (o *collector) Event(e Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closes > 0 {
		o.errs = append(o.errs, "Event after Close: "+e.Kind)
	}
	o.events = append(o.events, e)
	o.log = append(o.log, logEntry{event: true, kind: e.Kind, seq: e.Seq, t: e.T})
}

func (o *collector) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closes++
	return nil
}

func (o *collector) kinds() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var k []string
	for _, e := range o.events {
		k = append(k, e.Kind)
	}
	return k
}

func (o *collector) event(kind string) *Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.events {
		if o.events[i].Kind == kind {
			return &o.events[i]
		}
	}
	return nil
}

// check fails t if the observer saw a contract violation.
func (o *collector) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.errs {
		t.Error("observer:", e)
	}
	if o.closes != 1 {
		t.Errorf("observer closed %d times, want 1", o.closes)
	}
}

// dumped is what the "tap" helper writes for the test that ran it.
type dumped struct {
	In, Out, Err []byte
	Events       []Event
	Closes       int
	Errs         []string
}

func (o *collector) dump(path string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, _ := json.Marshal(dumped{o.data[0].Bytes(), o.data[1].Bytes(), o.data[2].Bytes(), o.events, o.closes, o.errs})
	os.WriteFile(path, b, 0o600)
}

func readDump(t *testing.T, path string) dumped {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d dumped
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

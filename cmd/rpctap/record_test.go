package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
)

// These tests run the real rpctap (testscript.Main in main_test.go puts
// this test binary on PATH as "rpctap") with real children.

// rpctapEnv is the environment for rpctap processes: the race detector's
// default one-second sleep at exit would distort every timing.
func rpctapEnv() []string { return append(os.Environ(), "GORACE=atexit_sleep_ms=0") }

// catRaw returns one direction's exact bytes from a cassette.
func catRaw(t *testing.T, cas, dir string, flags ...string) ([]byte, string) {
	t.Helper()
	out, warn, err := tryCatRaw(cas, dir, flags...)
	if err != nil {
		t.Fatal(err)
	}
	return out, warn
}

// tryCatRaw is catRaw for a cassette that may still be empty (its recorder
// has not written the header yet), and for goroutines other than the test's.
func tryCatRaw(cas, dir string, flags ...string) ([]byte, string, error) {
	var out, errb bytes.Buffer
	args := append(append([]string{"cat", "--raw", "--direction", dir}, flags...), cas)
	if code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		return nil, "", fmt.Errorf("rpctap cat --raw --direction %s: exit %d: %s", dir, code, errb.String())
	}
	return out.Bytes(), errb.String(), nil
}

// What goes in comes out, and `cat --raw` of the cassette reproduces both
// directions exactly (redaction off).
func TestRecordByteExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	junk := make([]byte, 1<<20)
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	line := bytes.Repeat([]byte(`{"k":"0123456789abcdef0123456789abcdef"}`), (16<<20)/40+1)[:16<<20]
	cases := map[string][]byte{
		"mixed":        []byte("\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1}\r\n\n\nnot json \xff\xfe\n{\"a\":[1,2]}\n{\"no\":\"eol\"}"),
		"random 1 MiB": junk,
		"16 MiB line":  append(append([]byte(nil), line...), '\n'),
	}
	if testing.Short() {
		delete(cases, "16 MiB line")
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			cas := filepath.Join(t.TempDir(), "s.cassette")
			cmd := exec.Command("rpctap", "record", "--no-redact", "-o", cas, "--", "cat")
			cmd.Env = rpctapEnv()
			cmd.Stdin = bytes.NewReader(data)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s", err, errb.String())
			}
			if !bytes.Equal(out.Bytes(), data) {
				t.Errorf("stdout: %d bytes, want %d", out.Len(), len(data))
			}
			if errb.Len() != 0 {
				t.Errorf("stderr: %q", errb.String())
			}
			for _, dir := range []string{"in", "out"} {
				raw, warn := catRaw(t, cas, dir)
				if !bytes.Equal(raw, data) {
					t.Errorf("cat --raw --direction %s: %d bytes, want %d (%s)", dir, len(raw), len(data), warn)
				}
			}
		})
	}
}

var (
	sessRE = regexp.MustCompile(`sess_[0-9a-f]+`)
	ptrRE  = regexp.MustCompile(`0x[0-9a-f]+`)
)

// normalizeACP removes what differs between two runs of the ACP SDK example
// (session ids, pointers the client prints) and sorts the lines: the client
// prints from concurrent handlers (a session/update notification and the
// session/request_permission request that follows it at once), whose order
// depends on whether both frames arrive in one read. Any relay (cat as
// well) can split them, so only the lines, not their order, can be compared.
func normalizeACP(b []byte) string {
	s := ptrRE.ReplaceAllString(sessRE.ReplaceAllString(string(b), "SESS"), "PTR")
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// The ACP Go SDK example client drives its example agent through rpctap
// record: its output is what it is without rpctap, and although the client
// ends every session with SIGKILL (cmd.Process.Kill right after the last
// response), the cassette holds every frame the client received, in 50
// runs out of 50 (3 with -short).
func TestRecordACPSDK(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build the ACP SDK examples")
	}
	bin := t.TempDir()
	for _, pkg := range []string{"client", "agent"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, pkg), "github.com/coder/acp-go-sdk/example/"+pkg)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	client, agent := filepath.Join(bin, "client"), filepath.Join(bin, "agent")

	session := func(argv ...string) ([]byte, error) {
		cmd := exec.Command(client, argv...)
		cmd.Env = rpctapEnv()
		cmd.Stdin = strings.NewReader("1\n") // allow the change
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, errb.String())
		}
		return out.Bytes(), err
	}
	direct, err := session(agent)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(direct, []byte("Agent completed")) {
		t.Fatalf("the example did not complete without rpctap:\n%s", direct)
	}
	want := normalizeACP(direct)

	runs := 50
	if testing.Short() {
		runs = 3
	}
	dir := t.TempDir()
	var (
		mu        sync.Mutex
		reference []byte                    // the out stream up to the last response, from one run
		sem       = make(chan struct{}, 10) // the sessions mostly sleep
		wg        sync.WaitGroup
	)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cas := filepath.Join(dir, fmt.Sprintf("run%02d.cassette", i))
			out, err := session("rpctap", "record", "-q", "-o", cas, "--", agent)
			if err != nil {
				t.Errorf("run %d: %v", i, err)
				return
			}
			if got := normalizeACP(out); got != want {
				t.Errorf("run %d: the client's output differs through rpctap:\n%s\nwithout:\n%s", i, out, direct)
			}
			// The sink outlives rpctap's SIGKILL and finishes on its own:
			// wait for it, then everything the client read must be there,
			// up to the prompt's response (the last frame it received).
			// Until then the file may still be empty (under load the sink
			// has not written its header when the client is done), which
			// cat rightly refuses: try again until the deadline.
			var (
				raw    []byte
				catErr error
			)
			deadline := time.Now().Add(20 * time.Second)
			for {
				raw, _, catErr = tryCatRaw(cas, "out")
				if bytes.Contains(raw, []byte(`"stopReason"`)) || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			end := bytes.Index(raw, []byte(`"stopReason"`))
			if end < 0 {
				t.Errorf("run %d: the cassette lacks the prompt's response (%d bytes of out; %v)", i, len(raw), catErr)
				return
			}
			end += bytes.IndexByte(raw[end:], '\n') + 1
			// And what the client sent, the prompt and its permission answer.
			in, _, err := tryCatRaw(cas, "in")
			if err != nil {
				t.Errorf("run %d: %v", i, err)
				return
			}
			for _, m := range []string{`"session/prompt"`, `"optionId":"allow"`} {
				if !bytes.Contains(in, []byte(m)) {
					t.Errorf("run %d: the cassette's in stream lacks %s", i, m)
				}
			}
			got := sessRE.ReplaceAll(raw[:end], []byte("SESS"))
			mu.Lock()
			defer mu.Unlock()
			if reference == nil {
				reference = got
			} else if !bytes.Equal(got, reference) {
				t.Errorf("run %d: the recorded out stream differs from another run's:\n%s\nvs\n%s", i, got, reference)
			}
		}()
	}
	wg.Wait()
	if n := bytes.Count(reference, []byte("\n")); n < 8 {
		t.Errorf("only %d frames from the agent recorded:\n%s", n, reference)
	}
}

// A grandchild that keeps the child's stdout open does not hold rpctap
// beyond --grace, and the child's exit status still passes through.
func TestRecordGrandchildGrace(t *testing.T) {
	cas := filepath.Join(t.TempDir(), "g.cassette")
	cmd := exec.Command("rpctap", "record", "-q", "--grace", "300ms", "-o", cas, "--",
		"sh", "-c", "sleep 60 & echo $!; exit 3")
	cmd.Env = rpctapEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	var pid int
	fmt.Sscanf(out.String(), "%d", &pid)
	if pid > 0 {
		defer syscall.Kill(pid, syscall.SIGKILL)
	} else {
		t.Errorf("no grandchild pid in %q", out.String())
	}
	if cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("rpctap: %v, want exit 3", err)
	}
	if took > 3*time.Second {
		t.Errorf("rpctap took %v with a grandchild holding stdout and --grace 300ms", took)
	}
	if pid > 0 && syscall.Kill(pid, 0) != nil {
		t.Error("the grandchild is gone: the test proves nothing")
	}
}

// Socket mode: each connection is forwarded byte for byte with half-close,
// recorded as its own connection, and SIGTERM ends rpctap cleanly.
func TestRecordSocket(t *testing.T) {
	dir := t.TempDir()
	up, listen, cas := filepath.Join(dir, "up.sock"), filepath.Join(dir, "tap.sock"), filepath.Join(dir, "s.cassette")
	ln, err := net.Listen("unix", up)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // echo, then answer the half-close
				defer c.Close()
				io.Copy(c, c)
				c.Write([]byte("{\"bye\":true}\n"))
			}()
		}
	}()
	cmd := exec.Command("rpctap", "record", "-q", "--no-redact", "-o", cas, "--listen", listen, "--upstream", up)
	cmd.Env = rpctapEnv()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for i := 0; ; i++ {
		if _, err := os.Stat(listen); err == nil {
			break
		}
		if i == 500 {
			t.Fatal("rpctap does not listen")
		}
		time.Sleep(10 * time.Millisecond)
	}
	payloads := [][]byte{
		[]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n\xff\xfe not json\r\n"),
		bytes.Repeat([]byte("{\"k\":1}\n"), 100000),
	}
	for i, p := range payloads {
		c, err := net.Dial("unix", listen)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan []byte)
		go func() { b, _ := io.ReadAll(c); done <- b }()
		c.Write(p)
		c.(*net.UnixConn).CloseWrite()
		select {
		case b := <-done:
			if want := append(append([]byte(nil), p...), "{\"bye\":true}\n"...); !bytes.Equal(b, want) {
				t.Errorf("connection %d: got %d bytes, want %d", i+1, len(b), len(want))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d: no answer", i+1)
		}
		c.Close()
	}
	time.Sleep(100 * time.Millisecond) // let the conn-close events go out
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rpctap after SIGTERM: %v: %s", err, errb.String())
	}
	if _, err := os.Lstat(listen); !os.IsNotExist(err) {
		t.Errorf("socket file left behind (%v)", err)
	}
	raw, _ := catRaw(t, cas, "in", "--conn", "1")
	if !bytes.Equal(raw, payloads[0]) {
		t.Errorf("cat --raw --direction in --conn 1: %q", raw)
	}
	raw, _ = catRaw(t, cas, "out", "--conn", "2")
	if want := append(append([]byte(nil), payloads[1]...), "{\"bye\":true}\n"...); !bytes.Equal(raw, want) {
		t.Errorf("cat --raw --direction out --conn 2: %d bytes, want %d", len(raw), len(want))
	}
}

// A child that closes its stdout and keeps running: the parent sees EOF at
// once, as through a plain pipe, not when rpctap exits.
func TestRecordStdoutEOFPassesOn(t *testing.T) {
	cmd := exec.Command("rpctap", "record", "-q", "-o", filepath.Join(t.TempDir(), "c.cassette"), "--",
		"sh", "-c", "echo hi; exec 1>&-; sleep 3")
	cmd.Env = rpctapEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	b, _ := io.ReadAll(out)
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("stdout reached EOF after %v; the child closed it at once", took)
	}
	if string(b) != "hi\n" {
		t.Errorf("stdout %q", b)
	}
}

// orderCheck reads a cassette with `rpctap cat` and reports what breaks the
// record order: a record whose time is less than the one before it, or a
// last record before the end that is not the exit event. It returns the
// records' kinds/events for further checks.
func orderCheck(t *testing.T, cas string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main([]string{"cat", cas}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("rpctap cat %s: exit %d: %s", cas, code, errb.String())
	}
	var kinds []string
	var lastT int64
	var lastLine string
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var r struct {
			N    int    `json:"n"`
			T    int64  `json:"t"`
			K    string `json:"k"`
			Ev   string `json:"ev"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v: %s", cas, err, line)
		}
		if r.K == "header" {
			continue
		}
		if r.T < lastT {
			t.Errorf("%s: record %d has t=%d, less than the record before it (t=%d):\n  %s\n  %s", cas, r.N, r.T, lastT, lastLine, line)
		}
		lastT, lastLine = r.T, line
		k := r.K
		if r.Ev != "" {
			k += ":" + r.Ev
		} else if r.Text != "" {
			k += ":" + r.Text
		}
		kinds = append(kinds, k)
	}
	// What the recorder concludes at the end (a protocol detected late, the
	// session-end violations) may follow exit; nothing the tap saw may.
	n := len(kinds)
	if n == 0 || kinds[n-1] != "end" {
		t.Errorf("%s: no end record: %q", cas, kinds[max(0, n-4):])
	}
	exit := slices.Index(kinds, "event:exit")
	if exit < 0 {
		t.Errorf("%s: no exit event: %q", cas, kinds[max(0, n-4):])
	}
	for _, k := range kinds[exit+1 : max(exit+1, n-1)] {
		if !strings.HasPrefix(k, "meta") && !strings.HasPrefix(k, "violation") {
			t.Errorf("%s: %s recorded after the exit event: %q", cas, k, kinds[exit:])
			break
		}
	}
	return kinds
}

// The exit event is recorded after the child's last output, even output
// drained after the child was reaped (here a grandchild's, written later),
// and record times never decrease.
func TestRecordExitAfterDrain(t *testing.T) {
	cas := filepath.Join(t.TempDir(), "x.cassette")
	cmd := exec.Command("rpctap", "record", "-q", "--grace", "10s", "-o", cas, "--",
		"sh", "-c", "(sleep 0.3; echo late-out; echo late-err >&2) & echo early; exit 0")
	cmd.Env = rpctapEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("rpctap: %v: %s", err, errb.String())
	}
	if out.String() != "early\nlate-out\n" {
		t.Fatalf("forwarded %q", out.String())
	}
	kinds := orderCheck(t, cas)
	if !slices.Contains(kinds, "stderr:late-err") {
		t.Errorf("the grandchild's stderr line is not recorded: %q", kinds)
	}
}

// In the demo session (the demo client closes the agent's stdin, and the
// agent says so on stderr and exits), stdin-eof comes before the stderr line
// it caused, exit is the last record, and times never decrease. Several runs,
// since the old ordering bugs were races.
func TestRecordDemoEventOrder(t *testing.T) {
	dir := t.TempDir()
	for i := range 8 {
		cas := filepath.Join(dir, fmt.Sprintf("demo%d.cassette", i))
		var out, errb bytes.Buffer
		cmd := exec.Command("rpctap", "demo", "-q", "--delay", "0", "-o", cas)
		cmd.Env = rpctapEnv()
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("rpctap demo: %v: %s", err, errb.String())
		}
		kinds := orderCheck(t, cas)
		eof := slices.Index(kinds, "event:stdin-eof")
		bye := slices.IndexFunc(kinds, func(k string) bool { return strings.HasPrefix(k, "stderr:") && strings.Contains(k, "stdin closed") })
		if eof < 0 || bye < 0 || eof > bye {
			t.Errorf("%s: stdin-eof at %d, the agent's \"stdin closed\" line at %d: %q", cas, eof, bye, kinds[max(0, len(kinds)-5):])
		}
		if t.Failed() {
			break
		}
	}
}

// TestRecordCreatedIsTimeZero: the header's created is the instant the
// records' t counts from, so created + t is when the tap read a frame: never
// before the child wrote it. (It used to be stamped before the sink was
// started, a few ms before the tap's time zero, which put linked recordings
// of record --deep out of order.) The child prints its wall clock in ns.
func TestRecordCreatedIsTimeZero(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("date"); err != nil {
		t.Skip("needs date(1)")
	}
	rp := rpctapPath(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "x.cassette")
	child := `for i in 1 2 3; do echo "{\"jsonrpc\":\"2.0\",\"method\":\"tick\",\"params\":{\"ns\":$(date +%s%N)}}"; done`
	if r := run(t, dir, "", rp, "record", "-q", "-o", cas, "--", "sh", "-c", child); r.code != 0 {
		t.Fatalf("record: exit %d\n%s", r.code, r.stderr)
	}
	rd, err := cassette.Open(cas)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	created, err := time.Parse(time.RFC3339Nano, rd.Header().Created)
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if rec.K != cassette.KindFrame {
			continue
		}
		var m struct {
			Params struct {
				NS int64 `json:"ns"`
			} `json:"params"`
		}
		if err := json.Unmarshal(rec.Payload(), &m); err != nil || m.Params.NS == 0 {
			t.Fatalf("frame %s: %v", rec.Payload(), err)
		}
		frames++
		read := created.Add(time.Duration(rec.T))
		if wrote := time.Unix(0, m.Params.NS); read.Before(wrote) {
			t.Errorf("record %d: created + t is %v, %v before the child wrote the frame", rec.N, read.Format(time.RFC3339Nano), wrote.Sub(read))
		}
	}
	if frames != 3 {
		t.Fatalf("%d frames, want 3", frames)
	}
}

package cassette

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets the kill test re-execute this binary as a writer process.
func TestMain(m *testing.M) {
	if path := os.Getenv("RPCTAP_KILL_WRITER"); path != "" {
		killWriter(path)
		return
	}
	os.Exit(m.Run())
}

// killWriter appends and flushes forever, telling its parent after every
// flush how many records are in the kernel, until it is killed.
func killWriter(path string) {
	w, err := Create(path, Header{}, &Options{FrameSize: 32 << 10})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	g := newAgentMix(99)
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		r := g.record()
		w.Append(&r)
		if i%3 == 2 {
			if err := w.Flush(); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Fprintf(out, "flushed %d\n", w.Next())
			out.Flush()
		}
	}
}

// TestKill9: a process writing a cassette is killed with SIGKILL at random
// points; every record it had flushed reads back, in order, and the reader
// reports the cut instead of failing.
func TestKill9(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 5; run++ {
		path := filepath.Join(t.TempDir(), "k.cassette")
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "RPCTAP_KILL_WRITER="+path)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var flushed uint64
		stopAt := uint64(200 + 700*run)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "error") {
				t.Fatal(line)
			}
			n, _ := strconv.ParseUint(strings.TrimPrefix(line, "flushed "), 10, 64)
			flushed = n
			if n >= stopAt {
				break
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		io.Copy(io.Discard, stdout)
		cmd.Wait()

		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var got uint64
		g := newAgentMix(99)
		for {
			rec, err := r.Next()
			if err != nil {
				var te *TruncatedError
				if !errors.As(err, &te) || te.Records != got {
					t.Fatalf("run %d: %v after %d records", run, err, got)
				}
				break
			}
			if got > 0 {
				want := g.record()
				if string(rec.Line()) != string(want.Line()) {
					t.Fatalf("run %d: record %d differs", run, got)
				}
			}
			got++
		}
		r.Close()
		if got < flushed {
			t.Fatalf("run %d: %d records read back, %d were flushed before the kill", run, got, flushed)
		}
		x, err := OpenIndex(path)
		if err != nil {
			t.Fatalf("run %d: index: %v", run, err)
		}
		if x.Len() != got || x.Truncated() == nil {
			t.Fatalf("run %d: index has %d records (reader %d), truncated %v", run, x.Len(), got, x.Truncated())
		}
		x.Close()
	}
}

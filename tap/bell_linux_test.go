package tap

import (
	"bufio"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A pipe read without a poll (the bell path) is woken by the cutter: the
// blocked Read returns errCut, and the byte the cutter wrote to wake it is
// never returned as data. Data written before the cut is read as usual.
func TestBellWakesBlockedRead(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1]) // a writer that never closes: a grandchild holding stdout
	cut, err := newCutter(1)
	if err != nil {
		t.Fatal(err)
	}
	f := newRawFD(p[0], cut)
	f.mayRing = true
	if _, err := unix.Write(p[1], []byte("before\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := f.Read(buf)
	if err != nil || string(buf[:n]) != "before\n" {
		t.Fatalf("Read = %q, %v; want the data written before the cut", buf[:n], err)
	}
	if f.bell != 1 {
		t.Fatalf("bell = %d: the read polled, so this test proves nothing about the bell path", f.bell)
	}
	type res struct {
		b   []byte
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := f.Read(buf)
		done <- res{append([]byte(nil), buf[:n]...), err}
	}()
	time.Sleep(50 * time.Millisecond) // let it block in read(2)
	select {
	case r := <-done:
		t.Fatalf("Read returned %q, %v before the cut", r.b, r.err)
	default:
	}
	cut.fire()
	select {
	case r := <-done:
		if !errors.Is(r.err, errCut) || len(r.b) != 0 {
			t.Fatalf("after the cut Read = %q, %v; want nothing and errCut", r.b, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cutter did not wake the blocked read")
	}
	if len(cut.bells) != 0 {
		t.Errorf("fire left %d bells registered", len(cut.bells))
	}
	f.close()
	cut.release()
}

// Without WakeStdin the tap never writes into the parent's stdin, even when
// the child exits while the parent keeps stdin open; with it, the stdin pump
// reads without polling and is still cut loose when the child exits.
func TestWakeStdin(t *testing.T) {
	for _, wake := range []bool{false, true} {
		inR, inW := mustPipe(t)
		outR, outW := mustPipe(t)
		argv := helperArgv("line-exit")
		c := Command(argv[0], argv[1:]...)
		c.Env, c.Signals = helperEnv(), nil
		inR.Fd() // blocking, as a child's stdin from os/exec is
		c.Stdin, c.Stdout, c.Stderr = inR, outW, outW
		c.WakeStdin = wake
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		outW.Close()
		// The stdin pump reads this line (deciding how it reads), then
		// blocks in its next read while the child exits.
		if _, err := inW.Write([]byte("x\n")); err != nil {
			t.Fatal(err)
		}
		if l, err := bufio.NewReader(outR).ReadString('\n'); l != "got x\n" {
			t.Fatalf("child said %q, %v", l, err)
		}
		waited := make(chan error, 1)
		go func() { waited <- c.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("WakeStdin %v: Wait did not return while the parent kept stdin open", wake)
		}
		<-c.pumpsIn
		if wake && c.in.bell != 1 {
			t.Errorf("WakeStdin: the stdin pump polled (bell %d)", c.in.bell)
		}
		if !wake {
			if c.in.bell == 1 {
				t.Error("without WakeStdin the stdin pump took the bell path")
			}
			// Nothing may have been written into the parent's pipe.
			fd := int(inR.Fd()) // Fd makes the descriptor blocking: call it once
			unix.SetNonblock(fd, true)
			b := make([]byte, 8)
			if n, err := unix.Read(fd, b); n > 0 || !errors.Is(err, unix.EAGAIN) {
				t.Errorf("the parent's stdin holds %q (%v): the tap wrote into it", b[:max(n, 0)], err)
			}
		}
		inR.Close()
		inW.Close()
		outR.Close()
	}
}

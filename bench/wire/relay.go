package main

// Minimal Go relays, to tell what any Go relay costs from what rpctap's tap
// adds: the benchmark re-executes itself with relayMarker as a relay between
// the parent and the child. "block" copies with blocking read/write system
// calls on raw descriptors (a thread blocked per direction, like cat); "poll"
// puts the descriptors in non-blocking mode and copies through *os.File, so
// Go's netpoller wakes the copying goroutines (the way rpctap's tap works).

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

const relayMarker = "__wirebench-relay"

func relayMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "wirebench relay: usage: MODE CHILD...")
		return 2
	}
	mode, argv := args[0], args[1:]
	var inR, inW, outR, outW int
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return fail(err)
	}
	inR, inW = fds[0], fds[1]
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return fail(err)
	}
	outR, outW = fds[0], fds[1]
	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin = os.NewFile(uintptr(inR), "child-stdin")
	child.Stdout = os.NewFile(uintptr(outW), "child-stdout")
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return fail(err)
	}
	child.Stdin.(*os.File).Close()
	child.Stdout.(*os.File).Close()

	var wg sync.WaitGroup
	wg.Add(2)
	switch mode {
	case "block":
		copyFD := func(dst, src int, closeDst bool) {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := syscall.Read(src, buf)
				if err == syscall.EINTR {
					continue
				}
				if n <= 0 {
					break
				}
				for off := 0; off < n; {
					w, err := syscall.Write(dst, buf[off:n])
					if err == syscall.EINTR {
						continue
					}
					if err != nil {
						return
					}
					off += w
				}
			}
			if closeDst {
				syscall.Close(dst)
			}
		}
		go copyFD(inW, 0, true)
		go copyFD(1, outR, false)
	case "poll":
		for _, fd := range []int{0, 1, inW, outR} {
			syscall.SetNonblock(fd, true)
		}
		stdin, stdout := os.NewFile(0, "stdin"), os.NewFile(1, "stdout")
		toChild, fromChild := os.NewFile(uintptr(inW), "to-child"), os.NewFile(uintptr(outR), "from-child")
		cp := func(dst, src *os.File, closeDst bool) {
			defer wg.Done()
			io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 64<<10))
			if closeDst {
				dst.Close()
			}
		}
		go cp(toChild, stdin, true)
		go cp(stdout, fromChild, false)
		defer func() {
			for _, fd := range []int{0, 1} {
				syscall.SetNonblock(fd, false)
			}
		}()
	default:
		return fail(fmt.Errorf("unknown mode %q", mode))
	}
	err := child.Wait()
	wg.Wait()
	if err != nil {
		return 1
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "wirebench relay: %v\n", err)
	return 1
}

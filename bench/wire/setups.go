package main

// Set-ups: how the parent (this process) reaches the child.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// setup is one way of connecting parent and child.
type setup struct {
	Name string
	Kind string   // direct, cat, rpctap
	Args []string // rpctap: arguments; {cassette} and {replay} are replaced, {child} expands to the child's argv
	// Note is printed under the tables (e.g. an approximation).
	Note string
	// Bin overrides the rpctap binary (the --alt set-ups).
	Bin string
}

func (s setup) isReplay() bool {
	for _, a := range s.Args {
		if a == "{replay}" {
			return true
		}
	}
	return false
}

func (s setup) writesCassette() bool {
	for _, a := range s.Args {
		if a == "{cassette}" {
			return true
		}
	}
	return false
}

// launched is a running set-up.
type launched struct {
	w        *os.File // the parent writes the child's stdin here
	r        *os.File // the parent reads the child's stdout here
	procs    []*exec.Cmd
	overhead []*exec.Cmd // the relay processes whose cost is measured
	tap      *exec.Cmd   // rpctap, whose children include a sink
	child    *exec.Cmd   // the bench child when this process started it
	selfExe  string
	cassette string
	errPath  string

	mu      sync.Mutex
	hwm     map[int]int64  // peak VmHWM (KiB) seen per pid
	anon    map[int]int64  // peak RssAnon (KiB) sampled per pid
	file    map[int]int64  // peak RssFile (KiB) sampled per pid (the binary's pages, shared between rpctap and its sink)
	rss     map[int]int64  // last VmRSS (KiB) per pid
	exe     map[int]string // last exe seen per pid
	stop    chan struct{}
	stopped chan struct{}
}

func pipe() (r, w *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	return r, w
}

// start launches set-up s for a child started with childArgv (argv[0] is the
// executable).
//
// interval is how often memory is sampled while the session runs (0: only at
// its end; VmHWM is a high-water mark, so the final sample has the peaks of
// rpctap and its sink, and the ping workload wants no sampler in the parent
// while it times round trips).
func start(s setup, childArgv []string, rpctap, cassette, replay, tmp string, interval time.Duration) (*launched, error) {
	self := childArgv[0]
	l := &launched{selfExe: self, cassette: cassette,
		hwm: map[int]int64{}, rss: map[int]int64{}, exe: map[int]string{}, anon: map[int]int64{}, file: map[int]int64{},
		stop: make(chan struct{}), stopped: make(chan struct{})}
	errf, err := os.CreateTemp(tmp, "stderr-*")
	if err != nil {
		return nil, err
	}
	defer errf.Close()
	l.errPath = errf.Name()
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	cmd := func(argv []string, in, out *os.File) *exec.Cmd {
		c := exec.Command(argv[0], argv[1:]...)
		c.Stdin, c.Stdout, c.Stderr = in, out, errf
		l.procs = append(l.procs, c)
		return c
	}
	switch s.Kind {
	case "direct":
		ar, aw := pipe()
		br, bw := pipe()
		closeAfter = append(closeAfter, ar, bw)
		l.w, l.r = aw, br
		l.child = cmd(childArgv, ar, bw)
	case "cat":
		// One cat per direction: parent -> cat -> child -> cat -> parent.
		ar, aw := pipe()
		br, bw := pipe()
		cr, cw := pipe()
		dr, dw := pipe()
		closeAfter = append(closeAfter, ar, bw, br, cw, cr, dw)
		l.w, l.r = aw, dr
		l.overhead = append(l.overhead, cmd([]string{"cat"}, ar, bw))
		l.child = cmd(childArgv, br, cw)
		l.overhead = append(l.overhead, cmd([]string{"cat"}, cr, dw))
	case "gorelay":
		ar, aw := pipe()
		br, bw := pipe()
		closeAfter = append(closeAfter, ar, bw)
		l.w, l.r = aw, br
		argv := append([]string{self, relayMarker, s.Args[0]}, childArgv...)
		l.tap = cmd(argv, ar, bw)
		l.overhead = append(l.overhead, l.tap)
	case "rpctap":
		ar, aw := pipe()
		br, bw := pipe()
		closeAfter = append(closeAfter, ar, bw)
		l.w, l.r = aw, br
		argv := []string{rpctap}
		for _, a := range s.Args {
			switch a {
			case "{cassette}":
				argv = append(argv, cassette)
			case "{replay}":
				argv = append(argv, replay)
			case "{exists}":
				// A cassette path that already exists: record degrades to
				// forwarding only (invariant 4) and says so once.
				path := filepath.Join(tmp, "exists.cassette")
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					return nil, err
				}
				argv = append(argv, path)
			case "{child}":
				argv = append(argv, childArgv...)
			default:
				argv = append(argv, a)
			}
		}
		l.tap = cmd(argv, ar, bw)
		l.overhead = append(l.overhead, l.tap)
	default:
		return nil, fmt.Errorf("unknown set-up kind %q", s.Kind)
	}
	for i, c := range l.procs {
		if err := c.Start(); err != nil {
			for _, d := range l.procs[:i] {
				d.Process.Kill()
				d.Wait()
			}
			l.w.Close()
			l.r.Close()
			return nil, fmt.Errorf("%s: %v", s.Name, err)
		}
	}
	go l.sampler(interval)
	return l, nil
}

// sampler records the peak and current memory of the relay processes (and of
// rpctap's own children other than the bench child: its sink) every interval.
func (l *launched) sampler(interval time.Duration) {
	defer close(l.stopped)
	if interval <= 0 {
		<-l.stop
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		l.sample()
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
	}
}

func (l *launched) sample() {
	pids := []int{}
	for _, c := range l.overhead {
		if c.Process != nil {
			pids = append(pids, c.Process.Pid)
		}
	}
	if l.tap != nil && l.tap.Process != nil {
		pids = append(pids, childrenOf(l.tap.Process.Pid)...)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pid := range pids {
		pm, ok := procMem(pid)
		if !ok {
			l.rss[pid] = 0 // gone (or a zombie): it holds no memory now
			continue
		}
		hwm, rss := pm.hwm, pm.rss
		if hwm > l.hwm[pid] {
			l.hwm[pid] = hwm
		}
		l.anon[pid] = max(l.anon[pid], pm.anon)
		l.file[pid] = max(l.file[pid], pm.file)
		l.rss[pid] = rss
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
			l.exe[pid] = exe
		}
	}
}

// sharedPeak returns the peak memory of the relay and its sinks with the
// binary's file pages (shared by rpctap and its sink, both the same
// executable) counted once: the sum of the sampled peak RssAnon plus the
// largest sampled RssFile.
func (l *launched) sharedPeak() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var anon, file int64
	for pid := range l.hwm {
		if l.exe[pid] == l.selfExe && !l.isRelay(pid) {
			continue // the bench child
		}
		anon += l.anon[pid]
		file = max(file, l.file[pid])
	}
	return anon + file
}

func (l *launched) isRelay(pid int) bool {
	for _, c := range l.overhead {
		if c.Process != nil && c.Process.Pid == pid {
			return true
		}
	}
	return false
}

// mem returns peak KiB of the relay process(es) and of rpctap's other
// children (sinks), and their current KiB.
func (l *launched) mem() (mainHWM, sinkHWM, mainRSS, sinkRSS int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	relay := map[int]bool{}
	for _, c := range l.overhead {
		if c.Process != nil {
			relay[c.Process.Pid] = true
		}
	}
	for pid, h := range l.hwm {
		switch {
		case relay[pid]:
			mainHWM += h
			mainRSS += l.rss[pid]
		case l.exe[pid] == l.selfExe || strings.HasSuffix(l.exe[pid], " (deleted)") && strings.TrimSuffix(l.exe[pid], " (deleted)") == l.selfExe:
			// the bench child
		default:
			sinkHWM += h
			sinkRSS += l.rss[pid]
		}
	}
	return
}

func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

type procMemInfo struct{ hwm, rss, anon, file int64 }

func procMem(pid int) (m procMemInfo, ok bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return m, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("VmHWM:")):
			m.hwm = kib(line[6:])
			ok = true
		case bytes.HasPrefix(line, []byte("VmRSS:")):
			m.rss = kib(line[6:])
		case bytes.HasPrefix(line, []byte("RssAnon:")):
			m.anon = kib(line[8:])
		case bytes.HasPrefix(line, []byte("RssFile:")):
			m.file = kib(line[8:])
		}
	}
	return m, ok
}

func kib(b []byte) int64 {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n
}

// finish closes the child's stdin, waits for every process and returns the
// relay's CPU time (rusage of the overhead processes, which for rpctap
// includes its reaped children: sink and bench child).
func (l *launched) finish(timeout time.Duration) (cpuNs int64, err error) {
	l.sample()
	close(l.stop)
	<-l.stopped
	l.w.Close()
	done := make(chan error, 1)
	go func() {
		var first error
		for _, c := range l.procs {
			if err := c.Wait(); err != nil && first == nil {
				first = fmt.Errorf("%s: %v", filepath.Base(c.Path), err)
			}
		}
		done <- first
	}()
	select {
	case err = <-done:
	case <-time.After(timeout):
		for _, c := range l.procs {
			if c.Process != nil {
				c.Process.Kill()
			}
		}
		<-done
		err = fmt.Errorf("processes did not exit within %v after stdin EOF", timeout)
	}
	l.r.Close()
	for _, c := range l.overhead {
		if c.ProcessState == nil {
			continue
		}
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpuNs += ru.Utime.Nano() + ru.Stime.Nano()
		}
	}
	if err != nil {
		if b, _ := os.ReadFile(l.errPath); len(b) > 0 {
			err = fmt.Errorf("%v; stderr: %s", err, lastLines(b, 5))
		}
	}
	return cpuNs, err
}

// killProcs kills every process of the set-up (the watchdog).
func (l *launched) killProcs() {
	for _, c := range l.procs {
		if c.Process != nil {
			c.Process.Kill()
		}
	}
}

// kill ends a set-up after an error.
func (l *launched) kill() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
		<-l.stopped
	}
	l.w.Close()
	l.r.Close()
	for _, c := range l.procs {
		if c.Process != nil {
			c.Process.Kill()
			c.Wait()
		}
	}
}

func (l *launched) stderr() string {
	b, _ := os.ReadFile(l.errPath)
	return string(b)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

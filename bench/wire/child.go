package main

// The benchmark's child: an ACP-like agent that answers the parent's
// workload. It is this same program, re-executed with childMarker as its first
// argument, so the benchmark needs nothing installed.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand"
	"os"
	"syscall"
)

const childMarker = "__wirebench-child"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// params describe one workload; the parent passes them to the child as flags.
type params struct {
	Workload string // ping, mix, mixstream, mb
	Seed     int64
	Pool     string // path of the text pool file
	N        int    // ping: round trips; mix: turns; mb: frames
	BigEvery int    // mix: every BigEvery-th turn carries 900 KB frames
	Bytes    int64  // mixstream: bytes the child streams
	Trace    string // traffic: the capture (path without .in/.out)
	Stats    string // traffic: where the child writes its CPU time
}

func (p params) childArgs() []string {
	return []string{childMarker,
		"-w", p.Workload,
		"-seed", fmt.Sprint(p.Seed),
		"-pool", p.Pool,
		"-n", fmt.Sprint(p.N),
		"-big-every", fmt.Sprint(p.BigEvery),
		"-bytes", fmt.Sprint(p.Bytes),
		"-trace", p.Trace,
		"-stats", p.Stats,
	}
}

func parseChildArgs(args []string) (params, error) {
	var p params
	fs := flag.NewFlagSet(childMarker, flag.ContinueOnError)
	fs.StringVar(&p.Workload, "w", "", "")
	fs.Int64Var(&p.Seed, "seed", 1, "")
	fs.StringVar(&p.Pool, "pool", "", "")
	fs.IntVar(&p.N, "n", 0, "")
	fs.IntVar(&p.BigEvery, "big-every", 0, "")
	fs.Int64Var(&p.Bytes, "bytes", 0, "")
	fs.StringVar(&p.Trace, "trace", "", "")
	fs.StringVar(&p.Stats, "stats", "", "")
	err := fs.Parse(args)
	return p, err
}

// lineReader reads newline-terminated lines of any length and keeps a count
// and a CRC of everything it returned.
type lineReader struct {
	r     *bufio.Reader
	acc   []byte
	n     int64
	lines int64
	crc   uint32
	// prevCRC is crc before the last line returned.
	prevCRC uint32
	// capture, when non-nil, receives a copy of every line (the warm-up run
	// keeps the session's bytes for the in-process zstd measurement).
	capture *[]byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 4<<20)}
}

// next returns the next line, including its newline; the slice is valid until
// the next call.
func (l *lineReader) next() ([]byte, error) {
	line, err := l.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		l.acc = append(l.acc[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = l.r.ReadSlice('\n')
			l.acc = append(l.acc, line...)
		}
		line = l.acc
	}
	if len(line) > 0 {
		l.prevCRC = l.crc
		l.n += int64(len(line))
		l.lines++
		l.crc = crc32.Update(l.crc, castagnoli, line)
		if l.capture != nil {
			*l.capture = append(*l.capture, line...)
		}
		if err == io.EOF {
			err = nil // a last line without newline; EOF comes next time
		}
	}
	return line, err
}

// lineWriter writes each frame with one write call, as agents and editors do.
type lineWriter struct {
	w       io.Writer
	n       int64
	lines   int64
	crc     uint32
	capture *[]byte
}

func (w *lineWriter) write(b []byte) error {
	w.n += int64(len(b))
	w.lines++
	w.crc = crc32.Update(w.crc, castagnoli, b)
	if w.capture != nil {
		*w.capture = append(*w.capture, b...)
	}
	_, err := w.w.Write(b)
	return err
}

func childMain(args []string) int {
	p, err := parseChildArgs(args)
	if err == nil {
		err = runChild(p, os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "wirebench child: %v\n", err)
		return 1
	}
	return 0
}

func cpuSelf() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

var (
	prefixIDNum  = []byte(`{"jsonrpc":"2.0","id":`)
	prefixStats  = []byte(`"method":"_wirebench/stats"`)
	prefixPrompt = []byte(`"method":"session/prompt"`)
)

// frameID returns the id of a request line written by the parent (a number
// right after the jsonrpc member).
func frameID(line []byte) []byte {
	if !bytes.HasPrefix(line, prefixIDNum) {
		return nil
	}
	id := line[len(prefixIDNum):]
	if i := bytes.IndexByte(id, ','); i >= 0 {
		return id[:i]
	}
	return nil
}

func runChild(p params, stdin io.Reader, stdout io.Writer) error {
	if p.Workload == "traffic" {
		return runTrafficChild(p, stdin, stdout)
	}
	in := newLineReader(stdin)
	out := &lineWriter{w: stdout}
	var pool []byte
	if p.Pool != "" {
		var err error
		if pool, err = os.ReadFile(p.Pool); err != nil {
			return err
		}
	}
	// The child takes its content from the first half of the pool, the
	// parent from the second.
	cur := &cursor{pool: pool}
	sid := sessionID(p.Seed)
	g := newTextGen(p.Seed*7919 + 1)
	var buf []byte
	var mbFrames [][]byte
	if p.Workload == "mb" {
		mbFrames = makeMBFrames(cur, sid, min(24, p.N))
	}
	prompts, perms := 0, 0
	for {
		line, err := in.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		id := frameID(line)
		buf = buf[:0]
		switch {
		case bytes.Contains(line[:min(len(line), 96)], prefixStats):
			st := childStats{
				InBytes: in.n - int64(len(line)), InCRC: crcWithout(in), InLines: in.lines - 1,
				OutBytes: out.n, OutCRC: out.crc, OutLines: out.lines,
				CPUNs: cpuSelf(),
			}
			js, _ := json.Marshal(st)
			buf = append(buf, `{"jsonrpc":"2.0","id":`...)
			buf = append(buf, id...)
			buf = append(buf, `,"result":`...)
			buf = append(buf, js...)
			buf = append(buf, "}\n"...)
			if err := out.write(buf); err != nil {
				return err
			}
		case string(id) == "0":
			if err := out.write(appendInitializeResult(buf)); err != nil {
				return err
			}
		case string(id) == "1":
			if err := out.write(appendSessionNewResult(buf, sid)); err != nil {
				return err
			}
		case !bytes.Contains(line[:min(len(line), 64)], prefixPrompt):
			// a response to one of our requests (permission), or anything else: no reply
		default:
			prompts++
			switch p.Workload {
			case "ping":
				err = out.write(appendPong(buf, id, g))
			case "mix":
				err = childTurn(p, in, out, cur, sid, prompts-1, &perms, id)
			case "mixstream":
				err = childStream(p, out, cur, sid, id)
			case "mb":
				err = childMB(p, out, mbFrames, id)
			default:
				err = fmt.Errorf("unknown workload %q", p.Workload)
			}
			if err != nil {
				return err
			}
		}
	}
}

// crcWithout returns the CRC of the input before the line last returned.
func crcWithout(in *lineReader) uint32 { return in.prevCRC }

// turnPlan is what the child does in one turn of the agent mix; parent and
// child derive it from the seed and the turn number.
type turnPlan struct {
	big    bool
	chunks int   // streamed agent_message_chunk events
	tools  []int // tool result sizes (1-50 KB)
	perm   []bool
}

const bigFrame = 900 << 10

func planTurn(p params, t int) turnPlan {
	r := rand.New(rand.NewSource(p.Seed*1_000_003 + int64(t)))
	tp := turnPlan{big: p.BigEvery > 0 && t%p.BigEvery == p.BigEvery-1}
	tp.chunks = 10 + r.Intn(60)
	for i, n := 0, r.Intn(4); i < n; i++ {
		// log-uniform between 1 KB and 50 KB
		size := int(1000 * math.Pow(50, r.Float64()))
		tp.tools = append(tp.tools, size)
		tp.perm = append(tp.perm, r.Intn(4) == 0)
	}
	return tp
}

func childTurn(p params, in *lineReader, out *lineWriter, cur *cursor, sid string, t int, perms *int, id []byte) error {
	tp := planTurn(p, t)
	idn := atoi(id) // id points into the reader's buffer, which the next read reuses
	var buf []byte
	call := t * 10
	if tp.big {
		buf = appendToolResult(buf[:0], sid, call, cur.take(bigFrame))
		if err := out.write(buf); err != nil {
			return err
		}
	} else {
		toolAt := make(map[int]int)
		for i := range tp.tools {
			toolAt[(i+1)*tp.chunks/(len(tp.tools)+1)] = i + 1
		}
		for c := 0; c < tp.chunks; c++ {
			if ti := toolAt[c]; ti > 0 {
				i := ti - 1
				call++
				buf = appendToolCall(buf[:0], sid, call, cur.take(20+c%30), cur.take(12))
				if err := out.write(buf); err != nil {
					return err
				}
				if tp.perm[i] {
					*perms++
					buf = appendPermissionRequest(buf[:0], sid, *perms, call)
					if err := out.write(buf); err != nil {
						return err
					}
					if _, err := in.next(); err != nil { // the parent's answer
						return err
					}
				}
				buf = appendToolResult(buf[:0], sid, call, cur.take(tp.tools[i]))
				if err := out.write(buf); err != nil {
					return err
				}
			}
			buf = appendChunk(buf[:0], sid, cur.take(20+(c*37+t)%260))
			if err := out.write(buf); err != nil {
				return err
			}
		}
	}
	buf = appendPromptResult(buf[:0], idn)
	return out.write(buf)
}

// childStream streams p.Bytes of agent-mix frames (no permission round
// trips, no big frames) and then answers the prompt.
func childStream(p params, out *lineWriter, cur *cursor, sid string, id []byte) error {
	var buf []byte
	start := out.n
	for t := 0; out.n-start < p.Bytes; t++ {
		tp := planTurn(params{Seed: p.Seed}, t)
		for c := 0; c < tp.chunks; c++ {
			if c < len(tp.tools) {
				buf = appendToolResult(buf[:0], sid, t*10+c, cur.take(tp.tools[c]))
				if err := out.write(buf); err != nil {
					return err
				}
			}
			buf = appendChunk(buf[:0], sid, cur.take(20+(c*37+t)%260))
			if err := out.write(buf); err != nil {
				return err
			}
		}
	}
	buf = appendPromptResult(buf[:0], atoi(id))
	return out.write(buf)
}

const mbFrameSize = 1 << 20

// makeMBFrames builds n (up to 24) distinct frames of exactly 1 MiB; cycling
// through 24 repeats content only every 24 MiB, far outside zstd's window.
func makeMBFrames(cur *cursor, sid string, n int) [][]byte {
	frames := make([][]byte, max(n, 1))
	for i := range frames {
		over := len(appendToolResult(nil, sid, i, nil))
		frames[i] = appendToolResult(make([]byte, 0, mbFrameSize), sid, i, cur.takeExact(mbFrameSize-over))
	}
	return frames
}

func childMB(p params, out *lineWriter, frames [][]byte, id []byte) error {
	for i := 0; i < p.N; i++ {
		if err := out.write(frames[i%len(frames)]); err != nil {
			return err
		}
	}
	return out.write(appendPromptResult(nil, atoi(id)))
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

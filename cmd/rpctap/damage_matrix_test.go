package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/rpctap/rpctap/cassette"
)

// TestDamageMatrix (issue 20, "Must be shown"): every command that reads a
// cassette x every kind of bad input, end to end with the rpctap binary.
// The rule (docs/exit-codes.md, "Damaged and cut-off cassettes"):
//
//   - a file that is not a readable cassette (missing, empty, a directory,
//     a foreign text file, zstd of random JSON): exit 4, one line;
//   - damage inside the file (a flipped bit): exit 4 for every command,
//     each damaged range said once;
//   - a cassette that merely ends early (cut at 8 offsets): read to its
//     last whole record with one warning line naming it; cat, view,
//     export, replay, normalize and shrink exit 0, diff 1 (it differs from
//     the whole one), verify 0 or 1 (the child says what was cut), check
//     reports cassette.truncated in its report; a cut that leaves nothing
//     to work on is exit 4 (replay, verify, diff: no frame, stderr line or
//     child start/exit; shrink: no frame);
//   - stdout redirected to /dev/full: exit 125, one line, for every command
//     that writes stdout (shrink and normalize write files, not stdout: 0).
//
// Never a panic or a stack trace.
func TestDamageMatrix(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	dir := t.TempDir()
	demo := demoCassette(t, dir)
	good := fileBytes(t, demo)
	n := len(good)

	// The inputs.
	type input struct {
		name string
		path string
		kind string // "unreadable", "cut", "flip", "full"
	}
	var inputs []input
	add := func(name, kind string, b []byte) {
		p := filepath.Join(dir, name+".cassette")
		if b != nil {
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		inputs = append(inputs, input{name, p, kind})
	}
	add("missing", "unreadable", nil)
	add("empty", "unreadable", []byte{})
	os.Mkdir(filepath.Join(dir, "directory.cassette"), 0o755)
	inputs = append(inputs, input{"directory", filepath.Join(dir, "directory.cassette"), "unreadable"})
	add("foreign", "unreadable", []byte("# notes\nthis is not a cassette\n"))
	rng := rand.New(rand.NewSource(20))
	var objs []map[string]any
	for i := range 40 {
		objs = append(objs, map[string]any{"n": i, "v": rng.Float64(), "s": fmt.Sprint(rng.Int63())})
	}
	js, _ := json.Marshal(objs)
	enc, _ := zstd.NewWriter(nil)
	add("zstd-json", "unreadable", enc.EncodeAll(js, nil))
	for k := 1; k <= 8; k++ {
		add(fmt.Sprintf("cut-%d", n*k/9), "cut", good[:n*k/9])
	}
	// One bit in each structure of the file: the signature, the header's
	// zstd frame, the data frame, the trailing index frame.
	for k, off := range []int{20, 200, n / 2, n - 20} {
		b := bytes.Clone(good)
		b[off] ^= 1 << (k * 2)
		add(fmt.Sprintf("flip-%d-bit%d", off, k*2), "flip", b)
	}
	inputs = append(inputs, input{"stdout-dev-full", demo, "full"})

	// What the cassette reader itself finds in each input: the damaged
	// ranges, and whether any frame is readable.
	type truth struct {
		ranges  []string // "bytes A-B" of each damaged range
		frames  int      // frames readable
		session int      // records a replay can play: frames, stderr lines, the child's start and exit
		openErr bool
	}
	truthOf := func(p string) truth {
		var tr truth
		rd, err := cassette.Open(p)
		if err != nil {
			tr.openErr = true
			return tr
		}
		defer rd.Close()
		for {
			r, err := rd.Next()
			var de *cassette.DamageError
			if errors.As(err, &de) {
				tr.ranges = append(tr.ranges, fmt.Sprintf("bytes %d-%d", de.Offset, de.End-1))
				if de.ToEnd {
					return tr
				}
				continue
			}
			if err != nil {
				return tr
			}
			switch {
			case r.K == cassette.KindFrame:
				tr.frames++
				tr.session++
			case r.K == cassette.KindStderr, r.K == cassette.KindEvent && (r.Ev == cassette.EventStart || r.Ev == cassette.EventExit):
				tr.session++
			}
		}
	}

	// The parent's side of the demo, to feed replay.
	var parentIn []byte
	{
		cmd := exec.Command(rp, "cat", "--raw", "--direction", "in", demo)
		var err error
		if parentIn, err = cmd.Output(); err != nil || len(parentIn) == 0 {
			t.Fatalf("cat --raw: %v", err)
		}
	}

	type command struct {
		name   string
		args   func(p string) []string
		stdout bool   // writes a report (or frames) on stdout
		needs  string // "frames" (shrink), "session" (replay, verify, diff: a frame, stderr line, start or exit), "" (none)
	}
	out := filepath.Join(dir, "out.cassette")
	commands := []command{
		{"cat", func(p string) []string { return []string{"cat", p} }, true, ""},
		{"check", func(p string) []string { return []string{"check", p} }, true, ""},
		{"replay", func(p string) []string { return []string{"replay", "--speed", "0", p} }, true, "session"},
		{"verify", func(p string) []string {
			return []string{"verify", "--timeout", "300ms", p, "--", rp, "demo-agent"}
		}, true, "session"},
		{"diff", func(p string) []string { return []string{"diff", p, demo} }, true, "session"},
		{"view", func(p string) []string { return []string{"view", "--dump", "80x24", p} }, true, ""},
		{"export-har", func(p string) []string { return []string{"export", "--format", "har", p} }, true, ""},
		{"export-trace", func(p string) []string { return []string{"export", "--format", "trace", p} }, true, ""},
		{"export-otlp", func(p string) []string { return []string{"export", "--format", "otlp", p} }, true, ""},
		{"export-html", func(p string) []string { return []string{"export", "--format", "html", p} }, true, ""},
		{"shrink", func(p string) []string { return []string{"shrink", "-o", out, "--test", "exit 1", p} }, false, "frames"},
		{"normalize", func(p string) []string { return []string{"normalize", p, out} }, false, ""},
	}
	rangeRE := regexp.MustCompile(`bytes \d+-\d+`)
	for _, c := range commands {
		for _, in := range inputs {
			t.Run(c.name+"/"+in.name, func(t *testing.T) {
				os.Remove(out)
				cmd := exec.Command(rp, c.args(in.path)...)
				cmd.Dir = dir
				var stdout, stderr bytes.Buffer
				cmd.Stderr = &stderr
				cmd.Stdout = &stdout
				if c.name == "replay" {
					cmd.Stdin = bytes.NewReader(parentIn)
				}
				if in.kind == "full" {
					full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
					if err != nil {
						t.Skipf("no /dev/full: %v", err)
					}
					defer full.Close()
					cmd.Stdout = full
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { cmd.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(60 * time.Second):
					cmd.Process.Kill()
					<-done
					t.Fatalf("did not finish in 60s; stderr:\n%s", stderr.String())
				}
				code := cmd.ProcessState.ExitCode()
				errs := stderr.String()
				if strings.Contains(errs, "goroutine ") || strings.Contains(errs, "panic") {
					t.Fatalf("a panic or a stack trace:\n%s", errs)
				}
				// rpctap's own lines (a child's or the recorded stderr
				// replayed do not count).
				var own []string
				for _, l := range strings.Split(strings.TrimRight(errs, "\n"), "\n") {
					if strings.HasPrefix(l, "rpctap") {
						own = append(own, l)
					}
				}
				naming := func(sub ...string) int {
					k := 0
					for _, l := range own {
						for _, s := range sub {
							if strings.Contains(l, s) {
								k++
								break
							}
						}
					}
					return k
				}
				fail := func(format string, a ...any) {
					t.Helper()
					t.Errorf("%s; exit %d\nstderr:\n%s\nstdout (first 300 bytes): %.300s", fmt.Sprintf(format, a...), code, errs, stdout.String())
				}
				tr := truthOf(in.path)
				switch in.kind {
				case "unreadable":
					if code != ExitInput || len(own) != 1 {
						fail("want exit 4 and one line")
					}
				case "flip":
					if code != ExitInput {
						fail("damage inside the file: want exit 4")
					}
					if tr.openErr {
						if len(own) != 1 {
							fail("damage in the header: want one line")
						}
						break
					}
					// Each damaged range is said once (check says it in
					// its report, on stdout).
					said := errs
					if c.name == "check" {
						said = stdout.String()
					}
					for _, r := range tr.ranges {
						if k := strings.Count(said, r); k != 1 {
							fail("damaged range %q said %d times, want once", r, k)
						}
					}
					if k := len(rangeRE.FindAllString(said, -1)); k != len(tr.ranges) {
						fail("%d range lines for %d damaged ranges", k, len(tr.ranges))
					}
					if len(own) > len(tr.ranges)+2 {
						fail("%d lines for %d damaged ranges", len(own), len(tr.ranges))
					}
				case "cut":
					if tr.openErr {
						if code != ExitInput || len(own) != 1 {
							fail("cut inside the header: want exit 4 and one line")
						}
						break
					}
					// How a cut falls depends on how the recorder batched
					// the demo (a -race build batches more): the rule
					// follows from what is left.
					if (c.needs == "frames" && tr.frames == 0) || (c.needs == "session" && tr.session == 0) {
						if code != ExitInput || len(own) != 1 || naming("no frames") != 1 {
							fail("a cut that leaves nothing to work on: want exit 4 and one line saying so")
						}
						break
					}
					// diff and verify give their verdict: a cut that took
					// frames is a difference, one that took only the end
					// record (the recorder wrote it in a batch of its own,
					// as it does under load) is none.
					want := map[string][]int{"diff": {ExitOK, ExitFindings}, "verify": {ExitOK, ExitFindings}, "check": {ExitOK}}[c.name]
					if want == nil {
						want = []int{ExitOK}
					}
					if !containsInt(want, code) {
						fail("a cassette that ends early: want exit %v", want)
					}
					if c.name == "check" {
						if !strings.Contains(stdout.String(), "cassette.truncated") {
							fail("check must report cassette.truncated")
						}
						break
					}
					if k := naming("truncated", "cut off"); k != 1 {
						fail("want one warning line naming the cut, got %d", k)
					}
				case "full":
					want := ExitInternal
					if !c.stdout {
						want = ExitOK
					}
					if code != want {
						fail("stdout on /dev/full: want exit %d", want)
					}
					if want == ExitInternal && (naming("no space left on device") != 1 || naming("rpctap: ") != 1) {
						fail("stdout on /dev/full: want one line saying the write failed")
					}
				}
				// A file written from bad input still reads to its end.
				if _, err := os.Stat(out); err == nil && in.kind != "unreadable" {
					if err := completeCassette(out); err != nil {
						fail("%s written from this input does not read to its end: %v", out, err)
					}
				}
			})
		}
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

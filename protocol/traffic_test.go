package protocol

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/internal/testpeers"
)

// sharedDir finds ../shared beside the module root, or skips the test.
func sharedDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "shared")
	if _, err := os.Stat(filepath.Join(dir, "DESIGN.md")); err != nil {
		t.Skipf("needs ../shared beside the checkout (looked for %s): %v", dir, err)
	}
	return dir
}

// captureIns lists the .in files of every traffic pair whose file name
// matches glob: the fixtures of testdata/traffic (every clone has them) and
// the third-party captures of ../shared/traffic when they are there.
func captureIns(glob string) []string {
	var ins []string
	for _, c := range testpeers.Captures() {
		if ok, _ := filepath.Match(glob, filepath.Base(c.In)); ok {
			ins = append(ins, c.In)
		}
	}
	return ins
}

// readLines splits an NDJSON capture into frames (line endings removed).
func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// interleave turns a capture's two per-direction streams into one plausible
// session order. The captures keep only the order within each direction, so
// we simulate the conversation:
//
//  1. a parent frame that answers a request the child has already sent goes
//     first (the parent answers as soon as it can);
//  2. otherwise a child frame goes next if it answers a parent request in
//     flight, or if it is not an answer and some parent request is in
//     flight (the child works on it: notifications, its own requests), or
//     if the parent has nothing left to send;
//  3. otherwise the parent's next frame goes (a new request or notification);
//  4. if nothing is ready (a capture that is inconsistent), the parent's
//     next frame goes, else the child's, so the walk always ends.
//
// Requests and responses are recognised with the protocol's own Classify
// and pairing, so the same walk serves every protocol.
func interleave(p Protocol, in, out [][]byte) []DirFrame {
	pair := defaultPair
	if pr, ok := p.(Pairer); ok {
		pair = pr.Pair
	}
	open := map[pairKey]bool{}
	queued := map[pairKey]int{} // PairOpenQueue requests awaiting an answer, per key
	openFrom := [2]int{}
	var seq []DirFrame
	emit := func(d Dir, f []byte) {
		info := p.Classify(d, f)
		key, role := pair(d, info)
		switch role {
		case PairOpen:
			if !open[pairKey{d, key}] {
				openFrom[d]++
			}
			open[pairKey{d, key}] = true
		case PairClose:
			if open[pairKey{1 - d, key}] {
				delete(open, pairKey{1 - d, key})
				openFrom[1-d]--
			}
		case PairOpenQueue:
			queued[pairKey{d, key}]++
			openFrom[d]++
		case PairCloseQueue:
			if queued[pairKey{1 - d, key}] > 0 {
				queued[pairKey{1 - d, key}]--
				openFrom[1-d]--
			}
		}
		seq = append(seq, DirFrame{d, f})
	}
	answers := func(d Dir, f []byte) bool {
		key, role := pair(d, p.Classify(d, f))
		return role == PairClose && open[pairKey{1 - d, key}] ||
			role == PairCloseQueue && queued[pairKey{1 - d, key}] > 0
	}
	isAnswer := func(d Dir, f []byte) bool {
		_, role := pair(d, p.Classify(d, f))
		return role == PairClose || role == PairCloseQueue
	}
	i, j := 0, 0
	for i < len(in) || j < len(out) {
		switch {
		case i < len(in) && answers(FromParent, in[i]):
			emit(FromParent, in[i])
			i++
		case j < len(out) && (answers(FromChild, out[j]) || (!isAnswer(FromChild, out[j]) && openFrom[FromParent] > 0) || i == len(in)):
			emit(FromChild, out[j])
			j++
		case i < len(in):
			emit(FromParent, in[i])
			i++
		default:
			emit(FromChild, out[j])
			j++
		}
	}
	return seq
}

func TestTrafficCaptures(t *testing.T) {
	ins := captureIns("*.in")
	if len(ins) == 0 {
		t.Fatal("no captures in testdata/traffic")
	}
	for _, inPath := range ins {
		name := strings.TrimSuffix(filepath.Base(inPath), ".in")
		if name == "lsp-gopls" {
			continue // Content-Length framing, not NDJSON
		}
		want := strings.SplitN(name, "-", 2)[0]
		t.Run(name, func(t *testing.T) {
			p, err := Lookup(want)
			if err != nil {
				t.Fatal(err)
			}
			seq := interleave(p, readLines(t, inPath), readLines(t, strings.TrimSuffix(inPath, ".in")+".out"))
			if got := Detect(seq); got != want {
				t.Fatalf("detected %q, want %q", got, want)
			}
			s := NewSession(p)
			var errs, all int
			for n, f := range seq {
				info, vs := s.Frame(uint64(n+1), f.Dir, f.Frame)
				if info.Kind == Response && info.Method == "" && p.Name() != "pi" {
					t.Errorf("record %d: response not paired with a request: %s", n+1, excerpt(f.Frame, 80))
				}
				for _, v := range vs {
					all++
					if v.Severity == SevError {
						errs++
						t.Errorf("record %d (%s): %s %s: %s\n  %s", n+1, f.Dir, v.Code, v.Pointer, v.Message, excerpt(f.Frame, 160))
					} else {
						t.Logf("record %d: %s %s %s: %s", n+1, v.Severity, v.Code, v.Pointer, v.Message)
					}
				}
			}
			for _, v := range s.End() {
				all++
				if v.Severity == SevError {
					errs++
					t.Errorf("end: %s: %s", v.Code, v.Message)
				} else {
					t.Logf("end: %s %s: %s", v.Severity, v.Code, v.Message)
				}
			}
			t.Logf("%d frames, %d findings, %d errors", len(seq), all, errs)
		})
	}
}

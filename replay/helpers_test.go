package replay

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// sharedDir is ../shared beside the checkout.
func sharedDir(t testing.TB) string {
	t.Helper()
	d, _ := filepath.Abs(filepath.Join("..", "..", "shared"))
	if _, err := os.Stat(filepath.Join(d, "traffic")); err != nil {
		t.Skip("needs ../shared/traffic beside the checkout")
	}
	return d
}

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// builder makes records the way the recorder would, 1 ms apart: a
// replaytest.Builder with the []byte lines and *int exits these tests use.
type builder struct{ *replaytest.Builder }

func newBuilder(protocol string) *builder { return &builder{replaytest.New(protocol)} }

func (b *builder) add(r cassette.Record) { b.Add(r) }

func (b *builder) frame(d cassette.Dir, line []byte) {
	b.Add(cassette.NewLineRecord(cassette.KindFrame, d, append([]byte(nil), line...), "\n"))
}

func (b *builder) stderr(line string) { b.Stderr(line) }

func (b *builder) event(ev string, exit *int) {
	b.Add(cassette.Record{K: cassette.KindEvent, Ev: ev, Exit: exit})
}

func (b *builder) end() []cassette.Record { return b.End() }

// fromTrafficSequential interleaves a JSON-RPC capture pair the way a
// sequential parent produces it (replaytest.Builder.Interleave).
func fromTrafficSequential(t testing.TB, name, protocol string) *builder {
	dir := filepath.Join(sharedDir(t), "traffic")
	b := newBuilder(protocol)
	b.event(cassette.EventStart, nil)
	b.Interleave(readStrings(t, filepath.Join(dir, name+".in")), readStrings(t, filepath.Join(dir, name+".out")))
	return b
}

func readStrings(t testing.TB, path string) []string {
	var out []string
	for _, l := range readLines(t, path) {
		out = append(out, string(l))
	}
	return out
}

// fromTrafficBatch records every parent line first, then every child line:
// a parent that writes everything and then reads (the pi-rpc capture).
func fromTrafficBatch(t testing.TB, name, protocol string) *builder {
	dir := filepath.Join(sharedDir(t), "traffic")
	b := newBuilder(protocol)
	b.event(cassette.EventStart, nil)
	for _, l := range readLines(t, filepath.Join(dir, name+".in")) {
		b.frame(cassette.DirIn, l)
	}
	for _, l := range readLines(t, filepath.Join(dir, name+".out")) {
		b.frame(cassette.DirOut, l)
	}
	return b
}

func intp(n int) *int { return &n }

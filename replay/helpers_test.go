package replay

import (
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/replay/replaytest"
)

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
	in, out := testpeers.FixtureStrings(t, name)
	b := newBuilder(protocol)
	b.event(cassette.EventStart, nil)
	b.Interleave(in, out)
	return b
}

// fromTrafficBatch records every parent line first, then every child line:
// a parent that writes everything and then reads (the pi-session fixture).
func fromTrafficBatch(t testing.TB, name, protocol string) *builder {
	in, out := testpeers.Fixture(t, name)
	b := newBuilder(protocol)
	b.event(cassette.EventStart, nil)
	for _, l := range in {
		b.frame(cassette.DirIn, l)
	}
	for _, l := range out {
		b.frame(cassette.DirOut, l)
	}
	return b
}

func intp(n int) *int { return &n }

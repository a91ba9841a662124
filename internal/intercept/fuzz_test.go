package intercept

import (
	"bytes"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
	"github.com/rpctap/rpctap/internal/rewrite"
	"github.com/rpctap/rpctap/tap"
)

// FuzzWriterExact: whatever the bytes and however they are cut into
// chunks, a Writer that changes nothing forwards them exactly, on the
// pass-through path and on the frame-by-frame path (a rewrite rule that
// never applies makes every frame go through the splitter and the tests).
func FuzzWriterExact(f *testing.F) {
	for _, seed := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n{\"a\":1}\r\n",
		"Content-Length: 7\r\n\r\n{\"a\":1}Content-Length: 2\r\n\r\n{}",
		"Content-Length: 99\r\n\r\n{\"cut\":",
		"\xff\xfe junk\nno newline",
		"\n\n\r\n",
		"Content-Type: x\r\nContent-Length: 2\r\n\r\n[]garbage\n",
	} {
		f.Add([]byte(seed), uint8(3))
	}
	rule, err := rewrite.Parse("m=never/ever => delete x")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		for _, rules := range []rewrite.Rules{nil, {rule}} {
			s, err := New(Options{Rewrite: rules})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			w := s.Wrap(tap.Stdin, func(b []byte) error { got.Write(b); return nil }).(*Writer)
			step := int(cut)%17 + 1
			for i := 0; i < len(data); i += step {
				w.Write(data[i:min(i+step, len(data))])
			}
			w.Flush()
			if !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("rules %d, chunks of %d: forwarded %q, want %q", len(rules), step, got.Bytes(), data)
			}
		}
	})
}

// FuzzRewriteApply: rules never panic on any frame, and a change always
// records the original.
func FuzzRewriteApply(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2,{"b":3}]}}`))
	f.Add([]byte(`[1,2,3]`))
	f.Add([]byte(`{"result":null}`))
	var rules rewrite.Rules
	for _, r := range []string{"dir:in => set result.a.2.b 4", "dir:in => delete result.a.0", "dir:in => error 1 x", "dir:in => set /result/new {\"k\":[]}"} {
		rr, err := rewrite.Parse(r)
		if err != nil {
			f.Fatal(err)
		}
		rules = append(rules, rr)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		rec := frameRecord(frame)
		out, ch := rules.Apply(&rec, matchNone)
		if ch == nil && !bytes.Equal(out, frame) {
			t.Fatalf("unchanged frame came out different")
		}
		if ch != nil && !bytes.Equal(ch.Original, frame) {
			t.Fatalf("change without its original")
		}
	})
}

var matchNone = filterexpr.MatchInfo{}

func frameRecord(p []byte) cassette.Record {
	return filterexpr.Frame(cassette.DirIn, p, "", "", "")
}

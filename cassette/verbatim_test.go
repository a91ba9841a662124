package cassette

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/internal/testpeers"
)

// refVerbatim is the plain statement of the rule Verbatim implements in one
// pass: encoding/json's syntax check, UTF-8, no newline, no surrounding
// white space.
func refVerbatim(p []byte) bool {
	if len(p) == 0 || isSpace(p[0]) || isSpace(p[len(p)-1]) {
		return false
	}
	if bytes.IndexByte(p, '\n') >= 0 {
		return false
	}
	return json.Valid(p) && utf8.Valid(p)
}

func verbatimSeeds(t testing.TB) [][]byte {
	seeds := []string{
		``, ` `, `1`, `-`, `-0`, `01`, `-01`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `1e5x`, `0.0e0`,
		`"`, `""`, `"a`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00G9"`, `"\u00e"`, `"\x"`, `"\/"`, "\"a\tb\"",
		"\"a\x01\"", "\"\xff\"", "\"\xc3\xa9\"", "\"\xe2\x82\"", "\"\xed\xa0\x80\"", "\"\xf0\x9f\x98\x80\"",
		`true`, `tru`, `truex`, `false`, `null`, `nul`, `nulll`, `[]`, `[ ]`, `[,]`, `[1,]`, `[1 2]`,
		`{}`, `{ }`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{1:2}`, `{"a":1}}`, `[1]]`, `[{]}`,
		`{"a":[1,{"b":null}],"c":"d"}`, "{\"a\":\r1}", "{\"a\":\n1}", "{\"a\":\t1}", ` {}`, `{} `, `{}{}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"text":"line\nline \"q\" \\ end"}}`,
		"[\"0123456789abcdef\xc3\xa90123456789\"]", `"01234567\"89abcdef"`, `"0123456\\"`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 9999) + "{}" + strings.Repeat("]", 9999),
		strings.Repeat("[", 10000) + "{}" + strings.Repeat("]", 10000),
		strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200),
	}
	var out [][]byte
	for _, s := range seeds {
		out = append(out, []byte(s))
	}
	for _, f := range testpeers.CaptureFiles() {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			out = append(out, bytes.TrimSuffix(l, []byte("\r")))
		}
	}
	return out
}

// TestVerbatim: the one-pass check agrees with refVerbatim on edge cases,
// the captured traffic, and every prefix and one-byte change of a frame.
func TestVerbatim(t *testing.T) {
	check := func(p []byte) {
		t.Helper()
		if got, want := Verbatim(p), refVerbatim(p); got != want {
			t.Fatalf("Verbatim(%.200q) = %v, want %v", p, got, want)
		}
		checkVerbatimIndex(t, p)
	}
	yes := 0
	for _, p := range verbatimSeeds(t) {
		check(p)
		if Verbatim(p) {
			yes++
		}
	}
	if yes < 10 {
		t.Fatalf("only %d seeds are verbatim JSON", yes)
	}
	frame := []byte("{\"id\":12,\"s\":\"a\\u00e9\xc3\xa9 \\\"x\\\"\",\"n\":[-1.5e3,0,true,false,null],\"o\":{}}")
	for i := 0; i <= len(frame); i++ {
		check(frame[:i])
		for _, c := range []byte{'"', '\\', '\n', ' ', 0x01, 0xff, '}', ',', 'e', '0'} {
			if i < len(frame) {
				q := bytes.Clone(frame)
				q[i] = c
				check(q)
			}
		}
	}
}

func FuzzVerbatim(f *testing.F) {
	for _, s := range verbatimSeeds(f) {
		if len(s) < 4096 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := Verbatim(p), refVerbatim(p); got != want {
			t.Fatalf("Verbatim(%q) = %v, want %v", p, got, want)
		}
		checkVerbatimIndex(t, p)
	})
}

// checkVerbatimIndex: VerbatimIndexed answers as Verbatim does, and on
// accepted frames its index knows every non-empty container and agrees
// with jsonscan.SkipValue wherever it knows an end.
func checkVerbatimIndex(t *testing.T, p []byte) {
	t.Helper()
	var x jsonscan.Index
	ok := VerbatimIndexed(p, &x)
	if ok != Verbatim(p) {
		t.Fatalf("VerbatimIndexed(%.200q) = %v, Verbatim %v", p, ok, !ok)
	}
	if !ok {
		return
	}
	var all jsonscan.Index
	all.Build(p)
	for i := range p {
		e, known := x.End(i)
		if !known {
			if e2, in := all.End(i); in && (p[i] == '{' || p[i] == '[') && e2-i > 2 && len(bytes.TrimSpace(p[i+1:e2-1])) > 0 {
				t.Fatalf("%.200q: container at %d not indexed", p, i)
			}
			continue
		}
		if want, wok := jsonscan.SkipValue(p, i); !wok || want != e {
			t.Fatalf("%.200q at %d: index says %d, SkipValue %d %v", p, i, e, want, wok)
		}
	}
}

// BenchmarkVerbatim: the one-pass check against encoding/json.Valid (which
// does less: no UTF-8, newline or white-space rule) on prose-like and on
// escape-dense code-like frames.
func BenchmarkVerbatim(b *testing.B) {
	var prose, code strings.Builder
	words := strings.Fields("the agent reads a file and writes its result to the session, then waits for the next prompt")
	for i := 0; prose.Len() < 64<<10; i++ {
		prose.WriteString(words[i%len(words)])
		prose.WriteByte(' ')
	}
	for i := 0; code.Len() < 64<<10; i++ {
		code.WriteString("\tif err := f(x[" + strings.Repeat("i", i%7) + "]); err != nil {\n\t\treturn \"failed\"\n\t}\n")
	}
	for _, c := range []struct{ name, text string }{{"prose", prose.String()}, {"code", code.String()}} {
		text, _ := json.Marshal(c.text)
		frame := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":` + string(text) + `}]}}`)
		b.Run(c.name+"/Verbatim", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			for i := 0; i < b.N; i++ {
				if !Verbatim(frame) {
					b.Fatal("not verbatim")
				}
			}
		})
		b.Run(c.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			for i := 0; i < b.N; i++ {
				if !json.Valid(frame) {
					b.Fatal("not valid")
				}
			}
		})
	}
}

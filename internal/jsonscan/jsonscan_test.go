package jsonscan

import (
	"bytes"
	"strings"
	"testing"
)

// leftToRight is the plain reading of a string: a backslash escapes the
// byte after it. SkipString must end every string where it does.
func leftToRight(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// TestSkipString: every byte sequence over {a, \, "} up to 11 bytes.
func TestSkipString(t *testing.T) {
	alpha := []byte{'a', '\\', '"'}
	n, limit := 0, 0
	var gen func(b []byte)
	gen = func(b []byte) {
		e1, ok1 := SkipString(b, 0)
		e2, ok2 := leftToRight(b, 0)
		if e1 != e2 || ok1 != ok2 {
			t.Fatalf("SkipString(%q) = %d %v, want %d %v", b, e1, ok1, e2, ok2)
		}
		if e3, ok3, done := SkipShortString(b, 0); done && (e3 != e2 || ok3 != ok2) {
			t.Fatalf("SkipShortString(%q) = %d %v, want %d %v", b, e3, ok3, e2, ok2)
		}
		n++
		if len(b) < limit {
			for _, c := range alpha {
				gen(append(b, c))
			}
		}
	}
	// Plain prefixes move the sequences across the end of SkipString's
	// short-string loop (shortString bytes).
	for _, k := range []int{0, shortString - 11, shortString - 3, shortString - 1, shortString} {
		limit = 11 + k
		gen(append([]byte{'"'}, bytes.Repeat([]byte{'a'}, k)...))
	}
	if n < 5*80000 {
		t.Fatalf("only %d sequences", n)
	}
}

func TestSkipValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		end  int
		good bool
	}{
		{`"a\"b" ,`, 6, true},
		{`{"a":[1,"]",{"b":"}"}]} x`, 23, true},
		{`[1,2`, 0, false},
		{`"abc`, 0, false},
		{`123,`, 3, true},
		{`true}`, 4, true},
		{`,`, 0, false},
		{``, 0, false},
	} {
		end, good := SkipValue([]byte(c.in), 0)
		if end != c.end || good != c.good {
			t.Errorf("SkipValue(%q) = %d %v, want %d %v", c.in, end, good, c.end, c.good)
		}
	}
	if got := SkipWS([]byte(" \t\r\n x"), 0); got != 5 {
		t.Errorf("SkipWS = %d, want 5", got)
	}
}

// BenchmarkSkipStringEscapeDense: source code with a \n on every line, the
// case that made a search-again-after-every-escape scanner quadratic.
func BenchmarkSkipStringEscapeDense(b *testing.B) {
	s := []byte(`"` + strings.Repeat(`fmt.Println(\"x\")\n`, 1<<14) + `"`)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if e, ok := SkipString(s, 0); !ok || e != len(s) {
			b.Fatal(e, ok, bytes.Count(s, []byte{'"'}))
		}
	}
}

// TestIndexAgreesWithSkipValue: on random byte soup over JSON's structural
// bytes (valid or not), every value end the Index knows is the one
// SkipValue finds, and on valid JSON it knows every container.
func TestIndexAgreesWithSkipValue(t *testing.T) {
	alpha := []byte(`{}[]"\a,:  `)
	long := strings.Repeat("x", MinIndexedString)
	rng := uint64(1)
	next := func(n int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(n))
	}
	var x Index
	check := func(b []byte) {
		x.Build(b)
		for i := range b {
			e, ok := x.End(i)
			if !ok {
				continue
			}
			want, wok := SkipValue(b, i)
			if !wok || want != e {
				t.Fatalf("%q at %d: Index.End = %d, SkipValue = %d %v", b, i, e, want, wok)
			}
		}
	}
	for n := 0; n < 200000; n++ {
		b := make([]byte, next(24))
		for i := range b {
			b[i] = alpha[next(len(alpha))]
		}
		if next(4) == 0 {
			at := next(len(b) + 1)
			b = append(b[:at], append([]byte(`"`+long+`"`), b[at:]...)...)
		}
		check(b)
	}
	valid := []byte(`{"a":[1,{"b":"` + long + `"},[]],"c":{"d":"` + long + `\"\\"},"e":"x"}`)
	x.Build(valid)
	for i, c := range valid {
		if c != '{' && c != '[' {
			continue
		}
		if _, ok := x.End(i); !ok {
			t.Fatalf("container at %d not indexed", i)
		}
	}
	check(valid)
}

// TestCursor: a cursor answers what End answers, looking up in any order.
func TestCursor(t *testing.T) {
	long := strings.Repeat("y", MinIndexedString)
	b := []byte(`{"a":["` + long + `",{"b":"` + long + `"}],"c":"` + long + `","d":{}}`)
	var x Index
	x.Build(b)
	c := x.Cursor()
	order := []int{}
	for i := range b {
		order = append(order, i)
	}
	for i := len(b) - 1; i >= 0; i -= 3 {
		order = append(order, i)
	}
	for _, i := range order {
		e1, ok1 := x.End(i)
		e2, ok2 := c.End(i)
		if e1 != e2 || ok1 != ok2 {
			t.Fatalf("at %d: End %d %v, Cursor.End %d %v", i, e1, ok1, e2, ok2)
		}
	}
}

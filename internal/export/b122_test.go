package export

import (
	"bytes"
	"math/rand"
	"testing"
	"unicode/utf8"
)

// decodeB122 reads appendB122's encoding back (what the page's b122 does).
func decodeB122(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	var acc uint32
	var nacc uint
	push := func(v uint32) {
		acc = acc<<7 | v
		nacc += 7
		if nacc >= 8 {
			nacc -= 8
			out = append(out, byte(acc>>nacc))
			acc &= 1<<nacc - 1
		}
	}
	for _, r := range s {
		switch {
		case r < 0x80:
			push(uint32(r))
		case r>>7 >= 1 && r>>7 <= 3:
			push(uint32(b122Illegal[r>>7-1]))
			push(uint32(r & 0x7f))
		case r>>7 >= 4 && r>>7 <= 6:
			push(uint32(b122Illegal[r>>7-4]))
		default:
			t.Fatalf("character %U is not of the encoding", r)
		}
	}
	return out
}

// TestB122: any bytes come back; the text holds no NUL, CR or '<', is valid
// UTF-8, and is about 8/7 of the data.
func TestB122(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 2, 6, 7, 8, 9, 13, 14, 15, 100, 1 << 16} {
		for _, fill := range []string{"random", "zeros", "lt", "cr"} {
			src := make([]byte, n)
			switch fill {
			case "random":
				r.Read(src)
			case "lt":
				for i := range src {
					src[i] = "<<<<<<\x78\x3c\x1e"[i%9] // '<' in every bit position over a 63-bit period
				}
			case "cr":
				for i := range src {
					src[i] = []byte{0x1a, 0x34, 0x68}[i%3]
				}
			}
			enc := appendB122(nil, src)
			if bytes.ContainsAny(enc, "\x00\r<") || !utf8.Valid(enc) {
				t.Fatalf("%d %s bytes: the text holds a character a script cannot", n, fill)
			}
			if got := decodeB122(t, string(enc)); !bytes.Equal(got, src) {
				t.Fatalf("%d %s bytes: came back as %d bytes, different", n, fill, len(got))
			}
			if fill == "random" && n >= 1<<16 && float64(len(enc)) > 1.16*float64(n) {
				t.Errorf("%d random bytes took %d characters' bytes", n, len(enc))
			}
		}
	}
}

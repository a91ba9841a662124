package cassette

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// quoteEscCtl8's lowest mark is exactly the first byte that is '"', '\\' or
// below 0x20, for every byte value in every position.
func TestQuoteEscCtl8(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(b [8]byte) {
		want := 8
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				want = i
				break
			}
		}
		got := 8
		if m := quoteEscCtl8(binary.LittleEndian.Uint64(b[:])); m != 0 {
			got = bits.TrailingZeros64(m) / 8
		}
		if got != want {
			t.Fatalf("%q: first special byte at %d, quoteEscCtl8 says %d", b[:], want, got)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			b := [8]byte{'a', 0xff, 0x80, 'z', 0xa0, ' ', 0x9f, '~'}
			b[pos] = byte(c)
			check(b)
		}
	}
	for range 200000 {
		var b [8]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		check(b)
	}
}

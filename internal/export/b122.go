package export

// The report's binary blocks are written in a 7-bit text encoding (after
// the idea of base-122): 8 bytes of data take about 9.1 characters, not
// base64's 10.7. Each 7 bits of the data are one ASCII character, unless
// they are one of the three values a script element's text cannot carry
// as they are (NUL, CR, which the HTML parser rewrites, and '<', which could
// end the element); such a value and the 7 bits after it are one 2-byte
// UTF-8 character whose 11 bits are (i+1)<<7 | next, i the value's place in
// b122Illegal, or (i+4)<<7 when it is the last 7 bits. The page's script
// reads the characters back (its b122 function); the last character's
// padding bits are dropped.

var b122Illegal = [3]byte{0, '\r', '<'}

// appendB122 appends the encoding of src to dst.
func appendB122(dst, src []byte) []byte {
	var acc uint32 // bits not yet emitted, the oldest highest
	var nacc uint
	pos := 0
	next := func() (byte, bool) { // the next 7 bits, zero-padded at the end
		if nacc < 7 {
			if pos < len(src) {
				acc = acc<<8 | uint32(src[pos])
				pos++
				nacc += 8
			} else if nacc == 0 {
				return 0, false
			} else {
				acc <<= 7 - nacc
				nacc = 7
			}
		}
		nacc -= 7
		v := byte(acc>>nacc) & 0x7f
		acc &= 1<<nacc - 1
		return v, true
	}
	for {
		v, ok := next()
		if !ok {
			return dst
		}
		i := -1
		for k, c := range b122Illegal {
			if v == c {
				i = k
			}
		}
		if i < 0 {
			dst = append(dst, v)
			continue
		}
		var u uint32
		if w, ok := next(); ok {
			u = uint32(i+1)<<7 | uint32(w)
		} else {
			u = uint32(i+4) << 7
		}
		dst = append(dst, 0xc0|byte(u>>6), 0x80|byte(u&0x3f))
	}
}

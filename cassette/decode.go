package cassette

import (
	"encoding/base64"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// fastDecode fills w from one record line written by this package (the
// common case) without reflection: known keys, integers, strings, the verbatim
// json/id values. Anything it does not handle exactly as encoding/json would
// (an unknown or escaped key, a type mismatch, a fraction, invalid UTF-8 in
// a string, a number out of range) makes it return false, and the caller
// decodes the line with encoding/json instead, so results are identical.
// Values it skips or keeps raw are validated strictly, as encoding/json
// validates the whole input.
func fastDecode(b []byte, w *wire) bool {
	d := fdec{b: b}
	d.ws()
	if !d.eat('{') {
		return false
	}
	d.ws()
	if d.eat('}') {
		return d.end()
	}
	for {
		d.ws()
		key, ok := d.rawKey()
		if !ok {
			return false
		}
		d.ws()
		if !d.eat(':') {
			return false
		}
		d.ws()
		if !d.field(key, w) {
			return false
		}
		d.ws()
		if d.eat(',') {
			continue
		}
		if d.eat('}') {
			return d.end()
		}
		return false
	}
}

type fdec struct {
	b []byte
	i int
}

func (d *fdec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fdec) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fdec) end() bool {
	d.ws()
	return d.i == len(d.b)
}

// rawKey reads a member name without escapes.
func (d *fdec) rawKey() (string, bool) {
	if !d.eat('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			k := d.b[start:d.i]
			d.i++
			return string(k), true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return "", false
		}
		d.i++
	}
	return "", false
}

func (d *fdec) null() bool {
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

func (d *fdec) field(key string, w *wire) bool {
	switch key {
	case "n":
		if d.null() {
			w.N = nil
			return true
		}
		v, ok := d.uint()
		w.N = &v
		return ok
	case "t":
		return d.int64(&w.T)
	case "k":
		return d.str((*string)(&w.K))
	case "conn":
		return d.int(&w.Conn)
	case "d":
		return d.str((*string)(&w.D))
	case "json":
		s, ok := d.skip()
		w.JSON = append(w.JSON[:0:0], s...)
		return ok
	case "text":
		if d.null() {
			w.Text = nil
			return true
		}
		var s string
		ok := d.str(&s)
		w.Text = &s
		return ok
	case "b64":
		if d.null() {
			w.B64 = nil
			return true
		}
		var s string
		if !d.str(&s) {
			return false
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return false
		}
		w.B64 = b
		return true
	case "eol":
		if d.null() {
			w.EOL = nil
			return true
		}
		var s string
		ok := d.str(&s)
		w.EOL = &s
		return ok
	case "hdr":
		return d.str(&w.Hdr)
	case "part":
		return d.bool(&w.Part)
	case "redacted":
		return d.bool(&w.Redacted)
	case "redactedAt":
		return d.strs(&w.RedAt)
	case "kind":
		return d.str(&w.Kind)
	case "method":
		return d.str(&w.Method)
	case "id":
		s, ok := d.skip()
		w.ID = append(w.ID[:0:0], s...)
		return ok
	case "ev":
		return d.str(&w.Ev)
	case "argv":
		return d.strs(&w.Argv)
	case "cwd":
		return d.str(&w.Cwd)
	case "pid":
		return d.int(&w.PID)
	case "exit":
		if d.null() {
			w.Exit = nil
			return true
		}
		var v int
		ok := d.int(&v)
		w.Exit = &v
		return ok
	case "signal":
		return d.str(&w.Signal)
	case "bytes":
		return d.int64(&w.Bytes)
	case "msg":
		return d.str(&w.Msg)
	case "ref":
		return d.optUint(&w.Ref)
	case "code":
		return d.str(&w.Code)
	case "sev":
		return d.str(&w.Severity)
	case "ptr":
		return d.str(&w.Pointer)
	case "protocol":
		return d.str(&w.Protocol)
	case "records":
		return d.optUint(&w.Records)
	case "format":
		return d.str(&w.Format)
	case "version":
		return d.str(&w.Version)
	case "rpctap":
		return d.str(&w.Rpctap)
	case "created":
		return d.str(&w.Created)
	case "mode":
		return d.str(&w.Mode)
	case "listen":
		return d.str(&w.Listen)
	case "upstream":
		return d.str(&w.Upstream)
	case "control":
		return d.str(&w.Control)
	case "act":
		return d.str(&w.Act)
	case "icpt":
		return d.str(&w.Icpt)
	case "held":
		return d.int64(&w.Held)
	case "bp":
		return d.str(&w.BP)
	case "orig":
		s, ok := d.skip()
		w.Orig = append(w.Orig[:0:0], s...)
		return ok
	case "orig_text":
		return d.str(&w.OrigText)
	}
	return false // unknown key: encoding/json matches keys case-insensitively; let it decide
}

// digits returns the span of an integer literal (no fraction or exponent).
func (d *fdec) digits() ([]byte, bool) {
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	ds := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - ds
	if n == 0 || n > 1 && d.b[ds] == '0' {
		return nil, false
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return nil, false
	}
	return d.b[start:d.i], true
}

// optUint reads an unsigned integer into *v; null leaves *v as it is (the
// zero value encoding/json would also leave).
func (d *fdec) optUint(v *uint64) bool {
	if d.null() {
		return true
	}
	n, ok := d.uint()
	*v = n
	return ok
}

func (d *fdec) uint() (uint64, bool) {
	s, ok := d.digits()
	if !ok || s[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	return v, err == nil
}

func (d *fdec) int64(p *int64) bool {
	if d.null() {
		return true
	}
	s, ok := d.digits()
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	*p = v
	return err == nil
}

func (d *fdec) int(p *int) bool {
	if d.null() {
		return true
	}
	s, ok := d.digits()
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(string(s), 10, strconv.IntSize)
	*p = int(v)
	return err == nil
}

func (d *fdec) bool(p *bool) bool {
	switch {
	case d.null():
		return true
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		*p = true
		return true
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		*p = false
		return true
	}
	return false
}

func (d *fdec) strs(p *[]string) bool {
	if d.null() {
		*p = nil
		return true
	}
	if !d.eat('[') {
		return false
	}
	out := []string{}
	d.ws()
	if d.eat(']') {
		*p = out
		return true
	}
	for {
		d.ws()
		var s string
		if !d.str(&s) {
			return false
		}
		out = append(out, s)
		d.ws()
		if d.eat(']') {
			*p = out
			return true
		}
		if !d.eat(',') {
			return false
		}
	}
}

// str decodes a JSON string into p (null leaves p unchanged, as
// encoding/json does). Invalid UTF-8 is left to encoding/json, which
// replaces it.
func (d *fdec) str(p *string) bool {
	if d.null() {
		return true
	}
	if !d.eat('"') {
		return false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			*p = string(d.b[start:d.i])
			d.i++
			return true
		case c == '\\':
			return d.strEscaped(start, p)
		case c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && size == 1 {
				return false
			}
			d.i += size
		default:
			d.i++
		}
	}
	return false
}

// strEscaped finishes a string with escapes, from its start.
func (d *fdec) strEscaped(start int, p *string) bool {
	buf := append([]byte(nil), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			*p = string(buf)
			return true
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return false
			}
			e := d.b[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return false
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
						save := d.i
						d.i += 2
						var ok2 bool
						if r2, ok2 = d.hex4(); !ok2 {
							return false
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r = dec
						} else {
							d.i = save // not a pair: the second escape stands alone
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return false
			}
		case c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && size == 1 {
				return false
			}
			buf = append(buf, d.b[d.i:d.i+size]...)
			d.i += size
		default:
			buf = append(buf, c)
			d.i++
		}
	}
	return false
}

func (d *fdec) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}

// skip validates one JSON value and returns its bytes.
func (d *fdec) skip() ([]byte, bool) {
	start := d.i
	ok := d.value(0)
	return d.b[start:d.i], ok
}

const fastMaxDepth = 1000 // deeper values go to encoding/json (limit 10000 counted from the line)

func (d *fdec) value(depth int) bool {
	if d.i >= len(d.b) || depth > fastMaxDepth {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		d.ws()
		if d.eat('}') {
			return true
		}
		for {
			d.ws()
			if !d.skipString() {
				return false
			}
			d.ws()
			if !d.eat(':') {
				return false
			}
			d.ws()
			if !d.value(depth + 1) {
				return false
			}
			d.ws()
			if d.eat('}') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case c == '[':
		d.i++
		d.ws()
		if d.eat(']') {
			return true
		}
		for {
			d.ws()
			if !d.value(depth + 1) {
				return false
			}
			d.ws()
			if d.eat(']') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case c == '"':
		return d.skipString()
	case c == 't':
		return d.lit("true")
	case c == 'f':
		return d.lit("false")
	case c == 'n':
		return d.lit("null")
	default:
		return d.number()
	}
}

func (d *fdec) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// skipString validates a string (escapes, no control bytes; any other
// bytes, as encoding/json accepts invalid UTF-8 inside strings).
func (d *fdec) skipString() bool {
	if !d.eat('"') {
		return false
	}
	for d.i < len(d.b) {
		// Skip 8 plain bytes at a time: most of a payload is string bodies.
		for d.i+8 <= len(d.b) {
			if m := quoteEscCtl8(binary.LittleEndian.Uint64(d.b[d.i:])); m != 0 {
				d.i += bits.TrailingZeros64(m) / 8
				break
			}
			d.i += 8
		}
		if d.i >= len(d.b) {
			return false
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return true
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return false
			}
			switch d.b[d.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i += 2
			case 'u':
				d.i += 2
				if _, ok := d.hex4(); !ok {
					return false
				}
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			d.i++
		}
	}
	return false
}

// quoteEscCtl8 marks (with the byte's top bit) the bytes of x (little-endian
// load) that end a run of plain string bytes: '"', '\\' and control
// characters. Unlike special8 it lets bytes >= 0x80 through (the decoder
// accepts invalid UTF-8 inside strings, as encoding/json does). Borrows can
// mark a byte above a marked one, never one below: the lowest mark is exact.
func quoteEscCtl8(x uint64) uint64 {
	q := x ^ ('"' * lsb)
	b := x ^ ('\\' * lsb)
	m := (q - lsb) &^ q
	m |= (b - lsb) &^ b
	m |= (x - 0x20*lsb) &^ x
	return m & msb
}

// number validates a JSON number.
func (d *fdec) number() bool {
	d.eat('-')
	switch {
	case d.eat('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digitRun()
	default:
		return false
	}
	if d.eat('.') {
		if !d.digitRun() {
			return false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if !d.eat('+') {
			d.eat('-')
		}
		if !d.digitRun() {
			return false
		}
	}
	return true
}

func (d *fdec) digitRun() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

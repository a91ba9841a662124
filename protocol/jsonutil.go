package protocol

// Shared helpers for every protocol in this package.
//
// The scanner here is deliberately small: it walks the members of a
// top-level JSON object and hands back the raw bytes of each value without
// decoding them, so Classify can find "jsonrpc", "method", "id", "type", ...
// at a cost close to one pass over the bytes. It does not validate the whole
// frame (Session does that once per frame with json.Valid); on malformed input
// it stops and reports false, never panics.

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// forEachMember calls fn for each member of the JSON object in b, in order,
// with the raw key (without quotes, escapes left as they are) and the raw
// value bytes. It stops early when fn returns false. It reports whether b
// looked like a well-formed object up to the point where it stopped.
func forEachMember(b []byte, fn func(key, val []byte) bool) bool {
	return forEachMemberIn(nil, b, fn)
}

// forEachMemberIn is forEachMember skipping member values through x (nil:
// by scanning them).
func forEachMemberIn(x *frameIndex, b []byte, fn func(key, val []byte) bool) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ke, ok := skipString(b, i)
		if !ok {
			return false
		}
		key := b[i+1 : ke-1]
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		ve, ok := x.skip(b, i)
		if !ok {
			return false
		}
		if !fn(key, b[i:ve]) {
			return true
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}

// frameIndex lets the checks of one frame skip a value they have skipped
// before (a shape checker descending into nested objects skips each member
// value once per level) by a lookup instead of a scan: a tool result's text
// is scanned once instead of once per level above it. Lookups answer
// exactly what skipValue would (see jsonscan.Index).
type frameIndex struct {
	frame []byte
	idx   *jsonscan.Index // own, or one the caller built (ClassifyIndexed)
	own   jsonscan.Index
	on    bool
}

// minIndexedFrame: smaller frames are walked without an index (the
// repeated scans cost less than building it).
const minIndexedFrame = 256

// noFrameIndex turns the index off (tests compare verdicts both ways).
var noFrameIndex bool

// build indexes frame (when it is large enough to gain from it).
func (x *frameIndex) build(frame []byte) {
	x.frame, x.on = frame, !noFrameIndex && len(frame) >= minIndexedFrame
	if x.on {
		x.idx = &x.own
		x.own.Build(frame)
	}
}

// reset drops the frame (the index memory is kept).
func (x *frameIndex) reset() { x.frame, x.idx, x.on = nil, nil, false; x.own.Reset() }

// ClassifyIndexed is p.Classify(dir, frame) for a frame that idx indexes
// (a recorder gets idx from cassette.VerbatimIndexed, which checks every
// frame's syntax anyway): the JSON-RPC family skips a notification's params
// by lookup instead of scanning them. idx must index exactly frame, which
// must be valid JSON; nil idx means no index.
func ClassifyIndexed(p Protocol, dir Dir, frame []byte, idx *jsonscan.Index) Info {
	if _, ok := p.(rpcClassifier); ok && idx != nil {
		x := frameIndex{frame: frame, idx: idx, on: true}
		return classifyRPCIn(&x, frame)
	}
	return p.Classify(dir, frame)
}

// rpcClassifier marks a protocol whose Classify is classifyRPC (the
// JSON-RPC 2.0 envelope as it is), which ClassifyIndexed may then run on
// the index; each such protocol says so in its own file.
type rpcClassifier interface{ classifiesRPC() }

// skip is skipValue(b, i). When b is a piece of the indexed frame (sliced
// from it, so cap tells its offset) and the value at i is indexed, it is a
// lookup; otherwise (x nil, another slice, a short string, a literal) a scan.
func (x *frameIndex) skip(b []byte, i int) (int, bool) {
	if x != nil && x.on && i >= 0 && i < len(b) {
		c := b[i]
		if c == '"' {
			// Most string values are short: scanning them costs less
			// than a lookup (only strings of MinIndexedString bytes and
			// more are indexed).
			if e, ok, done := jsonscan.SkipShortString(b, i); done {
				return e, ok
			}
		}
		if c == '{' || c == '[' || c == '"' {
			off := cap(x.frame) - cap(b)
			if off >= 0 && off <= len(x.frame)-len(b) && &x.frame[off] == &b[0] {
				if e, ok := x.idx.End(off + i); ok {
					return e - off, true
				}
			}
		}
	}
	return skipValue(b, i)
}

// The byte-level scanning is shared with replay and redact
// (internal/jsonscan); these names keep the protocol code short.

func skipWS(b []byte, i int) int { return jsonscan.SkipWS(b, i) }

// skipString returns the index just past the string starting at b[i] == '"'
// (linear however many escapes it holds).
func skipString(b []byte, i int) (int, bool) { return jsonscan.SkipString(b, i) }

// skipValue returns the index just past the value starting at b[i]; nested
// objects and arrays are skipped by counting brackets outside strings, and
// their contents are not validated.
func skipValue(b []byte, i int) (int, bool) { return jsonscan.SkipValue(b, i) }

// rawString returns the Go string of a raw JSON string value. Strings with
// no escapes are converted directly; others go through json.Unmarshal. ok is false when raw is not a JSON string.
func rawString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// jsonType names the JSON type of a raw value by its first byte:
// "object", "array", "string", "number", "boolean", "null" or "" when raw is
// empty or not a JSON value.
func jsonType(raw []byte) string {
	i := skipWS(raw, 0)
	if i >= len(raw) {
		return ""
	}
	switch c := raw[i]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "number"
	}
	return ""
}

// isInteger reports whether a raw JSON number has no fraction or exponent
// (the JSON-RPC and ACP notion of an integer id or code), or is written with
// an integral value (1.0, 1e3).
func isInteger(raw []byte) bool {
	if jsonType(raw) != "number" {
		return false
	}
	if bytes.IndexAny(raw, ".eE") < 0 {
		return true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return err == nil && f == float64(int64(f))
}

// stripANSI removes leading ANSI escape sequences (CSI "ESC [ ... final",
// OSC "ESC ] ... BEL|ST", and two-byte "ESC x") and the white space between
// them from b. It returns b unchanged and false when b does not start with
// ESC.
func stripANSI(b []byte) ([]byte, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != 0x1b {
		return b, false
	}
	for i < len(b) && b[i] == 0x1b {
		if i+1 >= len(b) {
			return b[len(b):], true
		}
		switch b[i+1] {
		case '[':
			j := i + 2
			for j < len(b) && (b[j] < 0x40 || b[j] > 0x7e) {
				j++
			}
			i = j + 1
		case ']':
			j := i + 2
			for j < len(b) && b[j] != 0x07 && !(b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\') {
				j++
			}
			if j < len(b) && b[j] == 0x1b {
				j++
			}
			i = j + 1
		default:
			// ESC, intermediate bytes 0x20-0x2f, one final byte ("ESC ( B").
			j := i + 1
			for j < len(b) && b[j] >= 0x20 && b[j] <= 0x2f {
				j++
			}
			i = j + 1
		}
		if i > len(b) {
			i = len(b)
		}
		i = skipWS(b, i)
	}
	return b[i:], true
}

// excerpt shortens a frame for messages and reports.
func excerpt(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// nestedMember returns the raw value at b.outer.inner (members of nested
// JSON objects), or nil.
func nestedMember(b []byte, outer, inner string) []byte {
	if obj := nestedTop(b, outer); obj != nil {
		return nestedTop(obj, inner)
	}
	return nil
}

// pickMembers sets vals[i] to the raw value of top-level member keys[i] of
// the JSON object b (nil when absent) and reports whether b is an object.
func pickMembers(b []byte, keys []string, vals [][]byte) bool {
	return forEachMember(b, func(k, v []byte) bool {
		for i, key := range keys {
			if string(k) == key {
				vals[i] = v
				break
			}
		}
		return true
	})
}

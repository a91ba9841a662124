package redact

import (
	"bytes"
	"encoding/json"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// walker finds the spans of secret values in a frame that json.Valid
// accepted. It does not validate (that was done), but it never reads out of
// bounds and gives up (ok=false) on anything unexpected, so a bug here can
// only mean "not redacted", never a panic or a broken frame.
type walker struct {
	b     []byte
	r     *Redactor
	spans []span
	kbuf  [64]byte        // the normalized key being looked at
	ends  jsonscan.Cursor // string ends known from an index of b (LineJSONIndexed)
}

// context of a value: what its container says about it.
type ctx uint8

const (
	ctxNone     ctx = iota
	ctxEnvObj       // a member value of an "env" object: secret
	ctxEnvArray     // an element of an "env" array: its "value" is secret
)

const maxDepth = 10000 // json.Valid refuses deeper nesting anyway

// value walks the value at i and returns the index after it.
func (w *walker) value(i, depth int, c ctx) (int, bool) {
	if i >= len(w.b) || depth > maxDepth {
		return i, false
	}
	switch w.b[i] {
	case '{':
		return w.object(i, depth, c)
	case '[':
		return w.array(i, depth, c)
	case '"':
		if e, ok := w.ends.End(i); ok {
			return e, true
		}
		return jsonscan.SkipString(w.b, i)
	default:
		j := i
		for j < len(w.b) && !isDelim(w.b[j]) {
			j++
		}
		return j, j > i
	}
}

func isDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':'
}

// secretValue reports whether the value span should be hidden: strings
// other than "", numbers, objects and arrays; not null, true or false.
func secretValue(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case 'n', 't', 'f':
		return false
	case '"':
		return len(v) > 2
	}
	return true
}

// key decodes a member name (escapes are rare; only then is it unmarshalled)
// and normalizes it.
func key(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return Normalize(string(raw[1 : len(raw)-1]))
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return Normalize(s)
}

// key is the package's key for the raw JSON string raw, normalized into
// the walker's buffer when it has no escapes (no allocation: the result is
// only compared and used as a map key, and is valid until the next call).
func (w *walker) key(raw []byte) []byte {
	inner := raw[1 : len(raw)-1]
	if len(inner) > len(w.kbuf) || bytes.IndexByte(inner, '\\') >= 0 {
		return []byte(key(raw))
	}
	n := 0
	for _, c := range inner {
		switch {
		case c == '-' || c == '_':
			continue
		case 'A' <= c && c <= 'Z':
			c += 32
		}
		w.kbuf[n] = c
		n++
	}
	return w.kbuf[:n]
}

func (w *walker) add(s, e int) {
	if secretValue(w.b[s:e]) {
		w.spans = append(w.spans, span{s, e})
	}
}

func (w *walker) object(i, depth int, c ctx) (int, bool) {
	i = jsonscan.SkipWS(w.b, i+1)
	if i < len(w.b) && w.b[i] == '}' {
		return i + 1, true
	}
	var (
		nameSecret bool // "name" is a secret key (HTTP header list, env list)
		valueSpan  = span{-1, -1}
		isAuth     bool // "method":"authenticate"
		params     = -1 // start of the last "params" object
	)
	for {
		if i >= len(w.b) || w.b[i] != '"' {
			return i, false
		}
		ke, ok := jsonscan.SkipString(w.b, i)
		if !ok {
			return i, false
		}
		k := w.key(w.b[i:ke])
		isKey := w.r.isKey(k)
		var kind memberKind
		switch string(k) {
		case "env":
			kind = memberEnv
		case "params":
			kind = memberParams
		case "name":
			kind = memberName
		case "value":
			kind = memberValue
		case "method":
			kind = memberMethod
		}
		i = jsonscan.SkipWS(w.b, ke)
		if i >= len(w.b) || w.b[i] != ':' {
			return i, false
		}
		vs := jsonscan.SkipWS(w.b, i+1)
		sub := ctxNone
		if kind == memberEnv {
			if vs < len(w.b) && w.b[vs] == '{' {
				sub = ctxEnvObj
			} else if vs < len(w.b) && w.b[vs] == '[' {
				sub = ctxEnvArray
			}
		}
		ve, ok := w.value(vs, depth+1, sub)
		if !ok {
			return ve, false
		}
		if kind == memberParams && w.b[vs] == '{' {
			// Remember the params in case this turns out to be an
			// authenticate request; the method may come after them.
			params = vs
		}
		switch {
		case c == ctxEnvObj, isKey:
			w.add(vs, ve)
		case kind == memberName && w.b[vs] == '"':
			nameSecret = w.r.isKey(w.key(w.b[vs:ve]))
		case kind == memberValue:
			valueSpan = span{vs, ve}
		case kind == memberMethod && w.b[vs] == '"':
			isAuth = string(w.b[vs:ve]) == `"authenticate"`
		}
		i = jsonscan.SkipWS(w.b, ve)
		if i >= len(w.b) {
			return i, false
		}
		if w.b[i] == '}' {
			i++
			break
		}
		if w.b[i] != ',' {
			return i, false
		}
		i = jsonscan.SkipWS(w.b, i+1)
	}
	if valueSpan.start >= 0 && (nameSecret || c == ctxEnvArray) {
		w.add(valueSpan.start, valueSpan.end)
	}
	if isAuth && params >= 0 {
		// The params members, except methodId.
		for _, s := range w.memberSpans(params, depth+1, "methodid") {
			w.add(s.start, s.end)
		}
	}
	return i, true
}

// memberKind: the member names the rules look at besides the secret keys.
type memberKind uint8

const (
	memberOther memberKind = iota
	memberEnv
	memberParams
	memberName
	memberValue
	memberMethod
)

// memberSpans lists the value spans of the object at i, except the member
// named skip (normalized).
func (w *walker) memberSpans(i, depth int, skip string) []span {
	var out []span
	i = jsonscan.SkipWS(w.b, i+1)
	for i < len(w.b) && w.b[i] == '"' {
		ke, ok := jsonscan.SkipString(w.b, i)
		if !ok {
			return out
		}
		k := w.key(w.b[i:ke])
		keep := string(k) != skip
		i = jsonscan.SkipWS(w.b, ke)
		if i >= len(w.b) || w.b[i] != ':' {
			return out
		}
		vs := jsonscan.SkipWS(w.b, i+1)
		sub := walker{b: w.b, r: w.r}
		ve, ok := sub.value(vs, depth+1, ctxNone)
		if !ok {
			return out
		}
		if keep {
			out = append(out, span{vs, ve})
		}
		i = jsonscan.SkipWS(w.b, ve)
		if i >= len(w.b) || w.b[i] != ',' {
			return out
		}
		i = jsonscan.SkipWS(w.b, i+1)
	}
	return out
}

func (w *walker) array(i, depth int, c ctx) (int, bool) {
	i = jsonscan.SkipWS(w.b, i+1)
	if i < len(w.b) && w.b[i] == ']' {
		return i + 1, true
	}
	sub := ctxNone
	if c == ctxEnvArray {
		sub = ctxEnvArray
	}
	for {
		vs := i
		ve, ok := w.value(vs, depth+1, sub)
		if !ok {
			return ve, false
		}
		if c == ctxEnvArray && w.b[vs] == '"' {
			w.add(vs, ve) // "env": ["KEY=value", ...] (Docker style)
		}
		i = jsonscan.SkipWS(w.b, ve)
		if i >= len(w.b) {
			return i, false
		}
		if w.b[i] == ']' {
			return i + 1, true
		}
		if w.b[i] != ',' {
			return i, false
		}
		i = jsonscan.SkipWS(w.b, i+1)
	}
}

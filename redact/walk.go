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
		nameSecret  bool // "name" is a secret key (HTTP header list, env list)
		valueSpan   = span{-1, -1}
		isAuth      bool // "method":"authenticate"
		paramsSpans []span
	)
	for {
		if i >= len(w.b) || w.b[i] != '"' {
			return i, false
		}
		ke, ok := jsonscan.SkipString(w.b, i)
		if !ok {
			return i, false
		}
		k := key(w.b[i:ke])
		i = jsonscan.SkipWS(w.b, ke)
		if i >= len(w.b) || w.b[i] != ':' {
			return i, false
		}
		vs := jsonscan.SkipWS(w.b, i+1)
		sub := ctxNone
		if k == "env" {
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
		if k == "params" && w.b[vs] == '{' {
			// Remember the params members (except methodId) in case this
			// turns out to be an authenticate request; the method may come
			// after the params.
			paramsSpans = w.memberSpans(vs, depth+1, "methodid")
		}
		switch {
		case c == ctxEnvObj, w.r.keys[k]:
			w.add(vs, ve)
		case k == "name" && w.b[vs] == '"':
			nameSecret = w.r.keys[key(w.b[vs:ve])]
		case k == "value":
			valueSpan = span{vs, ve}
		case k == "method" && w.b[vs] == '"':
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
	if isAuth {
		for _, s := range paramsSpans {
			w.add(s.start, s.end)
		}
	}
	return i, true
}

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
		k := key(w.b[i:ke])
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
		if k != skip {
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

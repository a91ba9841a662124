// Package rewrite is rpctap's frame rewrite engine: rules of the form
// "EXPR => ACTION" change the frames a filter expression (package
// filterexpr) selects, on either direction and either framing. `rpctap
// record --rewrite` runs them in the intercepting tap; other users (linked
// sessions) call Apply on frames of their own.
//
// Apply takes a frame and returns the frame to send instead plus a record
// of what changed (the rule and the original), or the frame unchanged and
// no record. Edits keep the frame's other members byte for byte and in
// their order.
//
// Actions:
//
//	set PATH JSON       set the member at PATH (created with its parents
//	                    when missing) to the JSON value; a VALUE that is not
//	                    JSON is taken as a string
//	delete PATH         remove the member or array element at PATH
//	error CODE MESSAGE  replace a response's result with a JSON-RPC error
//
// PATH is dotted (result.contents.value, params.items.0) or a JSON pointer
// (/result/contents/value).
package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
)

// Rule is one rewrite rule.
type Rule struct {
	Text string // the rule as written
	Expr string // the filter expression that selects frames
	Op   string // set, delete, error
	Path []string
	// Value is set's JSON value; Code and Message error's.
	Value   json.RawMessage
	Code    int
	Message string

	filter filterexpr.Filter
	fn     func([]byte) ([]byte, error) // Op "func": a rewrite of Go code's
}

// Func makes a rule whose action is Go code (record --deep's deeptap): fn
// returns the frame to send instead, or an error when it has nothing to do.
// text names the rule in the intercept event's bp; expr selects the frames
// fn sees (filterexpr.ParseBreakpoint).
func Func(text, expr string, fn func(frame []byte) ([]byte, error)) (Rule, error) {
	f, err := filterexpr.ParseBreakpoint(expr)
	if err != nil {
		return Rule{}, err
	}
	return Rule{Text: text, Expr: expr, Op: "func", filter: f, fn: fn}, nil
}

// Parse reads one rule: "EXPR => ACTION". The expression is a breakpoint
// (filterexpr.ParseBreakpoint): it decides on the frame alone.
func Parse(text string) (Rule, error) {
	expr, action, ok := strings.Cut(text, "=>")
	if !ok {
		return Rule{}, fmt.Errorf("rewrite %q: want EXPR => ACTION (e.g. 'm=tools/list & dir:out => delete result.tools.0')", text)
	}
	r := Rule{Text: strings.TrimSpace(text), Expr: strings.TrimSpace(expr)}
	f, err := filterexpr.ParseBreakpoint(r.Expr)
	if err != nil {
		return Rule{}, fmt.Errorf("rewrite %q: %v", text, err)
	}
	r.filter = f
	words := strings.Fields(action)
	if len(words) == 0 {
		return Rule{}, fmt.Errorf("rewrite %q: no action after => (set, delete, error)", text)
	}
	r.Op = words[0]
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(action), words[0]))
	switch r.Op {
	case "set", "delete":
		if len(words) < 2 {
			return Rule{}, fmt.Errorf("rewrite %q: %s needs a PATH", text, r.Op)
		}
		if r.Path, err = ParsePath(words[1]); err != nil {
			return Rule{}, fmt.Errorf("rewrite %q: %v", text, err)
		}
		if r.Op == "delete" {
			if len(words) > 2 {
				return Rule{}, fmt.Errorf("rewrite %q: delete takes only a PATH", text)
			}
			break
		}
		v := strings.TrimSpace(strings.TrimPrefix(rest, words[1]))
		if v == "" {
			return Rule{}, fmt.Errorf("rewrite %q: set needs a value (set PATH JSON)", text)
		}
		if json.Valid([]byte(v)) {
			var b bytes.Buffer
			json.Compact(&b, []byte(v))
			r.Value = b.Bytes()
		} else {
			r.Value, _ = json.Marshal(v)
		}
	case "error":
		if len(words) < 2 {
			return Rule{}, fmt.Errorf("rewrite %q: error needs a CODE (error -32603 internal error)", text)
		}
		if r.Code, err = strconv.Atoi(words[1]); err != nil {
			return Rule{}, fmt.Errorf("rewrite %q: error code %q is not an integer", text, words[1])
		}
		r.Message = strings.TrimSpace(strings.TrimPrefix(rest, words[1]))
		if r.Message == "" {
			r.Message = "error injected by rpctap"
		}
	default:
		return Rule{}, fmt.Errorf("rewrite %q: unknown action %q (set, delete, error)", text, r.Op)
	}
	return r, nil
}

// ParsePath reads a dotted path or a JSON pointer.
func ParsePath(p string) ([]string, error) {
	if p == "" || p == "/" || p == "." {
		return nil, errors.New("an empty path (name a member: result.x, /result/x)")
	}
	if strings.HasPrefix(p, "/") {
		parts := strings.Split(p[1:], "/")
		for i, s := range parts {
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		}
		return parts, nil
	}
	parts := strings.Split(p, ".")
	for _, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("path %q has an empty step", p)
		}
	}
	return parts, nil
}

// Rules are applied in order, each to the output of the ones before.
type Rules []Rule

// Change is the record of what Apply changed.
type Change struct {
	Rules    []string // the rules that applied, as written
	Original []byte   // the frame before them
}

// Apply runs the rules on one frame: r is the frame's record (filterexpr.Frame)
// and m what the tap knows about it (a response's request method). It
// returns the payload to send instead and the change, or r's payload and nil
// when no rule selected the frame or none could apply (a set on a frame
// that is not a JSON object).
func (rs Rules) Apply(r *cassette.Record, m filterexpr.MatchInfo) ([]byte, *Change) {
	orig := r.Payload()
	out := orig
	var applied []string
	for i := range rs {
		rule := &rs[i]
		cur := *r
		if len(applied) > 0 {
			cur.SetPayload(out)
		}
		if !rule.filter.Match(&cur, m) {
			continue
		}
		next, err := rule.apply(out)
		if err != nil {
			continue
		}
		out = next
		applied = append(applied, rule.Text)
	}
	if len(applied) == 0 || bytes.Equal(out, orig) {
		return orig, nil
	}
	return out, &Change{Rules: applied, Original: append([]byte(nil), orig...)}
}

func (r *Rule) apply(frame []byte) ([]byte, error) {
	switch r.Op {
	case "func":
		return r.fn(frame)
	case "set":
		return setPath(frame, r.Path, r.Value)
	case "delete":
		return deletePath(frame, r.Path)
	case "error":
		errObj, _ := json.Marshal(map[string]any{"code": r.Code, "message": r.Message})
		obj, err := parseObject(frame)
		if err != nil {
			return nil, err
		}
		i := obj.index("result")
		if i < 0 {
			return nil, errors.New("not a response with a result")
		}
		obj[i] = member{key: "error", val: errObj}
		return obj.encode(), nil
	}
	return nil, fmt.Errorf("unknown op %q", r.Op)
}

// member is one member of a JSON object, its value kept verbatim.
type member struct {
	key string
	val json.RawMessage
}

// object is a JSON object with its members in order.
type object []member

func parseObject(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var o object
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, member{key: kt.(string), val: v})
	}
	return o, nil
}

func (o object) index(key string) int {
	for i, m := range o {
		if m.key == key {
			return i
		}
	}
	return -1
}

func (o object) encode() []byte {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(m.key)
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, m.val...)
	}
	return append(b, '}')
}

func parseArray(b []byte) ([]json.RawMessage, error) {
	var a []json.RawMessage
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, errors.New("not a JSON array")
	}
	return a, nil
}

func encodeArray(a []json.RawMessage) []byte {
	b := []byte{'['}
	for i, v := range a {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// setPath sets path in the JSON value v to val.
func setPath(v []byte, path []string, val json.RawMessage) ([]byte, error) {
	if len(path) == 0 {
		return val, nil
	}
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '[' {
		a, err := parseArray(v)
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i > len(a) {
			return nil, fmt.Errorf("no element %q", path[0])
		}
		if i == len(a) {
			a = append(a, json.RawMessage("{}"))
		}
		if a[i], err = setPath(a[i], path[1:], val); err != nil {
			return nil, err
		}
		return encodeArray(a), nil
	}
	o, err := parseObject(v)
	if err != nil {
		return nil, err
	}
	i := o.index(path[0])
	if i < 0 {
		o = append(o, member{key: path[0], val: json.RawMessage("{}")})
		i = len(o) - 1
	}
	if o[i].val, err = setPath(o[i].val, path[1:], val); err != nil {
		return nil, err
	}
	return o.encode(), nil
}

// deletePath removes path from the JSON value v; a path that is not there
// is an error (the rule did not apply).
func deletePath(v []byte, path []string) ([]byte, error) {
	v = bytes.TrimSpace(v)
	last := len(path) == 1
	if len(v) > 0 && v[0] == '[' {
		a, err := parseArray(v)
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(a) {
			return nil, fmt.Errorf("no element %q", path[0])
		}
		if last {
			a = append(a[:i], a[i+1:]...)
		} else if a[i], err = deletePath(a[i], path[1:]); err != nil {
			return nil, err
		}
		return encodeArray(a), nil
	}
	o, err := parseObject(v)
	if err != nil {
		return nil, err
	}
	i := o.index(path[0])
	if i < 0 {
		return nil, fmt.Errorf("no member %q", path[0])
	}
	if last {
		o = append(o[:i], o[i+1:]...)
	} else if o[i].val, err = deletePath(o[i].val, path[1:]); err != nil {
		return nil, err
	}
	return o.encode(), nil
}

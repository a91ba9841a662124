// Package deeptap is the frame rewrite of `rpctap record --deep`: in an ACP
// request that hands the agent MCP servers to start (session/new,
// session/load, session/fork, session/resume), each stdio entry of
// params.mcpServers is changed so that the agent starts it under `rpctap
// record`, into the parent's cassette directory, with flags that name the
// parent recording and the request:
//
//	{"name":"files","command":"mcp-files","args":["--root","/src"],"env":[]}
//	{"name":"files","command":"/usr/bin/rpctap","args":["record","--dir","/d",
//	  "--parent-cassette","P.cassette","--parent-request","2","--parent-method",
//	  "session/new","--parent-server","files","--","mcp-files","--root","/src"],"env":[]}
//
// Only the values of command and args change (an entry without args gets
// one, right after command); every other byte of the frame stays as it was:
// the entry's name, env and _meta, the members' order, whitespace and
// escapes. The original command and arguments are moved into args as they
// were written (their literals), so nothing is decoded and re-encoded.
//
// Entries the rewrite leaves alone: http, sse and acp entries (they have a
// "type"); an entry that runs under rpctap record already (Options.Wrapped);
// and damaged ones (no command string, args that are not an array of
// strings): the agent sees those as the client wrote them and answers for
// them itself.
package deeptap

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// Methods are the ACP requests whose params carry mcpServers.
var Methods = []string{"session/new", "session/load", "session/fork", "session/resume"}

// Options say what the rewritten command line is.
type Options struct {
	Self     string   // rpctap's absolute path: the entry's new command
	Dir      string   // the directory the linked recordings go to
	Cassette string   // the parent cassette's file name in Dir
	Flags    []string // more record flags for each linked recording (the parent's redaction flags)
	// Wrapped reports whether a command line runs under rpctap record
	// already (wrap.Recognise); nil: none does.
	Wrapped func(command string, args []string) bool
}

// Server is one mcpServers entry a rewrite wrapped.
type Server struct {
	Name    string   // the entry's name
	Command string   // its command as the client sent it
	Args    []string // its arguments as the client sent them
}

// RuleName names the deep tap's rewrite in the intercept event's bp
// (docs/deep.md). Readers use it to tell the tap's own change (which
// names this recording's cassette and directory) from a user's rewrite.
const RuleName = "deep: stdio mcpServers run under rpctap record"

// ErrNotApplicable is Rewrite's error for a frame it has nothing to do to:
// not an ACP request of Methods, or one with no stdio entry to wrap.
var ErrNotApplicable = errors.New("deeptap: nothing to wrap")

// Rewrite returns frame with its stdio mcpServers entries wrapped, and the
// entries it wrapped; ErrNotApplicable (and frame) when there is none.
// frame is one JSON text (a line without its ending, or a body).
func (o *Options) Rewrite(frame []byte) ([]byte, []Server, error) {
	// Most frames (session/update, tools, fs) are not for us: a byte
	// search says so without parsing. A key spelled with escapes
	// ("mcp\u0053ervers") has a backslash-u and takes the long way.
	if !bytes.Contains(frame, []byte("mcpServers")) && !bytes.Contains(frame, []byte(`\u`)) {
		return frame, nil, ErrNotApplicable
	}
	if !json.Valid(frame) {
		return frame, nil, ErrNotApplicable
	}
	i := jsonscan.SkipWS(frame, 0)
	top, ok := members(frame, i)
	if !ok {
		return frame, nil, ErrNotApplicable
	}
	method, ok := str(frame, top.get("method"))
	if !ok || !isMethod(method) {
		return frame, nil, ErrNotApplicable
	}
	id := top.get("id")
	if id == nil {
		return frame, nil, ErrNotApplicable // a notification starts nothing to link to
	}
	params := top.get("params")
	if params == nil {
		return frame, nil, ErrNotApplicable
	}
	pm, ok := members(frame, params.vs)
	if !ok {
		return frame, nil, ErrNotApplicable
	}
	servers := pm.get("mcpServers")
	if servers == nil {
		return frame, nil, ErrNotApplicable
	}
	elems, ok := elements(frame, servers.vs)
	if !ok {
		return frame, nil, ErrNotApplicable
	}
	idJSON := string(frame[id.vs:id.ve])
	var sp []splice
	var done []Server
	for _, el := range elems {
		s, edits, ok := o.entry(frame, el, idJSON, method)
		if !ok {
			continue
		}
		sp = append(sp, edits...)
		done = append(done, s)
	}
	if len(done) == 0 {
		return frame, nil, ErrNotApplicable
	}
	return apply(frame, sp), done, nil
}

func isMethod(m string) bool {
	for _, x := range Methods {
		if m == x {
			return true
		}
	}
	return false
}

// entry wraps the mcpServers element at el, or says it is not one to wrap.
func (o *Options) entry(b []byte, el int, idJSON, method string) (Server, []splice, bool) {
	ms, ok := members(b, el)
	if !ok {
		return Server{}, nil, false
	}
	if t := ms.get("type"); t != nil {
		// Untagged is stdio; "stdio" spelled out is taken as the same.
		if v, ok := str(b, t); !ok || v != "stdio" {
			return Server{}, nil, false
		}
	}
	cm := ms.get("command")
	command, ok := str(b, cm)
	if !ok || command == "" {
		return Server{}, nil, false
	}
	var args []string
	var argLits [][]byte
	am := ms.get("args")
	if am != nil {
		els, ok := elements(b, am.vs)
		if !ok {
			return Server{}, nil, false
		}
		for _, e := range els {
			end, _ := jsonscan.SkipValue(b, e)
			s, ok := decodeString(b[e:end])
			if !ok {
				return Server{}, nil, false
			}
			args = append(args, s)
			argLits = append(argLits, b[e:end])
		}
	}
	if o.Wrapped != nil && o.Wrapped(command, args) {
		return Server{}, nil, false
	}
	name, _ := str(b, ms.get("name"))
	line := []string{"record", "--dir", o.Dir, "--parent-cassette", o.Cassette,
		"--parent-request", idJSON, "--parent-method", method, "--parent-server", name}
	line = append(line, o.Flags...)
	line = append(line, "--")
	var arr bytes.Buffer
	arr.WriteByte('[')
	for _, s := range line {
		arr.Write(quote(s))
		arr.WriteByte(',')
	}
	arr.Write(b[cm.vs:cm.ve]) // the command's literal as the client wrote it
	for _, l := range argLits {
		arr.WriteByte(',')
		arr.Write(l)
	}
	arr.WriteByte(']')
	sp := []splice{{cm.vs, cm.ve, quote(o.Self)}}
	if am != nil {
		sp = append(sp, splice{am.vs, am.ve, arr.Bytes()})
	} else {
		sp = append(sp, splice{cm.ve, cm.ve, append([]byte(`,"args":`), arr.Bytes()...)})
	}
	return Server{Name: name, Command: command, Args: args}, sp, true
}

// member is one member of an object: its key (decoded) and where its value
// starts and ends.
type member struct {
	key    string
	vs, ve int
}

type object []member

// get returns the last member named key (as encoding/json and JavaScript's
// JSON.parse read a duplicate key), or nil.
func (o object) get(key string) *member {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].key == key {
			return &o[i]
		}
	}
	return nil
}

// members reads the object at b[i] (b is valid JSON), or says it is none.
func members(b []byte, i int) (object, bool) {
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	var o object
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return o, true
	}
	for i < len(b) {
		ke, ok := jsonscan.SkipString(b, i)
		if !ok {
			return nil, false
		}
		key, ok := decodeString(b[i:ke])
		if !ok {
			return nil, false
		}
		i = jsonscan.SkipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		vs := jsonscan.SkipWS(b, i+1)
		ve, ok := jsonscan.SkipValue(b, vs)
		if !ok {
			return nil, false
		}
		o = append(o, member{key, vs, ve})
		i = jsonscan.SkipWS(b, ve)
		if i < len(b) && b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
			continue
		}
		return o, i < len(b) && b[i] == '}'
	}
	return nil, false
}

// elements returns where each element of the array at b[i] starts.
func elements(b []byte, i int) ([]int, bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	var out []int
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, true
	}
	for i < len(b) {
		e, ok := jsonscan.SkipValue(b, i)
		if !ok {
			return nil, false
		}
		out = append(out, i)
		i = jsonscan.SkipWS(b, e)
		if i < len(b) && b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
			continue
		}
		return out, i < len(b) && b[i] == ']'
	}
	return nil, false
}

// str decodes the string value of m; false when m is nil or not a string.
func str(b []byte, m *member) (string, bool) {
	if m == nil {
		return "", false
	}
	return decodeString(b[m.vs:m.ve])
}

func decodeString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return "", false
	}
	return s, true
}

// quote is s as a JSON string literal (no HTML escaping: a path with & or <
// stays readable).
func quote(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a Go string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// splice replaces b[start:end] with text.
type splice struct {
	start, end int
	text       []byte
}

// apply makes b with the splices (not overlapping) done.
func apply(b []byte, sp []splice) []byte {
	sort.Slice(sp, func(i, j int) bool { return sp[i].start < sp[j].start })
	out := make([]byte, 0, len(b)+256*len(sp))
	at := 0
	for _, s := range sp {
		out = append(out, b[at:s.start]...)
		out = append(out, s.text...)
		at = s.end
	}
	return append(out, b[at:]...)
}

// Unwrap undoes Rewrite on a frame that other changes (a user's --rewrite
// rule, an edit through the control socket) may have touched as well: each
// mcpServers entry whose args are a linked recording's command line
// (record ... --parent-cassette ... -- COMMAND ARGS...) gets COMMAND and ARGS
// back, their literals as Rewrite copied them; every other byte stays. An
// entry Rewrite gave args to comes back with them (an empty array). false
// when there is nothing to undo.
func Unwrap(frame []byte) ([]byte, bool) {
	if !bytes.Contains(frame, []byte("--parent-cassette")) || !json.Valid(frame) {
		return frame, false
	}
	top, ok := members(frame, jsonscan.SkipWS(frame, 0))
	if !ok {
		return frame, false
	}
	if m, ok := str(frame, top.get("method")); !ok || !isMethod(m) {
		return frame, false
	}
	params := top.get("params")
	if params == nil {
		return frame, false
	}
	pm, ok := members(frame, params.vs)
	if !ok {
		return frame, false
	}
	servers := pm.get("mcpServers")
	if servers == nil {
		return frame, false
	}
	elems, ok := elements(frame, servers.vs)
	if !ok {
		return frame, false
	}
	var sp []splice
	for _, el := range elems {
		ms, ok := members(frame, el)
		if !ok {
			continue
		}
		cm, am := ms.get("command"), ms.get("args")
		if _, ok := str(frame, cm); !ok || am == nil {
			continue
		}
		els, ok := elements(frame, am.vs)
		if !ok {
			continue
		}
		var lits [][]byte
		sep, linked, bad := -1, false, false
		for i := 0; i < len(els) && !bad; i++ {
			end, _ := jsonscan.SkipValue(frame, els[i])
			s, ok := decodeString(frame[els[i]:end])
			lits, bad = append(lits, frame[els[i]:end]), !ok
			switch {
			case bad || sep >= 0:
			case i == 0:
				bad = s != "record"
			case s == "--":
				sep = i
			case valueFlags[s]:
				// its value ("--parent-server --" is a name) is not the end
				// of the flags
				if i+1 < len(els) {
					end, _ := jsonscan.SkipValue(frame, els[i+1])
					lits = append(lits, frame[els[i+1]:end])
				}
				linked = linked || s == "--parent-cassette"
				i++
			}
		}
		if bad || !linked || sep < 0 || sep+1 >= len(lits) {
			continue
		}
		arr := []byte{'['}
		for i, l := range lits[sep+2:] {
			if i > 0 {
				arr = append(arr, ',')
			}
			arr = append(arr, l...)
		}
		arr = append(arr, ']')
		sp = append(sp, splice{cm.vs, cm.ve, lits[sep+1]}, splice{am.vs, am.ve, arr})
	}
	if len(sp) == 0 {
		return frame, false
	}
	return apply(frame, sp), true
}

// valueFlags are the flags of a linked recording's command line that take a
// value (the next argument).
var valueFlags = map[string]bool{"--dir": true, "--parent-cassette": true, "--parent-request": true,
	"--parent-method": true, "--parent-server": true, "--redact": true}

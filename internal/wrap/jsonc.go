package wrap

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tailscale/hujson"
)

// parseJSON finds the entries of the server maps named by sections in src, a
// JSON file that may hold comments and trailing commas. A section is a path
// of member names from the top; "*" matches every member at that level (for
// ~/.claude.json's projects[PATH].mcpServers).
func parseJSON(src []byte, sections [][]string) ([]Entry, error) {
	root, err := hujson.Parse(src)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "hujson: "))
	}
	var out []Entry
	for _, sec := range sections {
		walkJSON(&root, sec, "", func(label string, servers *hujson.Object) {
			for i := range servers.Members {
				m := &servers.Members[i]
				e := jsonEntry(m)
				e.Section = label
				out = append(out, e)
			}
		})
	}
	return out, nil
}

// walkJSON follows path from v and calls f with each object it reaches.
func walkJSON(v *hujson.Value, path []string, label string, f func(string, *hujson.Object)) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return
	}
	if len(path) == 0 {
		f(label, obj)
		return
	}
	for i := range obj.Members {
		m := &obj.Members[i]
		name := memberName(m)
		switch {
		case path[0] == "*":
			walkJSON(&m.Value, path[1:], label+"["+name+"]", f)
		case name == path[0]:
			next := name
			if label != "" {
				next = label + "." + name
			}
			walkJSON(&m.Value, path[1:], next, f)
		}
	}
}

func memberName(m *hujson.ObjectMember) string {
	if l, ok := m.Name.Value.(hujson.Literal); ok {
		return l.String()
	}
	return ""
}

func member(obj *hujson.Object, name string) *hujson.Value {
	for i := range obj.Members {
		if memberName(&obj.Members[i]) == name {
			return &obj.Members[i].Value
		}
	}
	return nil
}

func jsonString(v *hujson.Value) (lit, bool) {
	l, ok := v.Value.(hujson.Literal)
	if !ok || l.Kind() != '"' {
		return lit{}, false
	}
	return lit{start: v.StartOffset, end: v.EndOffset, raw: []byte(l), val: l.String()}, true
}

// jsonEntry reads one server. Besides the common shape (command, args, env,
// cwd as members of the entry) it reads Zed's older context server shape,
// where command is an object holding path, args and env.
func jsonEntry(m *hujson.ObjectMember) Entry {
	e := Entry{Name: memberName(m), format: JSON}
	obj, ok := m.Value.Value.(*hujson.Object)
	if !ok {
		e.Skip = "not an object"
		return e
	}
	holder := obj
	cv := member(obj, "command")
	if cv != nil {
		if inner, ok := cv.Value.(*hujson.Object); ok {
			holder = inner
			cv = member(inner, "path")
		}
	}
	if cv == nil {
		for _, k := range []string{"url", "serverUrl", "httpUrl"} {
			if u := member(obj, k); u != nil {
				s, _ := jsonString(u)
				e.Skip = fmt.Sprintf("an HTTP/SSE entry (%s %s): rpctap records stdio and Unix sockets", k, s.val)
				return e
			}
		}
		if t := member(obj, "type"); t != nil {
			if s, ok := jsonString(t); ok && s.val != "stdio" {
				e.Skip = fmt.Sprintf("a %q entry, not a stdio command", s.val)
				return e
			}
		}
		e.Skip = "no command (a built-in server or agent the client starts itself)"
		return e
	}
	c, ok := jsonString(cv)
	if !ok {
		e.Skip = "its command is not a string"
		return e
	}
	e.cmd, e.Command = c, c.val
	e.addArgs = insertion{at: c.end, pre: ", "}
	if av := member(holder, "args"); av != nil {
		arr, ok := av.Value.(*hujson.Array)
		if !ok {
			e.Skip = "its args are not a list"
			return e
		}
		a := &array{open: av.StartOffset + 1, close: av.EndOffset - 1}
		for i := range arr.Elements {
			s, ok := jsonString(&arr.Elements[i])
			if !ok {
				e.Skip = "its args are not all strings"
				return e
			}
			a.elems = append(a.elems, s)
			e.Args = append(e.Args, s.val)
		}
		e.args = a
	}
	e.recognise()
	return e
}

package wrap

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/pelletier/go-toml/v2/unstable"
)

// parseTOML finds the entries of the tables named section in src:
// [section.NAME] tables, NAME = { ... } inline tables under [section], and
// dotted keys (section.NAME.command = ...). go-toml's unstable parser gives
// the byte range of each key-value and string, which is all the edit needs;
// no TOML library writes a document back with its comments, so the edit is
// done on those byte ranges.
func parseTOML(src []byte, section string) ([]Entry, error) {
	var p unstable.Parser
	p.Reset(src)
	byName := map[string]*tomlEntry{}
	var order []string
	get := func(name string) *tomlEntry {
		if te, ok := byName[name]; ok {
			return te
		}
		te := &tomlEntry{Entry: Entry{Section: section, Name: name, format: TOML}}
		byName[name] = te
		order = append(order, name)
		return te
	}
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(n.Key())
			if len(table) >= 2 && table[0] == section {
				get(table[1])
			}
		case unstable.KeyValue:
			full := append(append([]string(nil), table...), keyParts(n.Key())...)
			if len(full) < 2 || full[0] != section {
				continue
			}
			switch {
			case len(full) == 3:
				get(full[1]).field(&p, src, full[2], n, false)
			case len(full) == 2 && n.Value().Kind == unstable.InlineTable:
				te := get(full[1])
				for it := n.Value().Children(); it.Next(); {
					kv := it.Node()
					if kv.Kind != unstable.KeyValue {
						continue
					}
					if k := keyParts(kv.Key()); len(k) == 1 {
						te.field(&p, src, k[0], kv, true)
					}
				}
			}
		}
	}
	if err := p.Error(); err != nil {
		var perr *unstable.ParserError
		if errors.As(err, &perr) && len(perr.Highlight) > 0 {
			sh := p.Shape(p.Range(perr.Highlight))
			return nil, fmt.Errorf("line %d column %d: %s", sh.Start.Line, sh.Start.Column, perr.Message)
		}
		return nil, err
	}
	out := make([]Entry, 0, len(order))
	for _, name := range order {
		out = append(out, byName[name].finish())
	}
	return out, nil
}

type tomlEntry struct {
	Entry
	hasCmd   bool
	url      string
	badArgs  string
	argsSeen bool
}

func keyParts(it unstable.Iterator) []string {
	var k []string
	for it.Next() {
		k = append(k, string(it.Node().Data))
	}
	return k
}

func nodeLit(p *unstable.Parser, n *unstable.Node) lit {
	start := int(n.Raw.Offset)
	return lit{start: start, end: start + int(n.Raw.Length), raw: append([]byte(nil), p.Raw(n.Raw)...), val: string(n.Data)}
}

// field takes one key-value of an entry.
func (te *tomlEntry) field(p *unstable.Parser, src []byte, key string, kv *unstable.Node, inline bool) {
	v := kv.Value()
	switch key {
	case "url":
		if v.Kind == unstable.String {
			te.url = string(v.Data)
		}
	case "command":
		if v.Kind != unstable.String {
			te.badArgs = "its command is not a string"
			return
		}
		te.hasCmd = true
		te.cmd = nodeLit(p, v)
		te.Command = te.cmd.val
		kvEnd := int(kv.Raw.Offset + kv.Raw.Length)
		if inline {
			te.addArgs = insertion{at: te.cmd.end, pre: ", "}
			return
		}
		// A new key goes on its own line after the command's (a comment at
		// the end of that line stays there), with the command's dotted
		// prefix when the key was written as section.NAME.command.
		prefix := ""
		var lastKey *unstable.Node
		var firstKey *unstable.Node
		for it := kv.Key(); it.Next(); {
			if firstKey == nil {
				firstKey = it.Node()
			}
			lastKey = it.Node()
		}
		if firstKey != lastKey {
			prefix = string(src[firstKey.Raw.Offset:lastKey.Raw.Offset])
		}
		nl := bytes.IndexByte(src[kvEnd:], '\n')
		switch {
		case nl < 0:
			te.addArgs = insertion{at: len(src), pre: "\n" + prefix}
		case nl > 0 && src[kvEnd+nl-1] == '\r':
			te.addArgs = insertion{at: kvEnd + nl - 1, pre: "\r\n" + prefix}
		default:
			te.addArgs = insertion{at: kvEnd + nl, pre: "\n" + prefix}
		}
	case "args":
		te.argsSeen = true
		if v.Kind != unstable.Array {
			te.badArgs = "its args are not a list"
			return
		}
		// The array ends where the key-value does; it starts at the first
		// '[' after the '=' that follows the key.
		end := int(kv.Raw.Offset + kv.Raw.Length)
		var lastKey *unstable.Node
		for it := kv.Key(); it.Next(); {
			lastKey = it.Node()
		}
		i := int(lastKey.Raw.Offset + lastKey.Raw.Length)
		i += bytes.IndexByte(src[i:end], '=')
		i += bytes.IndexByte(src[i:end], '[')
		a := &array{open: i + 1, close: end - 1}
		for it := v.Children(); it.Next(); {
			el := it.Node()
			if el.Kind == unstable.Comment {
				continue
			}
			if el.Kind != unstable.String {
				te.badArgs = "its args are not all strings"
				return
			}
			l := nodeLit(p, el)
			a.elems = append(a.elems, l)
			te.Args = append(te.Args, l.val)
		}
		te.args = a
	}
}

func (te *tomlEntry) finish() Entry {
	e := te.Entry
	switch {
	case te.badArgs != "":
		e.Skip = te.badArgs
	case !te.hasCmd && te.url != "":
		e.Skip = fmt.Sprintf("an HTTP entry (url %s): rpctap records stdio and Unix sockets", te.url)
	case !te.hasCmd:
		e.Skip = "no command"
	}
	e.recognise()
	return e
}

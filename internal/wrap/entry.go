// Package wrap edits MCP, ACP and LSP client configs so that each stdio
// server runs under `rpctap record`, and takes that edit back out.
//
// Every edit is a set of byte splices on the file as it is: a parser (hujson
// for JSON with comments, go-toml's unstable parser for TOML) only says where
// the command and args values are, and every byte outside them is left
// alone. So comments, trailing commas, key order and indentation survive, and
// unwrap on a file nobody touched since wrap gives back the original bytes.
//
// wrap changes two values of an entry:
//
//	"command": "npx", "args": ["-y", "pkg"]
//	"command": "/usr/local/bin/rpctap", "args": ["record", "--dir", "/d", "--", "npx", "-y", "pkg"]
//
// The original command's literal is moved into args as it was written (its
// escapes and quotes), and the new elements go in front of the first old one,
// so unwrap is the inverse splice: it removes the elements up to the original
// command and moves that literal back. Anything the client changed since
// (other entries, env, the server's own args) is not in those ranges and
// survives.
//
// An entry without args gets an args member; wrap then spells the flag
// "--dir=DIR" rather than "--dir", "DIR", which is how unwrap tells a member it
// added (and removes whole) from an empty one the user wrote.
package wrap

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Format is a config file's syntax.
type Format int

const (
	JSON Format = iota // JSON, with comments and trailing commas allowed (JSONC, HuJSON)
	TOML
)

func (f Format) String() string {
	if f == TOML {
		return "toml"
	}
	return "json"
}

// Entry is one server or agent in a config.
type Entry struct {
	Section string // where it lives, e.g. "mcpServers" or "projects[/src/app].mcpServers"
	Name    string
	// Skip says why the entry is not a stdio command rpctap can wrap ("an
	// HTTP entry (url https://...)"); "" for a stdio entry.
	Skip    string
	Command string   // the command, decoded
	Args    []string // the arguments, decoded
	// Wrapped is non-nil when the entry already runs under rpctap record.
	Wrapped *Wrapped

	format  Format
	cmd     lit
	args    *array    // nil when the entry has no args member
	addArgs insertion // where an args member goes when there is none
}

// Wrapped describes an entry that runs under `rpctap record`.
type Wrapped struct {
	Rpctap string   // the command that names rpctap
	Flags  []string // record's flags, between "record" and the child command
	Inner  []string // the child command and its arguments; empty in socket mode
	// ByHand is true when the entry was not written by `rpctap wrap` (other
	// record flags, no "--"): it is recognised, never wrapped again, and
	// unwrap takes it out the same way.
	ByHand bool

	inner int  // index in args of the child command
	added bool // the args member was added by wrap ("--dir=DIR")
}

// ACP reports whether the entry is an ACP agent (Zed's agent_servers)
// rather than an MCP server or a language server.
func (e *Entry) ACP() bool { return e.Section == "agent_servers" }

// Deep reports whether the wrapper records with --deep.
func (w *Wrapped) Deep() bool {
	for _, f := range w.Flags {
		if f == "--deep" {
			return true
		}
	}
	return false
}

// Line is the command line the entry runs: the command, then its args.
func (e *Entry) Line() []string { return append([]string{e.Command}, e.Args...) }

// lit is a string value: where it is in the file, its bytes as written
// (quotes and escapes included) and its decoded value.
type lit struct {
	start, end int
	raw        []byte
	val        string
}

// array is an args array: open is the offset just after '[', close the
// offset of ']'; elems are its elements (all strings).
type array struct {
	open, close int
	elems       []lit
}

// insertion is where wrap adds an args member: pre + "[...]" + post at at.
type insertion struct {
	at        int
	pre, post string
}

// splice replaces src[start:end] with text.
type splice struct {
	start, end int
	text       string
}

func apply(src []byte, sp []splice) []byte {
	sort.SliceStable(sp, func(i, j int) bool { return sp[i].start > sp[j].start })
	out := append([]byte(nil), src...)
	for _, s := range sp {
		out = append(out[:s.start:s.start], append([]byte(s.text), out[s.end:]...)...)
	}
	return out
}

// quote writes s as a string literal of the format.
func quote(f Format, s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// argsMember is the text of an args member in the format.
func argsMember(f Format, elems []string) string {
	arr := "[" + strings.Join(elems, ", ") + "]"
	if f == TOML {
		return "args = " + arr
	}
	return `"args": ` + arr
}

// isRpctap reports whether a command names rpctap: a program called
// rpctap, or the very program running now under whatever name it was built
// (`go build -o rpctap-dev`): wrap names itself by its absolute path, so
// without this a config it had just wrapped would not read back as wrapped.
func isRpctap(cmd string) bool {
	b := filepath.Base(strings.ReplaceAll(cmd, `\`, "/"))
	b = strings.TrimSuffix(strings.ToLower(b), ".exe")
	if b == "rpctap" {
		return true
	}
	self := selfInfo()
	if self == nil || !filepath.IsAbs(cmd) {
		return false
	}
	st, err := os.Stat(cmd) // follows a symlink, as the client's exec would
	return err == nil && os.SameFile(st, self)
}

// selfInfo is the running program's file, or nil when it cannot be had.
var selfInfo = sync.OnceValue(func() os.FileInfo {
	p, err := os.Executable()
	if err != nil {
		return nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil
	}
	return st
})

// record's flags that take a value in the next argument.
var recordValueFlags = map[string]bool{
	"-o": true, "--output": true, "--dir": true, "--protocol": true, "--schema": true,
	"--redact": true, "--framing": true, "--grace": true, "--listen": true,
	"--upstream": true, "--fault": true, "--faults": true, "--rewrite": true,
	"--parent-cassette": true, "--parent-request": true, "--parent-method": true, "--parent-server": true,
}

// Recognise returns how the command line command args runs under rpctap
// record, or nil when it does not. record --deep (package deeptap) asks it
// so that an ACP mcpServers entry wrapped already (by wrap, by hand or by
// a deep tap further up) is not wrapped twice.
func Recognise(command string, args []string) *Wrapped {
	e := Entry{Command: command, Args: args}
	e.recognise()
	return e.Wrapped
}

// recognise fills e.Wrapped when the entry runs under rpctap record.
func (e *Entry) recognise() {
	if e.Skip != "" || !isRpctap(e.Command) || len(e.Args) == 0 || e.Args[0] != "record" {
		return
	}
	w := &Wrapped{Rpctap: e.Command, inner: len(e.Args)}
	dashdash := false
	for i := 1; i < len(e.Args); i++ {
		a := e.Args[i]
		if a == "--" {
			w.inner, dashdash = i+1, true
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			w.inner = i
			break
		}
		w.Flags = append(w.Flags, a)
		if recordValueFlags[a] && i+1 < len(e.Args) {
			i++
			w.Flags = append(w.Flags, e.Args[i])
		}
	}
	w.Inner = e.Args[w.inner:]
	// wrap writes "--dir", DIR or "--dir=DIR" (an args member it added),
	// then "--deep" with wrap --deep.
	flags := w.Flags
	if n := len(flags); n > 0 && flags[n-1] == "--deep" {
		flags = flags[:n-1]
	}
	ours := dashdash && ((len(flags) == 2 && flags[0] == "--dir") ||
		(len(flags) == 1 && strings.HasPrefix(flags[0], "--dir=")))
	w.ByHand = !ours
	w.added = ours && len(flags) == 1 && len(w.Inner) == 1
	e.Wrapped = w
}

// wrapSplices are the edits that wrap e to record into dir with the rpctap
// at self (with --deep when deep); nil when e is not a stdio entry or
// already wrapped.
func (e *Entry) wrapSplices(self, dir string, deep bool) []splice {
	if e.Skip != "" || e.Wrapped != nil {
		return nil
	}
	f := e.format
	sp := []splice{{e.cmd.start, e.cmd.end, quote(f, self)}}
	if e.args != nil {
		pre := []string{quote(f, "record"), quote(f, "--dir"), quote(f, dir)}
		if deep {
			pre = append(pre, quote(f, "--deep"))
		}
		pre = append(pre, quote(f, "--"), string(e.cmd.raw))
		if len(e.args.elems) > 0 {
			at := e.args.elems[0].start
			sp = append(sp, splice{at, at, strings.Join(pre, ", ") + ", "})
		} else {
			sp = append(sp, splice{e.args.open, e.args.open, strings.Join(pre, ", ")})
		}
		return sp
	}
	elems := []string{quote(f, "record"), quote(f, "--dir="+dir)}
	if deep {
		elems = append(elems, quote(f, "--deep"))
	}
	elems = append(elems, quote(f, "--"), string(e.cmd.raw))
	a := e.addArgs
	sp = append(sp, splice{a.at, a.at, a.pre + argsMember(f, elems) + a.post})
	return sp
}

// unwrapSplices are the edits that take the rpctap record wrapper out of e,
// in src (the file e was read from); nil when e is not wrapped or runs
// rpctap in socket mode (no child command to give back).
func (e *Entry) unwrapSplices(src []byte) []splice {
	w := e.Wrapped
	if w == nil || len(w.Inner) == 0 || e.args == nil {
		return nil
	}
	el := e.args.elems
	k := w.inner
	sp := []splice{{e.cmd.start, e.cmd.end, string(el[k].raw)}}
	if k+1 < len(el) {
		return append(sp, splice{el[0].start, el[k+1].start, ""})
	}
	if w.added {
		raws := make([]string, len(el))
		for i, l := range el {
			raws[i] = string(l.raw)
		}
		a := e.addArgs
		want := a.pre + argsMember(e.format, raws) + a.post
		if a.at >= 0 && a.at+len(want) <= len(src) && bytes.Equal(src[a.at:a.at+len(want)], []byte(want)) {
			return append(sp, splice{a.at, a.at + len(want), ""})
		}
	}
	return append(sp, splice{el[0].start, el[k].end, ""})
}

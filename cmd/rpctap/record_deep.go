package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/deeptap"
	"github.com/rpctap/rpctap/internal/rewrite"
	"github.com/rpctap/rpctap/internal/wrap"
)

// deepOptions are record's flags for linked recordings (docs/deep.md):
// --deep on the ACP agent's recording, --parent-* on each MCP server's
// (written by the deep tap into the command line it gives the agent).
type deepOptions struct {
	Deep           bool
	ParentCassette string
	ParentRequest  string
	ParentMethod   string
	ParentServer   string
	parent         *cassette.Parent
}

// deepRuleName names the deep tap's rewrite in the intercept event's bp.
const deepRuleName = deeptap.RuleName

// checkDeep checks --deep and the --parent-* flags.
func (o *recordOptions) checkDeep() error {
	d := &o.deep
	if d.ParentCassette != "" || d.ParentRequest != "" || d.ParentMethod != "" || d.ParentServer != "" {
		if d.ParentCassette == "" || d.ParentRequest == "" || d.ParentMethod == "" {
			return Usagef("record: --parent-cassette, --parent-request and --parent-method go together (record --deep writes them)")
		}
		if !json.Valid([]byte(d.ParentRequest)) {
			return Usagef("record: --parent-request %q is not a JSON value (a request id: 2 or \"abc\")", d.ParentRequest)
		}
		if o.Listen != "" {
			return Usagef("record: --parent-cassette is for stdio recordings")
		}
		d.parent = &cassette.Parent{Cassette: d.ParentCassette, Request: json.RawMessage(d.ParentRequest),
			Method: d.ParentMethod, Server: d.ParentServer}
	}
	if !d.Deep {
		return nil
	}
	if o.Listen != "" {
		return deepRefusef("record: --deep is for stdio recordings of an ACP agent")
	}
	if o.Protocol != "" && o.Protocol != "acp" {
		return deepRefusef("record: --deep is for ACP agents (it rewrites session/new's mcpServers); --protocol is %s", o.Protocol)
	}
	if o.Output != "" {
		if o.Output == "-" {
			return deepRefusef("record: --deep needs a cassette file in a directory (the linked recordings go beside it), not -o -")
		}
		if st, err := os.Stat(o.Output); err == nil && !st.Mode().IsRegular() {
			return deepRefusef("record: --deep needs a cassette file in a directory (the linked recordings go beside it); -o %s is not a regular file", o.Output)
		}
	}
	return nil
}

// deepRefusef is a usage error (exit 2) of one line: the message says what
// --deep needs, so no help hint follows.
func deepRefusef(format string, a ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, a...), NoHint: true}
}

// deepRule is the rewrite rule of --deep for a recording into path: the
// agent's MCP servers record into path's directory, naming path.
func (o *recordOptions) deepRule(path string) (rewrite.Rule, error) {
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return rewrite.Rule{}, err
	}
	self := selfPath()
	if p, err := filepath.EvalSymlinks(self); err == nil && filepath.Base(p) == filepath.Base(self) {
		// Symlinks resolved (a packaged /usr/local/bin/rpctap link), unless
		// that changes the name a multi-call binary is dispatched by.
		self = p
	}
	var flags []string
	if o.NoRedact {
		flags = append(flags, "--no-redact")
	}
	for _, k := range o.Redact {
		flags = append(flags, "--redact", k)
	}
	dt := &deeptap.Options{Self: self, Dir: dir, Cassette: filepath.Base(path), Flags: flags,
		Wrapped: func(command string, args []string) bool { return wrap.Recognise(command, args) != nil }}
	return rewrite.Func(deepRuleName, "dir:in", func(frame []byte) ([]byte, error) {
		out, _, err := dt.Rewrite(frame)
		return out, err
	})
}

// deepUnrecorded is told when a linked recording cannot have its cassette:
// the MCP server still runs (the agent's session must not break because
// the parent's directory went away), unrecorded, with one warning line.
func deepUnrecorded(stdio Stdio, err error) {
	fmt.Fprintf(stdio.Err, "rpctap: warning: not recording this linked MCP server: %v\n", err)
}

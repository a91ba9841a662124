package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/intercept"
)

// ctlOptions are the flags of `rpctap ctl`.
type ctlOptions struct {
	To      string        // inject: child or parent
	Wait    time.Duration // inject: how long to wait for the answer to a request; wait: for a held frame
	Timeout time.Duration
}

func init() {
	register(&command{
		Name:    "ctl",
		Summary: "hold, edit, drop and inject frames of a session recorded with --intercept",
		Usage:   "ctl [flags] SOCKET VERB [ARGS...]",
		Long: `ctl talks to the control socket of 'rpctap record --intercept' (its path is
on rpctap's stderr and in the cassette's header). Each ctl command is one
connection; what it sets belongs to the session and stays until unbreak,
forward or --intercept-timeout.

  break EXPR          hold frames matching the filter EXPR (the viewer's filter
                      language; slow> and findings cannot be breakpoints);
                      prints the breakpoint's number
  unbreak N           remove breakpoint N (frames it holds stay held)
  breakpoints         list the breakpoints, one a line: N EXPR
  list                one line per held frame: N DIR METHOD HELD BREAKPOINT FRAME
  wait                wait until a frame is held (at most --timeout), then list
  forward N|all       forward held frame N (or every one) unchanged
  edit N [FILE]       send FILE's JSON ('-': stdin) instead of held frame N;
                      without FILE, edit the pretty-printed frame in $VISUAL
                      or $EDITOR
  drop N              drop held frame N: the other side never gets it
  cancel N            forward held request N and right behind it the
                      protocol's cancel for it (ACP session/cancel, MCP
                      notifications/cancelled, LSP $/cancelRequest)
  inject --to child|parent FILE
                      send FILE's JSON toward that side at the next frame
                      boundary; a request gets an id of rpctap's own and its
                      answer is taken off the wire and printed (waiting at most
                      --wait), never forwarded
  answers             the answers to injected requests so far

Exit status 1 when the session refuses (no such held frame, a bad
breakpoint, invalid JSON), 2 for bad arguments, 4 when the socket cannot be
reached or FILE cannot be read.`,
		Example: `  rpctap record --intercept -- my-agent --acp      # prints: rpctap: control socket: PATH
  rpctap ctl PATH break 'kind:response & m=session/request_permission'
  rpctap ctl PATH wait --timeout 1m
  rpctap ctl PATH edit 1                            # opens $EDITOR
  rpctap ctl PATH inject --to child call.json`,
		Flags: func(fs *pflag.FlagSet) func(args []string, stdio Stdio) error {
			var o ctlOptions
			fs.StringVar(&o.To, "to", "", "inject: `SIDE` to send to, child or parent")
			fs.DurationVar(&o.Wait, "wait", 10*time.Second, "inject: wait at most `DURATION` for the answer to an injected request")
			fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "wait: give up after `DURATION`")
			return func(args []string, stdio Stdio) error { return runCtl(&o, args, stdio) }
		},
	})
}

func runCtl(o *ctlOptions, args []string, stdio Stdio) error {
	if len(args) < 2 {
		return Usagef("ctl: want SOCKET VERB [ARGS...]")
	}
	sock, verb, rest := args[0], args[1], args[2:]
	rest, err := ctlVerbFlags(o, rest)
	if err != nil {
		return err
	}
	want := map[string][2]int{"break": {1, 1}, "unbreak": {1, 1}, "breakpoints": {0, 0}, "list": {0, 0}, "wait": {0, 0},
		"forward": {1, 1}, "edit": {1, 2}, "drop": {1, 1}, "cancel": {1, 1}, "inject": {1, 1}, "answers": {0, 0}}
	n, ok := want[verb]
	if !ok {
		return Usagef("ctl: unknown verb %q (break, unbreak, breakpoints, list, wait, forward, edit, drop, cancel, inject, answers)", verb)
	}
	if len(rest) < n[0] || len(rest) > n[1] {
		return Usagef("ctl %s: wrong number of arguments", verb)
	}
	if verb != "inject" && o.To != "" {
		return Usagef("ctl: --to is for inject")
	}
	num := 0
	switch verb {
	case "unbreak", "edit", "drop", "forward", "cancel":
		if verb == "forward" && rest[0] == "all" {
			break
		}
		v, err := strconv.Atoi(rest[0])
		if err != nil || v <= 0 {
			return Usagef("ctl %s: %q is not a number from 'ctl list'", verb, rest[0])
		}
		num = v
	}
	var to cassette.Dir
	var payload []byte
	if verb == "inject" {
		switch o.To {
		case "child":
			to = cassette.DirIn
		case "parent":
			to = cassette.DirOut
		default:
			return Usagef("ctl inject: --to child or --to parent")
		}
	}
	if verb == "inject" || verb == "edit" && len(rest) == 2 {
		b, err := readFileArg(rest[len(rest)-1], stdio)
		if err != nil {
			return err
		}
		if !json.Valid(b) {
			return Inputf("ctl %s: %s is not valid JSON", verb, rest[len(rest)-1])
		}
		payload = b
	}

	c, err := intercept.Dial(sock)
	if err != nil {
		return Inputf("ctl: %v", err)
	}
	defer c.Close()
	refused := func(err error) error {
		if errors.Is(err, intercept.ErrClosed) {
			return Inputf("ctl: %v", err)
		}
		return Findingsf("ctl %s: %v", verb, err)
	}
	switch verb {
	case "break":
		n, err := c.Break(rest[0])
		if err != nil {
			return refused(err)
		}
		_, err = fmt.Fprintln(stdio.Out, n)
		return writeErr(err)
	case "unbreak":
		return maybeRefused(c.Unbreak(num), refused)
	case "forward":
		return maybeRefused(c.Forward(num), refused)
	case "drop":
		return maybeRefused(c.Drop(num), refused)
	case "cancel":
		return maybeRefused(c.Cancel(num), refused)
	case "breakpoints", "list", "answers", "wait":
		st, err := c.List()
		if err != nil {
			return refused(err)
		}
		if verb == "wait" {
			deadline := time.Now().Add(o.Timeout)
			for len(st.Held) == 0 {
				if time.Now().After(deadline) {
					return Findingsf("ctl wait: no frame held after %s", o.Timeout)
				}
				time.Sleep(20 * time.Millisecond)
				if st, err = c.List(); err != nil {
					return refused(err)
				}
			}
		}
		var buf bytes.Buffer
		switch verb {
		case "breakpoints":
			for _, b := range st.Breakpoints {
				fmt.Fprintf(&buf, "%d %s\n", b.N, b.Expr)
			}
		case "answers":
			for _, a := range st.Answers {
				fmt.Fprintf(&buf, "%d %s %s\n", a.Inject, a.ID, a.Frame)
			}
		default:
			for _, h := range st.Held {
				fmt.Fprintln(&buf, heldLine(h))
			}
		}
		_, err = stdio.Out.Write(buf.Bytes())
		return writeErr(err)
	case "edit":
		if payload == nil {
			st, err := c.List()
			if err != nil {
				return refused(err)
			}
			var frame string
			for _, h := range st.Held {
				if h.N == num {
					frame = h.Frame
				}
			}
			if frame == "" {
				return Findingsf("ctl edit: %v: %d", intercept.ErrNoHeld, num)
			}
			if payload, err = editInEditor(frame, stdio); err != nil {
				return err
			}
		}
		return maybeRefused(c.Edit(num, payload), refused)
	case "inject":
		inj, ans, err := c.Inject(to, payload, o.Wait)
		if err != nil {
			return refused(err)
		}
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "injected %d", inj.N)
		if inj.ID != "" {
			fmt.Fprintf(&buf, " id %s", inj.ID)
		}
		buf.WriteByte('\n')
		if ans != nil {
			fmt.Fprintf(&buf, "%s\n", ans.Frame)
		}
		if _, err := stdio.Out.Write(buf.Bytes()); err != nil {
			return writeErr(err)
		}
		if inj.ID != "" && ans == nil {
			return Findingsf("ctl inject: no answer within %s (it will be in 'ctl answers' when it comes)", o.Wait)
		}
	}
	return nil
}

// ctlVerbFlags takes the flags written after the verb (ctl SOCKET inject
// --to child FILE, ctl SOCKET wait --timeout 1m) out of args.
func ctlVerbFlags(o *ctlOptions, args []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, has := strings.Cut(a, "=")
		switch name {
		case "--to", "--wait", "--timeout":
		default:
			rest = append(rest, a)
			continue
		}
		if !has {
			if i+1 >= len(args) {
				return nil, Usagef("ctl: %s needs a value", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "--to":
			o.To = val
		default:
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return nil, Usagef("ctl: %s %q: want a duration such as 10s", name, val)
			}
			if name == "--wait" {
				o.Wait = d
			} else {
				o.Timeout = d
			}
		}
	}
	return rest, nil
}

func maybeRefused(err error, refused func(error) error) error {
	if err != nil {
		return refused(err)
	}
	return nil
}

// writeErr reports a failed write of ctl's output (exit 125).
func writeErr(err error) error {
	if err != nil {
		return fmt.Errorf("ctl: writing output: %w", err)
	}
	return nil
}

// heldLine is one line of `ctl list`: the number the other verbs take
// first, then direction, method, hold time, breakpoint and the frame.
func heldLine(h intercept.Held) string {
	method := h.Method
	if method == "" {
		method = "-"
	}
	if h.Kind == "response" {
		method += "(response)"
	}
	return fmt.Sprintf("%d %s %s held %s bp %d %s", h.N, h.Dir, method,
		time.Since(h.Since).Round(time.Millisecond), h.Breakpoint, h.Frame)
}

// readFileArg reads FILE, or stdin for "-".
func readFileArg(name string, stdio Stdio) ([]byte, error) {
	if name == "-" {
		if stdio.In == nil {
			return nil, Inputf("ctl: no stdin")
		}
		b, err := io.ReadAll(stdio.In)
		if err != nil {
			return nil, Inputf("ctl: stdin: %v", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, Inputf("ctl: %v", err)
	}
	return b, nil
}

// editInEditor is intercept.EditInEditor with ctl's exit statuses.
func editInEditor(frame string, stdio Stdio) ([]byte, error) {
	b, err := intercept.EditInEditor(frame, os.Stdin, stdio.Err, stdio.Err)
	switch {
	case errors.Is(err, intercept.ErrNoEditor):
		return nil, Usagef("ctl edit: give a FILE, or set $VISUAL or $EDITOR")
	case err != nil:
		return nil, Findingsf("ctl edit: %v", err)
	}
	return b, nil
}

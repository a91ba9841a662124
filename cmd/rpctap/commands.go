package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// Version is rpctap's version; release builds override it with
// -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

// Stdio is the set of streams a command talks to. Tests pass buffers.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// command is one subcommand. Each lives in its own file and registers itself
// from init, so adding a command never touches a shared list.
type command struct {
	Name    string
	Summary string // one line for `rpctap --help`
	Usage   string // e.g. "record [flags] -- CMD [ARGS...]"
	Long    string // paragraphs shown by `rpctap CMD --help`
	Example string // examples shown by `rpctap CMD --help`
	Hidden  bool   // internal helpers (demo children) stay out of the list
	// ChildArgs: the command runs a child command line (record, verify,
	// shrink -- CMD). Its own flags come before its arguments, and
	// everything from the first argument on is left alone (the child's
	// flags are the child's). Other commands take files, and their flags
	// may come after the files too.
	ChildArgs bool
	// Stream: stdout is a protocol stream to a parent (record, replay),
	// which the command writes and judges itself. Every other command's
	// stdout is a report, guarded: a failed write is exit 125 in one line.
	Stream bool
	// Flags defines the command's flags on fs and returns the function that
	// runs it once fs has parsed the arguments. args are the positional
	// arguments (everything after "--" included, without the "--").
	Flags func(fs *pflag.FlagSet) func(args []string, stdio Stdio) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.Name]; dup {
		panic("rpctap: command registered twice: " + c.Name)
	}
	commands[c.Name] = c
}

// Main runs rpctap with args (without the program name) and returns the exit
// status. Every error becomes a single line on stderr.
func Main(args []string, stdio Stdio) int {
	err := dispatch(args, stdio)
	if err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Err != nil {
			fmt.Fprintf(stdio.Err, "rpctap: %s\n", oneLine(err.Error()))
		}
		if errors.As(err, &ee) && ee.Code == ExitUsage && !ee.NoHint {
			if len(args) > 0 && commands[args[0]] != nil {
				fmt.Fprintf(stdio.Err, "Run 'rpctap %s --help' for usage.\n", args[0])
			} else {
				fmt.Fprintln(stdio.Err, "Run 'rpctap --help' for usage.")
			}
		}
	}
	return exitCode(err)
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.ReplaceAll(s, "\n", "; ")
}

func dispatch(args []string, stdio Stdio) error {
	if len(args) == 0 {
		writeTopHelp(stdio.Err)
		return Exit(ExitUsage)
	}
	switch args[0] {
	case "-h", "--help", "help", "-v", "--version", "version":
		return guarded(strings.TrimLeft(args[0], "-"), stdio, func(s Stdio) error { return dispatchHelp(args, s) })
	}
	c, ok := commands[args[0]]
	if !ok {
		if strings.HasPrefix(args[0], "-") {
			return Usagef("unknown flag %s before the command", args[0])
		}
		return Usagef("unknown command %q", args[0])
	}
	fs := newFlagSet(c)
	run := c.Flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return guarded(c.Name, stdio, func(s Stdio) error { writeCommandHelp(s.Out, c, fs); return nil })
		}
		return Usagef("%s: %v", c.Name, err)
	}
	if c.Stream {
		return run(fs.Args(), stdio)
	}
	return guarded(c.Name, stdio, func(s Stdio) error { return run(fs.Args(), s) })
}

// guarded runs a command whose stdout is a report with that stdout behind
// an outputGuard: when a write failed (a full disk, stdout on /dev/full, a
// closed file), the report is lost whatever the command found, so the
// result is exit 125 and one line saying so, instead of the command's own
// verdict (a CI gate must never read "0" from an empty JUnit file).
func guarded(name string, stdio Stdio, run func(Stdio) error) error {
	g := &outputGuard{w: stdio.Out}
	stdio.Out = g
	err := run(stdio)
	werr := g.failed()
	if werr == nil {
		return err
	}
	return fmt.Errorf("%s: cannot write the output: %v", name, werr)
}

// dispatchHelp runs rpctap help, --help and --version.
func dispatchHelp(args []string, stdio Stdio) error {
	switch args[0] {
	case "-v", "--version", "version":
		fmt.Fprintf(stdio.Out, "rpctap %s\n", Version)
		return nil
	}
	if len(args) > 1 && args[0] == "help" {
		if args[1] == "exit-codes" {
			writeExitCodes(stdio.Out)
			return nil
		}
		c, ok := commands[args[1]]
		if !ok {
			return Usagef("unknown command %q", args[1])
		}
		writeCommandHelp(stdio.Out, c, newFlagSet(c))
		return nil
	}
	writeTopHelp(stdio.Out)
	return nil
}

func newFlagSet(c *command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rpctap "+c.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by Main
	fs.SetInterspersed(!c.ChildArgs)
	fs.SortFlags = false
	return fs
}

func writeTopHelp(w io.Writer) {
	fmt.Fprintf(w, `rpctap sees the wire between an editor or bridge and the agent it spawns.

Usage:
  rpctap COMMAND [flags] [args]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.Hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].Summary)
	}
	fmt.Fprintf(w, `
Flags:
  -h, --help      help for rpctap or a command (rpctap COMMAND --help)
  -v, --version   print rpctap's version

Examples:
  rpctap record -- my-agent --acp        # stand in for the agent in any config
  rpctap cat --format table ~/.local/state/rpctap/cassettes/*.cassette
  rpctap view                            # pick a recording and inspect it

Exit codes: see 'rpctap help exit-codes' or docs/exit-codes.md.
`)
}

func writeCommandHelp(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  rpctap %s\n", c.Summary, c.Usage)
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.Long, "\n"))
	}
	if fu := fs.FlagUsages(); fu != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", fu)
	}
	if c.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/portable"
	"github.com/rpctap/rpctap/internal/recorder"
	"github.com/rpctap/rpctap/internal/rewrite"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/replay"
	"github.com/rpctap/rpctap/tap"
)

// recordOptions are the flags of `rpctap record`.
type recordOptions struct {
	Output   string
	Dir      string
	Protocol string
	Schema   string
	Redact   []string
	NoRedact bool
	Portable bool
	Lossy    bool
	Framing  string
	framing  framing.Mode
	// portableRun is the run's context for the recorder's portable stage
	// (set by runRecord when Portable is on).
	portableRun *portable.Context
	Grace       time.Duration
	Quiet       bool
	Listen      string
	Upstream    string
	Fault       []string // --fault rules (record_fault.go)
	FaultsFile  string   // --faults FILE
	faults      []replay.Fault
	// --intercept (record_intercept.go)
	Intercept        bool
	InterceptTimeout time.Duration
	Break            []string
	Rewrite          []string
	rewrites         rewrite.Rules
	deep             deepOptions // --deep, --parent-* (record_deep.go)
}

func init() {
	register(&command{
		Name:      "record",
		ChildArgs: true,
		Stream:    true,
		Summary:   "run an agent as the child and record both pipes",
		Usage:     "record [flags] -- CMD [ARGS...]\n  rpctap record [flags] --listen PATH --upstream PATH",
		Long: `record stands in for CMD: the parent (an editor, a bridge, an MCP client)
talks to rpctap exactly as it would to CMD, and rpctap forwards every byte
unchanged in both directions while a separate recorder process writes the
cassette. stdin, stdout and stderr are passed through untouched (invalid
JSON, CRLF, 16 MiB lines, binary junk), stdin EOF is passed on, and the
signals INT TERM HUP QUIT USR1 USR2 are relayed to CMD.

rpctap exits with CMD's exit status, or dies of the signal that killed CMD.
If rpctap itself is killed (even with SIGKILL), CMD gets SIGTERM, and the
recorder process still writes everything forwarded so far.

After CMD exits, rpctap waits at most --grace for its stdout and stderr to
drain (a grandchild that inherited them cannot hold rpctap longer).

Where the cassette goes: -o FILE (must not exist); else a new file in --dir
DIR; else in $RPCTAP_DIR; else in $XDG_STATE_HOME/rpctap/cassettes or
~/.local/state/rpctap/cassettes. Names sort by time and are unique:
UTC time, command base name and rpctap's pid, e.g.
20261121T083455.123Z-my-agent-4242.cassette. When stderr is a terminal,
rpctap says where it records (-q keeps quiet).

A missing directory of the cassette is created (mode 0700); one that cannot
be created is one line and exit 125 before CMD starts. A problem once
recording (disk full, a recorder that fails) never stops the session: rpctap
prints one warning line on stderr, goes on forwarding, and still exits with
CMD's status.

Secrets (token, secret, password, api_key, apiKey, authorization,
session_token, environment values) are redacted in the cassette by default;
the live session is never altered.

Linked recordings (--deep, ACP agents): the tap rewrites each stdio entry
of mcpServers in session/new, session/load, session/fork and
session/resume so that the agent starts that MCP server under this rpctap:
  rpctap record --dir DIR --parent-cassette NAME --parent-request ID
    --parent-method METHOD --parent-server SERVER [--redact K | --no-redact]
    -- COMMAND ARGS...
DIR is this cassette's directory and NAME its file name; each server's
cassette names it in its header (parent). This cassette's header has
deep: true and keeps the request as the agent got it and, in the intercept
event after it, as the client sent it. HTTP/SSE entries and entries that
run under rpctap record already are left alone. See docs/deep.md.

Socket mode (--listen/--upstream): rpctap listens on a Unix socket and, for
each connection, dials the real socket and records both directions ("in" is
client to upstream, "out" upstream to client) as connection 1, 2, ... It
runs until SIGINT or SIGTERM, then removes its socket file and exits 0.

Exit status: CMD's (see 'rpctap help exit-codes'); 2 for bad flags or a
missing command, 126 if CMD cannot be executed, 127 if it is not found.`,
		Example: `  rpctap record -- my-agent --acp
  rpctap record -o session.cassette -- npx -y @modelcontextprotocol/server-everything
  RPCTAP_DIR=/tmp/tapes rpctap record --protocol acp -- my-agent

  # An editor's agent config (Zed's agent_servers): only the command changes
  "My Agent": { "command": "rpctap", "args": ["record", "--", "my-agent", "--acp"],
                "env": { "RPCTAP_DIR": "/tmp/agent-tapes" } }

  # An MCP client's server command (Claude Desktop, VS Code, ...)
  "everything": { "command": "rpctap",
                  "args": ["record", "--", "npx", "-y", "@modelcontextprotocol/server-everything"] }

  # A failure path on purpose: the parent gets an error for tools/list, and
  # the cassette says so in a fault event
  rpctap record -o fail.cassette --fault 'error method=tools/list' -- my-mcp-server
  rpctap record -o crash.cassette --fault 'kill frame=3' -- my-agent --acp

  # An ACP agent and every stdio MCP server the editor hands it, linked
  rpctap record --deep --dir /tmp/tapes -- my-agent --acp

  # A Unix-socket protocol: point the client at /tmp/s.sock
  rpctap record --listen /tmp/s.sock --upstream /run/agent.sock`,
		Flags: func(fs *pflag.FlagSet) func(args []string, stdio Stdio) error {
			var o recordOptions
			fs.StringVarP(&o.Output, "output", "o", "", "write the cassette to `FILE` (must not exist)")
			fs.StringVar(&o.Dir, "dir", "", "write a new uniquely named cassette in `DIR` (default $RPCTAP_DIR, else $XDG_STATE_HOME/rpctap/cassettes)")
			fs.StringVar(&o.Protocol, "protocol", "", "force the protocol `NAME` instead of detecting it ("+strings.Join(protocol.Names(), ", ")+")")
			fs.StringVar(&o.Schema, "schema", "", "validate frames against the JSON Schema in `FILE` (draft 2020-12 or draft-07; a protocol of your own)")
			fs.StringArrayVar(&o.Redact, "redact", nil, "also redact the values of JSON key `KEY` (repeatable)")
			fs.BoolVar(&o.NoRedact, "no-redact", false, "record secrets as they are")
			fs.BoolVar(&o.Portable, "portable", false, "replace this run's cwd, $HOME, temp dir, session ids, UUIDs, timestamps and pids with placeholders that replay fills in (see docs/replay.md)")
			fs.StringVar(&o.Framing, "framing", "auto", "how the child's stdin and stdout are framed: `auto` (per direction, from the first bytes), ndjson (one JSON value a line) or content-length (LSP and DAP headers)")
			fs.BoolVar(&o.Lossy, "lossy", false, "never slow the session down for the recorder: drop what it cannot take and record a gap")
			fs.DurationVar(&o.Grace, "grace", tap.DefaultGrace, "after CMD exits, wait at most `DURATION` for its output to drain")
			fs.BoolVarP(&o.Quiet, "quiet", "q", false, "do not say where the cassette goes (only said when stderr is a terminal)")
			fs.StringVar(&o.Listen, "listen", "", "socket mode: listen on the Unix socket `PATH`")
			fs.StringVar(&o.Upstream, "upstream", "", "socket mode: forward each connection to the Unix socket `PATH`")
			fs.StringArrayVar(&o.Fault, "fault", nil, "misbehave on purpose: apply `RULE` to the child's frames before the parent gets them (dir=in: the parent's before the child does), e.g. 'error method=tools/list' or 'kill frame=3' (repeatable; each fault is marked in the cassette with the sender's own frame; see docs/replay.md)")
			fs.StringVar(&o.FaultsFile, "faults", "", "read fault rules from `FILE`, one a line")
			fs.BoolVar(&o.Intercept, "intercept", false, "open a control socket to hold, edit, drop and inject frames (see 'rpctap ctl' and docs/intercept.md)")
			fs.DurationVar(&o.InterceptTimeout, "intercept-timeout", 0, "forward a held frame unchanged after `DURATION` (0: hold until told)")
			fs.StringArrayVar(&o.Break, "break", nil, "with --intercept: hold frames matching the filter `EXPR` from the first frame on (repeatable)")
			fs.BoolVar(&o.deep.Deep, "deep", false, "ACP agents: run each stdio MCP server the agent is handed in session/new, session/load, session/fork or session/resume under rpctap record too, into this cassette's directory, each recording linked to this one (see docs/deep.md)")
			fs.StringVar(&o.deep.ParentCassette, "parent-cassette", "", "written by --deep: this recording is linked to the cassette `FILE` (a name in the same directory)")
			fs.StringVar(&o.deep.ParentRequest, "parent-request", "", "written by --deep: the `ID` (JSON) of the parent's request that started this server")
			fs.StringVar(&o.deep.ParentMethod, "parent-method", "", "written by --deep: that request's `METHOD` (session/new, session/load, ...)")
			fs.StringVar(&o.deep.ParentServer, "parent-server", "", "written by --deep: the mcpServers entry's `NAME`")
			fs.StringArrayVar(&o.Rewrite, "rewrite", nil, "change the frames a filter selects: `'EXPR => ACTION'`, ACTION set PATH JSON, delete PATH or error CODE MESSAGE (repeatable; each change is marked in the cassette with the original)")
			return func(args []string, stdio Stdio) error { return runRecord(&o, args, stdio) }
		},
	})
}

func runRecord(o *recordOptions, args []string, stdio Stdio) error {
	if o.Output != "" && o.Dir != "" {
		return Usagef("record: -o and --dir exclude each other")
	}
	if o.NoRedact && len(o.Redact) > 0 {
		return Usagef("record: --no-redact and --redact exclude each other")
	}
	if o.Grace <= 0 {
		return Usagef("record: --grace must be positive")
	}
	if err := o.checkFaults(); err != nil {
		return err
	}
	if err := o.checkIntercept(); err != nil {
		return err
	}
	if err := o.checkDeep(); err != nil {
		return err
	}
	if o.Portable && o.Listen != "" {
		return Usagef("record: --portable is for stdio recordings (socket mode records several connections)")
	}
	if o.Protocol != "" {
		if _, err := protocol.Lookup(o.Protocol); err != nil {
			return Usagef("record: --protocol: %v", err)
		}
	}
	fm, err := framing.ParseMode(o.Framing)
	if err != nil {
		return Usagef("record: --framing: %v", err)
	}
	o.framing = fm
	if o.Schema != "" {
		f, err := os.Open(o.Schema)
		if err != nil {
			return Inputf("record: --schema: %v", err)
		}
		f.Close()
		// A schema that does not load is refused before anything starts,
		// as check --schema refuses it (the recorder, which loads it
		// again, could only warn and record the session unclassified).
		if _, err := protocol.FromSchemaFile(o.Schema); err != nil {
			return Inputf("record: %v", err)
		}
	}
	if o.Listen != "" || o.Upstream != "" {
		if o.Listen == "" || o.Upstream == "" {
			return Usagef("record: socket mode needs both --listen and --upstream")
		}
		if len(args) > 0 {
			return Usagef("record: socket mode takes no command")
		}
		return recordSocket(o, stdio)
	}
	if len(args) == 0 {
		return Usagef("record: missing command: rpctap record [flags] -- CMD [ARGS...]")
	}
	if _, err := tap.LookPath(args[0]); err != nil {
		return startFailure(err)
	}

	start := time.Now()
	cwd, _ := os.Getwd()
	h := cassette.Header{Rpctap: Version, Created: start.UTC().Format(time.RFC3339Nano),
		Mode: "stdio", Argv: args, Cwd: cwd}
	if o.Portable {
		c := runContext(cwd)
		o.portableRun = &c
		h = portableHeader(h, c)
	}
	// The cassette's directory is made before anything runs: a path that
	// cannot be created is the user's to fix (issue 20: one line, non-zero,
	// nothing started). Trouble once recording (a full disk) is a warning.
	h.Parent = o.deep.parent
	path, err := cassettePath(o, filepath.Base(args[0]), start)
	if err != nil && h.Parent != nil {
		deepUnrecorded(stdio, err)
		path = ""
	} else if err != nil {
		return &ExitError{Code: ExitInternal, Err: fmt.Errorf("record: %v; nothing was started (choose another place with -o, --dir or RPCTAP_DIR)", err)}
	}
	if o.deep.Deep && path != "" {
		r, err := o.deepRule(path)
		if err != nil {
			return &ExitError{Code: ExitInternal, Err: fmt.Errorf("record: --deep: %v", err)}
		}
		o.rewrites = append(o.rewrites, r)
		h.Deep = true
	}
	ic, err := startIntercept(o, stdio)
	if err != nil {
		return err
	}
	if ic != nil {
		defer ic.close()
		if ic.ln != nil {
			h.Control = ic.ln.Path()
		}
	}
	var obs tap.Observer
	var casPath string
	if path != "" {
		obs, casPath = startRecorder(o, h, path, stdio)
	}
	if ic != nil && obs != nil {
		ic.s.SetCassette(casPath)
	}

	tuneForwarding()
	c := tap.Command(args[0], args[1:]...)
	c.Epoch = start // created + t is each record's wall-clock time
	c.Grace = o.Grace
	c.Stderr = os.Stderr
	var detached []*os.File
	if stdio.In == os.Stdin && stdio.Out == os.Stdout {
		// The tap must hold the only references to the parent's pipes,
		// so that EOFs pass on as through a plain pipe: fds 0 and 1 go to
		// /dev/null, and our duplicates are closed once the tap has its own.
		if in, out, err := tap.DetachStdio(); err == nil {
			c.Stdin, c.Stdout = in, out
			detached = []*os.File{in, out}
		}
		// rpctap exits with its child and nothing reads its stdin after
		// the tap: the stdin pump may read without polling first.
		c.WakeStdin = true
	}
	if obs != nil {
		// The sink pipe write is the hand-over that survives SIGKILL: do it
		// before the parent can read the chunk (see tap.Cmd.ObserveFirst).
		c.Observer = obs
		c.ObserveFirst = true
	}
	if ic != nil {
		ic.install(c)
	}
	err = c.Start()
	for _, f := range detached {
		f.Close()
	}
	if err != nil {
		var se *tap.StartError
		if errors.As(err, &se) {
			return startFailure(err)
		}
		return err
	}
	if err := c.Wait(); err != nil {
		return err
	}
	code, sig := tap.Status(c.ProcessState)
	if sig != 0 {
		tap.Reraise(sig)
	}
	if code != 0 {
		return Exit(code)
	}
	return nil
}

// startFailure maps a child that cannot be started to the shell's codes.
func startFailure(err error) error {
	var se *tap.StartError
	if errors.As(err, &se) {
		switch {
		case se.NotFound():
			return &ExitError{Code: ExitNotFound, Err: se}
		case se.NotExecutable():
			return &ExitError{Code: ExitNoExec, Err: se}
		}
		return &ExitError{Code: ExitNoExec, Err: se}
	}
	return err
}

// startRecorder starts the crash-safe recorder process. A failure is one
// warning line and a nil observer: the session runs unrecorded.
func startRecorder(o *recordOptions, h cassette.Header, path string, stdio Stdio) (tap.Observer, string) {
	warn := func(msg string) { fmt.Fprintf(stdio.Err, "rpctap: warning: %s\n", msg) }
	if !o.Quiet {
		if f, ok := stdio.Err.(*os.File); ok && isTerminal(f) {
			fmt.Fprintf(stdio.Err, "rpctap: recording to %s\n", path)
		}
	}
	obs, err := recorder.StartSink(context.Background(), recorder.SinkConfig{
		Path:       path,
		Header:     h,
		Protocol:   o.Protocol,
		SchemaFile: o.Schema,
		Redact:     recorder.RedactOptions{Off: o.NoRedact, Keys: o.Redact, Portable: o.portableRun},
		Lossy:      o.Lossy,
		Nice:       sinkNice,
		Framing:    o.framing,
		Warn:       warn,
		Command:    []string{selfPath(), "__sink"},
	})
	if err != nil {
		warn(fmt.Sprintf("not recording: %v", err))
		return nil, ""
	}
	return obs, path
}

// cassettePath picks the cassette's file: -o, else a new name in --dir,
// $RPCTAP_DIR or the state directory. The directory is created 0700 if
// missing; an error says it cannot be.
func cassettePath(o *recordOptions, base string, start time.Time) (string, error) {
	if o.Output != "" {
		if err := os.MkdirAll(filepath.Dir(o.Output), 0o700); err != nil {
			return "", fmt.Errorf("cannot create the directory of -o %s: %w", o.Output, err)
		}
		return o.Output, nil
	}
	dir := o.Dir
	if dir == "" {
		dir = os.Getenv("RPCTAP_DIR")
	}
	if dir == "" {
		state := os.Getenv("XDG_STATE_HOME")
		if state == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no cassette directory: set RPCTAP_DIR or use -o (%v)", err)
			}
			state = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(state, "rpctap", "cassettes")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("cannot create the cassette directory %s: %w", dir, err)
	}
	return filepath.Join(dir, cassetteName(base, start, os.Getpid())), nil
}

// cassetteName is unique per rpctap process and sorts by start time:
// 20261121T083455.123Z-agent-4242.cassette.
func cassetteName(base string, start time.Time, pid int) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, base)
	clean = strings.TrimLeft(clean, ".")
	if clean == "" {
		clean = "cmd"
	}
	return fmt.Sprintf("%s-%s-%d.cassette", start.UTC().Format("20060102T150405.000Z"), clean, pid)
}

// selfPath is how to run this rpctap again (for the recorder process):
// os.Executable, unless rpctap runs under another name (a multi-call
// binary, or testscript's re-executed test binary), which is then found
// as it was called.
func selfPath() string {
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	if filepath.Base(os.Args[0]) == filepath.Base(exe) {
		return exe
	}
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return exe
}

// recordSocket runs socket mode until SIGINT or SIGTERM.
func recordSocket(o *recordOptions, stdio Stdio) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	cwd, _ := os.Getwd()
	h := cassette.Header{Rpctap: Version, Created: start.UTC().Format(time.RFC3339Nano),
		Mode: "socket", Listen: o.Listen, Upstream: o.Upstream, Cwd: cwd}
	path, err := cassettePath(o, filepath.Base(o.Upstream), start)
	if err != nil {
		return &ExitError{Code: ExitInternal, Err: fmt.Errorf("record: %v; not listening (choose another place with -o, --dir or RPCTAP_DIR)", err)}
	}
	p := &tap.Proxy{Listen: o.Listen, Upstream: o.Upstream, Grace: o.Grace, Warn: stdio.Err, Epoch: start}
	if err := p.Bind(); err != nil {
		return err
	}
	if obs, _ := startRecorder(o, h, path, stdio); obs != nil {
		p.Observer, p.ObserveFirst = obs, true
	}
	return p.Serve(ctx)
}

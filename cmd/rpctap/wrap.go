package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rpctap/rpctap/internal/wrap"
)

// wrapOptions are the flags of `rpctap wrap` and `rpctap unwrap`.
type wrapOptions struct {
	Config string
	DryRun bool
	Deep   bool
	Only   []string
	Dir    string
	Rpctap string
	List   bool
	unwrap bool
	env    wrap.Env // where the clients' configs are looked for (tests set it)
}

func init() {
	clients := make([]string, 0, len(wrap.Clients))
	for _, n := range wrap.ClientNames() {
		clients = append(clients, fmt.Sprintf("  %-15s %s", n, wrap.Clients[n].About))
	}
	register(&command{
		Name:    "wrap",
		Summary: "make a client's config run its servers under rpctap record",
		Usage:   "wrap [flags] CLIENT\n  rpctap wrap --config FILE [flags]\n  rpctap wrap --list",
		Long: `wrap rewrites the config of an MCP or ACP client (or an editor's language
servers) so that each stdio command runs as
  /abs/path/to/rpctap record --dir DIR -- COMMAND ARGS...
and every session is recorded into DIR. Only the command and args values of
each entry change: comments, trailing commas, key order, env and cwd stay
as they are, byte for byte. rpctap is named by its absolute path because
clients often start servers with a minimal PATH.

With --deep, ACP agents (Zed's agent_servers) run under 'rpctap record
--deep': the MCP servers each session hands the agent are recorded too, into
cassettes linked to the agent's (docs/deep.md).

Entries already running under rpctap record (wrapped by hand too) are left
as they are, so wrapping twice is wrapping once. HTTP and SSE entries are
left alone with a note. Before any change the file is copied to
FILE.rpctap-TIME.bak; a config that is a symlink is edited where it points.

Clients (CLIENT):
` + strings.Join(clients, "\n") + `

'rpctap unwrap CLIENT' takes the wrapper out again. It is the inverse edit,
not a restore of the backup, so whatever the client changed since (Claude
Code rewrites its config all the time) is kept.`,
		Example: `  rpctap wrap --list
  rpctap wrap claude-code --dry-run          # show the unified diff, write nothing
  rpctap wrap zed --only "My Agent" --dir ~/tapes
  rpctap wrap --config ./my-client.json
  rpctap wrap neovim -- gopls serve          # prints the snippet to paste
  rpctap unwrap claude-code`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &wrapOptions{}
			wrapFlags(fs, o)
			fs.StringVar(&o.Dir, "dir", "", "the directory `DIR` the wrapped commands record into (default: record's, $RPCTAP_DIR or ~/.local/state/rpctap/cassettes)")
			fs.StringVar(&o.Rpctap, "rpctap", "", "the rpctap `PATH` to write into the config (default: this one)")
			fs.BoolVar(&o.Deep, "deep", false, "record ACP agents (Zed's agent_servers) with --deep: the MCP servers each session gives the agent are recorded too, linked to the agent's cassette (docs/deep.md)")
			fs.BoolVar(&o.List, "list", false, "show each known client's configs found here, their entries and whether they are wrapped")
			return func(args []string, stdio Stdio) error { return runWrap(o, args, stdio) }
		},
	})
	register(&command{
		Name:    "unwrap",
		Summary: "take rpctap record back out of a client's config",
		Usage:   "unwrap [flags] CLIENT\n  rpctap unwrap --config FILE [flags]",
		Long: `unwrap is the inverse of 'rpctap wrap': for each entry running under
'rpctap record', it gives the entry its own command and args back and
removes nothing else. On a file nobody changed since wrap it gives back the
original bytes; changes made since (by you or the client) are kept. Entries
wrapped by hand are unwrapped too. A backup is written first.`,
		Example: `  rpctap unwrap claude-desktop
  rpctap unwrap --config ~/.codex/config.toml --only github --dry-run`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &wrapOptions{unwrap: true}
			wrapFlags(fs, o)
			return func(args []string, stdio Stdio) error { return runWrap(o, args, stdio) }
		},
	})
}

func wrapFlags(fs *pflag.FlagSet, o *wrapOptions) {
	// Flags may follow the client ("rpctap wrap zed --dry-run"); a Neovim
	// server's command goes after "--".
	fs.SetInterspersed(true)
	fs.StringVar(&o.Config, "config", "", "edit `FILE` instead of the client's usual configs (JSON with comments, or TOML by its extension)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print the change as a unified diff and write nothing")
	fs.StringArrayVar(&o.Only, "only", nil, "edit only the entry named `NAME` (repeatable)")
}

// wrapSelfPath is the rpctap to write into configs: the path it was started
// by (a symlink such as /opt/homebrew/bin/rpctap stays valid across
// upgrades, the file it points to does not), made absolute.
func wrapSelfPath() (string, error) {
	if a := os.Args[0]; a != "" {
		p := a
		if !strings.ContainsRune(a, os.PathSeparator) {
			p, _ = exec.LookPath(a)
		}
		if p != "" {
			if abs, err := filepath.Abs(p); err == nil {
				if st, err := os.Stat(abs); err == nil && st.Mode().IsRegular() && wrapIsRpctap(abs) {
					return abs, nil
				}
			}
		}
	}
	return os.Executable()
}

func wrapIsRpctap(p string) bool {
	b := strings.TrimSuffix(strings.ToLower(filepath.Base(p)), ".exe")
	return b == "rpctap"
}

func runWrap(o *wrapOptions, args []string, stdio Stdio) error {
	return runWrapTo(o, args, stdio)
}

// reportFailed is the error of a report that could not be written (stdout
// on a full disk): dispatch runs the command behind an outputGuard, which
// turns that into exit 125; wrap also stops before editing a file whose
// change the user could not see.
func reportFailed(out io.Writer) error {
	if g, ok := out.(*outputGuard); ok {
		return g.failed()
	}
	return nil
}

func runWrapTo(o *wrapOptions, args []string, stdio Stdio) error {
	verb := "wrap"
	if o.unwrap {
		verb = "unwrap"
	}
	if o.env == (wrap.Env{}) {
		o.env = wrap.HostEnv()
	}
	if o.List {
		if len(args) > 0 || o.Config != "" || o.DryRun || len(o.Only) > 0 {
			return Usagef("wrap --list takes no client and no other flags")
		}
		return listWrap(o, stdio.Out)
	}
	var client *wrap.Client
	var snippetCmd []string
	switch {
	case len(args) == 0 && o.Config == "":
		return Usagef("%s needs a CLIENT (%s) or --config FILE", verb, strings.Join(wrap.ClientNames(), ", "))
	case len(args) >= 1:
		c, ok := wrap.Clients[args[0]]
		if !ok {
			return Usagef("unknown client %q; known: %s (or give --config FILE)", args[0], strings.Join(wrap.ClientNames(), ", "))
		}
		client = c
		if c.Snippet == nil && len(args) > 1 {
			return Usagef("%s takes one CLIENT (got %q too)", verb, args[1])
		}
		snippetCmd = args[1:]
	}
	if !o.unwrap && o.Rpctap == "" {
		p, err := wrapSelfPath()
		if err != nil {
			return fmt.Errorf("cannot find the rpctap executable: %w", err)
		}
		o.Rpctap = p
	}
	if !o.unwrap {
		if !filepath.IsAbs(o.Rpctap) {
			return Usagef("--rpctap %s: give an absolute path (clients start servers with a minimal PATH)", o.Rpctap)
		}
		dir, err := filepath.Abs(viewCassetteDir(o.Dir))
		if err != nil {
			return err
		}
		o.Dir = dir
	}
	if client != nil && client.Snippet != nil {
		if o.unwrap {
			fmt.Fprintf(stdio.Out, "%s is configured in code: take rpctap's part out of the server's cmd by hand.\n", client.Name)
			return nil
		}
		_, err := io.WriteString(stdio.Out, client.Snippet(o.Rpctap, o.Dir, snippetCmd))
		return err
	}
	specs, err := wrapSpecs(o, client)
	if err != nil {
		return err
	}
	op := wrap.OpWrap
	if o.unwrap {
		op = wrap.OpUnwrap
	}
	opts := wrap.Options{Self: o.Rpctap, Dir: o.Dir, Only: o.Only, Deep: o.Deep}
	// Plan every file before writing any, so that a file that does not
	// parse stops the command before it changed anything.
	var plans []*wrap.Result
	seen := map[string]bool{}
	for _, s := range specs {
		r, err := wrap.Plan(s, op, opts)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return Inputf("%s: %v", s.Path, errors.Unwrap(err))
			}
			return Inputf("%v", err)
		}
		plans = append(plans, r)
		for _, c := range r.Changes {
			seen[c.Entry.Name] = true
		}
	}
	for _, n := range o.Only {
		if !seen[n] {
			var paths []string
			for _, s := range specs {
				paths = append(paths, s.Path)
			}
			return &ExitError{Code: ExitUsage, NoHint: true, Err: fmt.Errorf("--only %q: no entry of that name in %s", n, strings.Join(paths, ", "))}
		}
	}
	wrote := false
	var written []string
	for _, r := range plans {
		where := r.Spec.Path
		if r.Target != r.Spec.Path {
			where += " -> " + r.Target
		}
		fmt.Fprintf(stdio.Out, "%s\n", where)
		for _, c := range r.Changes {
			line := fmt.Sprintf("  %-16s %s", c.Action, c.Entry.Name)
			if c.Entry.Section != "" {
				line += " (" + c.Entry.Section + ")"
			}
			if c.Note != "" {
				line += ": " + c.Note
			}
			fmt.Fprintln(stdio.Out, line)
		}
		if !r.Changed() {
			fmt.Fprintf(stdio.Out, "  nothing to change\n")
			continue
		}
		if r.Spec.Scope == "project" && !o.unwrap {
			fmt.Fprintf(stdio.Out, "  note: a project's config is often committed; this puts this machine's rpctap path in it\n")
		}
		if o.DryRun {
			if err := wrap.UnifiedDiff(stdio.Out, r.Spec.Path, r.Before, r.After); err != nil {
				return err
			}
			continue
		}
		// A report that cannot be written (stdout on a full disk) stops
		// the edit before the file it describes changes.
		if werr := reportFailed(stdio.Out); werr != nil {
			msg := "cannot write the report: " + werr.Error() + "; " + r.Spec.Path + " not changed"
			if len(written) > 0 {
				msg += "; written before: " + strings.Join(written, ", ")
			}
			return errors.New(msg)
		}
		backup, err := r.Write(time.Now())
		if err != nil {
			return fmt.Errorf("%s: %v (the file is unchanged)", r.Spec.Path, err)
		}
		fmt.Fprintf(stdio.Out, "  written; the file as it was is in %s\n", backup)
		written = append(written, r.Spec.Path+" (backup "+backup+")")
		wrote = true
	}
	if werr := reportFailed(stdio.Out); werr != nil && len(written) > 0 {
		return fmt.Errorf("cannot write the report: %v; written: %s", werr, strings.Join(written, ", "))
	}
	if wrote && !o.unwrap {
		fmt.Fprintf(stdio.Out, "sessions will be recorded in %s; restart the client to pick the change up\n", o.Dir)
	}
	return nil
}

// wrapSpecs are the files to edit: --config, or the client's configs that
// exist here.
func wrapSpecs(o *wrapOptions, client *wrap.Client) ([]wrap.Spec, error) {
	if o.Config != "" {
		if client == nil {
			return []wrap.Spec{wrap.GuessSpec(o.Config)}, nil
		}
		// The client's syntax, and every section any of its files has
		// (~/.claude.json's projects as well as .mcp.json's mcpServers),
		// at the path given.
		g := wrap.GuessSpec(o.Config)
		s := wrap.Spec{Path: o.Config, Format: g.Format}
		seen := map[string]bool{}
		for _, cs := range client.Files(o.env) {
			if cs.Format != s.Format {
				continue
			}
			for _, sec := range cs.Sections {
				if k := strings.Join(sec, "\x00"); !seen[k] {
					seen[k] = true
					s.Sections = append(s.Sections, sec)
				}
			}
			for _, tb := range cs.Tables {
				if !seen[tb] {
					seen[tb] = true
					s.Tables = append(s.Tables, tb)
				}
			}
		}
		if len(s.Sections) == 0 && len(s.Tables) == 0 {
			s = g
		}
		return []wrap.Spec{s}, nil
	}
	var found []wrap.Spec
	var looked []string
	for _, s := range client.Files(o.env) {
		looked = append(looked, s.Path)
		if _, err := os.Stat(s.Path); err == nil {
			found = append(found, s)
		}
	}
	if len(found) == 0 {
		return nil, Inputf("no %s config found (looked for %s); give its path with --config FILE", client.Name, strings.Join(looked, ", "))
	}
	return found, nil
}

// listWrap prints every known client's configs found here.
func listWrap(o *wrapOptions, w io.Writer) error {
	found := false
	for _, n := range wrap.ClientNames() {
		c := wrap.Clients[n]
		if c.Files == nil {
			continue
		}
		for _, s := range c.Files(o.env) {
			if _, err := os.Stat(s.Path); err != nil {
				continue
			}
			found = true
			r, err := wrap.Plan(s, wrap.OpWrap, wrap.Options{Self: "/rpctap", Dir: "/"})
			if err != nil {
				fmt.Fprintf(w, "%s  %s (%s): cannot read: %v\n", n, s.Path, s.Scope, err)
				continue
			}
			fmt.Fprintf(w, "%s  %s (%s)\n", n, s.Path, s.Scope)
			if len(r.Changes) == 0 {
				fmt.Fprintf(w, "  (no entries)\n")
			}
			for _, ch := range r.Changes {
				e := ch.Entry
				state := "not wrapped"
				switch {
				case e.Skip != "":
					state = "left alone: " + e.Skip
				case e.Wrapped != nil && e.Wrapped.ByHand:
					state = "wrapped (by hand)"
				case e.Wrapped != nil:
					state = "wrapped"
				}
				if e.Wrapped != nil && e.Wrapped.Deep() {
					state += " --deep"
				}
				name := e.Name
				if e.Section != "" {
					name += " (" + e.Section + ")"
				}
				fmt.Fprintf(w, "  %-40s %s", name, state)
				if e.Skip == "" {
					line := e.Line()
					if e.Wrapped != nil && len(e.Wrapped.Inner) > 0 {
						line = e.Wrapped.Inner
					}
					fmt.Fprintf(w, "   %s", strings.Join(line, " "))
				}
				fmt.Fprintln(w)
			}
		}
	}
	if !found {
		fmt.Fprintf(w, "no known client config found (clients: %s)\n", strings.Join(wrap.ClientNames(), ", "))
	}
	return nil
}

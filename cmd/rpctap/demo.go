package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/demo"
	"github.com/rpctap/rpctap/internal/safefile"
	"github.com/spf13/pflag"
)

// demoOptions are the flags of `rpctap demo`.
type demoOptions struct {
	Output string
	Delay  time.Duration
	Deny   bool
	Quiet  bool
}

func init() {
	register(&command{
		Name:    "demo",
		Summary: "record a bundled demo agent session (no agent needed)",
		Usage:   "demo [flags]",
		Long: `Runs the bundled demo ACP client against the bundled demo ACP agent, with
'rpctap record' standing in for the agent exactly as it would in an editor's
config, then prints the recording as a table. Use it to see what rpctap does
before pointing it at a real agent.`,
		Example: `  rpctap demo                      # writes ./demo.cassette
  rpctap demo -o /tmp/x.cassette --delay 200ms
  rpctap view demo.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &demoOptions{}
			fs.StringVarP(&o.Output, "output", "o", "demo.cassette", "where to write the cassette (an earlier demo recording there is replaced; any other file is refused)")
			fs.DurationVar(&o.Delay, "delay", 20*time.Millisecond, "pause between the agent's streamed chunks")
			fs.BoolVar(&o.Deny, "deny", false, "answer the agent's permission request with 'reject'")
			fs.BoolVarP(&o.Quiet, "quiet", "q", false, "do not print the recording afterwards")
			return func(args []string, stdio Stdio) error {
				if len(args) > 0 {
					return Usagef("demo takes no arguments (got %q)", args[0])
				}
				return runDemo(o, stdio)
			}
		},
	})
	register(&command{
		Name:    "demo-agent",
		Stream:  true,
		Hidden:  true,
		Summary: "the bundled demo ACP agent (speaks on stdin/stdout)",
		Usage:   "demo-agent [--delay D]",
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			delay := fs.Duration("delay", 0, "pause between streamed chunks")
			return func(args []string, stdio Stdio) error {
				return demo.RunAgent(stdio.In, stdio.Out, demo.AgentOptions{Delay: *delay, Log: stdio.Err})
			}
		},
	})
	register(&command{
		Name:      "demo-client",
		ChildArgs: true,
		Stream:    true,
		Hidden:    true,
		Summary:   "the bundled demo ACP client: runs CMD as its agent",
		Usage:     "demo-client [--deny] -- CMD [ARGS...]",
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			deny := fs.Bool("deny", false, "reject the permission request")
			return func(args []string, stdio Stdio) error {
				if len(args) == 0 {
					return Usagef("demo-client needs the agent command after --")
				}
				return runDemoClient(args, *deny, stdio)
			}
		},
	})
}

// runDemoClient starts args as the agent and drives one session with it.
func runDemoClient(args []string, deny bool, stdio Stdio) error {
	return runDemoClientEnv(args, nil, deny, stdio)
}

// runDemoClientEnv is runDemoClient with the agent's environment (nil: ours).
func runDemoClientEnv(args, env []string, deny bool, stdio Stdio) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stderr = stdio.Err
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return &ExitError{Code: ExitNotFound, Err: fmt.Errorf("cannot start the agent: %w", err)}
	}
	cerr := demo.RunClient(out, in, demo.ClientOptions{Out: stdio.Out, Deny: deny})
	werr := cmd.Wait()
	if cerr != nil {
		return fmt.Errorf("demo client: %w", cerr)
	}
	if werr != nil {
		return fmt.Errorf("agent: %w", werr)
	}
	return nil
}

func runDemo(o *demoOptions, stdio Stdio) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the rpctap executable: %w", err)
	}
	if o.Output == "-" {
		// Elsewhere -o - is standard output; here it made a file named "-".
		return Usagef("demo: -o - would be standard output; the demo writes a cassette file: give a file name such as demo.cassette")
	}
	out, err := filepath.Abs(o.Output)
	if err != nil {
		return err
	}
	// The demo records into a temporary file beside the target and puts it
	// in place only once the session is complete, so a killed or failed
	// demo leaves the old file as it was. The file it replaces must be an
	// earlier demo recording: a user's own cassette that happens to have the
	// name (or any other file) is never replaced.
	if st, err := os.Lstat(out); err == nil {
		if !st.Mode().IsRegular() {
			return Usagef("demo: -o %s is not a file (a directory?); give a file name such as %s", o.Output, filepath.Join(o.Output, "demo.cassette"))
		}
		if !isDemoCassette(out) {
			return Usagef("demo: %s exists and is not a demo recording; rpctap does not replace it: give another -o", o.Output)
		}
	}
	// A missing directory is created (0700), as record does for -o and
	// --dir; one that cannot be is one line before anything runs.
	if err := safefile.MkdirFor(out); err != nil {
		return fmt.Errorf("demo: cannot write %s: %v", o.Output, err)
	}
	tmp, err := safefile.Beside(out)
	if err != nil {
		return fmt.Errorf("demo: cannot write %s: %v", o.Output, errors.Unwrap(err))
	}
	defer safefile.Discard(tmp)
	// The agent runs as "rpctap demo-agent", found through PATH, so the
	// recording names rpctap and not the temporary path `go run` built it at.
	agentCmd, env := self, os.Environ()
	if filepath.Base(self) == "rpctap" {
		agentCmd = "rpctap"
		env = append(env, "PATH="+filepath.Dir(self)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	agent := []string{self, "record", "-q", "-o", tmp, "--", agentCmd, "demo-agent", "--delay", o.Delay.String()}
	fmt.Fprintf(stdio.Out, "$ rpctap record -o %s -- rpctap demo-agent\n\n", o.Output)
	if err := runDemoClientEnv(agent, env, o.Deny, stdio); err != nil {
		return err
	}
	// Success is said only of a complete cassette: record keeps the session
	// going when it cannot write (a read-only or missing path), so check.
	if err := completeCassette(tmp); err != nil {
		return fmt.Errorf("demo: the session ran but was not recorded to %s: %v", o.Output, err)
	}
	if err := safefile.Commit(tmp, out, safefile.Options{Verify: completeCassette}); err != nil {
		return writeFailed("demo", err)
	}
	fmt.Fprintf(stdio.Out, "\nrecorded %s\n", o.Output)
	if o.Quiet {
		return nil
	}
	fmt.Fprintln(stdio.Out)
	if err := dispatch([]string{"cat", "--format", "table", out}, stdio); err != nil {
		return err
	}
	fmt.Fprintf(stdio.Out, "\nnext: rpctap view %s   |   rpctap check %s   |   rpctap replay %s\n", o.Output, o.Output, o.Output)
	return nil
}

// isDemoCassette reports whether path is a cassette `rpctap demo` wrote:
// its recorded command is the bundled demo agent.
func isDemoCassette(path string) bool {
	rd, err := cassette.Open(path)
	if err != nil {
		return false
	}
	defer rd.Close()
	argv := rd.Header().Argv
	return len(argv) >= 2 && argv[1] == "demo-agent"
}

// completeCassette reports why the cassette at path is not a complete
// recording (missing, unreadable, no end record), or nil.
func completeCassette(path string) error {
	rd, err := cassette.Open(path)
	if err != nil {
		return err
	}
	defer rd.Close()
	for {
		r, err := rd.Next()
		if err != nil {
			return err
		}
		if r.K == cassette.KindEnd {
			return nil
		}
	}
}

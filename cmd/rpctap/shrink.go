package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/safefile"
	"github.com/rpctap/rpctap/internal/shrink"
	"github.com/rpctap/rpctap/protocol"
	"github.com/spf13/pflag"
)

type shrinkOptions struct {
	Out       string
	Parent    string
	Check     string
	Test      string
	Match     string
	RunTime   time.Duration
	MaxRuns   int
	Quiet     bool
	VerifyArg []string // extra flags passed to verify (--timeout)
	Timeout   time.Duration
}

func init() {
	register(&command{
		Name:      "shrink",
		ChildArgs: true,
		Summary:   "reduce a failing cassette to the few frames that still make it fail",
		Usage:     "shrink [flags] CASSETTE (-- CMD [ARGS...] | --parent CMD | --check CODE | --test CMD)",
		Long: `Delta-debugs a cassette: leaves out as many frames as it can while the failure
still happens, and writes the smallest failing cassette it finds (CASSETTE's
name with .min before .cassette unless -o says otherwise). CASSETTE itself is
never changed.

The failure is one of:
  -- CMD ARGS     rpctap verify CANDIDATE -- CMD fails (a real child diverges,
                  crashes or exits with another status)
  --parent CMD    CMD, run with "rpctap replay CANDIDATE" appended as the
                  child command it starts, exits non-zero (a parent that
                  crashes on what the child said)
  --check CODE    rpctap check CANDIDATE reports violation CODE
  --test CMD      CMD (run by sh -c, with $RPCTAP_CASSETTE set to the
                  candidate) exits non-zero
With --parent, --check or --test its flags may also follow CASSETTE; with
-- CMD they go before it (everything after CASSETTE is the child's).
--match REGEXP also requires the failing run's output (stdout and stderr) to
match, so that the shrunk cassette fails the same way, not another.

A request is never kept without its response or the response without its
request, process events are always kept, and the session's first frame (the
handshake) is pinned. Prints the reduction (frames and bytes before and after,
runs, time) on stderr. See docs/replay.md.`,
		Example: `  rpctap shrink session.cassette -- my-agent --acp
  rpctap shrink --match 'tools/call' session.cassette -- ./server
  rpctap shrink --parent './my-editor --agent-cmd' session.cassette
  rpctap shrink --check session.unknown-response-id session.cassette
  rpctap shrink --test 'go test ./client -run TestReplay' session.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &shrinkOptions{}
			fs.StringVarP(&o.Out, "output", "o", "", "where to write the shrunk cassette (default: CASSETTE with .min before .cassette)")
			fs.StringVar(&o.Parent, "parent", "", "a parent command line; the failure is its non-zero exit against rpctap replay")
			fs.StringVar(&o.Check, "check", "", "a violation code; the failure is check reporting it")
			fs.StringVar(&o.Test, "test", "", "a shell command; the failure is its non-zero exit ($RPCTAP_CASSETTE is the candidate)")
			fs.StringVar(&o.Match, "match", "", "the failing run's output must also match this regular expression")
			fs.DurationVar(&o.RunTime, "run-timeout", 60*time.Second, "the longest one run may take (a run that takes longer counts as passing)")
			fs.DurationVar(&o.Timeout, "timeout", 2*time.Second, "verify's --timeout: how long to wait for a recorded child frame")
			fs.IntVar(&o.MaxRuns, "max-runs", 2000, "stop after this many runs with the smallest failing cassette found so far (0: no limit)")
			fs.BoolVarP(&o.Quiet, "quiet", "q", false, "print only errors")
			return func(args []string, stdio Stdio) error {
				var child []string
				if len(args) >= 2 && strings.HasPrefix(args[1], "-") && args[1] != "--" {
					// Flags after the cassette: shrink --test, --check and
					// --parent run no child command line of their own, so
					// shrink takes files there like check does
					// (shrink x.cassette --test CMD). With -- CMD it keeps
					// verify's rule: flags before the cassette.
					flag := args[1]
					if err := fs.Parse(args[1:]); err != nil {
						if errors.Is(err, pflag.ErrHelp) {
							writeCommandHelp(stdio.Out, commands["shrink"], fs)
							return nil
						}
						return Usagef("shrink: %v", err)
					}
					if len(fs.Args()) > 0 {
						return Usagef("shrink: with a child command line, flags go before the cassette: rpctap shrink [flags] CASSETTE -- CMD [ARGS...] (got %s after it; everything after the cassette is the child's command line)", flag)
					}
					args = args[:1]
				}
				if len(args) >= 2 && args[1] == "--" {
					child = args[2:]
					args = args[:1]
				} else if len(args) > 1 {
					child = args[1:]
					args = args[:1]
				}
				if len(args) != 1 {
					return Usagef("shrink needs a cassette: rpctap shrink [flags] CASSETTE -- CMD [ARGS...]")
				}
				n := 0
				for _, set := range []bool{len(child) > 0, o.Parent != "", o.Check != "", o.Test != ""} {
					if set {
						n++
					}
				}
				if n != 1 {
					return Usagef("shrink needs exactly one failure to keep: -- CMD, --parent CMD, --check CODE or --test CMD")
				}
				if o.RunTime <= 0 || o.Timeout <= 0 || o.MaxRuns < 0 {
					return Usagef("--run-timeout and --timeout must be positive, --max-runs not negative")
				}
				if o.Check != "" && !knownCheckCode(o.Check) {
					return Usagef("shrink: --check %s: no rule has that code (codes look like session.unknown-response-id or acp.missing-field; list: docs/protocols.md)", o.Check)
				}
				return runShrink(args[0], child, o, stdio)
			}
		},
	})
}

func runShrink(path string, child []string, o *shrinkOptions, stdio Stdio) error {
	var match *regexp.Regexp
	if o.Match != "" {
		re, err := regexp.Compile(o.Match)
		if err != nil {
			return Usagef("--match: %v", err)
		}
		match = re
	}
	recs, damage, err := readAllRecords(path)
	if err != nil {
		return Inputf("shrink: %v", err)
	}
	if _, frames := frameStats(recs); frames == 0 {
		for _, d := range damage {
			fmt.Fprintf(stdio.Err, "rpctap shrink: %s: %v\n", path, d)
		}
		return Inputf("shrink: %s holds no frames: nothing to shrink", path)
	}
	plan := shrink.NewPlan(recs)
	out := o.Out
	if out == "" {
		out = strings.TrimSuffix(path, ".cassette") + ".min.cassette"
	}
	if sameFile(out, path) {
		return Usagef("shrink: -o would overwrite %s; the input is never changed", path)
	}
	// An -o that cannot be written (a read-only directory, a file where
	// its directory should be) is said now, before the runs, not after a
	// shrink that may take an hour and is then lost.
	if _, err := safefile.Beside(out); err != nil {
		return writeFailed("shrink", err)
	}
	dir, err := os.MkdirTemp("", "rpctap-shrink-")
	if err != nil {
		return err
	}
	defer safefile.Track(dir)() // removed on Ctrl-C or SIGTERM too
	defer os.RemoveAll(dir)

	cand := filepath.Join(dir, "candidate.cassette")
	fails := func(units []int) (bool, error) {
		if err := writeCassetteFile(cand, plan.Candidate(units)); err != nil {
			return false, writeFailed("shrink", err)
		}
		r, err := runPredicate(cand, child, o, match)
		return r.failed, err
	}
	start := time.Now()
	all := plan.Free()
	// Preflight: the whole cassette, as the predicate sees it, must show
	// the failure, and the command must start. "command not found" (127,
	// 126) is not a failure to keep: every candidate would "fail" and the
	// result would be the handshake alone.
	if err := writeCassetteFile(cand, plan.Candidate(all)); err != nil {
		return writeFailed("shrink", err)
	}
	pre, err := runPredicate(cand, child, o, match)
	switch {
	case err != nil:
		return err
	case pre.cannotStart():
		return &ExitError{Code: pre.code, Err: fmt.Errorf("shrink: the command cannot start (exit %d on the whole cassette: %s); nothing was shrunk", pre.code, pre.head())}
	case pre.timedOut:
		return Findingsf("shrink: one run on the whole cassette took longer than --run-timeout %v; nothing was shrunk", o.RunTime)
	case !pre.failed:
		return Findingsf("shrink: %s does not fail that way: nothing to shrink (%s)", path, pre.why(o))
	}
	keep, st, err := shrink.DDMin(all, fails, o.MaxRuns)
	if err != nil {
		return err
	}
	final := plan.Candidate(keep)
	if err := writeCassetteFile(cand, final); err != nil {
		return writeFailed("shrink", err)
	}
	// The cassette written is the one reported: check it fails once more
	// (a flaky failure would otherwise hand the user a passing cassette),
	// before it goes to -o.
	if r, err := runPredicate(cand, child, o, match); err != nil {
		return err
	} else if !r.failed {
		return Findingsf("shrink: the shrunk cassette no longer fails: the failure is not deterministic; %s not written", out)
	}
	if err := writeCassetteFile(out, final); err != nil {
		return writeFailed("shrink", err)
	}
	warnCut(stdio.Err, "shrink", path, out, recs, damage)
	if !o.Quiet {
		fb, ff := frameStats(recs)
		ab, af := frameStats(final)
		inSize, outSize := fileSize(path), fileSize(cand)
		fmt.Fprintf(stdio.Err, "rpctap shrink: %d -> %d frames, %d -> %d payload bytes (cassette %d -> %d bytes) in %d runs, %s; wrote %s\n",
			ff, af, fb, ab, inSize, outSize, st.Runs+2, time.Since(start).Round(time.Millisecond), out)
	}
	return damageExit("shrink", path, damage, stdio.Err)
}

// runResult is one run of the failure check.
type predResult struct {
	failed   bool   // the failure to keep happened
	code     int    // the exit status of the command run (-1: killed)
	timedOut bool   // --run-timeout ran out (counts as passing)
	out      []byte // its stdout and stderr
	check    bool   // the predicate was --check
}

// cannotStart reports a run whose command could not be started: exit 127
// (not found) or 126 (not executable), from verify's child or from sh.
func (r predResult) cannotStart() bool {
	return !r.check && (r.code == ExitNotFound || r.code == ExitNoExec)
}

func (r predResult) head() string {
	if h := headLine(string(r.out)); h != "" {
		return h
	}
	return "no output"
}

// why says what the preflight run on the whole cassette did instead.
func (r predResult) why(o *shrinkOptions) string {
	switch {
	case o.Check != "":
		return "check reports no " + o.Check + " on it"
	case o.Match != "" && r.code != 0:
		return fmt.Sprintf("the run exited %d but its output does not match --match", r.code)
	}
	return "the run on the whole cassette exited 0"
}

// runPredicate runs the chosen failure check on the cassette at cand.
func runPredicate(cand string, child []string, o *shrinkOptions, match *regexp.Regexp) (predResult, error) {
	self := selfPath()
	var cmd *exec.Cmd
	ctx, cancel := context.WithTimeout(context.Background(), o.RunTime)
	defer cancel()
	switch {
	case len(child) > 0:
		args := append([]string{"verify", "--timeout", o.Timeout.String(), cand, "--"}, child...)
		cmd = exec.CommandContext(ctx, self, args...)
	case o.Parent != "":
		line := o.Parent + " " + shellQuote(self) + " replay " + shellQuote(cand)
		cmd = exec.CommandContext(ctx, "sh", "-c", line)
	case o.Check != "":
		cmd = exec.CommandContext(ctx, self, "check", "--format", "json", cand)
	default:
		cmd = exec.CommandContext(ctx, "sh", "-c", o.Test)
		cmd.Env = append(os.Environ(), "RPCTAP_CASSETTE="+cand)
	}
	var outb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &outb
	cmd.WaitDelay = time.Second
	// The run gets a process group of its own, so that a timeout ends
	// everything it started (sh's children too), and so does a signal that
	// ends shrink (safefile.TrackGroup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Start()
	if err == nil {
		untrack := safefile.TrackGroup(cmd.Process.Pid)
		err = cmd.Wait()
		untrack()
	}
	r := predResult{out: outb.Bytes(), check: o.Check != ""}
	if ctx.Err() != nil {
		r.timedOut = true
		return r, nil // too slow: not the failure we keep
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return r, fmt.Errorf("shrink: running %s: %v", cmd.Path, err)
	}
	r.code = cmd.ProcessState.ExitCode()
	if o.Check != "" {
		r.failed = strings.Contains(outb.String(), `"code": "`+o.Check+`"`) || strings.Contains(outb.String(), `"code":"`+o.Check+`"`)
	} else {
		// A command that cannot start is not the failure kept.
		r.failed = err != nil && !r.cannotStart()
		if ee != nil && len(child) > 0 && (r.code == ExitUsage || r.code == ExitInput || r.code == ExitInternal) {
			return r, fmt.Errorf("shrink: verify refused the candidate: %s", headLine(outb.String()))
		}
	}
	if r.failed && match != nil {
		r.failed = match.Match(outb.Bytes())
	}
	return r, nil
}

// knownCheckCode reports whether code is in a family some rule reports
// (session., framing., jsonrpc., a protocol's own, schema., cassette.,
// assert.) and is spelled like one. A typo in the family is refused at
// once; one in the rest of the code is caught by the preflight run, which
// then finds no such finding.
func knownCheckCode(code string) bool {
	fam, rest, ok := strings.Cut(code, ".")
	if !ok || rest == "" || strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" {
		return false
	}
	switch fam {
	case "session", "framing", "jsonrpc", "schema", "cassette", "assert":
		return true
	}
	for _, n := range protocol.Names() {
		if fam == n {
			return true
		}
	}
	return false
}

// readAllRecords reads a whole cassette, header first. It reads past
// damage (cassette.DamageError), returning what was lost so that the caller
// can say so and exit 4 after doing its work with every readable record; a
// cassette cut off without its end record is read to the cut.
func readAllRecords(path string) ([]cassette.Record, []*cassette.DamageError, error) {
	rd, err := cassette.Open(path)
	if err != nil {
		if !strings.Contains(err.Error(), path) {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return nil, nil, err
	}
	defer rd.Close()
	h := rd.Header()
	recs := []cassette.Record{{N: 0, K: cassette.KindHeader, Header: &h}}
	var damage []*cassette.DamageError
	for {
		r, err := rd.Next()
		if err != nil {
			var de *cassette.DamageError
			var te *cassette.TruncatedError
			switch {
			case errors.As(err, &de):
				damage = append(damage, de)
				if de.ToEnd {
					return recs, damage, nil
				}
				continue
			case errors.As(err, &te), errors.Is(err, io.EOF):
				return recs, damage, nil
			}
			return nil, damage, err
		}
		if r.K == cassette.KindHeader {
			continue
		}
		recs = append(recs, *r)
	}
}

// damageExit reports each damaged stretch of path on w and returns the
// error that makes a command exit 4 after it did its work.
func damageExit(cmd, path string, damage []*cassette.DamageError, w io.Writer) error {
	if len(damage) == 0 {
		return nil
	}
	for _, d := range damage {
		fmt.Fprintf(w, "rpctap %s: %s: %v\n", cmd, path, d)
	}
	return Inputf("%s: %s is damaged; used every readable record", cmd, path)
}

func frameStats(recs []cassette.Record) (bytes, frames int) {
	for i := range recs {
		if recs[i].K == cassette.KindFrame {
			frames++
			bytes += len(recs[i].Payload())
		}
	}
	return bytes, frames
}

func fileSize(p string) int64 {
	if st, err := os.Stat(p); err == nil {
		return st.Size()
	}
	return 0
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func headLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

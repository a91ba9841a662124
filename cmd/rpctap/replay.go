package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/replay"
	"github.com/rpctap/rpctap/tap"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// replayFlags are the matching flags shared by replay, verify and diff.
type replayFlags struct {
	Ignore     []string
	NoDefaults bool
	Protocol   string
	Conn       int
	Window     int
	Fault      []string       // replay, verify: --fault rules
	FaultsFile string         // replay, verify: --faults FILE
	connGiven  bool           // --conn was given (set by options)
	faults     []replay.Fault // the rules parsed (set by options)
}

// connSet reports whether --conn was given.
func (f *replayFlags) connSet() bool { return f.connGiven }

// defineFaults adds the fault injection flags (replay and verify).
func (f *replayFlags) defineFaults(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Fault, "fault", nil, "inject a fault into the frames sent: `RULE` such as 'drop method=session/update' or 'kill frame=7' (repeatable; see docs/replay.md)")
	fs.StringVar(&f.FaultsFile, "faults", "", "read fault rules from `FILE`, one a line")
}

func (f *replayFlags) define(fs *pflag.FlagSet, window bool) {
	fs.StringArrayVar(&f.Ignore, "ignore", nil, "leave a field out of comparisons: a JSON pointer such as /params/cwd, with * and ** segments (/params/**/timestamp); repeatable")
	fs.BoolVar(&f.NoDefaults, "no-default-ignores", false, "do not ignore the protocol's volatile fields (session ids, cwd, timestamps, ...)")
	fs.StringVar(&f.Protocol, "protocol", "", "the cassette's protocol, when it does not say ("+strings.Join(protocol.Names(), ", ")+")")
	fs.IntVar(&f.Conn, "conn", 0, "socket-mode cassettes: the connection `N` to use (1, 2, ...); needed when there are several")
	if window {
		fs.IntVar(&f.Window, "window", 16, "how many pending recorded frames an arriving frame may match out of order")
	}
}

// options checks the shared flags and turns them into replay options.
func (f *replayFlags) options(fs *pflag.FlagSet) ([]replay.Option, error) {
	var opts []replay.Option
	if f.Protocol != "" {
		if _, err := protocol.Lookup(f.Protocol); err != nil {
			return nil, Usagef("--protocol: %v", err)
		}
		opts = append(opts, replay.WithProtocol(f.Protocol))
	}
	if fs.Changed("conn") {
		f.connGiven = true
		if f.Conn < 0 {
			return nil, Usagef("--conn must be 0 or more")
		}
		opts = append(opts, replay.WithConn(f.Conn))
	}
	faults, err := parseFaultFlags(f.Fault, f.FaultsFile)
	if err != nil {
		return nil, err
	}
	f.faults = faults
	if len(faults) > 0 {
		opts = append(opts, replay.WithFaults(faults...))
	}
	if err := replay.CheckIgnore(f.Ignore...); err != nil {
		return nil, Usagef("--ignore: %v", err)
	}
	opts = append(opts, replay.WithIgnore(f.Ignore...))
	if f.NoDefaults {
		opts = append(opts, replay.WithoutDefaultIgnores())
	}
	if f.Window != 0 {
		if f.Window < 1 {
			return nil, Usagef("--window must be at least 1")
		}
		opts = append(opts, replay.WithWindow(f.Window))
	}
	return opts, nil
}

type replayOptions struct {
	replayFlags
	Speed  float64
	Strict bool
}

func init() {
	register(&command{
		Name:    "replay",
		Stream:  true,
		Summary: "stand in for a recorded child: answer the parent from a cassette",
		Usage:   "replay [flags] CASSETTE",
		Long: `Plays the child's side of a recording. Put 'rpctap replay CASSETTE' where the
child's command goes; the parent cannot tell the difference as long as it sends
what it sent during the recording.

Each recorded child frame (responses, notifications, events, and requests the
child made, such as ACP session/request_permission or MCP sampling) is sent
once every parent frame recorded before it has arrived and matched, after its
recorded delay divided by --speed. Parent frames match recorded ones by kind,
method or type and body; ids are not compared but mapped, so each response
carries the id the parent used. Recorded stderr is replayed on stderr, and the
recorded exit status becomes rpctap's.

A frame that matches nothing gets the protocol's error reply (JSON-RPC error,
synaps error, opi/pi success:false) and a report on stderr; the replay carries
on. --strict makes any divergence exit 1. A cassette cut off by a SIGKILL
replays what it holds, then waits for the parent to close stdin.
See docs/replay.md.`,
		Example: `  rpctap replay session.cassette                  # as the agent command
  rpctap replay --speed 0 --strict session.cassette
  rpctap replay --ignore /params/cwd --ignore '/params/**/timestamp' s.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &replayOptions{}
			fs.Float64Var(&o.Speed, "speed", 1, "pacing: 1 keeps recorded delays, 2 halves them, 0 answers as fast as causality allows")
			fs.BoolVar(&o.Strict, "strict", false, "exit 1 if the parent diverged from the recording (for CI)")
			o.define(fs, true)
			o.defineFaults(fs)
			return func(args []string, stdio Stdio) error {
				if len(args) != 1 {
					return Usagef("replay needs exactly one cassette (got %d)", len(args))
				}
				if o.Speed < 0 {
					return Usagef("--speed must be 0 or more")
				}
				opts, err := o.options(fs)
				if err != nil {
					return err
				}
				if err := faultsCanFire("replay", o.faults, cassette.DirOut, nil, 0); err != nil {
					return err
				}
				return runReplay(args[0], o, opts, stdio)
			}
		},
	})
}

func runReplay(path string, o *replayOptions, opts []replay.Option, stdio Stdio) error {
	tuneReplay()
	// The cassette is streamed: read as the replay advances, so memory
	// follows the matching window and the largest frame, not the length of
	// the session (docs/replay.md, "Memory").
	src, err := replay.OpenStream(path)
	if err != nil {
		return Inputf("replay: %v", err)
	}
	defer src.Close()
	if src.Header.Mode == "socket" && !o.connSet() {
		// Which connection to play is the user's choice, not the file's
		// fault: a usage error that names them.
		if conns := frameConns(path); len(conns) > 1 {
			return Usagef("replay: %s is a socket-mode recording of %d connections (%s): choose one with --conn N", path, len(conns), joinConns(conns))
		}
	}
	src.Warn = func(msg string) { fmt.Fprintf(stdio.Err, "rpctap replay: warning: %s\n", msg) }
	opts = append(opts, replay.WithSpeed(o.Speed), replay.WithStrict(o.Strict),
		replay.WithReport(stdio.Err), replay.WithName("rpctap replay"), replay.WithPrefetchNice(replayPrefetchNice))
	// Signals the parent sends are matched against the ones the recording
	// has rpctap forwarding; any other ends the replay as its default
	// action would.
	sigc := make(chan os.Signal, 4)
	names := make(chan string, 4)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigc)
	stopRelay := make(chan struct{})
	defer close(stopRelay)
	go relaySignals(sigc, names, stopRelay)
	in, out := stdio.In, stdio.Out
	if in == io.Reader(os.Stdin) && out == io.Writer(os.Stdout) {
		// Pipes in non-blocking mode go through Go's poller: 1 MiB frames
		// cost ~10x less latency than with blocking reads and writes
		// (DESIGN.md, "Measuring"). Terminals are left alone; the mode
		// is restored before rpctap exits (or re-raises a signal).
		if f, restore, err := nonblockingDup(os.Stdin); err == nil {
			defer restore()
			in = f
		}
		if f, restore, err := nonblockingDup(os.Stdout); err == nil {
			defer restore()
			out = f
		}
	}
	res, err := replay.RunChild(context.Background(), src, in, out, stdio.Err, names, opts...)
	if d := src.Damage(); len(d) > 0 && res != nil {
		// Each range was reported (Warn) as the replay reached it.
		return Inputf("replay: %s: %s; replayed every readable record", path, replay.DamageSummary(d))
	}
	var damaged *cassette.CorruptError
	switch {
	case res == nil || errors.As(err, &damaged):
		// Bad input: found at the start, or where the replay reached it.
		return Inputf("replay: %v", err)
	case errors.Is(err, replay.ErrDiverged):
		return Findingsf("replay: %d divergence(s) from %s", len(res.Divergences), path)
	case err != nil && !isBrokenPipe(err):
		return fmt.Errorf("replay: %v", err)
	}
	if res.Exit != nil && res.Exit.Signal != "" {
		// The recorded child died of a signal: so do we, as record does
		// (exit status 128+n if the signal does not end us).
		if n := unix.SignalNum(res.Exit.Signal); n != 0 {
			signal.Stop(sigc)
			restoreAll()
			tap.Reraise(n)
		}
	}
	if res.Exit != nil && res.Exit.Code != 0 {
		return Exit(res.Exit.Code)
	}
	return nil
}

var restores []func()

// restoreAll undoes every nonblockingDup (idempotent).
func restoreAll() {
	for _, r := range restores {
		r()
	}
	restores = nil
}

// nonblockingDup returns a duplicate of f (a pipe or socket, not a
// terminal) in non-blocking mode, and the function that puts the shared
// file description back in blocking mode and closes the duplicate.
func nonblockingDup(f *os.File) (*os.File, func(), error) {
	if isTerminal(f) {
		return nil, nil, errors.New("a terminal")
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	done := false
	restore := func() {
		if !done {
			done = true
			unix.SetNonblock(fd, false)
			nf.Close()
		}
	}
	restores = append(restores, restore)
	return nf, restore, nil
}

// relaySignals is the goroutine that turns the signals rpctap receives into
// names for the replay engine, until stop is closed. It never blocks past
// stop.
func relaySignals(sigc <-chan os.Signal, names chan<- string, stop <-chan struct{}) {
	for {
		select {
		case s := <-sigc:
			if ss, ok := s.(syscall.Signal); ok {
				select {
				case names <- unix.SignalName(ss):
				case <-stop:
					return
				}
			}
		case <-stop:
			return
		}
	}
}

// isBrokenPipe: the parent went away (closed our stdout); a real child would
// die of SIGPIPE or EPIPE, nothing for rpctap to report.
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed)
}

// frameConns lists the connections that carry frames in the cassette at
// path (damage is skipped here; the replay reports it where it reaches it).
func frameConns(path string) []int {
	rd, err := cassette.Open(path)
	if err != nil {
		return nil
	}
	defer rd.Close()
	seen := map[int]bool{}
	var out []int
	for {
		r, err := rd.Next()
		var de *cassette.DamageError
		if errors.As(err, &de) {
			continue
		}
		if err != nil {
			break
		}
		if r.K == cassette.KindFrame && !seen[r.Conn] {
			seen[r.Conn] = true
			out = append(out, r.Conn)
		}
	}
	sort.Ints(out)
	return out
}

func joinConns(cs []int) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ", ")
}

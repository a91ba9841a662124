// Command wire is rpctap's whole-process benchmark: the same parent/child
// workload run directly, through a cat relay, through `rpctap record` (and a
// forwarding-only variant) and against `rpctap replay --speed 0`, alternating
// the set-ups within one run. See docs/performance.md.
//
//	go run ./bench/wire                 # full run, prints markdown tables
//	go run ./bench/wire --quick         # smoke run, a few seconds
//	go run ./bench/wire --doc docs/performance.md   # also update the doc
//
// The parent and the child are this program; the child is re-executed with a
// marker argument, so nothing but rpctap itself (built from this checkout) is
// needed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childMarker {
		os.Exit(childMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == relayMarker {
		os.Exit(relayMain(os.Args[2:]))
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "wire: %v\n", err)
		os.Exit(2)
	}
	rep, err := run(cfg, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "wire: %v\n", err)
		os.Exit(1)
	}
	md := rep.markdown()
	fmt.Print(md)
	if cfg.Doc != "" {
		if err := writeDoc(cfg.Doc, md); err != nil {
			fmt.Fprintf(os.Stderr, "wire: %v\n", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "wire: updated %s\n", cfg.Doc)
	}
}

type config struct {
	Quick      bool
	Reps       int
	Workloads  []string
	Setups     []string
	Rpctap     string // prebuilt binary; empty: build ./cmd/rpctap
	FwdArgs    string
	Alt        string // a second rpctap binary measured beside the first
	Interleave bool   // ping: all set-ups' sessions open at once, round trips taken in turn
	Doc        string
	Keep       bool
	SaveCap    string // directory to save the warm-up sessions' bytes in (for profiling)
	Seed       int64
	Command    string // how this run was invoked, for the report

	PingN       int
	MixTurns    int
	BigEvery    int
	MBFrames    int
	StreamBytes int64
	RSSSizes    []int64
	Stall       time.Duration
	StallBytes  int64
	PoolSize    int
}

var allWorkloads = []string{"ping", "pingseq", "mix", "mixstream", "mb", "rss", "stall", "traffic", "issue23"}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("wire", flag.ContinueOnError)
	fs.BoolVar(&c.Quick, "quick", false, "small sizes and 3 repetitions: a smoke run of a few seconds")
	fs.IntVar(&c.Reps, "reps", 0, "repetitions per set-up (default 5, or 3 with --quick)")
	wl := fs.String("workload", strings.Join(allWorkloads, ","), "comma-separated workloads: "+strings.Join(allWorkloads, ", "))
	su := fs.String("setups", "direct,cat,gorelay-block,gorelay-poll,record,record-noredact,record-devnull,fwd,replay", "comma-separated set-ups (rpctap ones are skipped when the binary lacks the command)")
	fs.StringVar(&c.Rpctap, "rpctap", "", "rpctap binary to measure (default: go build ./cmd/rpctap from this module)")
	fs.BoolVar(&c.Interleave, "ping-interleave", true, "ping: keep every set-up's session open and take one round trip from each in turn (false: one set-up's session after another)")
	fs.StringVar(&c.Alt, "alt", "", "a second rpctap `binary` (a candidate change): each rpctap set-up also runs with it, as NAME-alt, alternating in the same run")
	fs.StringVar(&c.FwdArgs, "fwd-args", "record -o {exists} -- {child}", "rpctap arguments of the forwarding-only set-up ({exists}: a file that exists, so record cannot create its cassette and forwards only)")
	fs.StringVar(&c.Doc, "doc", "", "also write the results into this markdown file between the bench markers")
	fs.BoolVar(&c.Keep, "keep", false, "keep the temporary directory (cassettes, stderr)")
	fs.StringVar(&c.SaveCap, "save-capture", "", "save the bytes of the mix and mixstream warm-up sessions (both directions, in order) as DIR/WORKLOAD.ndjson, for profiling")
	fs.Int64Var(&c.Seed, "seed", 1, "data seed")
	fs.IntVar(&c.PingN, "ping-n", 0, "round trips per ping session (default 10000, quick 1000)")
	fs.IntVar(&c.MixTurns, "mix-turns", 0, "turns per agent-mix session (default 800, quick 40)")
	fs.Int64Var(&c.StreamBytes, "stream-bytes", 0, "bytes per mixstream session (default 64 MB, quick 4 MB)")
	fs.IntVar(&c.MBFrames, "mb-frames", 0, "1 MiB frames per mb session (default 128, quick 8)")
	rss := fs.String("rss-sizes", "", "session sizes (MB) of the rss workload (default 10,100,1074; quick 2,16)")
	fs.DurationVar(&c.Stall, "stall", 0, "how long the stall workload stops reading (default 2s, quick 200ms)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.Command = "go run ./bench/wire " + strings.Join(args, " ")
	c.Workloads = splitList(*wl)
	for _, w := range c.Workloads {
		if !contains(allWorkloads, w) {
			return c, fmt.Errorf("unknown workload %q (have %s)", w, strings.Join(allWorkloads, ", "))
		}
	}
	c.Setups = splitList(*su)
	def := func(p *int, full, quick int) {
		if *p == 0 {
			*p = full
			if c.Quick {
				*p = quick
			}
		}
	}
	def(&c.Reps, 5, 3)
	def(&c.PingN, 10000, 1000)
	def(&c.MixTurns, 800, 40)
	def(&c.MBFrames, 128, 8)
	bigEvery := c.MixTurns / 5
	if c.Quick {
		bigEvery = c.MixTurns / 2
	}
	c.BigEvery = max(bigEvery, 1)
	if c.StreamBytes == 0 {
		c.StreamBytes = 64e6
		if c.Quick {
			c.StreamBytes = 4e6
		}
	}
	if c.Stall == 0 {
		c.Stall = 2 * time.Second
		if c.Quick {
			c.Stall = 200 * time.Millisecond
		}
	}
	c.StallBytes = 256e6
	c.PoolSize = 48 << 20
	sizes := "10,100,1074"
	if c.Quick {
		c.StallBytes = 16e6
		c.PoolSize = 12 << 20
		sizes = "2,16"
	}
	if *rss != "" {
		sizes = *rss
	}
	for _, s := range splitList(sizes) {
		var mb int64
		if _, err := fmt.Sscan(s, &mb); err != nil || mb <= 0 {
			return c, fmt.Errorf("bad --rss-sizes entry %q", s)
		}
		c.RSSSizes = append(c.RSSSizes, mb*1e6)
	}
	if c.Reps < 1 {
		return c, fmt.Errorf("--reps must be at least 1")
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// moduleRoot finds the directory holding go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// buildRpctap builds ./cmd/rpctap into dir the way the README installs it:
// CGO_ENABLED=0, a static binary. (With cgo, the net package that pflag
// and the socket tap import links libc dynamically, and the loader and libc
// pages add about 1.6 MiB of resident memory to each of rpctap's two
// processes; pass --rpctap to measure another build.)
func buildRpctap(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "rpctap")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/rpctap")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/rpctap: %v: %s", err, b)
	}
	return out, nil
}

// hasCommand reports whether `rpctap NAME --help` succeeds.
func hasCommand(rpctap, name string) bool {
	cmd := exec.Command(rpctap, name, "--help")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	return cmd.Run() == nil
}

func knownSetup(name, fwdArgs string) (setup, bool) {
	switch name {
	case "direct":
		return setup{Name: name, Kind: "direct"}, true
	case "cat":
		return setup{Name: name, Kind: "cat", Note: "two `cat` processes, one per direction: parent → cat → child → cat → parent (stderr not relayed)"}, true
	case "gorelay-block", "gorelay-poll":
		mode := strings.TrimPrefix(name, "gorelay-")
		note := "a minimal Go relay (this program): blocking read/write system calls on raw descriptors, one thread per direction, like cat"
		if mode == "poll" {
			note = "a minimal Go relay (this program): non-blocking descriptors and io.Copy through *os.File, woken by Go's netpoller, as rpctap's tap is"
		}
		return setup{Name: name, Kind: "gorelay", Args: []string{mode}, Note: note}, true
	case "record":
		return setup{Name: name, Kind: "rpctap", Args: []string{"record", "-o", "{cassette}", "--", "{child}"}}, true
	case "record-intercept":
		return setup{Name: name, Kind: "rpctap", Args: []string{"record", "--intercept", "-o", "{cassette}", "--", "{child}"},
			Note: "`rpctap record --intercept` with no breakpoint set: the intercepting copy loop and the control socket, nothing held"}, true
	case "record-noredact":
		return setup{Name: name, Kind: "rpctap", Args: []string{"record", "--no-redact", "-o", "{cassette}", "--", "{child}"}}, true
	case "record-devnull":
		return setup{Name: name, Kind: "rpctap", Args: []string{"record", "-o", "/dev/null", "--", "{child}"},
			Note: "`rpctap record -o /dev/null`: all the recording work (split, classify, validate, compress) without the disk"}, true
	case "fwd":
		return setup{Name: name, Kind: "rpctap", Args: strings.Fields(fwdArgs),
			Note: "forwarding only: `rpctap " + fwdArgs + "`; rpctap has no switch for a discarding sink, so the cassette path " +
				"is a file that already exists: record cannot create it, warns once and forwards only (the degraded mode of invariant 4)"}, true
	case "replay":
		return setup{Name: name, Kind: "rpctap", Args: []string{"replay", "--speed", "0", "{replay}"},
			Note: "the parent talks to `rpctap replay --speed 0` of a cassette recorded earlier in this run"}, true
	}
	return setup{}, false
}

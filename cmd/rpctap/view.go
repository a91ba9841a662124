package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rpctap/rpctap/internal/intercept"
	"github.com/rpctap/rpctap/viewer"
	"github.com/spf13/pflag"
)

// viewOptions are the flags of `rpctap view`.
type viewOptions struct {
	Dir    string // the picker's directory
	Follow bool
	Dump   string // WxH: draw headless, print the screen, exit
	Keys   string // keys typed before --dump prints
	Attach string // a live session's control socket (record --intercept)
	Alone  bool   // without the cassettes linked to it (record --deep)
}

func init() {
	register(&command{
		Name:    "view",
		Summary: "inspect a cassette in the terminal: frames, detail, filter, transcript, stats",
		Usage:   "view [flags] [CASSETTE]",
		Long: `Opens a cassette in a terminal inspector: a list of every frame (time since
start, delta, direction, kind, method/type, id, size, latency of responses,
a mark on frames with violations) with stderr lines and process events
interleaved; a detail pane with the frame as coloured JSON, its violations
and a jump to its paired request or response; a filter bar and search; a
transcript that folds streamed chunks into text per turn; statistics per
method (counts, latency p50/p90/p99/max, unanswered requests). Press ? for
every key.

Without CASSETTE it shows the session hub: the cassettes of the cassette
directory (the same as 'rpctap record' uses: --dir, $RPCTAP_DIR,
$XDG_STATE_HOME/rpctap/cassettes or ~/.local/state/rpctap/cassettes),
newest first, with each session's start, state (live, ended, cut),
protocol, duration, frames, the errors and warnings stored at record time,
and command. The list updates as sessions start, grow and end; files that
are not cassettes are not listed. Enter opens one; a live one is followed.

A cassette still being written (no end record yet) is followed: new records
appear as they are recorded and the list sticks to the bottom until you move.
A cassette whose recorder was killed opens with the cut shown in the title.
A file that is not a cassette, or is corrupt from its start, is reported on
one line with exit status 4 before the screen opens.

--dump WxH draws the screen without a terminal after typing --keys and
prints it as text (for scripts, bug reports and tests). Keys are typed as
written; <enter>, <esc>, <tab>, <bs>, <up>, <down>, <pgup>, <pgdn>, <home>,
<end>, <c-d> and <c-u> name special keys.

A live recording made with 'rpctap record --intercept' names its control
socket in the cassette's header: view attaches to it (or to --attach
SOCKET, whose session names its cassette) and shows how many frames are
held and the oldest hold in the title; H opens the held frames pane, where
you forward, edit, drop and inject frames and set breakpoints. The
breakpoints the viewer sets go when it does, and what they held is
forwarded (docs/intercept.md).

A cassette recorded with 'record --deep' is shown with the cassettes linked
to it in its directory (the MCP servers its ACP agent spawned) on one
timeline: each MCP frame beneath the ACP tool call that encloses it in
time, indented, marked with its server; --alone shows the cassette alone
(docs/viewer.md).`,
		Example: `  rpctap view                                  # pick a recording
  rpctap view session.cassette
  rpctap view --follow live.cassette            # while 'rpctap record' writes it
  rpctap view --dump 120x40 --keys 's' session.cassette   # print the stats screen`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &viewOptions{}
			fs.StringVar(&o.Dir, "dir", "", "cassette directory `DIR` for the picker (default: as for record)")
			// -o was this flag's shorthand before -o came to mean an output
			// file in every command; it stays, hidden, for one release.
			fs.StringVarP(&o.Dir, "old-dir", "o", "", "old spelling of --dir")
			fs.MarkHidden("old-dir")
			fs.BoolVarP(&o.Follow, "follow", "f", false, "follow new records (automatic for a cassette without an end record)")
			fs.StringVar(&o.Dump, "dump", "", "draw headless at WIDTHxHEIGHT, print the screen and exit")
			fs.StringVar(&o.Keys, "keys", "", "with --dump: keys to type first")
			fs.StringVar(&o.Attach, "attach", "", "attach to the control socket `SOCKET` of a session recorded with --intercept")
			fs.BoolVar(&o.Alone, "alone", false, "show the cassette alone, without the cassettes linked to it (record --deep)")
			return func(args []string, stdio Stdio) error { return runView(o, args, stdio) }
		},
	})
}

// viewCassetteDir is the directory the picker lists, resolved like record's.
func viewCassetteDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("RPCTAP_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "rpctap", "cassettes")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".", "cassettes")
	}
	return filepath.Join(home, ".local", "state", "rpctap", "cassettes")
}

func runView(o *viewOptions, args []string, stdio Stdio) error {
	if len(args) > 1 {
		return Usagef("view takes at most one cassette (got %d)", len(args))
	}
	if o.Keys != "" && o.Dump == "" {
		return Usagef("--keys needs --dump")
	}
	var w, h int
	if o.Dump != "" {
		var err error
		if w, h, err = viewer.ParseSize(o.Dump); err != nil {
			return Usagef("--dump: %v", err)
		}
	}
	if o.Attach != "" && len(args) == 0 {
		// The session says where it records.
		c, err := intercept.Dial(o.Attach)
		if err != nil {
			return Inputf("view --attach: %v", err)
		}
		st, err := c.List()
		c.Close()
		if err != nil || st.Cassette == "" {
			return Inputf("view --attach %s: the session names no cassette (%v); give its path too", o.Attach, err)
		}
		args = []string{st.Cassette}
	}
	if len(args) == 1 {
		_, err := viewOne(args[0], o, w, h, false, stdio)
		return err
	}
	dir := viewCassetteDir(o.Dir)
	if o.Dump != "" {
		return dumpPicker(dir, w, h, o.Keys, stdio)
	}
	return pickLoop(func(note, failed string) (string, error) {
		screen, err := newTerminalScreen()
		if err != nil {
			return "", err
		}
		p := viewer.NewPicker(dir, screen)
		if note != "" {
			p.SetNote(note, failed)
		}
		path, err := p.Run()
		if err != nil {
			return "", fmt.Errorf("view: %v", err)
		}
		return path, nil
	}, func(path string) (bool, error) { return viewOne(path, o, w, h, true, stdio) })
}

// pickLoop shows the picker, then the cassette chosen there, until the
// user quits: q in the cassette goes back to the picker (the App says
// WentBack), q in the picker (an empty choice), Q or Ctrl-C ends the loop.
// A chosen file that cannot be opened as a cassette (an input error: not a
// cassette, corrupt from its start, from a newer rpctap) brings the picker
// back saying why, with that file selected (pick's note and failed);
// other errors end the loop.
func pickLoop(pick func(note, failed string) (string, error), view func(path string) (back bool, err error)) error {
	note, failed := "", ""
	for {
		path, err := pick(note, failed)
		if err != nil || path == "" {
			return err // "" : the user quit the picker
		}
		note, failed = "", ""
		back, err := view(path)
		var ee *ExitError
		if errors.As(err, &ee) && ee.Code == ExitInput {
			note, failed = err.Error(), path
			continue
		}
		if err != nil || !back {
			return err
		}
	}
}

// viewOne shows one cassette (or dumps its screen); back reports that the
// user pressed q to return to the picker it came from (fromPicker).
func viewOne(path string, o *viewOptions, w, h int, fromPicker bool, stdio Stdio) (back bool, err error) {
	src, err := openForView(path)
	if err != nil {
		return false, err
	}
	defer src.Close()
	// The cassettes linked to it (record --deep: the MCP servers an ACP
	// agent spawned) are shown with it, on one timeline.
	var source viewer.Source = src
	ended, tailErr, name := src.Ended(), src.X.TailError(), path
	var links *viewer.LinkedSource
	if !o.Alone {
		if links = viewer.Link(path, src); links != nil {
			defer links.Close()
			// Followed while the parent records: a linked cassette cut
			// off (its recorder killed) under an ended parent is said so
			// in the title, not taken for a recording in progress.
			source, tailErr = links, links.TailError()
		}
	}
	if lp := src.X.Header().Parent; lp != nil {
		// A linked cassette viewed alone says whose it is.
		name += fmt.Sprintf(" (%s, linked from %s)", lp.Server, lp.Cassette)
	}
	store := viewer.NewStore(source)
	follow := o.Follow || (!ended && tailErr == nil)
	opts := viewer.Options{Name: name, Follow: follow, Back: fromPicker,
		Follower: &viewer.Follower{Store: store, Path: path}}
	sock := o.Attach
	if sock == "" && !src.Ended() {
		sock = src.X.Header().Control // a live intercepting session
	}
	if sock != "" {
		c, err := intercept.Dial(sock)
		switch {
		case err == nil && c.Attach() == nil:
			defer c.Close() // the viewer's breakpoints go with it
			opts.Control = c
		case o.Attach != "":
			return false, Inputf("view --attach: %v", err)
		}
		// A control socket named by a cassette whose session ended is
		// gone: view it as a recording.
	}
	if o.Dump != "" {
		if err := dumpView(store, opts, w, h, o.Keys, stdio); err != nil {
			return false, err
		}
		err := reportReadProblems("view", path, stdio.Err)
		if links != nil {
			for _, p := range links.Paths() {
				if e := reportReadProblems("view", p, stdio.Err); err == nil {
					err = e
				}
			}
		}
		return false, err
	}
	screen, err := newTerminalScreen()
	if err != nil {
		return false, err
	}
	opts.Screen = screen
	app := viewer.New(store, opts)
	if err := app.Run(); err != nil {
		return false, fmt.Errorf("view: %v", err)
	}
	return app.WentBack(), nil
}

// openForView opens a cassette or says in one line why it cannot (exit 4).
func openForView(path string) (*viewer.IndexSource, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, Inputf("%s: is a directory (rpctap view DIR? use --dir DIR for the picker)", path)
	}
	src, err := viewer.OpenCassette(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, Inputf("%s: %v", path, pe.Err)
		}
		return nil, Inputf("%s: %v", path, err)
	}
	return src, nil
}

// newTerminalScreen returns a screen on the controlling terminal, or a
// usage error (exit 2) in one line when there is none (a CI job, a pipe
// with no tty, `rpctap view FILE </dev/null` under a service manager). The
// screen is initialised once here to find out: tview would otherwise fail
// inside Run, after the viewer started its goroutines.
func newTerminalScreen() (tcell.Screen, error) {
	noTTY := func(err error) error {
		return &ExitError{Code: ExitUsage, NoHint: true,
			Err: fmt.Errorf("view needs a terminal (%v); without one, --dump WxH prints the screen and 'rpctap cat --format table' the frames", err)}
	}
	probe, err := tcell.NewScreen()
	if err != nil {
		return nil, noTTY(err)
	}
	if err := probe.Init(); err != nil {
		return nil, noTTY(err)
	}
	probe.Fini()
	screen, err := tcell.NewScreen()
	if err != nil {
		return nil, noTTY(err)
	}
	return screen, nil
}

func dumpView(store *viewer.Store, opts viewer.Options, w, h int, keys string, stdio Stdio) error {
	scr := tcell.NewSimulationScreen("UTF-8")
	opts.Screen = scr
	opts.Follower = nil
	app := viewer.New(store, opts)
	defer app.Close()
	scr.SetSize(w, h)
	if err := app.Settle(30 * time.Second); err != nil {
		return err
	}
	app.Draw()
	if err := app.Type(keys); err != nil {
		return err
	}
	if !app.Done() {
		app.Draw()
	}
	_, err := fmt.Fprint(stdio.Out, viewer.ScreenText(scr))
	return err
}

func dumpPicker(dir string, w, h int, keys string, stdio Stdio) error {
	scr := tcell.NewSimulationScreen("UTF-8")
	p := viewer.NewPicker(dir, scr)
	scr.SetSize(w, h)
	p.Draw()
	for _, r := range keys {
		ev := tcell.NewEventKey(tcell.KeyRune, r, tcell.ModNone)
		if r == '\n' {
			ev = tcell.NewEventKey(tcell.KeyEnter, 0, tcell.ModNone)
		}
		p.Key(ev)
		p.Draw()
	}
	_, err := fmt.Fprint(stdio.Out, viewer.ScreenText(scr))
	return err
}

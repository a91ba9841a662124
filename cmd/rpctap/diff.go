package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rpctap/rpctap/replay"
	"github.com/spf13/pflag"
)

type diffOptions struct {
	replayFlags
	Format string
}

func init() {
	register(&command{
		Name:    "diff",
		Summary: "semantic diff of two cassettes",
		Usage:   "diff [flags] A B",
		Long: `Compares the frames of two cassettes: frames are aligned in recorded order by
direction, kind and method or type, then compared with ids, times, the
protocol's volatile fields (session ids, cwd, timestamps, ...) and --ignore
fields left out. Prints what changed, what only A has (-) and what only B has
(+); exits 1 when the cassettes differ, 0 when they do not.`,
		Example: `  rpctap diff before.cassette after.cassette
  rpctap diff --format json --ignore /result/usage a.cassette b.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &diffOptions{}
			fs.StringVar(&o.Format, "format", "text", "output: text or json")
			o.define(fs, false)
			return func(args []string, stdio Stdio) error {
				if len(args) != 2 {
					return Usagef("diff needs two cassettes (got %d)", len(args))
				}
				if o.Format != "text" && o.Format != "json" {
					return Usagef("--format must be text or json, not %q", o.Format)
				}
				opts, err := o.options(fs)
				if err != nil {
					return err
				}
				return runDiff(args[0], args[1], o, opts, stdio)
			}
		},
	})
}

func runDiff(pa, pb string, o *diffOptions, opts []replay.Option, stdio Stdio) error {
	var recs [2]*replay.Recording
	for i, p := range []string{pa, pb} {
		r, err := replay.Open(p)
		if err != nil {
			return Inputf("diff: %v", err)
		}
		if r.Truncated != "" {
			fmt.Fprintf(stdio.Err, "rpctap diff: warning: %s is %s; comparing the complete records\n", p, r.Truncated)
		}
		for _, d := range r.Damage {
			fmt.Fprintf(stdio.Err, "rpctap diff: %s: %v\n", p, d)
		}
		recs[i] = r
	}
	d, err := replay.Diff(recs[0], recs[1], opts...)
	if err != nil {
		return Inputf("diff: %v", err)
	}
	if o.Format == "json" {
		if d.Frames == nil {
			d.Frames = []replay.FrameDiff{}
		}
		enc := json.NewEncoder(stdio.Out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return err
		}
	} else {
		writeDiffText(stdio.Out, d)
	}
	for _, r := range recs {
		if len(r.Damage) > 0 {
			return Inputf("diff: %s: %s; compared every readable record", r.Name, replay.DamageSummary(r.Damage))
		}
	}
	if d.Different() {
		return Exit(ExitFindings)
	}
	return nil
}

func writeDiffText(w io.Writer, d *replay.CassetteDiff) {
	fmt.Fprintf(w, "--- %s\n+++ %s\n", d.A, d.B)
	var changed, removed, added int
	for _, f := range d.Frames {
		what := fmt.Sprintf("%-3s %s %s", f.Dir, f.Kind, f.Method)
		switch f.Op {
		case "changed":
			changed++
			fmt.Fprintf(w, "~ #%d -> #%d  %s\n", f.A, f.B, what)
			for _, p := range f.Diff {
				fmt.Fprintf(w, "      %s\n", p)
			}
		case "removed":
			removed++
			fmt.Fprintf(w, "- #%d  %s\n      %s\n", f.A, what, f.Frame)
		case "added":
			added++
			fmt.Fprintf(w, "+ #%d  %s\n      %s\n", f.B, what, f.Frame)
		}
	}
	if d.ExitDiff {
		fmt.Fprintf(w, "~ exit: %s -> %s\n", exitText(d.ExitA), exitText(d.ExitB))
	}
	if !d.Different() {
		fmt.Fprintf(w, "no differences (%d frames, protocol %s)\n", d.Same, d.Protocol)
		return
	}
	fmt.Fprintf(w, "%d same, %d changed, %d only in A, %d only in B\n", d.Same, changed, removed, added)
}

func exitText(e *replay.Exit) string {
	switch {
	case e == nil:
		return "(none recorded)"
	case e.Signal != "":
		return e.Signal
	}
	return fmt.Sprint(e.Code)
}

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/internal/linked/linkedfix"
)

// timelineRows is the frame list of a view --dump: each row's method
// column and summary with runs of blanks made one.
func timelineRows(screen string) []string {
	var rows []string
	row := regexp.MustCompile(`^.\s*\d+ \d+:\d\d\.\d{3}`)
	for _, l := range strings.Split(screen, "\n") {
		if row.MatchString(l) {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
	}
	return rows
}

// `rpctap view --dump` of a deep recording's ACP cassette prints the one
// timeline: the MCP servers' frames among the ACP frames in time order,
// each tools/call beneath the ACP tool call that encloses it; --alone
// prints the ACP cassette as before; a linked cassette viewed alone says
// whose it is.
func TestViewLinkedDump(t *testing.T) {
	set, err := linkedfix.Write(t.TempDir(), linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := viewMain("view", "--dump", "150x60", set.Parent)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "+ linked files, git · acp · 44 records") {
		t.Errorf("title:\n%s", out)
	}
	rows := timelineRows(out)
	if len(rows) != 44 {
		t.Fatalf("%d rows, want 44 (18 ACP, 13 files, 13 git):\n%s", len(rows), out)
	}
	var got []string
	for _, r := range rows {
		// The session's turn: from the prompt to its answer.
		if strings.Contains(r, "tool_call") || strings.Contains(r, "└") || strings.Contains(r, "files: notifications/message") {
			f := strings.Fields(r)
			got = append(got, strings.Join(f[3:], " "))
		}
	}
	want := []string{
		"← notif session/update 194B tool_call Read README.md read pending",
		"← notif session/update 166B tool_call_update in_progress",
		"→ req └ files: tools/call 2 109B tool read_file",
		"← resp └ files: tools/call 2 95B 10.0ms",
		"← notif session/update 237B tool_call_update completed",
		"← notif session/update 197B tool_call git status execute in_progress",
		"→ req └ git: tools/call 2 88B tool status",
		"← resp └ git: tools/call 2 115B 10.0ms",
		"← notif session/update 161B tool_call_update failed",
		"← notif files: notifications/message 99B info \"cache flushed\"",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the turn:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	code, out, _ = viewMain("view", "--alone", "--dump", "150x60", set.Parent)
	if code != 0 || strings.Contains(out, "files") || len(timelineRows(out)) != 19 {
		t.Errorf("--alone: exit %d\n%s", code, out)
	}
	// export --alone: the parent's spans only; a flag for otlp only.
	alone := filepath.Join(t.TempDir(), "alone.json")
	if code, _, errs := viewMain("export", "--format", "otlp", "--alone", "-o", alone, set.Parent); code != 0 {
		t.Errorf("export --alone: exit %d: %s", code, errs)
	} else if b, _ := os.ReadFile(alone); strings.Contains(string(b), linkedfix.Files) || !strings.Contains(string(b), "execute_tool Read README.md") {
		t.Errorf("export --alone holds the linked cassettes' spans, or not the parent's")
	}
	if code, _, errs := viewMain("export", "--format", "har", "--alone", set.Parent); code != 2 || !strings.Contains(errs, "--alone is for --format otlp") {
		t.Errorf("export --format har --alone: exit %d: %s", code, errs)
	}
	code, out, _ = viewMain("view", "--dump", "150x10", set.Files)
	if code != 0 || !strings.Contains(out, "(files, linked from "+linkedfix.Parent+")") {
		t.Errorf("the files cassette alone: exit %d\n%s", code, out)
	}
}

// Damaged linked sets, as a user meets them: a linked cassette cut off by
// a killed recorder (shown to its last record, a warning, exit 0), one
// damaged in the middle (shown around the damage, exit 4 naming it, the
// title still saying acp), two
// cassettes claiming the same request and server (both shown, told
// apart). export --format otlp says the same and writes valid JSON.
func TestLinkedDamaged(t *testing.T) {
	cut, err := linkedfix.Write(t.TempDir(), linkedfix.Options{CutFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := viewMain("view", "--dump", "220x60", cut.Parent)
	if code != 0 || !strings.Contains(errs, cut.Files+" is truncated after record 6") || !strings.Contains(out, "linked files: truncated after record 6") {
		t.Errorf("cut: exit %d\n%s%s", code, out, errs)
	}
	exportJSON := func(path string) (int, string) {
		t.Helper()
		o := filepath.Join(t.TempDir(), "o.json")
		code, _, errs := viewMain("export", "--format", "otlp", "-o", o, path)
		b, err := os.ReadFile(o)
		var v any
		if err != nil || json.Unmarshal(b, &v) != nil {
			t.Errorf("export of %s: no valid JSON written (%v): %s", path, err, errs)
		}
		return code, errs
	}
	if code, errs := exportJSON(cut.Parent); code != 0 || !strings.Contains(errs, "warning: "+cut.Files+": truncated after record 6") {
		t.Errorf("export of the cut set: exit %d: %s", code, errs)
	}

	bad, err := linkedfix.Write(t.TempDir(), linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(bad.Git)
	for i := len(b) / 2; i < len(b)/2+40; i++ {
		b[i] ^= 0x5a
	}
	os.WriteFile(bad.Git, b, 0o600)
	code, out, errs = viewMain("view", "--dump", "220x60", bad.Parent)
	// the title names the parent's protocol, not the last linked one's
	// (the records read before the damage say it)
	if code != 4 || !strings.Contains(errs, bad.Git+": damaged cassette") || !strings.Contains(out, "linked git: ") || !strings.Contains(out, "└ files: tools/call") ||
		!strings.Contains(strings.SplitN(out, "\n", 2)[0], " · acp · ") {
		t.Errorf("damaged git: exit %d\n%s%s", code, out, errs)
	}
	if code, errs := exportJSON(bad.Parent); code != 4 || !strings.Contains(errs, bad.Git+": 1 damaged range") {
		t.Errorf("export of the damaged set: exit %d: %s", code, errs)
	}

	dup, err := linkedfix.Write(t.TempDir(), linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(dup.Files)
	os.WriteFile(filepath.Join(dup.Dir, "copy.cassette"), b, 0o600)
	code, out, _ = viewMain("view", "--dump", "150x70", dup.Parent)
	if code != 0 || !strings.Contains(out, "+ linked files, files#2, git") || strings.Count(out, "└ files#2: tools/call") != 2 {
		t.Errorf("two cassettes claiming one request: exit %d\n%s", code, out)
	}
}

// A full disk on stdout: view --dump and export -o - say so in one line
// and exit 125, for a linked set as for one cassette.
func TestLinkedDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	rp := rpctapPath(t)
	set, err := linkedfix.Write(t.TempDir(), linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"view", "--dump", "150x60", set.Parent}, {"export", "--format", "otlp", "-o", "-", set.Parent}} {
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(rp, args...)
		cmd.Stdout = full
		var errb strings.Builder
		cmd.Stderr = &errb
		err = cmd.Run()
		full.Close()
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if cmd.ProcessState.ExitCode() != 125 || len(lines) != 1 || !strings.Contains(lines[0], "no space left on device") {
			t.Errorf("%v: %v, stderr:\n%s", args, err, errb.String())
		}
	}
}

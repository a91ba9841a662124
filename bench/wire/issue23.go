package main

// The figures of issue 23 ("a wrapped child costs little more than a
// pipe"): what every rpctap process pays to start, whether the recorder's
// validation kept up, and what check, diff and the HTML report cost on a
// cassette of this run. Each is printed beside its reference from the same
// run (cat, single-core zstd -1, the direct pipe) in the report's
// "Issue 23" table.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rpctap/rpctap/cassette"
)

// validation is what a recorded cassette says of the recorder's
// validation: how many findings it stored, and the record at which it
// stopped because the validator fell behind (0: it kept up).
type validation struct {
	Read     bool
	Findings int
	Stopped  uint64
}

func validationOf(path string) validation {
	rd, err := cassette.Open(path)
	if err != nil {
		return validation{}
	}
	defer rd.Close()
	v := validation{Read: true}
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return v
		}
		var de *cassette.DamageError
		if errors.As(err, &de) {
			continue
		}
		if err != nil {
			return v
		}
		if rec.K == cassette.KindViolation {
			if rec.Code == "recorder.validation-stopped" {
				v.Stopped = rec.Ref
			} else {
				v.Findings++
			}
		}
	}
}

// startupFigures is what rpctap costs before it does anything.
type startupFigures struct {
	BinaryBytes      int64
	VersionKiB       int64 // peak RSS of rpctap --version (GNU time), 0: not measured
	VersionNote      string
	TapKiB, SinkKiB  int64 // VmHWM of an idle record -- cat
	CatKiB           int64 // VmHWM of an idle cat, for scale
	DiffCPU, CheckNs int64 // CPU of diff A A and check A on a kept cassette
	CheckFrames      string
	HTMLBytes        int64
	HTMLCPU          int64
	CassetteRaw      int64 // raw bytes of the session in that cassette
	Err              string
}

func (r *runner) issue23() {
	f := &r.rep.startup
	if r.rpctap == "" {
		return
	}
	if st, err := os.Stat(r.rpctap); err == nil {
		f.BinaryBytes = st.Size()
	}
	if gt, err := exec.LookPath("/usr/bin/time"); err == nil {
		var runs []int64
		for range 5 {
			cmd := exec.Command(gt, "-f", "%M", r.rpctap, "--version")
			var errb bytes.Buffer
			cmd.Stderr, cmd.Stdout = &errb, io.Discard
			if cmd.Run() == nil {
				lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
				if n, err := strconv.ParseInt(lines[len(lines)-1], 10, 64); err == nil {
					runs = append(runs, n)
				}
			}
		}
		if len(runs) > 0 {
			sort.Slice(runs, func(i, j int) bool { return runs[i] < runs[j] })
			f.VersionKiB = runs[len(runs)/2]
		}
	} else {
		f.VersionNote = "not measured: GNU time is not installed (apt-get install time)"
	}
	f.TapKiB, f.SinkKiB, f.CatKiB = r.idleRSS()

	// One agent-mix recording kept for check, diff and export.
	s, ok := r.find("record")
	if !ok {
		return
	}
	cas := filepath.Join(r.tmp, "issue23-mix.cassette")
	p := r.params("mix")
	m, err := r.session(s, "mix", p, -1, 0, nil, cas)
	if err != nil {
		f.Err = oneLine(err.Error())
		return
	}
	f.CassetteRaw = m.Res.Raw
	cpu := func(args ...string) (int64, string, error) {
		cmd := exec.Command(r.rpctap, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if cmd.ProcessState == nil {
			return 0, "", err
		}
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 1 {
			err = nil // check's findings, diff's differences
		}
		return int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()), out.String(), err
	}
	var out string
	if f.CheckNs, out, err = cpu("check", cas); err != nil {
		f.Err = "check: " + oneLine(out)
	}
	f.CheckFrames = strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if f.DiffCPU, out, err = cpu("diff", cas, cas); err != nil {
		f.Err = "diff: " + oneLine(out)
	}
	html := filepath.Join(r.tmp, "issue23.html")
	if f.HTMLCPU, out, err = cpu("export", "--format", "html", "-o", html, cas); err != nil {
		f.Err = "export: " + oneLine(out)
	}
	if st, err := os.Stat(html); err == nil {
		f.HTMLBytes = st.Size()
	}
}

// idleRSS starts `rpctap record -- cat` (and a lone cat) and reads their
// peak RSS once the cassette is open and they are idle.
func (r *runner) idleRSS() (tap, sink, cat int64) {
	cas := filepath.Join(r.tmp, "issue23-idle.cassette")
	cmd := exec.Command(r.rpctap, "record", "-o", cas, "--", "cat")
	in, err := cmd.StdinPipe()
	if err != nil || cmd.Start() != nil {
		return
	}
	lone := exec.Command("cat")
	lin, _ := lone.StdinPipe()
	lone.Start()
	defer func() {
		in.Close()
		cmd.Wait()
		lin.Close()
		lone.Wait()
		os.Remove(cas)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := os.Stat(cas); err == nil && st.Size() > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if m, ok := procMem(cmd.Process.Pid); ok {
		tap = m.hwm
	}
	for _, c := range childrenOf(cmd.Process.Pid) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c)); bytes.Contains(b, []byte("__sink")) {
			if m, ok := procMem(c); ok {
				sink = m.hwm
			}
		}
	}
	if lone.Process != nil {
		if m, ok := procMem(lone.Process.Pid); ok {
			cat = m.hwm
		}
	}
	return
}

// issue23Table writes the figures of issue 23, each beside its reference
// measured in the same run.
func (rp *report) issue23Table(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	f := rp.startup
	if f.BinaryBytes == 0 && len(rp.runs["mix"]) == 0 {
		return
	}
	p("#### Issue 23: what a wrapped child costs (figures of this run, each against its reference in the same run)\n\n")
	p("| figure | measured | reference (same run) | ratio | target |\n|---|---|---|---|---|\n")
	ver := "–"
	if f.VersionKiB > 0 {
		ver = fmt.Sprintf("%.1f MiB", mib(f.VersionKiB))
	} else if f.VersionNote != "" {
		ver = f.VersionNote
	}
	catIdle := "–"
	if f.CatKiB > 0 {
		catIdle = fmt.Sprintf("idle cat %.1f MiB", mib(f.CatKiB))
	}
	ratio := func(a, b int64) string {
		if a <= 0 || b <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(b))
	}
	p("| `rpctap --version` peak RSS (static build) | %s | %s | %s | ≤ 8 MiB |\n", ver, catIdle, ratio(f.VersionKiB, f.CatKiB))
	if f.BinaryBytes > 0 {
		p("| binary size | %.1f MB | – | – | ≤ 15 MB |\n", float64(f.BinaryBytes)/1e6)
	}
	if f.TapKiB > 0 {
		p("| idle tap / idle sink peak RSS (`record -- cat`) | %.1f / %.1f MiB | %s | %s / %s | – |\n", mib(f.TapKiB), mib(f.SinkKiB), catIdle, ratio(f.TapKiB, f.CatKiB), ratio(f.SinkKiB, f.CatKiB))
	}
	for _, w := range []string{"mix", "mixstream"} {
		// With --alt, the candidate's figures follow the checkout's, from
		// the same repetitions.
		for _, su := range []string{"record", "record-alt"} {
			if len(rp.bySetup(w, su)) > 0 {
				rp.issue23Rows(b, w, su)
			}
		}
	}
	if f.CheckNs > 0 {
		p("| `diff` of the kept agent-mix cassette with itself ÷ `check` of it, CPU | %.2f s | check %.2f s (%s) | %.2f | ≤ 2 |\n",
			float64(f.DiffCPU)/1e9, float64(f.CheckNs)/1e9, f.CheckFrames, float64(f.DiffCPU)/float64(f.CheckNs))
	}
	if f.HTMLBytes > 0 {
		p("| HTML report of that cassette: size ÷ the session's raw bytes; export CPU | %.1f MB, %.2f s | raw %.1f MB | %.3f | 200k exchanges ≤ 30 MB: TestHTMLLargeInChromium |\n",
			float64(f.HTMLBytes)/1e6, float64(f.HTMLCPU)/1e9, float64(f.CassetteRaw)/1e6, float64(f.HTMLBytes)/float64(f.CassetteRaw))
	}
	if len(rp.bySetup("ping", "record")) > 0 {
		p("| added round trip (200 B ping) ÷ cat's added, p50 / p99 | | | %s / %s | no worse than before |\n",
			rp.addedRatio("ping", "record", .5).fmt(2), rp.addedRatio("ping", "record", .99).fmt(2))
	}
	var small, large *rssRow
	for i := range rp.rss {
		r := &rp.rss[i]
		if r.Setup != "record" || r.Err != "" {
			continue
		}
		if small == nil || r.Size < small.Size {
			small = r
		}
		if large == nil || r.Size > large.Size {
			large = r
		}
	}
	if small != nil && large != nil && small != large {
		p("| tap / sink peak RSS, %.0f MB ÷ %.0f MB session (flat: 1.0) | %.1f / %.1f MiB at %.0f MB | %.1f / %.1f MiB at %.0f MB | %.2f / %.2f | flat |\n",
			float64(large.Size)/1e6, float64(small.Size)/1e6, mib(large.MainHWM), mib(large.SinkHWM), float64(large.Size)/1e6,
			mib(small.MainHWM), mib(small.SinkHWM), float64(small.Size)/1e6,
			float64(large.MainHWM)/float64(small.MainHWM), float64(large.SinkHWM)/float64(small.SinkHWM))
	}
	if f.Err != "" {
		p("\nIssue 23 measurement failed: %s\n", f.Err)
	}
	p("\n")
}

func cpuPerGiB(m meas) float64 { return float64(m.CPUNs) / 1e9 / (float64(m.Res.Raw) / (1 << 30)) }

// issue23Rows writes the rows of workload w measured on set-up su (record,
// or record-alt for the candidate of --alt).
func (rp *report) issue23Rows(b *strings.Builder, w, su string) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	label := w
	if su != "record" {
		label = w + " (" + su + ")"
	}

	main := rp.over(w, su, func(m meas) float64 { return mib(m.MainHWM) })
	sink := rp.over(w, su, func(m meas) float64 { return mib(m.SinkHWM) })
	cat := rp.over(w, "cat", func(m meas) float64 { return mib(m.MainHWM) })
	p("| %s: tap peak RSS recording at full speed | %s MiB | both cats %s MiB | %s | ≤ 8 MiB |\n", label, main.fmt(1), cat.fmt(1),
		rp.paired(w, su, "cat", func(m, c meas) float64 { return float64(m.MainHWM) / float64(c.MainHWM) }).fmt(2))
	p("| %s: sink peak RSS, same sessions | %s MiB | | | ≤ 16 MiB |\n", label, sink.fmt(1))
	inv := func(s spread) spread { return spread{Med: 1 / s.Med, Min: 1 / s.Max, Max: 1 / s.Min} }
	z := rp.cpuVsZstd(w, su)
	p("| %s: rpctap's CPU (tap + sink, child's subtracted) ÷ one-core zstd -1's on the same bytes | %s s/GiB | cat %s s/GiB | %s | ≤ 3 |\n", label,
		rp.over(w, su, cpuPerGiB).fmt(2), rp.over(w, "cat", cpuPerGiB).fmt(2), inv(z).fmt(2))
	zs := rp.zstd[w]
	cz := rp.over(w, su, func(m meas) float64 {
		if m.Rep < 0 || m.Rep >= len(zs) || m.Cassette < 0 || zs[m.Rep].StreamRatio == 0 {
			return math.NaN()
		}
		return float64(m.Cassette) / float64(m.Res.Raw) / zs[m.Rep].StreamRatio
	})
	p("| %s: cassette ÷ zstd -1 of the raw bytes of both directions | %s of raw | | %s | ≤ 1.0 |\n", label,
		rp.over(w, su, func(m meas) float64 { return float64(m.Cassette) / float64(m.Res.Raw) }).fmt(3), cz.fmt(3))
	kept, n, findings := 0, 0, 0
	for _, m := range rp.bySetup(w, su) {
		if m.Val.Read {
			n++
			findings += m.Val.Findings
			if m.Val.Stopped == 0 {
				kept++
			}
		}
	}
	p("| %s: validation kept up (no `recorder.validation-stopped`) | %d of %d sessions; %d findings stored | | | every session, 0 findings (a valid session) |\n", label, kept, n, findings)
}

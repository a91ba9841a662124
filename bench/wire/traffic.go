package main

// The traffic workload plays the real captures of ../shared/traffic (each
// NAME.in, what a parent wrote, and NAME.out, what its child wrote) as
// sessions at full speed, in a causal order: the parent half and the child
// half each write their next frame only once they have read every frame
// of the other half that precedes it in the merged script (mergeCausal).
// Both halves compute the same script from the files, so the child is
// this program again, given the capture's path.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// scriptLine is one frame of a played session.
type scriptLine struct {
	parent bool // written by the parent (NAME.in)
	data   []byte
}

// trafficDir is ../shared/traffic beside the module root, "" when absent.
func trafficDir() string {
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	d := filepath.Join(root, "..", "shared", "traffic")
	if _, err := os.Stat(filepath.Join(d, "README.md")); err != nil {
		return ""
	}
	return d
}

// trafficCaptures lists the newline-framed captures (LSP's Content-Length
// capture is left out: the bench's halves read lines).
func trafficCaptures(dir string) []string {
	ins, _ := filepath.Glob(filepath.Join(dir, "*.in"))
	var out []string
	for _, in := range ins {
		base := strings.TrimSuffix(in, ".in")
		if strings.HasPrefix(filepath.Base(base), "lsp-") {
			continue
		}
		if _, err := os.Stat(base + ".out"); err == nil {
			out = append(out, base)
		}
	}
	sort.Strings(out)
	return out
}

// loadScript reads a capture pair and merges it in a causal order.
func loadScript(base string) ([]scriptLine, error) {
	read := func(path string) ([][]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var lines [][]byte
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				if l[len(l)-1] != '\n' {
					l = append(append([]byte{}, l...), '\n')
				}
				lines = append(lines, l)
			}
		}
		return lines, nil
	}
	in, err := read(base + ".in")
	if err != nil {
		return nil, err
	}
	out, err := read(base + ".out")
	if err != nil {
		return nil, err
	}
	return mergeCausal(in, out), nil
}

// rpcShape is what the merge needs of a frame: its id, and whether it is
// an answer (an id with a result or an error, no method).
func rpcShape(line []byte) (id string, answer bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return "", false
	}
	_, method := m["method"]
	_, res := m["result"]
	_, e := m["error"]
	return string(m["id"]), !method && (res || e) && m["id"] != nil
}

// mergeCausal interleaves the two halves of a capture (tee keeps only the
// order within each): an answer comes after the request it answers; the
// child answers as soon as it can; otherwise the parent goes on while its
// next frame is not an answer still waiting for its request; otherwise the
// child says what it has to say (notifications, its own requests). When
// neither may go (a capture whose ids do not pair), the parent goes.
func mergeCausal(in, out [][]byte) []scriptLine {
	asked := [2]map[string]int{{}, {}} // by side (0 parent, 1 child): requests not yet answered, by id
	var s []scriptLine
	i, j := 0, 0
	ready := func(side int, l []byte) (bool, bool) { // may go now; is an answer
		id, ans := rpcShape(l)
		if !ans {
			return true, false
		}
		return asked[1-side][id] > 0, true
	}
	emit := func(side int, l []byte) {
		id, ans := rpcShape(l)
		if ans {
			if asked[1-side][id] > 0 {
				asked[1-side][id]--
			}
		} else if id != "" && id != "null" {
			asked[side][id]++
		}
		s = append(s, scriptLine{parent: side == 0, data: l})
	}
	for i < len(in) || j < len(out) {
		if j < len(out) {
			if ok, ans := ready(1, out[j]); ok && ans {
				emit(1, out[j])
				j++
				continue
			}
		}
		if i < len(in) {
			if ok, _ := ready(0, in[i]); ok || j >= len(out) {
				emit(0, in[i])
				i++
				continue
			}
		}
		if j < len(out) {
			if ok, _ := ready(1, out[j]); ok || i >= len(in) {
				emit(1, out[j])
				j++
				continue
			}
		}
		emit(0, in[i]) // ids that do not pair: keep going
		i++
	}
	return s
}

// playHalf plays one half of a script: writes its own frames, and reads
// (and checks) the other half's.
func playHalf(script []scriptLine, parent bool, r *lineReader, w *lineWriter) error {
	for k, l := range script {
		if l.parent == parent {
			if err := w.write(l.data); err != nil {
				return fmt.Errorf("frame %d: %v", k, err)
			}
			continue
		}
		got, err := r.next()
		if err != nil {
			return fmt.Errorf("frame %d: reading: %v", k, err)
		}
		if !bytes.Equal(got, l.data) {
			return fmt.Errorf("frame %d: got %.80q, want %.80q", k, got, l.data)
		}
	}
	return nil
}

// runTrafficChild is the child half: it plays the script, then waits for
// the parent to close its stdin and writes its CPU time to p.Stats.
func runTrafficChild(p params, stdin io.Reader, stdout io.Writer) error {
	script, err := loadScript(p.Trace)
	if err != nil {
		return err
	}
	in := newLineReader(stdin)
	if err := playHalf(script, false, in, &lineWriter{w: stdout}); err != nil {
		return err
	}
	io.Copy(io.Discard, stdin)
	return os.WriteFile(p.Stats, []byte(strconv.FormatInt(cpuSelf(), 10)), 0o600)
}

// runTraffic is the parent half.
func runTraffic(c *parentConn, p params) (*result, error) {
	script, err := loadScript(p.Trace)
	if err != nil {
		return nil, err
	}
	res := &result{StatsFile: p.Stats}
	m0 := c.moved()
	if err := playHalf(script, true, c.out, c.in); err != nil {
		return nil, err
	}
	res.Payload = c.moved() - m0
	res.Raw = res.Payload
	return res, nil
}

func (r *runner) trafficWorkload() {
	dir := trafficDir()
	if dir == "" {
		r.rep.notes = append(r.rep.notes, "traffic workload skipped: ../shared/traffic is not beside the checkout")
		return
	}
	if r.rep.trafficZ == nil {
		r.rep.trafficZ = map[string]float64{}
	}
	n := len(r.rep.setups)
	for _, base := range trafficCaptures(dir) {
		name := filepath.Base(base)
		script, err := loadScript(base)
		if err != nil {
			r.fail("traffic", name, err)
			continue
		}
		var raw []byte
		for _, l := range script {
			raw = append(raw, l.data...)
		}
		if _, _, ratio, err := zstdMeasureCPU(raw, 0); err == nil {
			r.rep.trafficZ[name] = ratio
		}
		w := "traffic:" + name
		for rep := 0; rep < r.cfg.Reps; rep++ {
			for i := 0; i < n; i++ {
				s := r.rep.setups[(i+rep)%n]
				if s.isReplay() {
					continue
				}
				p := params{Workload: "traffic", Seed: r.cfg.Seed, Trace: base, Stats: filepath.Join(r.tmp, fmt.Sprintf("stats-%s-%s-%d", name, s.Name, rep))}
				m, err := r.session(s, "traffic", p, rep, 0, nil, "")
				if err != nil {
					r.fail(w, fmt.Sprintf("%s rep %d", s.Name, rep+1), err)
					continue
				}
				m.Res.Lat = []int64{int64(len(script))}
				r.rep.runs[w] = append(r.rep.runs[w], m)
			}
		}
		fmt.Fprintf(r.log, "wire: traffic %s: %d frames, %d bytes\n", name, len(script), len(raw))
	}
}

// trafficTable reports the traffic workload.
func (rp *report) trafficTable(b *strings.Builder) {
	var names []string
	for w := range rp.runs {
		if n, ok := strings.CutPrefix(w, "traffic:"); ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("#### Real traffic (../shared/traffic), each capture played at full speed in a causal order by its two halves\n\n")
	p("CPU per session in ms (the sessions are a few KB: rpctap's start-up dominates); cassette ÷ one-core zstd -1 of the session's raw bytes.\n\n")
	p("| capture | frames | bytes | cat CPU ms | record CPU ms (tap + sink) | record ÷ cat | cassette ÷ zstd -1 of raw | validation kept up; findings stored |\n|---|---|---|---|---|---|---|---|\n")
	for _, n := range names {
		w := "traffic:" + n
		rec := rp.bySetup(w, "record")
		if len(rec) == 0 {
			continue
		}
		var any meas
		for _, m := range rec {
			any = m
		}
		cpuMs := func(m meas) float64 { return float64(m.CPUNs) / 1e6 }
		kept, total, findings := 0, 0, 0
		for _, m := range rec {
			if m.Val.Read {
				total++
				findings = m.Val.Findings
				if m.Val.Stopped == 0 {
					kept++
				}
			}
		}
		cz := "–"
		if z := rp.trafficZ[n]; z > 0 {
			cz = rp.over(w, "record", func(m meas) float64 { return float64(m.Cassette) / float64(m.Res.Raw) / z }).fmt(2)
		}
		p("| %s | %d | %d | %s | %s | %s | %s | %d of %d; %d |\n", n, any.Res.Lat[0], any.Res.Raw,
			rp.over(w, "cat", cpuMs).fmt(1), rp.over(w, "record", cpuMs).fmt(1),
			rp.paired(w, "record", "cat", func(m, c meas) float64 { return float64(m.CPUNs) / float64(c.CPUNs) }).fmt(1),
			cz, kept, total, findings)
	}
	p("\n")
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// meas is one session of one set-up.
type meas struct {
	Setup string
	Rep   int
	Res   *result
	CPUNs int64 // relay CPU (rpctap + sink, or both cats)
	// ParentNs is the benchmark process's own CPU during the session (the
	// parent's work; not measured for ping sessions, which run interleaved).
	ParentNs int64
	MainHWM  int64 // KiB, relay process(es)
	SinkHWM  int64 // KiB, rpctap's children other than the bench child
	Shared   int64 // KiB, peak with the binary's shared file pages counted once (sampled)
	Cassette int64 // bytes; -1 when the set-up writes none
	Val      validation
}

type zstdRun struct {
	StreamMBps, StreamCPUMBps, StreamRatio float64
	FlushMBps, FlushRatio                  float64
}

type rssRow struct {
	Setup                    string
	Size                     int64
	MainHWM, SinkHWM, Shared int64
	Err                      string
}

type report struct {
	cfg       config
	setups    []setup
	notes     []string
	runs      map[string][]meas
	zstd      map[string][]zstdRun
	capBytes  map[string]int
	rss       []rssRow
	stall     []meas
	startup   startupFigures
	trafficZ  map[string]float64 // traffic: zstd -1 ratio of each capture's bytes
	errs      []string
	warnings  []string // what rpctap printed on stderr
	calib     []string // zstd ratios of the generated text and of real files, for comparison
	machine   []string
	started   time.Time
	elapsed   time.Duration
	loadStart string
	loadEnd   string
}

type runner struct {
	cfg    config
	log    io.Writer
	tmp    string
	self   string
	rpctap string
	pool   []byte
	poolF  string
	rep    *report
	seen   map[string]int
}

func run(cfg config, log io.Writer) (*report, error) {
	r := &runner{cfg: cfg, log: log}
	rep := &report{cfg: cfg, runs: map[string][]meas{}, zstd: map[string][]zstdRun{}, capBytes: map[string]int{},
		started: time.Now(), loadStart: loadavg()}
	r.rep = rep
	rep.machine = machineInfo()
	var err error
	if r.tmp, err = os.MkdirTemp("", "wirebench-"); err != nil {
		return nil, err
	}
	if cfg.Keep {
		fmt.Fprintf(log, "wire: keeping %s\n", r.tmp)
	} else {
		defer os.RemoveAll(r.tmp)
	}
	if r.self, err = os.Executable(); err != nil {
		return nil, err
	}
	r.pool = newPool(cfg.Seed, cfg.PoolSize)
	r.poolF = filepath.Join(r.tmp, "pool")
	if err := os.WriteFile(r.poolF, r.pool, 0o600); err != nil {
		return nil, err
	}

	rep.calib = calibrate(r.pool)

	// Which set-ups can run.
	wantTap := false
	for _, name := range cfg.Setups {
		if s, ok := knownSetup(name, cfg.FwdArgs); ok && s.Kind == "rpctap" {
			wantTap = true
		}
	}
	hasRecord, hasReplay := false, false
	if wantTap {
		r.rpctap = cfg.Rpctap
		if r.rpctap == "" {
			fmt.Fprintf(log, "wire: building ./cmd/rpctap\n")
			if r.rpctap, err = buildRpctap(r.tmp); err != nil {
				rep.notes = append(rep.notes, "rpctap set-ups skipped: "+oneLine(err.Error()))
			}
		}
		if r.rpctap != "" {
			hasRecord, hasReplay = hasCommand(r.rpctap, "record"), hasCommand(r.rpctap, "replay")
		}
	}
	setups := cfg.Setups
	if cfg.Alt != "" {
		// The same rpctap set-ups again with the alternative binary, to
		// compare a change with the checkout in one run.
		for _, name := range cfg.Setups {
			if s, ok := knownSetup(name, cfg.FwdArgs); ok && s.Kind == "rpctap" && !s.isReplay() {
				setups = append(setups, name+"-alt")
			}
		}
	}
	for _, name := range setups {
		alt := strings.HasSuffix(name, "-alt") && cfg.Alt != ""
		s, ok := knownSetup(strings.TrimSuffix(name, "-alt"), cfg.FwdArgs)
		if !ok {
			return nil, fmt.Errorf("unknown set-up %q", name)
		}
		if alt {
			s.Name, s.Bin = name, cfg.Alt
			s.Note = "as `" + strings.TrimSuffix(name, "-alt") + "` with the alternative binary " + cfg.Alt
		}
		if s.Kind == "rpctap" {
			switch {
			case r.rpctap == "":
				continue
			case s.isReplay() && !hasReplay:
				rep.notes = append(rep.notes, "set-up "+name+" skipped: this rpctap has no `replay` command yet")
				continue
			case !s.isReplay() && !hasRecord:
				rep.notes = append(rep.notes, "set-up "+name+" skipped: this rpctap has no `record` command yet")
				continue
			}
		}
		rep.setups = append(rep.setups, s)
	}
	if len(rep.setups) == 0 {
		return nil, fmt.Errorf("no set-up can run")
	}

	for _, w := range cfg.Workloads {
		switch w {
		case "ping", "pingseq", "mix", "mixstream", "mb":
			r.workload(w)
		case "rss":
			r.rssWorkload()
		case "stall":
			r.stallWorkload()
		case "issue23":
			r.issue23()
		case "traffic":
			r.trafficWorkload()
		}
	}
	rep.elapsed = time.Since(rep.started)
	rep.loadEnd = loadavg()
	return rep, nil
}

func (r *runner) params(w string) params {
	p := params{Workload: w, Seed: r.cfg.Seed, Pool: r.poolF}
	switch w {
	case "ping", "pingseq":
		p.Workload = "ping" // pingseq: the same sessions, one set-up after another
		p.N = r.cfg.PingN
		p.Pool = "" // the ping child needs no text pool: its start-up is then just a process start
	case "mix":
		p.N, p.BigEvery = r.cfg.MixTurns, r.cfg.BigEvery
	case "mixstream":
		p.Bytes = r.cfg.StreamBytes
	case "mb":
		p.N = r.cfg.MBFrames
	}
	return p
}

func (r *runner) find(name string) (setup, bool) {
	for _, s := range r.rep.setups {
		if s.Name == name {
			return s, true
		}
	}
	return setup{}, false
}

func (r *runner) workload(w string) {
	p := r.params(w)
	// Warm-up (untimed): a direct session that also captures the session's
	// bytes for the in-process zstd measurement, and a recording that the
	// replay set-up plays back.
	var capture []byte
	var cp *[]byte
	if w == "mix" || w == "mixstream" {
		cp = &capture
	}
	direct, _ := knownSetup("direct", "")
	if _, err := r.session(direct, w, p, -1, 0, cp, ""); err != nil {
		r.fail(w, "warm-up direct", err)
		return
	}
	replaySrc := ""
	if _, ok := r.find("replay"); ok {
		record, _ := knownSetup("record", "")
		path := filepath.Join(r.tmp, w+"-replay-source.cassette")
		if _, err := r.session(record, w, p, -1, 0, nil, path); err != nil {
			r.fail(w, "recording the replay source", err)
		} else {
			replaySrc = path
		}
	}
	r.rep.capBytes[w] = len(capture)
	if r.cfg.SaveCap != "" && len(capture) > 0 {
		if err := os.WriteFile(filepath.Join(r.cfg.SaveCap, w+".ndjson"), capture, 0o644); err != nil {
			r.fail(w, "save capture", err)
		}
	}
	n := len(r.rep.setups)
	for rep := 0; rep < r.cfg.Reps; rep++ {
		if len(capture) > 0 {
			var z zstdRun
			var err error
			z.StreamMBps, z.StreamCPUMBps, z.StreamRatio, err = zstdMeasureCPU(capture, 0)
			if err == nil {
				z.FlushMBps, z.FlushRatio, err = zstdMeasure(capture, 64<<10)
			}
			if err != nil {
				r.fail(w, "zstd", err)
			} else {
				r.rep.zstd[w] = append(r.rep.zstd[w], z)
			}
		}
		if w == "ping" && r.cfg.Interleave {
			r.pingInterleaved(p, rep, replaySrc)
			continue
		}
		for i := 0; i < n; i++ {
			s := r.rep.setups[(i+rep)%n] // rotate the order every repetition
			if s.isReplay() && replaySrc == "" {
				continue
			}
			src := ""
			if s.isReplay() {
				src = replaySrc
			}
			m, err := r.session(s, w, p, rep, 0, nil, src)
			if err != nil {
				r.fail(w, fmt.Sprintf("%s rep %d", s.Name, rep+1), err)
				continue
			}
			r.rep.runs[w] = append(r.rep.runs[w], m)
			r.progress(w, rep, m)
		}
	}
}

func (r *runner) rssWorkload() {
	for _, name := range []string{"record", "fwd", "record-alt", "fwd-alt"} {
		s, ok := r.find(name)
		if !ok {
			continue
		}
		for _, size := range r.cfg.RSSSizes {
			p := r.params("mixstream")
			p.Bytes = size
			m, err := r.session(s, "rss", p, 0, 0, nil, "")
			row := rssRow{Setup: name, Size: size}
			if err != nil {
				row.Err = oneLine(err.Error())
				r.fail("rss", fmt.Sprintf("%s %d MB", name, size/1e6), err)
			} else {
				row.MainHWM, row.SinkHWM, row.Shared = m.MainHWM, m.SinkHWM, m.Shared
				fmt.Fprintf(r.log, "wire: rss %s %4d MB: main %.1f MiB sink %.1f MiB (%.0f MB/s)\n",
					name, size/1e6, mib(m.MainHWM), mib(m.SinkHWM), mbps(m.Res))
			}
			r.rep.rss = append(r.rep.rss, row)
		}
	}
}

func (r *runner) stallWorkload() {
	for _, name := range []string{"cat", "record", "fwd", "record-alt", "fwd-alt"} {
		s, ok := r.find(name)
		if !ok {
			continue
		}
		p := r.params("mixstream")
		p.Bytes = r.cfg.StallBytes
		m, err := r.session(s, "stall", p, 0, r.cfg.Stall, nil, "")
		if err != nil {
			r.fail("stall", name, err)
			continue
		}
		fmt.Fprintf(r.log, "wire: stall %s: RSS after %v stalled: main %.1f MiB sink %.1f MiB; peak %.1f/%.1f MiB\n",
			name, r.cfg.Stall, mib(m.Res.StallMainRSS), mib(m.Res.StallSinkRSS), mib(m.MainHWM), mib(m.SinkHWM))
		r.rep.stall = append(r.rep.stall, m)
	}
}

// noteStderr keeps what rpctap said on stderr (warnings: a degraded
// recording makes its figures meaningless), once per distinct line.
func (r *runner) noteStderr(w, setup, stderr string) {
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || !strings.HasPrefix(line, "rpctap") || strings.Contains(line, "exists.cassette") {
			continue // the fwd set-up's warning is expected
		}
		key := setup + ": " + line
		if r.seen == nil {
			r.seen = map[string]int{}
		}
		if r.seen[key]++; r.seen[key] == 1 {
			r.rep.warnings = append(r.rep.warnings, fmt.Sprintf("%s/%s said: %s", w, setup, line))
			fmt.Fprintf(r.log, "wire: %s/%s said: %s\n", w, setup, line)
		}
	}
}

func (r *runner) fail(w, what string, err error) {
	msg := fmt.Sprintf("%s: %s: %s", w, what, oneLine(err.Error()))
	fmt.Fprintf(r.log, "wire: FAILED %s\n", msg)
	r.rep.errs = append(r.rep.errs, msg)
}

func (r *runner) progress(w string, rep int, m meas) {
	res := m.Res
	switch w {
	case "ping", "pingseq":
		s := sortedCopy(res.Lat)
		fmt.Fprintf(r.log, "wire: %-9s rep %d %-16s p50 %6.1f µs  p99 %7.1f µs  p99.9 %7.1f µs\n",
			w, rep+1, m.Setup, us(pct(s, .5)), us(pct(s, .99)), us(pct(s, .999)))
	default:
		fmt.Fprintf(r.log, "wire: %-9s rep %d %-16s %7.1f MB/s\n", w, rep+1, m.Setup, mbps(res))
	}
}

// session runs one parent/child session through set-up s. rep < 0 is a
// warm-up. cassette names the cassette of a recording set-up (empty: a
// temporary one) and the source of a replay set-up.
func (r *runner) session(s setup, w string, p params, rep int, stall time.Duration, capture *[]byte, cassette string) (meas, error) {
	o, err := r.open(s, w, p, rep, capture, cassette)
	if err != nil {
		return meas{}, err
	}
	var res *result
	switch w {
	case "ping", "pingseq":
		res, err = runPing(o.c, p)
	case "mix":
		res, err = runMix(o.c, p, r.pool)
	case "traffic":
		res, err = runTraffic(o.c, p)
	default:
		res, err = runStream(o.c, p, stall)
	}
	return r.close(o, res, err)
}

// openSession is a started set-up whose workload has not run yet.
type openSession struct {
	s        setup
	w        string
	rep      int
	l        *launched
	c        *parentConn
	cassette string
	temp     bool
	watchdog *time.Timer
	cpu0     int64 // cpuSelf() when the session started (0 for ping)
}

func (r *runner) open(s setup, w string, p params, rep int, capture *[]byte, cassette string) (*openSession, error) {
	replay := ""
	if s.isReplay() {
		replay = cassette
		cassette = ""
	}
	temp := false
	if cassette == "" && s.writesCassette() {
		cassette = filepath.Join(r.tmp, fmt.Sprintf("%s-%s-%d.cassette", w, s.Name, rep+1))
		temp = !r.cfg.Keep
	}
	argv := append([]string{r.self}, p.childArgs()...)
	bin := r.rpctap
	if s.Bin != "" {
		bin = s.Bin
	}
	t0 := time.Now()
	interval := 20 * time.Millisecond
	if w == "ping" || w == "pingseq" {
		interval = 0
	}
	l, err := start(s, argv, bin, cassette, replay, r.tmp, interval)
	if err != nil {
		return nil, err
	}
	c := &parentConn{in: &lineWriter{w: l.w}, out: newLineReader(l.r), l: l, started: t0}
	c.in.capture, c.out.capture = capture, capture
	var cpu0 int64
	if interval > 0 {
		cpu0 = cpuSelf()
	}
	return &openSession{s: s, w: w, rep: rep, l: l, c: c, cassette: cassette, temp: temp, cpu0: cpu0,
		// A hung set-up must not hang the benchmark: killing its processes
		// ends the parent's blocked read or write with an error.
		watchdog: time.AfterFunc(sessionLimit, l.killProcs)}, nil
}

// close ends a session whose workload returned res (or failed with werr)
// and takes its measurements.
func (r *runner) close(o *openSession, res *result, werr error) (meas, error) {
	defer o.watchdog.Stop()
	s, l, w := o.s, o.l, o.w
	m := meas{Setup: s.Name, Rep: o.rep, Cassette: -1}
	if werr != nil {
		l.kill()
		if e := strings.TrimSpace(l.stderr()); e != "" {
			werr = fmt.Errorf("%v; stderr: %s", werr, lastLines([]byte(e), 5))
		}
		return m, werr
	}
	cpu, err := l.finish(30 * time.Second)
	if err != nil {
		return m, err
	}
	if res.StatsFile != "" {
		b, _ := os.ReadFile(res.StatsFile)
		res.Child.CPUNs, _ = strconv.ParseInt(string(b), 10, 64)
		os.Remove(res.StatsFile)
	}
	if s.Kind == "gorelay" || s.Kind == "rpctap" && !s.isReplay() {
		cpu -= res.Child.CPUNs // the relay's rusage includes the child it reaped
	}
	m.Res, m.CPUNs = res, cpu
	if o.cpu0 > 0 {
		m.ParentNs = cpuSelf() - o.cpu0
	}
	m.MainHWM, m.SinkHWM, _, _ = l.mem()
	m.Shared = l.sharedPeak()
	r.noteStderr(w, s.Name, l.stderr())
	if os.Getenv("WIREBENCH_DEBUG") != "" {
		fmt.Fprintf(r.log, "debug %s/%s: hwm %v exe %v cpu %v child %v raw %d\n", w, s.Name, l.hwm, l.exe,
			time.Duration(cpu), time.Duration(res.Child.CPUNs), res.Raw)
	}
	if o.cassette != "" && s.writesCassette() {
		if st, err := os.Stat(o.cassette); err == nil {
			m.Cassette = st.Size()
			m.Val = validationOf(o.cassette)
		}
		if o.temp {
			os.Remove(o.cassette)
		}
	}
	return m, nil
}

// pingInterleaved runs one repetition of the ping workload with every
// set-up's session open at once, taking one round trip from each in turn
// (the order rotating every round), so that every set-up sees the same
// moments of a noisy machine.
func (r *runner) pingInterleaved(p params, rep int, replaySrc string) {
	type live struct {
		o  *openSession
		pg *pinger
	}
	var ls []live
	for i, n := 0, len(r.rep.setups); i < n; i++ {
		s := r.rep.setups[(i+rep)%n]
		src := ""
		if s.isReplay() {
			if replaySrc == "" {
				continue
			}
			src = replaySrc
		}
		o, err := r.open(s, "ping", p, rep, nil, src)
		if err != nil {
			r.fail("ping", fmt.Sprintf("%s rep %d", s.Name, rep+1), err)
			continue
		}
		pg, err := newPinger(o.c, p)
		if err != nil {
			r.close(o, nil, err)
			r.fail("ping", fmt.Sprintf("%s rep %d", s.Name, rep+1), err)
			continue
		}
		ls = append(ls, live{o, pg})
	}
	failed := make([]error, len(ls))
	for i := 0; i < p.N; i++ {
		for k := range ls {
			j := (k + i) % len(ls)
			if failed[j] == nil {
				failed[j] = ls[j].pg.roundTrip(i)
			}
		}
	}
	for j, x := range ls {
		var res *result
		err := failed[j]
		if err == nil {
			res, err = x.pg.done()
		}
		m, err := r.close(x.o, res, err)
		if err != nil {
			r.fail("ping", fmt.Sprintf("%s rep %d", x.o.s.Name, rep+1), err)
			continue
		}
		r.rep.runs["ping"] = append(r.rep.runs["ping"], m)
		r.progress("ping", rep, m)
	}
}

// sessionLimit bounds one session (the 1 GiB rss session included).
const sessionLimit = 5 * time.Minute

func us(ns int64) float64   { return float64(ns) / 1e3 }
func mib(kib int64) float64 { return float64(kib) / 1024 }

func mbps(res *result) float64 {
	if res == nil || res.Elapsed <= 0 {
		return 0
	}
	return float64(res.Payload) / res.Elapsed.Seconds() / 1e6
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ") }

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func machineInfo() []string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if i := strings.IndexByte(line, ':'); i >= 0 {
					model = strings.TrimSpace(line[i+1:])
				}
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	mem := "?"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) >= 2 {
			mem = fmt.Sprintf("%.1f GiB", float64(kib([]byte(f[1])))/(1<<20))
		}
	}
	return []string{
		fmt.Sprintf("nproc %d, CPU %s, RAM %s", runtime.NumCPU(), model, mem),
		fmt.Sprintf("Linux %s, %s %s/%s", strings.TrimSpace(string(kernel)), runtime.Version(), runtime.GOOS, runtime.GOARCH),
	}
}

// calibrate compares how zstd SpeedFastest compresses the generated text pool
// with real text: Go's own net/http sources and, when ../shared is beside the
// module, the captured third-party traffic.
func calibrate(pool []byte) []string {
	var out []string
	add := func(name string, data []byte) {
		if len(data) == 0 {
			return
		}
		if _, ratio, err := zstdMeasure(data, 0); err == nil {
			out = append(out, fmt.Sprintf("%s (%.1f MB): %.3f", name, float64(len(data))/1e6, ratio))
		}
	}
	add("the generated text pool", pool)
	readAll := func(pattern string) []byte {
		files, _ := filepath.Glob(pattern)
		var b []byte
		for _, f := range files {
			d, _ := os.ReadFile(f)
			b = append(b, d...)
		}
		return b
	}
	add("Go's net/http/*.go (real source)", readAll(filepath.Join(runtime.GOROOT(), "src", "net", "http", "*.go")))
	if root, err := moduleRoot(); err == nil {
		add("../shared/traffic (real captured sessions, small)", readAll(filepath.Join(root, "..", "shared", "traffic", "*.*")))
	}
	return out
}

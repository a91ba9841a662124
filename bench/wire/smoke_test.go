package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The benchmark re-executes its own binary as the child; under `go test`
// that binary is the test binary, so TestMain plays the child.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childMarker {
		os.Exit(childMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == relayMarker {
		os.Exit(relayMain(os.Args[2:]))
	}
	// Under -race every child would sleep 1 s at exit (GORACE
	// atexit_sleep_ms defaults to 1000); the smoke test starts dozens.
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	os.Exit(m.Run())
}

// TestSmoke runs every workload with tiny sizes on the direct and cat
// set-ups: the sessions must complete, the child's byte counts and CRCs must
// match the parent's (checked inside each session), and every figure must be
// present and non-zero. No timing is asserted.
func TestSmoke(t *testing.T) {
	cfg, err := parseFlags([]string{"--quick", "--reps", "1", "--setups", "direct,cat",
		"--ping-n", "200", "--mix-turns", "6", "--stream-bytes", "1000000", "--mb-frames", "3",
		"--rss-sizes", "1", "--stall", "50ms"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.PoolSize = 3 << 20
	cfg.StallBytes = 6e6
	var log io.Writer = io.Discard
	if testing.Verbose() {
		log = os.Stderr
	}
	rep, err := run(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.errs) > 0 {
		t.Fatalf("sessions failed: %q", rep.errs)
	}
	for _, w := range []string{"ping", "mix", "mixstream", "mb"} {
		for _, s := range []string{"direct", "cat"} {
			ms := rep.bySetup(w, s)
			if len(ms) != 1 {
				t.Fatalf("%s/%s: %d measurements, want 1", w, s, len(ms))
			}
			m := ms[0]
			if m.Res.Payload <= 0 || m.Res.Raw < m.Res.Payload || mbps(m.Res) <= 0 {
				t.Errorf("%s/%s: payload %d raw %d MB/s %.1f", w, s, m.Res.Payload, m.Res.Raw, mbps(m.Res))
			}
			if s == "cat" && (m.MainHWM <= 0 || m.CPUNs <= 0) {
				t.Errorf("%s/cat: peak RSS %d KiB, CPU %d ns: want both > 0", w, m.MainHWM, m.CPUNs)
			}
		}
	}
	if n := len(rep.bySetup("ping", "cat")[0].Res.Lat); n != 200 {
		t.Errorf("ping: %d round trips measured, want 200", n)
	}
	if n, want := len(rep.bySetup("mix", "direct")[0].Res.Lat), cfg.MixTurns/cfg.BigEvery; n != want || n == 0 {
		t.Errorf("mix: %d big-frame round trips, want %d", n, want)
	}
	if len(rep.zstd["mix"]) != 1 || rep.zstd["mix"][0].StreamMBps <= 0 || rep.zstd["mix"][0].StreamRatio <= 0 {
		t.Errorf("zstd measurement missing: %+v", rep.zstd["mix"])
	}
	if len(rep.stall) != 1 || rep.stall[0].Res.StallMainRSS <= 0 {
		t.Errorf("stall: %+v", rep.stall)
	}
	md := rep.markdown()
	for _, want := range []string{"| cat |", "200-byte ping-pong", "Agent mix", "1 MiB frames", "Targets (issue 6)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestFrames checks that every generated frame is valid JSON of the intended
// size, so the recorder sees what a real agent sends.
func TestFrames(t *testing.T) {
	pool := newPool(3, 4<<20)
	cur := &cursor{pool: pool}
	sid := sessionID(3)
	g := newTextGen(5)
	var frames [][]byte
	add := func(b []byte) { frames = append(frames, b) }
	add(appendInitialize(nil))
	add(appendInitializeResult(nil))
	add(appendSessionNew(nil))
	add(appendSessionNewResult(nil, sid))
	for i := 0; i < 200; i++ {
		add(appendPrompt(nil, i, sid, cur.take(1+i*7)))
		add(appendChunk(nil, sid, cur.take(20+i)))
		add(appendToolCall(nil, sid, i, cur.take(25), cur.take(12)))
		add(appendToolResult(nil, sid, i, cur.take(1000+i*97)))
		add(appendPermissionRequest(nil, sid, i, i))
		add(appendPermissionResult(nil, appendPermissionRequest(nil, sid, i, i)))
		add(appendPromptResult(nil, i))
		add(appendStatsRequest(nil, i))
	}
	add(appendBigPrompt(nil, 9, sid, cur.take(100), cur.take(bigFrame)))
	for i := 0; i < 50; i++ {
		p := appendPing(nil, 1000+i, sid, g)
		q := appendPong(nil, frameID(p), g)
		if len(p) != pingSize || len(q) != pingSize {
			t.Fatalf("ping/pong sizes %d/%d, want %d", len(p), len(q), pingSize)
		}
		add(p)
		add(q)
	}
	for i, f := range makeMBFrames(cur, sid, 3) {
		if len(f) != mbFrameSize {
			t.Fatalf("mb frame %d: %d bytes", i, len(f))
		}
		add(f)
	}
	for i, f := range frames {
		if !bytes.HasSuffix(f, []byte("\n")) || bytes.Count(f, []byte("\n")) != 1 || !json.Valid(f) {
			t.Fatalf("frame %d is not one valid JSON line: %.200q", i, f)
		}
	}
}

func TestWriteDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "perf.md")
	if err := writeDoc(path, "first\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	doc := strings.Replace(string(b), "# Performance", "# Performance\n\nHand-written method.", 1) + "\n## Findings\n\nkept\n"
	os.WriteFile(path, []byte(doc), 0o644)
	if err := writeDoc(path, "second\n"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	s := string(b)
	if strings.Contains(s, "first") || !strings.Contains(s, "second") || !strings.Contains(s, "Hand-written method.") || !strings.Contains(s, "kept") {
		t.Fatalf("doc after rewrite:\n%s", s)
	}
}

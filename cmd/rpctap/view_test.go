package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
	"github.com/rpctap/rpctap/viewer"
)

// writeViewCassette writes a small ACP session; end=false leaves it as a
// killed recorder would (no end record).
func writeViewCassette(t *testing.T, path string, end bool) {
	t.Helper()
	w, err := cassette.Create(path, cassette.Header{Protocol: "acp", Argv: []string{"agent"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	frames := []struct {
		d  cassette.Dir
		ms int64
		js string
	}{
		{cassette.DirIn, 1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`},
		{cassette.DirOut, 4, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`},
		{cassette.DirIn, 5, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`},
		{cassette.DirOut, 9, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}`},
		{cassette.DirIn, 10, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`},
		{cassette.DirOut, 30, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello "}}}}`},
		{cassette.DirOut, 35, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"world"}}}}`},
		{cassette.DirOut, 40, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`},
	}
	for _, f := range frames {
		r := cassette.Record{K: cassette.KindFrame, T: f.ms * 1e6, D: f.d, JSON: json.RawMessage(f.js), EOL: "\n"}
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if end {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	} else if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func viewMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestViewDump(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.cassette")
	writeViewCassette(t, path, true)

	code, out, errs := viewMain("view", "--dump", "120x20", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"session/prompt", "initialize", "30.0ms", "acp", "10 records"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	// Unclassified frames are classified with the header's protocol, and
	// responses are paired: the prompt's response shows its latency.
	if !strings.Contains(out, "30.0ms") {
		t.Errorf("no latency on the prompt's response:\n%s", out)
	}

	code, out, _ = viewMain("view", "--dump", "120x30", "--keys", "t", path)
	if code != 0 || !strings.Contains(out, "Hello world") || !strings.Contains(out, "first chunk 20.0ms") {
		t.Errorf("transcript (exit %d):\n%s", code, out)
	}
	code, out, _ = viewMain("view", "--dump", "120x30", "--keys", "s", path)
	if code != 0 || !strings.Contains(out, "requests never answered: none") {
		t.Errorf("stats (exit %d):\n%s", code, out)
	}
	// q quits: nothing is drawn after it, and the exit status is 0.
	if code, _, _ = viewMain("view", "--dump", "80x10", "--keys", "q", path); code != 0 {
		t.Errorf("q: exit %d", code)
	}
}

func TestViewTruncatedFollows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.cassette")
	writeViewCassette(t, path, false)
	code, out, errs := viewMain("view", "--dump", "140x16", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "recording (no end record yet)") || !strings.Contains(out, "FOLLOW") {
		t.Errorf("a cassette without an end record should open followed, saying it has no end record yet:\n%s", out)
	}
	if !strings.Contains(out, "▶") {
		t.Errorf("no selected row:\n%s", out)
	}
}

var recordViewTestdata = flag.Bool("record-view-testdata", false, "copy the cassettes TestViewRealPeers records into viewer/testdata/")

// TestViewRealPeers records the bundled demo and the ACP Go SDK example
// client with its example agent through `rpctap record`, then views the
// cassettes headless: the list, the pair jump, the transcript and the stats
// show what the peers said.
func TestViewRealPeers(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	dir := t.TempDir()
	// The demo runs `rpctap record` as its own executable: run it from
	// PATH (this test binary as rpctap), not in-process.
	demo := filepath.Join(dir, "demo.cassette")
	if b, err := exec.Command(rp, "demo", "-q", "--delay", "0", "-o", demo).CombinedOutput(); err != nil {
		t.Fatalf("rpctap demo: %v\n%s", err, b)
	}
	sdk := filepath.Join(dir, "acp-sdk.cassette")
	// The client asks which permission option to pick.
	testpeers.Record(t, rp, dir, sdk, "1\n", 90*time.Second, []string{testpeers.Tool(t, "acpclient")}, testpeers.Tool(t, "acpagent"))
	for _, cas := range []string{demo, sdk} {
		t.Run(filepath.Base(cas), func(t *testing.T) {
			code, list, errs := viewMain("view", "--dump", "140x60", cas)
			if code != 0 {
				t.Fatalf("view: exit %d: %s", code, errs)
			}
			for _, want := range []string{"initialize", "session/new", "session/prompt", "session/request_permission", "acp"} {
				if !strings.Contains(list, want) {
					t.Errorf("list lacks %q:\n%s", want, list)
				}
			}
			// The agent's permission request pairs with the client's answer.
			_, detail, _ := viewMain("view", "--dump", "140x60", "--keys", "g/m:request_permission<enter>p<enter>", cas)
			if !strings.Contains(detail, "in response") || !strings.Contains(detail, "outcome") {
				t.Errorf("p from the permission request does not show the client's answer:\n%s", detail)
			}
			_, tr, _ := viewMain("view", "--dump", "140x60", "--keys", "t", cas)
			if !strings.Contains(tr, "turn 1 · session/prompt") || !strings.Contains(tr, "first chunk") || !strings.Contains(tr, "? permission?") {
				t.Errorf("transcript:\n%s", tr)
			}
			_, st, _ := viewMain("view", "--dump", "140x60", "--keys", "s", cas)
			if !strings.Contains(st, "session/prompt") || !strings.Contains(st, "P50") {
				t.Errorf("stats:\n%s", st)
			}
			if *recordViewTestdata {
				data, err := os.ReadFile(cas)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join("..", "..", "viewer", "testdata", filepath.Base(cas)), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestViewFollowsLiveRecording views a cassette while `rpctap record`
// writes it (the bundled demo client and agent, with pauses between
// chunks; not `rpctap demo`, which records beside its target and renames
// only a finished session into place): records appear as they are
// recorded, and the end record stops the follow.
func TestViewFollowsLiveRecording(t *testing.T) {
	rp := rpctapPath(t)
	path := filepath.Join(t.TempDir(), "live.cassette")
	demo := exec.Command(rp, "demo-client", "--", rp, "record", "-q", "-o", path, "--", rp, "demo-agent", "--delay", "150ms")
	var out bytes.Buffer
	demo.Stdout, demo.Stderr = &out, &out
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- demo.Wait() }()
	defer func() {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			demo.Process.Kill()
		}
	}()
	// Open it as soon as it has its header.
	var (
		src *viewer.IndexSource
		err error
	)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if src, err = viewer.OpenCassette(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cassette never became readable: %v\n%s", err, out.String())
		}
	}
	defer src.Close()
	first := src.Len()
	if src.Ended() {
		t.Fatalf("the session ended before the viewer opened the cassette (it takes seconds): nothing was followed\n%s", out.String())
	}
	store := viewer.NewStore(src)
	scr := tcell.NewSimulationScreen("UTF-8")
	app := viewer.New(store, viewer.Options{Name: path, Screen: scr, Follow: true,
		Follower: &viewer.Follower{Store: store, Path: path, Interval: 20 * time.Millisecond}})
	defer app.Close()
	scr.SetSize(140, 50)
	app.StartFollowing()
	var sizes []int
	sawRecording := false
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := app.Settle(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		app.Draw()
		if n := store.Len(); len(sizes) == 0 || sizes[len(sizes)-1] != n {
			sizes = append(sizes, n)
		}
		// While it is being written the title says so, never "truncated".
		if text := viewer.ScreenText(scr); !strings.Contains(text, "end of cassette") {
			if strings.Contains(text, "truncated after") {
				t.Fatalf("a recording in progress is shown as truncated:\n%s", text)
			}
			sawRecording = sawRecording || strings.Contains(text, "recording (no end record yet")
		}
		if text := viewer.ScreenText(scr); strings.Contains(text, "end of cassette") && strings.Contains(text, "the recording ended") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the end record never appeared (sizes seen %v):\n%s", sizes, viewer.ScreenText(scr))
		}
	}
	if !sawRecording {
		t.Errorf("the title never said the cassette was being recorded")
	}
	if len(sizes) < 3 || first >= sizes[len(sizes)-1] {
		t.Errorf("records did not appear in steps while recording: sizes seen %v (opened with %d)", sizes, first)
	}
	text := viewer.ScreenText(scr)
	if !strings.Contains(text, "session/prompt") || strings.Contains(text, "FOLLOW") || strings.Contains(text, "truncated") {
		t.Errorf("final screen:\n%s", text)
	}
	if app.SelectedRecord() != store.Len()-1 {
		t.Errorf("the selection did not follow to the end: #%d of %d", app.SelectedRecord(), store.Len())
	}
}

// TestPickLoop: the picker comes back after a cassette left with q, and
// the loop ends when the picker is quit, the viewer is quit, or fails.
func TestPickLoop(t *testing.T) {
	var log []string
	choices := []string{"a.cassette", "b.cassette", ""}
	pick := func(note, failed string) (string, error) {
		if note != "" {
			log = append(log, "note:"+failed)
		}
		c := choices[0]
		choices = choices[1:]
		log = append(log, "pick:"+c)
		return c, nil
	}
	view := func(p string) (bool, error) { log = append(log, "view:"+p); return true, nil }
	if err := pickLoop(pick, view); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, " "); got != "pick:a.cassette view:a.cassette pick:b.cassette view:b.cassette pick:" {
		t.Errorf("q went back: %s", got)
	}
	log, choices = nil, []string{"a.cassette", "b.cassette"}
	if err := pickLoop(pick, func(p string) (bool, error) { log = append(log, "view:"+p); return false, nil }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, " "); got != "pick:a.cassette view:a.cassette" {
		t.Errorf("Q quit: %s", got)
	}
	choices = []string{"a.cassette"}
	if err := pickLoop(pick, func(string) (bool, error) { return true, errors.New("boom") }); err == nil || err.Error() != "boom" {
		t.Errorf("a failing view: %v", err)
	}
	// A file that is not a cassette: back to the picker, which says why.
	log, choices = nil, []string{"junk.txt", "a.cassette", ""}
	view = func(p string) (bool, error) {
		log = append(log, "view:"+p)
		if p == "junk.txt" {
			return false, Inputf("%s: not a cassette", p)
		}
		return true, nil
	}
	if err := pickLoop(pick, view); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, " "); got != "pick:junk.txt view:junk.txt note:junk.txt pick:a.cassette view:a.cassette pick:" {
		t.Errorf("a file that is not a cassette: %s", got)
	}
}

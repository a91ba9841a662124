package viewer

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rpctap/rpctap/cassette"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.txt from the current screens")

type harness struct {
	t   *testing.T
	app *App
	scr tcell.SimulationScreen
}

func newHarness(t *testing.T, src Source, opts Options) *harness {
	t.Helper()
	scr := tcell.NewSimulationScreen("UTF-8")
	opts.Screen = scr
	if opts.Name == "" {
		opts.Name = "test.cassette"
	}
	a := New(NewStore(src), opts)
	scr.SetSize(120, 32)
	h := &harness{t: t, app: a, scr: scr}
	t.Cleanup(a.Close)
	h.settle()
	a.Draw()
	return h
}

func (h *harness) settle() {
	h.t.Helper()
	if err := h.app.Settle(10 * time.Second); err != nil {
		h.t.Fatal(err)
	}
}

// keys types keys (see App.Type).
func (h *harness) keys(s string) *harness {
	h.t.Helper()
	if err := h.app.Type(s); err != nil {
		h.t.Fatal(err)
	}
	return h
}

// screen draws and returns the screen as text (see ScreenText).
func (h *harness) screen() string {
	h.app.Draw()
	return ScreenText(h.scr)
}

func (h *harness) golden(name string) string {
	h.t.Helper()
	got := h.screen()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			h.t.Fatal(err)
		}
		return got
	}
	want, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("%v (run go test ./viewer -run %s -update to create it)", err, h.t.Name())
	}
	if got != string(want) {
		h.t.Errorf("screen differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
	return got
}

func (h *harness) selected() int { return h.app.SelectedRecord() }

func recordWith(t *testing.T, recs []cassette.Record, pred func(r cassette.Record) bool) int {
	t.Helper()
	for _, r := range recs {
		if pred(r) {
			return int(r.N)
		}
	}
	t.Fatal("no such record")
	return -1
}

func TestListScreen(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	scr := h.golden("list")
	for _, want := range []string{"session/prompt", "→", "←", "✗", "390ms", "agent: starting up"} {
		if !strings.Contains(scr, want) {
			t.Errorf("list screen lacks %q", want)
		}
	}
	if h.selected() != 0 {
		t.Errorf("first row selected is #%d, want the header #0", h.selected())
	}
}

func TestMovementKeys(t *testing.T) {
	recs := acpSession()
	h := newHarness(t, NewMemSource(recs...), Options{})
	h.keys("jj")
	if h.selected() != 2 {
		t.Errorf("after jj: #%d, want #2", h.selected())
	}
	h.keys("k")
	if h.selected() != 1 {
		t.Errorf("after k: #%d, want #1", h.selected())
	}
	h.keys("G")
	if h.selected() != len(recs)-1 {
		t.Errorf("after G: #%d, want the last #%d", h.selected(), len(recs)-1)
	}
	h.keys("g")
	if h.selected() != 0 {
		t.Errorf("after g: #%d, want #0", h.selected())
	}
	h.keys("<pgdn>")
	if h.selected() <= 10 {
		t.Errorf("after PgDn: #%d, want past a screenful", h.selected())
	}
}

func TestDetailAndPairJump(t *testing.T) {
	recs := acpSession()
	prompt := recordWith(t, recs, func(r cassette.Record) bool { return r.Method == "session/prompt" })
	resp := recordWith(t, recs, func(r cassette.Record) bool { return r.Kind == "response" && string(r.ID) == "3" })
	h := newHarness(t, NewMemSource(recs...), Options{})
	h.keys("/m:session/prompt<enter>")
	if h.selected() != prompt {
		t.Fatalf("search for m:session/prompt selected #%d, want #%d", h.selected(), prompt)
	}
	h.keys("<enter>")
	scr := h.golden("detail")
	if !strings.Contains(scr, `"Fix the bug"`) || !strings.Contains(scr, fmt2("response: #%d", resp)) {
		t.Errorf("detail pane lacks the prompt text or the pair line")
	}
	h.keys("p")
	if h.selected() != resp {
		t.Fatalf("p went to #%d, want the response #%d", h.selected(), resp)
	}
	if scr := h.screen(); !strings.Contains(scr, "end_turn") || !strings.Contains(scr, "latency 390ms") {
		t.Errorf("detail after p does not show the response:\n%s", scr)
	}
	h.keys("p")
	if h.selected() != prompt {
		t.Errorf("p from the response went to #%d, want #%d", h.selected(), prompt)
	}
	h.keys("p<bs>")
	if h.selected() != prompt {
		t.Errorf("backspace after p went to #%d, want back to #%d", h.selected(), prompt)
	}
	// The permission response pairs with the agent's request id 1, not
	// with the client's initialize id 1.
	permReq := recordWith(t, recs, func(r cassette.Record) bool { return r.Method == "session/request_permission" })
	permResp := recordWith(t, recs, func(r cassette.Record) bool {
		return r.Kind == "response" && r.D == cassette.DirIn && string(r.ID) == "1"
	})
	h.keys("/m:request_permission<enter>p")
	if h.selected() != permResp {
		t.Errorf("p from #%d went to #%d, want #%d", permReq, h.selected(), permResp)
	}
	// y copies the frame through the screen's clipboard (OSC 52).
	h.keys("y")
	if got := string(h.scr.GetClipboardData()); got != string(recs[permResp].JSON) {
		t.Errorf("clipboard = %q, want the frame", got)
	}
}

func fmt2(format string, a ...any) string { return strings.TrimSpace(sprintf(format, a...)) }

func TestFilterScreen(t *testing.T) {
	recs := acpSession()
	h := newHarness(t, NewMemSource(recs...), Options{})
	h.keys("fm:session/update -chunks<enter>")
	scr := h.golden("filter")
	if got := h.app.view.Len(h.app.store); got != 3 {
		t.Errorf("m:session/update -chunks: %d rows, want 3 (tool_call, tool_call_update, bogus_update)", got)
	}
	if !strings.Contains(scr, "filter m:session/update -chunks: 3 rows") {
		t.Error("title bar does not show the filter")
	}
	// v on top: only the frame with a violation (and the violation record).
	h.keys("f<c-u><enter>v")
	if got := h.app.view.Len(h.app.store); got != 2 {
		t.Errorf("violations only: %d rows, want 2", got)
	}
	h.keys("v")
	if !h.app.view.All() {
		t.Error("v did not toggle the filter off")
	}
	// Direction filter: every row is a frame from the parent.
	h.keys("f<c-u>><enter>")
	for i := range h.app.view.Len(h.app.store) {
		r := recs[h.app.view.At(i)]
		if r.K != cassette.KindFrame || r.D != cassette.DirIn {
			t.Errorf("filter > shows #%d (%s %s)", r.N, r.K, r.D)
		}
	}
	h.keys("f<c-u>/stopReason|outcome/<enter>")
	if got := h.app.view.Len(h.app.store); got != 2 {
		t.Errorf("regex filter: %d rows, want 2", got)
	}
}

func TestSearchNextPrevious(t *testing.T) {
	recs := acpSession()
	h := newHarness(t, NewMemSource(recs...), Options{})
	var chunks []int
	for i := range recs {
		if strings.Contains(string(recs[i].JSON), "agent_message_chunk") {
			chunks = append(chunks, i)
		}
	}
	h.keys("/agent_message_chunk<enter>")
	if h.selected() != chunks[0] {
		t.Fatalf("search: #%d, want #%d", h.selected(), chunks[0])
	}
	h.keys("n")
	if h.selected() != chunks[1] {
		t.Errorf("n: #%d, want #%d", h.selected(), chunks[1])
	}
	h.keys("nn")
	if h.selected() != chunks[0] {
		t.Errorf("n past the last: #%d, want to wrap to the first, #%d", h.selected(), chunks[0])
	}
	if !strings.Contains(h.screen(), "search wrapped") {
		t.Error("no 'search wrapped' message past the last match")
	}
	h.keys("N")
	if h.selected() != chunks[2] {
		t.Errorf("N before the first: #%d, want to wrap to the last, #%d", h.selected(), chunks[2])
	}
	h.keys("/no-such-text<enter>")
	if h.selected() != chunks[2] || !strings.Contains(h.screen(), "not found") {
		t.Errorf("a search with no match moved to #%d or said nothing", h.selected())
	}
}

// TestFilterLanguage: each term of the filter language, negation and
// conjunction, on the ACP sample session.
func TestFilterLanguage(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	rows := func(expr string) []int { t.Helper(); return viewRows(t, h, expr) }
	for _, c := range []struct {
		expr string
		want []int
	}{
		{"kind:request dir:in", []int{2, 5, 7, 20}},
		{"m:session/prompt & kind:response", []int{17}},
		{"id:3", []int{7, 17}},
		{`id:"3"`, []int{7, 17}},
		{"slow>100ms", []int{14, 17}},
		{"slow>350ms", []int{17}},
		{"err", []int{18, 19}},
		{"m:session/update !chunk !err", []int{12, 15}},
		{"!kind:event !kind:header !kind:end !kind:stderr !kind:violation !m:session/update dir:out", []int{4, 6, 13, 17}},
		{"kind:stderr", []int{3, 21}},
		{"!dir:in & main.go", []int{11, 12, 13}},
	} {
		if got := rows(c.expr); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: rows %v, want %v", c.expr, got, c.want)
		}
	}
	for _, bad := range []string{"slow>fast", "dir:up", "!", "/(/"} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// Filtering as one types: each prefix that parses is applied; one that
	// does not keeps the last good view and says why in the status line.
	h.app.setView(NewView(Filter{}), 0)
	h.keys("fkind:response")
	h.settle()
	if got := h.app.view.Len(h.app.store); got != 4 {
		t.Errorf("typed kind:response: %d rows, want 4", got)
	}
	h.keys(" slow>")
	h.settle()
	before := h.app.view.Filter().Expr
	if !strings.Contains(h.screen(), "want a duration after slow>") || before != "kind:response slow" {
		t.Errorf("a half-typed slow> replaced the view (now %q) or said nothing:\n%s", before, h.screen())
	}
	h.keys("1ms<enter>")
	h.settle()
	if got := h.app.view.Len(h.app.store); got != 4 {
		t.Errorf("kind:response slow>1ms: %d rows, want 4", got)
	}
}

func TestTranscriptScreen(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	h.keys("t")
	scr := h.golden("transcript")
	for _, want := range []string{"turn 1 · session/prompt", "first chunk 40.0ms", "I will edit main.go.", "permission? Edit main.go"} {
		if !strings.Contains(scr, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	h.keys("t")
	if h.app.mode != modeList {
		t.Error("t did not go back to the list")
	}
}

func TestStatsScreen(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	h.keys("s")
	scr := h.golden("stats")
	if !strings.Contains(scr, "requests never answered: 1") {
		t.Error("stats lack the unanswered request")
	}
}

func TestHelpScreen(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	h.keys("?")
	scr := h.golden("help")
	if !strings.Contains(scr, "jump to the paired request") {
		t.Error("help overlay not shown")
	}
	h.keys("<esc>")
	if h.app.helpOpen {
		t.Error("Esc did not close help")
	}
}

func TestTranscriptWindowOnLargeCassette(t *testing.T) {
	b := newRB("acp")
	for turn := 1; turn <= 30; turn++ {
		b.at(ms).in(sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"prompt %d"}]}}`, turn, turn))
		for range 2000 {
			b.at(ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`)
		}
		b.at(ms).out(sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`, turn))
	}
	h := newHarness(t, NewMemSource(b.recs...), Options{})
	h.keys(`/"prompt 25"<enter>t`)
	h.app.trMu.Lock()
	turns := len(h.app.tr.Turns)
	from := h.app.trFrom
	h.app.trMu.Unlock()
	if from == 0 || turns > 25 {
		t.Errorf("transcript folded from #%d with %d turns; want a window around the selection", from, turns)
	}
	scr := h.screen()
	if !strings.Contains(scr, "around the selection") {
		t.Errorf("the window is not explained:\n%s", scr)
	}
	var found bool
	h.app.trMu.Lock()
	for _, tn := range h.app.tr.Turns {
		if len(tn.Entries) > 0 && tn.Entries[0].Text == "prompt 25" {
			found = tn.FirstChunk == ms && len(tn.Entries) == 3 && len(tn.Entries[1].Text) == 2000
		}
	}
	h.app.trMu.Unlock()
	if !found {
		t.Error("turn 25 (the selection's) is not folded whole in the window")
	}
}

func TestWriteFrameToFile(t *testing.T) {
	recs := acpSession()
	dir := t.TempDir()
	h := newHarness(t, NewMemSource(recs...), Options{WriteDir: dir})
	h.keys("/m:session/new<enter>w<enter>")
	sel := h.selected()
	path := filepath.Join(dir, sprintf("rpctap-frame-%d.json", sel))
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("w did not write %s: %v\n%s", path, err, h.screen())
	}
	if string(got) != string(recs[sel].JSON)+"\n" {
		t.Errorf("wrote %q, want the frame and a newline", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if !strings.Contains(h.screen(), "wrote #"+sprintf("%d", sel)) {
		t.Error("no message after writing")
	}
	// d dims stderr lines: their cells turn gray.
	h.keys("d")
	cells := h.app.content.rowCells(3) // #3 is a stderr line
	if len(cells) == 0 || !cells[0].Dim {
		t.Errorf("d did not dim the stderr row: %+v", cells)
	}
}

// TestNarrowAndResize: on an 80-column terminal the list keeps LATENCY and
// the violation mark in view (SUMMARY, the last column, is cut), and a
// terminal made smaller keeps the selected row on screen.
func TestNarrowAndResize(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	h.scr.SetSize(80, 32)
	scr := h.screen()
	header := strings.Split(scr, "\n")[1]
	for _, col := range []string{"METHOD/TYPE", "LATENCY", "!"} {
		if !strings.Contains(header, col) {
			t.Errorf("an 80-column list lost %s:\n%s", col, header)
		}
	}
	if !strings.Contains(scr, "390ms") {
		t.Errorf("the prompt's latency is not shown at 80 columns:\n%s", scr)
	}
	// Select the last row, then shrink the terminal to 12 lines.
	h.keys("G")
	last := h.selected()
	h.scr.SetSize(80, 12)
	scr = h.screen()
	if h.selected() != last {
		t.Errorf("resizing changed the selection from #%d to #%d", last, h.selected())
	}
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^▶\s*%d `, last)).MatchString(scr) {
		t.Errorf("the selected row #%d is off screen after a resize:\n%s", last, scr)
	}
}

// TestQuitBackToPicker: with Options.Back (a cassette chosen in the
// picker), q at the top of the list leaves saying "back"; q in a pane only
// closes the pane; Q quits without going back.
func TestQuitBackToPicker(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{Back: true})
	h.keys("t") // the transcript: q closes it first
	h.keys("q")
	if h.app.Done() {
		t.Fatal("q in the transcript quit the viewer")
	}
	h.keys("q")
	if !h.app.Done() || !h.app.WentBack() {
		t.Errorf("q at the top: done %v, back %v; want both", h.app.Done(), h.app.WentBack())
	}
	h2 := newHarness(t, NewMemSource(acpSession()...), Options{Back: true})
	h2.keys("Q")
	if !h2.app.Done() || h2.app.WentBack() {
		t.Errorf("Q: done %v, back %v; want done, not back", h2.app.Done(), h2.app.WentBack())
	}
	h3 := newHarness(t, NewMemSource(acpSession()...), Options{})
	h3.keys("q")
	if !h3.app.Done() || h3.app.WentBack() {
		t.Errorf("q without a picker: done %v, back %v; want done, not back", h3.app.Done(), h3.app.WentBack())
	}
}

// TestTranscriptAndStatsRowsAct: in the transcript, ↓ moves through the
// entries and Enter jumps to the entry's record in the list; in the
// statistics, Enter on a method's row filters the list by that method.
func TestTranscriptAndStatsRowsAct(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	h.keys("t")
	h.settle()
	h.keys("<down><down>") // the first turn's heading, then its prompt text
	if h.app.target != 1 {
		t.Fatalf("highlight at %d, want 1 (targets %v)", h.app.target, h.app.targets)
	}
	want := h.app.targets[1]
	h.keys("<enter>")
	if h.app.mode != modeList {
		t.Fatal("Enter in the transcript did not go back to the list")
	}
	if got := fmt.Sprintf("r%d", h.selected()); got != want {
		t.Errorf("Enter on transcript row %s selected record %s", want, got)
	}

	h.keys("s")
	h.settle()
	idx := -1
	for i, m := range h.app.statsMethods {
		if m == "session/request_permission" {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no session/request_permission row in %v", h.app.statsMethods)
	}
	for i := 0; i <= idx; i++ {
		h.keys("<down>")
	}
	h.keys("<enter>")
	h.settle()
	if h.app.mode != modeList || h.app.view.Filter().Method != "session/request_permission" {
		t.Fatalf("Enter on the stats row: mode %v, filter %q", h.app.mode, h.app.view.Filter().Expr)
	}
	if got := h.app.view.Len(h.app.store); got != 2 {
		t.Errorf("filtered by session/request_permission: %d rows, want the request and its answer", got)
	}
}

// TestFlowsView: o shows one row per request with its answer and the
// chunks that streamed it folded in; Enter opens a flow as one detail;
// Esc goes back to the flows and o to the frames.
func TestFlowsView(t *testing.T) {
	h := newHarness(t, NewMemSource(acpSession()...), Options{})
	h.keys("o")
	h.settle()
	if h.app.mode != modeFlows {
		t.Fatal("o did not open the flows")
	}
	var prompt *Flow
	for i := range h.app.flows {
		if h.app.flows[i].Method == "session/prompt" && h.app.flows[i].First == 7 {
			prompt = &h.app.flows[i]
		}
	}
	if prompt == nil {
		t.Fatalf("no flow for the prompt at #7: %+v", h.app.flows)
	}
	// The first prompt (#7) is answered at #17 after 390ms; the updates of
	// its session in between (#8-#12, #15, #16) are folded into it, and
	// the permission request (#13) and its answer (#14) are a flow of
	// their own.
	if prompt.Response != 17 || FormatDuration(prompt.Latency) != "390ms" || len(prompt.Streamed) != 7 {
		t.Errorf("prompt flow: response #%d after %s, %d streamed; want #17, 390ms, 7", prompt.Response, FormatDuration(prompt.Latency), len(prompt.Streamed))
	}
	for _, f := range h.app.flows {
		if f.Method == "session/update" && f.First >= 8 && f.First <= 16 {
			t.Errorf("update #%d of the prompt's session is a flow of its own", f.First)
		}
	}
	scr := h.screen()
	if !strings.Contains(scr, "STREAMED") || !strings.Contains(scr, `"Fix the bug" → stop end_turn`) {
		t.Errorf("flows screen:\n%s", scr)
	}
	// Open the prompt's flow.
	for i := range h.app.flows {
		if &h.app.flows[i] == prompt {
			h.app.flowTable.Select(i+1, 0)
		}
	}
	h.keys("<enter>")
	if scr = h.screen(); !strings.Contains(scr, "flow #7 session/prompt") {
		t.Errorf("no flow detail on screen:\n%s", scr)
	}
	detail := h.app.text.GetText(true) // the whole pane, scrolled or not
	for _, want := range []string{"request", "streamed: 7 notification(s)", "response (after 390ms)", "end_turn", "agent_message_chunk \"I will\""} {
		if !strings.Contains(detail, want) {
			t.Errorf("flow detail lacks %q:\n%s", want, detail)
		}
	}
	h.keys("<esc>")
	if h.app.mode != modeFlows {
		t.Errorf("Esc in a flow: mode %v, want the flows", h.app.mode)
	}
	h.keys("o")
	if h.app.mode != modeList {
		t.Errorf("o in the flows: mode %v, want the frames", h.app.mode)
	}
}

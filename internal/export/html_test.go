package export

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"golang.org/x/net/html"
	"image"
	_ "image/png"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/replay/replaytest"
)

// htmlRow is one exchange of a report, read back from its data.
type htmlRow struct {
	N                 uint64
	T                 int64
	Dir, Kind, Method string
	ID                string
	Latency           int64
	Summary           string
	Error             bool
	RespN             uint64
	Request, Response string
}

// inflateB64 reads a script element's raw DEFLATE of JSON into v.
func inflateB64(t testing.TB, text string, v any) {
	t.Helper()
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(decodeB122(t, text))))
	if err != nil {
		t.Fatalf("inflate: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("data: %v", err)
	}
}

// htmlData reads a report's rows (script.rows, script#tables) and
// payloads (script.pl) back, in the order they were written.
func htmlData(t testing.TB, page string) []htmlRow {
	t.Helper()
	m := regexp.MustCompile(`<script id="tables" data-rows="(\d+)" type="application/octet-stream">([^<]*)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no tables in the report")
	}
	var tables struct{ Kinds, Methods []string }
	inflateB64(t, m[2], &tables)
	blocks := regexp.MustCompile(`<script class="(rows|pl)" type="application/octet-stream">([^<]*)</script>`).FindAllStringSubmatch(page, -1)
	var rows []htmlRow
	var n uint64
	var tm int64
	for i := 0; i < len(blocks); i += 2 {
		if blocks[i][1] != "rows" || i+1 >= len(blocks) || blocks[i+1][1] != "pl" {
			t.Fatalf("block %d is not rows followed by their payloads", i)
		}
		var col struct {
			N, T, Dir, Kind, Method, Lat, Err, RN []int64
			ID, Summary                           []string
		}
		inflateB64(t, blocks[i][2], &col)
		var pl [][2]string
		inflateB64(t, blocks[i+1][2], &pl)
		k := len(col.N)
		for name, l := range map[string]int{"t": len(col.T), "dir": len(col.Dir), "kind": len(col.Kind), "method": len(col.Method),
			"lat": len(col.Lat), "err": len(col.Err), "rn": len(col.RN), "id": len(col.ID), "summary": len(col.Summary), "payloads": len(pl)} {
			if l != k {
				t.Fatalf("block %d: %d %s for %d rows", i/2, l, name, k)
			}
		}
		for x := 0; x < k; x++ {
			n += uint64(col.N[x])
			tm += col.T[x]
			r := htmlRow{N: n, T: tm, Dir: map[int64]string{0: "in", 1: "out"}[col.Dir[x]],
				Kind: tables.Kinds[col.Kind[x]], Method: tables.Methods[col.Method[x]], ID: col.ID[x],
				Latency: col.Lat[x], Summary: col.Summary[x], Error: col.Err[x] == 1, Request: pl[x][0], Response: pl[x][1]}
			if col.RN[x] != 0 {
				r.RespN = n + uint64(col.RN[x])
			}
			rows = append(rows, r)
		}
	}
	if m[1] != fmt.Sprint(len(rows)) {
		t.Errorf("data-rows=%s for %d rows", m[1], len(rows))
	}
	return rows
}

// htmlTranscript is the transcript's HTML of a report.
func htmlTranscript(t testing.TB, page string) string {
	t.Helper()
	m := regexp.MustCompile(`<script id="transcript-data" type="application/octet-stream">([^<]*)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no transcript in the report")
	}
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(decodeB122(t, m[1]))))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// htmlReport exports the ACP sample cassette as HTML and returns it with
// its rows.
func htmlReport(t *testing.T, o Options) (string, []htmlRow) {
	t.Helper()
	var b bytes.Buffer
	if err := Run(goldenCassettes(t)["acp"], NewHTML(&b), o, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	return page, htmlData(t, page)
}

// TestHTMLReport: one self-contained file (no URL to fetch: no src=,
// href= or url() to another place), whose data block holds every exchange
// with its summary and bodies, whose transcript shows the prompt and the
// agent's answer, and in which secrets are redacted.
func TestHTMLReport(t *testing.T) {
	page, rows := htmlReport(t, Options{Redactor: redactWith("sessionId")})
	if regexp.MustCompile(`(?i)(src|href)\s*=|url\(|@import|https?://`).MatchString(page) {
		t.Errorf("the report refers to something outside itself: %q", regexp.MustCompile(`(?i)(src|href)\s*=[^ >]*|url\([^)]*\)|https?://\S+`).FindAllString(page, 5))
	}
	if !strings.HasPrefix(page, "<!doctype html>") || !strings.HasSuffix(page, "</html>\n") {
		t.Error("not one whole HTML document")
	}
	var prompt *htmlRow
	for i := range rows {
		if rows[i].Method == "session/prompt" {
			prompt = &rows[i]
		}
	}
	if len(rows) != 12 || prompt == nil {
		t.Fatalf("%d rows (want 12: 3 answered requests of the client, 1 of the agent, 8 updates), prompt %v", len(rows), prompt)
	}
	if prompt.Latency <= 0 || prompt.Response == "" || !strings.Contains(prompt.Summary, `"Hello, agent!" → stop end_turn`) {
		t.Errorf("prompt row: %+v", *prompt)
	}
	if strings.Contains(page, "sess_") {
		t.Error("the session id (redacted by --redact sessionId) is in the report")
	}
	transcript := htmlTranscript(t, page)
	for _, want := range []string{"Turn 1 · session/prompt", "&gt; Hello, agent!", "⚙ tool Reading project files"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
}

// TestHTMLReportInChromium opens the report in a real headless Chromium:
// the script inflates the rows and draws one per exchange (all are on
// screen) and shows the first one's request (inflating its payloads); the screenshot (kept in
// $RPCTAP_TEST_OUTPUT when set) is a real, non-blank page.
func TestHTMLReportInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
	}
	page, rows := htmlReport(t, Options{})
	dir := outputDir(t)
	report := filepath.Join(dir, "report.html")
	if err := os.WriteFile(report, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		return runChromium(t, chromium, "file://"+report, args...)
	}
	dom := string(run("--dump-dom"))
	if got := strings.Count(dom, `<div class="row in`) + strings.Count(dom, `<div class="row out`); got != len(rows) {
		t.Errorf("the page shows %d rows for %d exchanges", got, len(rows))
	}
	if !strings.Contains(dom, `data-rows="12"`) || !strings.Contains(dom, "parent → child request initialize") {
		t.Errorf("the script did not render the list and the first detail:\n%.2000s", dom)
	}
	shot := filepath.Join(dir, "report.png")
	run("--screenshot=" + shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colors := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if b.Dx() != 1280 || len(colors) < 20 {
		t.Errorf("screenshot %v with %d colours: blank or not rendered", b, len(colors))
	}
	t.Logf("screenshot: %s (%d colours)", shot, len(colors))
}

// runChromium runs a headless Chromium on url with args (--dump-dom,
// --screenshot=FILE) and returns its stdout.
func runChromium(t *testing.T, chromium, url string, args ...string) []byte {
	t.Helper()
	profile := t.TempDir()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--window-size=1280,800"}
	cmd := exec.Command(chromium, append(append(base, args...), url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
		}
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("chromium %v did not finish in 120s", args)
	}
	return out.Bytes()
}

// largeSession writes an agent session of n exchanges: turns of a
// session/prompt answered after 20 agent_message_chunk updates and a tool
// call with its update, the text drawn from a Zipf-distributed vocabulary
// of made-up words (prose-like compressibility), every 997th exchange
// carrying the word "needle-7f3a". It returns the cassette's path and how
// many exchanges hold the needle.
func largeSession(t *testing.T, n int) (string, int) {
	t.Helper()
	r := rand.New(rand.NewSource(23))
	vocab := make([]string, 4000)
	for i := range vocab {
		w := make([]byte, 2+r.Intn(9))
		for j := range w {
			w[j] = byte('a' + r.Intn(26))
		}
		vocab[i] = string(w)
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	ex, needles := 0, 0
	text := func(words int) string {
		var b strings.Builder
		for i := 0; i < words; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[zipf.Uint64()])
		}
		if ex++; ex%997 == 0 {
			b.WriteString(" needle-7f3a")
			needles++
		}
		return b.String()
	}
	b := replaytest.New("acp").Event("start")
	sid := "sess_4f1c2a9e"
	for id := 1; ex < n; id++ {
		b.Wait(1e6).In(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"%s","prompt":[{"type":"text","text":%q}]}}`, id, sid, text(20+r.Intn(40))))
		for c := 0; c < 20 && ex < n; c++ {
			b.Wait(2e5).Out(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}}}`, sid, text(10+r.Intn(60))))
		}
		if ex < n-2 {
			b.Wait(2e5).Out(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"tool_call","toolCallId":"call_%d","title":%q,"kind":"read","status":"pending"}}}`, sid, id, text(4)))
			b.Wait(2e5).Out(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_%d","status":"completed","content":[{"type":"content","content":{"type":"text","text":%q}}]}}}`, sid, id, text(40+r.Intn(120))))
		}
		b.Wait(1e5).Out(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`, id))
	}
	recs := b.End()
	recs[0].Header.Created = "2026-11-21T08:00:00Z"
	path := filepath.Join(t.TempDir(), "large.cassette")
	if err := replaytest.WriteFile(path, recs, true); err != nil {
		t.Fatal(err)
	}
	return path, needles
}

// TestHTMLLargeInChromium: the report of a 200k-exchange agent session is
// at most 30 MB; headless Chromium draws its first screen (a few dozen rows
// of 200k, the first exchange's detail) and, with #bench:needle-7f3a,
// finds exactly the exchanges holding that word, typed one key at a time.
// The times (first screen from navigation start, each keystroke's filter)
// are logged, not asserted: figures of a loaded machine
// (docs/performance.md has them).
func TestHTMLLargeInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
	}
	if testing.Short() || raceEnabled {
		t.Skip("a 200k-exchange session; skipped with -short and -race")
	}
	const n = 200000
	cas, needles := largeSession(t, n)
	report := filepath.Join(outputDir(t), "large.html")
	f, err := os.Create(report)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := Run(cas, NewHTML(f), Options{}, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(report)
	t.Logf("report of %d exchanges: %.1f MB, written in %v", n, float64(st.Size())/1e6, time.Since(start).Round(time.Millisecond))
	if st.Size() > 30e6 {
		t.Errorf("the report is %.1f MB, over 30 MB", float64(st.Size())/1e6)
	}
	start = time.Now()
	dom := string(runChromium(t, chromium, "file://"+report+"#bench:needle-7f3a", "--dump-dom"))
	wall := time.Since(start)
	attr := func(name string) string {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no %s on the page:\n%.1500s", name, dom)
		}
		return m[1]
	}
	drawn := strings.Count(dom, `<div class="row in`) + strings.Count(dom, `<div class="row out`)
	t.Logf("headless Chromium: first screen at %s ms from navigation start (script %s ms); indexing every payload %s ms; filter per keystroke (ms): %s; whole run %v",
		attr("data-first-screen-ms"), attr("data-script-ms"), attr("data-index-ms"), attr("data-filter-ms"), wall.Round(time.Millisecond))
	if got := attr("data-rows"); got != fmt.Sprint(needles) || drawn == 0 || drawn > needles {
		t.Errorf("the filter kept %s rows and drew %d; %d exchanges hold the needle", got, drawn, needles)
	}
	if !strings.Contains(dom, "parent → child request session/prompt") {
		t.Error("the first exchange's detail is not shown")
	}
	// Unfiltered, only the rows on screen are drawn.
	dom = string(runChromium(t, chromium, "file://"+report, "--dump-dom"))
	drawn = strings.Count(dom, `<div class="row in`) + strings.Count(dom, `<div class="row out`)
	if attr("data-rows") != fmt.Sprint(n) || drawn == 0 || drawn > 200 {
		t.Errorf("unfiltered: data-rows %s, %d rows drawn (want the screenful of %d)", attr("data-rows"), drawn, n)
	}
	t.Logf("unfiltered: first screen at %s ms, %d rows drawn", attr("data-first-screen-ms"), drawn)
}

// outputDir is where a test keeps files to look at afterwards:
// $RPCTAP_TEST_OUTPUT/TESTNAME when set, else a temporary directory.
func outputDir(t *testing.T) string {
	if d := os.Getenv("RPCTAP_TEST_OUTPUT"); d != "" {
		d = filepath.Join(d, t.Name())
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// htmlOutline is a report's structure, not its bytes: the element tree
// (tag, id, class, type; style and script bodies left out), the text the
// server wrote into the transcript, then one line per row of the data
// block (what the script draws the list and detail from).
func htmlOutline(t *testing.T, page string) string {
	t.Helper()
	var b strings.Builder
	// The transcript as the page draws it when its tab opens.
	drawn := strings.Replace(page, `<section id="transcript"></section>`, `<section id="transcript">`+htmlTranscript(t, page)+`</section>`, 1)
	z := html.NewTokenizer(strings.NewReader(drawn))
	depth, inTranscript := 0, -1
	void := map[string]bool{"meta": true, "input": true, "br": true, "img": true, "link": true, "hr": true}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			line := tok.Data
			for _, a := range tok.Attr {
				switch a.Key {
				case "id", "class", "type", "hidden", "lang", "charset":
					line += fmt.Sprintf(" %s=%q", a.Key, a.Val)
				}
				if a.Key == "id" && a.Val == "transcript" {
					inTranscript = depth
				}
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), line)
			if tt == html.StartTagToken && !void[tok.Data] {
				depth++
			}
		case html.EndTagToken:
			depth--
			if depth == inTranscript {
				inTranscript = -1
			}
		case html.TextToken:
			if text := strings.TrimSpace(tok.Data); inTranscript >= 0 && text != "" {
				fmt.Fprintf(&b, "%s%q\n", strings.Repeat("  ", depth), text)
			}
		}
	}
	b.WriteString("-- data\n")
	for _, r := range htmlData(t, page) {
		fmt.Fprintf(&b, "#%d %s %s %s id=%s lat=%d err=%v answer=#%d %q request=%dB response=%dB\n",
			r.N, r.Dir, r.Kind, r.Method, r.ID, r.Latency, r.Error, r.RespN, r.Summary, len(r.Request), len(r.Response))
	}
	return b.String()
}

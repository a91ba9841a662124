package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"golang.org/x/net/html"
	"image"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// htmlReport exports the ACP sample cassette as HTML and returns it with
// the rows of its data block.
func htmlReport(t *testing.T, o Options) (string, []htmlRow) {
	t.Helper()
	var b bytes.Buffer
	if err := Run(goldenCassettes(t)["acp"], NewHTML(&b), o, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	m := regexp.MustCompile(`(?s)<script id="data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no data block:\n%s", page)
	}
	var rows []htmlRow
	if err := json.Unmarshal([]byte(m[1]), &rows); err != nil {
		t.Fatalf("data block: %v", err)
	}
	return page, rows
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
	transcript := page[strings.Index(page, `<section id="transcript">`):]
	for _, want := range []string{"Turn 1 · session/prompt", "&gt; Hello, agent!", "⚙ tool Reading project files"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
}

// TestHTMLReportInChromium opens the report in a real headless Chromium:
// the script renders one table row per exchange (from the data block) and
// shows the first one's request; the screenshot (kept in
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
		profile := t.TempDir()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + profile, "--window-size=1280,800"}
		cmd := exec.Command(chromium, append(append(base, args...), "file://"+report)...)
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
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("chromium %v did not finish in 90s", args)
		}
		return out.Bytes()
	}
	dom := string(run("--dump-dom"))
	if got := strings.Count(dom, "<tr class="); got != len(rows) {
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
	z := html.NewTokenizer(strings.NewReader(page))
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
	m := regexp.MustCompile(`(?s)<script id="data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data block")
	}
	var rows []htmlRow
	if err := json.Unmarshal([]byte(m[1]), &rows); err != nil {
		t.Fatalf("data block: %v", err)
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "#%d %s %s %s id=%s lat=%d err=%v answer=#%d %q request=%dB response=%dB\n",
			r.N, r.Dir, r.Kind, r.Method, r.ID, r.Latency, r.Error, r.RespN, r.Summary, len(r.Request), len(r.Response))
	}
	return b.String()
}

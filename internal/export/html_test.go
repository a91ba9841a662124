package export

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/replay/replaytest"
	"golang.org/x/net/html"
)

// htmlReport exports path as HTML.
func htmlReport(t *testing.T, path string, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Run(path, NewHTML(&b), o, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// reportData is the report's data array.
func reportData(t *testing.T, page string) []map[string]json.RawMessage {
	t.Helper()
	const open = `<script id="rpctap-data" type="application/json">`
	i := strings.Index(page, open)
	j := strings.Index(page[i+1:], "</script>")
	if i < 0 || j < 0 {
		t.Fatal("no data script in the report")
	}
	var data []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(page[i+len(open):i+1+j]), &data); err != nil {
		t.Fatalf("the report's data: %v", err)
	}
	return data
}

// outline is the report's structure, not its bytes: the element tree
// (tag, id, class; text, CSS and script left out), then one line per data
// entry (frames with their pairing, latency and error; transcript turns
// with their entries).
func outline(t *testing.T, page string) string {
	t.Helper()
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(page))
	depth := 0
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
				case "id", "class", "type", "hidden", "http-equiv", "name":
					line += fmt.Sprintf(" %s=%q", a.Key, a.Val)
				}
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), line)
			if tt == html.StartTagToken && !voidElement[tok.Data] {
				depth++
			}
		case html.EndTagToken:
			depth--
		}
	}
	b.WriteString("-- data\n")
	for _, e := range reportData(t, page) {
		for k, v := range e {
			switch k {
			case "f":
				var f htmlFrame
				json.Unmarshal(v, &f)
				lat := "-"
				if f.Latency != nil {
					lat = fmt.Sprint(*f.Latency)
				}
				fmt.Fprintf(&b, "frame #%d %s %s %s id=%s pair=%d lat=%s err=%q payload=%dB\n", f.N, f.Dir, f.Kind, f.Method, f.ID, f.Pair, lat, f.Error, len(f.Payload))
			case "turn":
				var tn htmlTurn
				json.Unmarshal(v, &tn)
				fmt.Fprintf(&b, "turn %d %s #%d done=%d\n", tn.N, tn.Method, tn.Rec, tn.Done)
				for _, e := range tn.Entries {
					fmt.Fprintf(&b, "  %s #%d %q\n", e.Kind, e.Rec, e.Text)
				}
			case "session":
				var s map[string]string
				json.Unmarshal(v, &s)
				fmt.Fprintf(&b, "session %s %s\n", s["protocol"], s["created"])
			}
		}
	}
	return b.String()
}

var voidElement = map[string]bool{"meta": true, "input": true, "br": true, "img": true, "link": true, "hr": true}

// TestHTMLGoldens: the report's structure on the ACP sample and the MCP
// SDK session, against testdata/*.html.golden.txt (go test -update
// rewrites them); and it is self-contained: nothing outside the data names
// a URL or a resource to load, and the CSP forbids loading any.
func TestHTMLGoldens(t *testing.T) {
	for name, path := range goldenCassettes(t) {
		t.Run(name, func(t *testing.T) {
			page := htmlReport(t, path, Options{})
			got := outline(t, strings.ReplaceAll(page, path, "CASSETTE"))
			golden := filepath.Join("testdata", name+".html.golden.txt")
			if *update {
				os.WriteFile(golden, []byte(got), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./internal/export -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the report's outline differs from %s (go test -update rewrites it):\n%s", golden, got)
			}
			i := strings.Index(page, `<script id="rpctap-data"`)
			j := i + strings.Index(page[i:], "</script>")
			outside := page[:i] + page[j:]
			for _, bad := range []string{"://", " src=", " href=", "<link", "@import", "url(", "fetch(", "XMLHttpRequest", "WebSocket"} {
				if strings.Contains(outside, bad) {
					t.Errorf("the report's page (outside its data) has %q", bad)
				}
			}
			if !strings.Contains(page, `content="default-src 'none';`) {
				t.Error("no Content-Security-Policy forbidding loads")
			}
		})
	}
}

// TestHTMLPayloadCannotEscape: a payload holding "</script>" and markup
// stays data (json.Marshal escapes < and >), and redaction applies.
func TestHTMLPayloadCannotEscape(t *testing.T) {
	b := replaytestSession(t, `{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"</script><img src=x onerror=alert(1)>","password":"hunter2"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`)
	page := htmlReport(t, b, Options{})
	if strings.Count(page, "</script>") != 2 || strings.Contains(page, "<img") || strings.Contains(page, "hunter2") {
		t.Errorf("the payload escaped its data or the secret was kept:\n%s", page[strings.Index(page, `<script id="rpctap-data"`):])
	}
	data := reportData(t, page)
	if len(data) != 3 { // session, request, answer
		t.Fatalf("data entries: %d", len(data))
	}
}

// outputDir is where a test leaves files worth looking at: go test
// -outputdir DIR, else a temporary directory.
func outputDir(t *testing.T) string {
	if f := flag.Lookup("test.outputdir"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return t.TempDir()
}

// TestHTMLChromium opens the ACP sample's report in a real headless
// Chromium: the screenshot (left in the test's output directory) decodes
// and is not blank, and the DOM after the script ran has a row per frame,
// the detail pane filled with the first frame, and the transcript's turn.
func TestHTMLChromium(t *testing.T) {
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		if p, err := exec.LookPath("chromium"); err == nil {
			chromium = p
		} else {
			t.Skip("no chromium (/usr/bin/chromium or on PATH); skipping the headless browser check of the HTML report (apt-get install chromium)")
		}
	}
	acp, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	out := outputDir(t)
	report := filepath.Join(out, "acp-report.html")
	if err := os.WriteFile(report, []byte(htmlReport(t, acp, Options{})), 0o644); err != nil {
		t.Fatal(err)
	}
	browse := func(extra ...string) []byte {
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + t.TempDir(), "--window-size=1280,800"}, extra...)
		cmd := exec.Command(chromium, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
			}
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("chromium %v did not finish in 90s:\n%s", extra, stderr.String())
		}
		return stdout.Bytes()
	}
	url := "file://" + report
	shot := filepath.Join(out, "acp-report.png")
	browse("--screenshot="+shot, url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("the screenshot does not decode: %v", err)
	}
	colours := map[uint32]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|b>>8] = true
		}
	}
	if bounds.Dx() != 1280 || len(colours) < 50 { // text, rows, header and the selection give hundreds
		t.Errorf("the screenshot is %dx%d with %d colours: blank?", bounds.Dx(), bounds.Dy(), len(colours))
	}
	t.Logf("screenshot %s: %dx%d, %d colours", shot, bounds.Dx(), bounds.Dy(), len(colours))

	dom := string(browse("--dump-dom", url))
	rows := regexp.MustCompile(`<tr class="frame [^"]*" data-rec="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(rows) != 16 || rows[0][1] != "2" || rows[15][1] != "17" { // frames are records 2..17
		t.Errorf("the DOM has %d frame rows, want 16 (records 2..17):\n%s", len(rows), dom)
	}
	for _, want := range []string{
		`data-rendered="16"`,
		`<tr class="frame dir-in request sel" data-rec="2">`, // the first frame selected
		`<h2>#2 → in request initialize</h2>`,                // and shown in the detail pane
		`<td class="sum">tool_call Reading project files (pending)</td>`,
		`<td class="sum">end_turn</td>`,
		`<div class="entry user">Hello, agent! <span class="rec">#6</span></div>`, // the transcript's prompt
		`turn 1 · session/prompt · #6`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the DOM lacks %s", want)
		}
	}
}

// replaytestSession writes a JSON-RPC cassette of one request and its
// answer.
func replaytestSession(t *testing.T, in, out string) string {
	t.Helper()
	b := replaytest.New("jsonrpc").Event("start")
	b.In(in)
	b.Wait(1e6).Out(out)
	recs := b.End()
	recs[0].Header.Created = "2026-11-21T08:00:00Z"
	path := filepath.Join(t.TempDir(), "s.cassette")
	if err := replaytest.WriteFile(path, recs, true); err != nil {
		t.Fatal(err)
	}
	return path
}

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/internal/export"
	"github.com/rpctap/rpctap/internal/testpeers"
)

// TestProgressBar: the bar's cells, share and figures.
func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		p    export.Progress
		want string
	}{
		{export.Progress{Read: 0, Size: 1 << 30}, "rpctap export [······························]   0% 0 B of 1 GiB, 0 records"},
		{export.Progress{Read: 1 << 29, Size: 1 << 30, Records: 123456}, "rpctap export [███████████████···············]  50% 512 MiB of 1 GiB, 123456 records"},
		{export.Progress{Read: 3 << 30, Size: 1 << 30, Records: 9}, "rpctap export [██████████████████████████████] 100% 3 GiB of 1 GiB, 9 records"},
		{export.Progress{Read: 10, Size: 0}, "rpctap export [······························]   0% 10 B of 0 B, 0 records"},
	} {
		if got := progressBar(c.p); got != c.want {
			t.Errorf("progressBar(%+v)\n got %q\nwant %q", c.p, got, c.want)
		}
	}
}

// TestExportProgressOnTerminal: with stderr on a terminal, export draws the
// bar (at least its last, 100% state) and erases it when done; with stderr
// redirected it writes nothing there.
func TestExportProgressOnTerminal(t *testing.T) {
	rp := rpctapPath(t)
	cas, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	m, slave := testpeers.OpenPTY(t)
	defer m.Close()
	for _, format := range []string{"har", "html"} {
		out := filepath.Join(t.TempDir(), "x."+format)
		cmd := exec.Command(rp, "export", "--format", format, "-o", out, cas)
		cmd.Stderr = slave
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
	}
	slave.Close()
	var tty bytes.Buffer
	io.Copy(&tty, m) // until EIO: the slave is closed
	if s := tty.String(); strings.Count(s, "rpctap export [") < 2 || strings.Count(s, "] 100% ") < 2 || !strings.HasSuffix(s, "\r\x1b[K") {
		t.Errorf("the terminal got %q, want each export's bar at 100%% then the line erased", s)
	}
	cmd := exec.Command(rp, "export", "--format", "har", "-o", filepath.Join(t.TempDir(), "x.har"), cas)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil || errb.Len() != 0 {
		t.Errorf("stderr redirected: %v, it got %q", err, errb.String())
	}
}

// TestExportWriteFailure: when the output cannot be written (stdout on
// /dev/full) or the endpoint refuses the spans (an HTTP 400, not retried),
// export fails with one line naming that failure, exit 125, and does not
// blame the cassette (exit 4 is for a bad cassette).
func TestExportWriteFailure(t *testing.T) {
	rp := rpctapPath(t)
	cas, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "cassettes", "acp-go.cassette"))
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no thanks", http.StatusBadRequest)
	}))
	defer refuse.Close()
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"full disk", []string{"--format", "har"}, nil, "no space left on device"},
		{"refused", []string{"--format", "otlp", "--send"}, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + refuse.URL}, "400"},
	} {
		cmd := exec.Command(rp, append(append([]string{"export"}, c.args...), cas)...)
		cmd.Stdout = full
		cmd.Env = append(filterEnv(os.Environ(), "OTEL_"), c.env...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if cmd.ProcessState.ExitCode() != ExitInternal || len(lines) != 1 || !strings.Contains(lines[0], c.want) || strings.Contains(lines[0], cas) {
			t.Errorf("%s: %v, stderr %q; want exit %d and one line with %q, not naming the cassette", c.name, err, errb.String(), ExitInternal, c.want)
		}
	}
}

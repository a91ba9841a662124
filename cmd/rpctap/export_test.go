package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rpctap/rpctap/internal/export"
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
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer m.Close()
	rc, _ := m.SyscallConn()
	var n int
	var ierr error
	rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr == nil {
			n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	})
	if ierr != nil {
		t.Skipf("pty: %v", ierr)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("pty slave: %v", err)
	}
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

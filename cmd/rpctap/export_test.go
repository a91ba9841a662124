package main

import (
	"testing"

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

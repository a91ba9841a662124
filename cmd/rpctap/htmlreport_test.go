package main

import (
	"bytes"
	"compress/flate"
	"io"
	"regexp"
	"strings"
	"testing"
)

// htmlReportText is the text of an HTML report as its page draws it: the
// report itself followed by the decoded content of every data block (rows,
// bodies, transcript: raw DEFLATE in the 7-bit encoding of
// internal/export/b122.go).
func htmlReportText(t *testing.T, page string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(page)
	for _, m := range regexp.MustCompile(`<script [^>]*type="application/octet-stream">([^<]*)</script>`).FindAllStringSubmatch(page, -1) {
		raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(unB122(t, m[1]))))
		if err != nil {
			t.Fatalf("a data block of the report does not inflate: %v", err)
		}
		b.WriteString("\n")
		b.Write(raw)
	}
	return b.String()
}

// unB122 decodes the report's 7-bit encoding (internal/export/b122.go).
func unB122(t *testing.T, s string) []byte {
	illegal := [3]uint32{0, '\r', '<'}
	var out []byte
	var acc uint32
	var nacc uint
	push := func(v uint32) {
		acc = acc<<7 | v
		nacc += 7
		if nacc >= 8 {
			nacc -= 8
			out = append(out, byte(acc>>nacc))
			acc &= 1<<nacc - 1
		}
	}
	for _, r := range s {
		switch k := r >> 7; {
		case r < 0x80:
			push(uint32(r))
		case k >= 1 && k <= 3:
			push(illegal[k-1])
			push(uint32(r & 0x7f))
		case k >= 4 && k <= 6:
			push(illegal[k-4])
		default:
			t.Fatalf("character %U is not of the report's encoding", r)
		}
	}
	return out
}

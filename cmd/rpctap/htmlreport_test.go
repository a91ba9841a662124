package main

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// htmlReportText is the text of an HTML report as its page draws it: the
// report itself followed by the decoded content of every data block (rows,
// bodies, transcript: raw DEFLATE in the 7-bit encoding of
// internal/export/b122.go).
func htmlReportText(t *testing.T, page string) string {
	t.Helper()
	text, err := reportText(page)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func reportText(page string) (string, error) {
	var b strings.Builder
	b.WriteString(page)
	for _, m := range regexp.MustCompile(`<script [^>]*type="application/octet-stream">([^<]*)</script>`).FindAllStringSubmatch(page, -1) {
		z, err := unB122(m[1])
		if err != nil {
			return "", err
		}
		raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(z)))
		if err != nil {
			return "", fmt.Errorf("a data block of the report does not inflate: %v", err)
		}
		b.WriteString("\n")
		b.Write(raw)
	}
	return b.String(), nil
}

// htmldataCmd is the testscript command `htmldata FILE`: the report's
// text and its decoded data blocks on stdout.
func htmldataCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: htmldata FILE")
	}
	text, err := reportText(ts.ReadFile(args[0]))
	if neg != (err != nil) {
		ts.Fatalf("htmldata %s: %v", args[0], err)
	}
	ts.Stdout().Write([]byte(text))
}

// unB122 decodes the report's 7-bit encoding (internal/export/b122.go).
func unB122(s string) ([]byte, error) {
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
			return nil, fmt.Errorf("character %U is not of the report's encoding", r)
		}
	}
	return out, nil
}

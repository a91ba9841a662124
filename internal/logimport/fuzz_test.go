package logimport

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzRead: no log makes a reader panic, and every message a reader gives
// is one JSON value (the cassette stores it as a frame). Seeds: the
// fixtures, each with the format it is in.
func FuzzRead(f *testing.F) {
	formats := map[string]string{"zed-acp.json": "zed-acp", "generic.jsonl": "jsonl"}
	files, _ := filepath.Glob("testdata/*")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		format := formats[filepath.Base(p)]
		switch {
		case format != "":
		case bytes.HasPrefix([]byte(filepath.Base(p)), []byte("vscode")):
			format = "vscode-lsp"
		default:
			format = "lsp-devtools"
		}
		f.Add(format, b)
	}
	f.Fuzz(func(t *testing.T, format string, data []byte) {
		l, err := Read(format, bytes.NewReader(data), time.Unix(1e9, 0))
		if err != nil {
			return
		}
		for _, m := range l.Messages {
			if format != "jsonl" && !json.Valid(m.Body) {
				t.Fatalf("%s: message at line %d is not JSON: %q", format, m.Line, m.Body)
			}
		}
	})
}

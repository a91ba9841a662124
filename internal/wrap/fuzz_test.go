package wrap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzWrapRoundTrip: any input gives an error or an edit, never a panic;
// and for a config none of whose entries is wrapped yet, unwrap after wrap
// gives back the input byte for byte. Seeds: the client fixtures.
func FuzzWrapRoundTrip(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b, filepath.Ext(p) == ".toml")
	}
	f.Fuzz(func(t *testing.T, src []byte, toml bool) {
		spec := GuessSpec("x.json")
		if toml {
			spec = GuessSpec("x.toml")
		}
		es, err := spec.Parse(src)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Wrapped != nil {
				return
			}
		}
		w, err := PlanBytes(spec, src, OpWrap, testOpts)
		if err != nil {
			return // the edit did not come out as asked: refused, nothing written
		}
		u, err := PlanBytes(spec, w.After, OpUnwrap, Options{})
		if err != nil {
			t.Fatalf("unwrap of a wrapped file failed: %v\n%s", err, w.After)
		}
		if !bytes.Equal(u.After, src) {
			t.Fatalf("unwrap(wrap(x)) != x\nx:\n%s\nwrapped:\n%s\nunwrapped:\n%s", src, w.After, u.After)
		}
	})
}

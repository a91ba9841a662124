package protocol

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// indexCorpus: every ACP/MCP frame of ../shared/traffic, frames generated
// from the catalogues (every method, several variants, with a long text
// salted into them so that the index has long strings to skip), and
// mutations of all of those (bytes dropped, swapped or retyped), most of
// them no longer valid JSON or no longer of the right shape.
func indexCorpus(t *testing.T, proto string) []benchFrame {
	var out []benchFrame
	p, _ := Lookup(proto)
	caps := captureIns(proto + "-*.in")
	for _, in := range caps {
		name := in[:len(in)-len(".in")]
		s := NewSession(p)
		for i, f := range interleave(p, readLines(t, in), readLines(t, name+".out")) {
			info, _ := s.Frame(uint64(i+1), f.Dir, f.Frame)
			out = append(out, benchFrame{f.Dir, f.Frame, info.Method})
		}
	}
	type gen struct {
		name               string
		req, result, notif shape
	}
	var gens []gen
	switch proto {
	case "acp":
		for m, am := range acpMethods() {
			gens = append(gens, gen{m, am.req, am.result, am.notif})
		}
	case "mcp":
		for m, mm := range mcpMethods() {
			gens = append(gens, gen{m, mm.req, mm.result, mm.notif})
		}
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i].name < gens[j].name })
	long := strings.Repeat(`code "quoted" \ line`+"\n", 20)
	for id, g := range gens {
		for variant := 0; variant < 4; variant++ {
			for _, full := range []bool{false, true} {
				salt := func(v any) any {
					if m, ok := v.(map[string]any); ok {
						m["_meta"] = map[string]any{"long": long, "list": []any{long, map[string]any{"x": long}}}
					}
					return v
				}
				add := func(d Dir, msg map[string]any) {
					js, err := json.Marshal(msg)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, benchFrame{d, js, g.name})
				}
				if g.req != nil {
					add(FromParent, map[string]any{"jsonrpc": "2.0", "id": id, "method": g.name, "params": salt(sampleShape(g.req, variant, full))})
					add(FromChild, map[string]any{"jsonrpc": "2.0", "id": id, "result": salt(sampleShape(g.result, variant, full))})
				}
				if g.notif != nil {
					add(FromChild, map[string]any{"jsonrpc": "2.0", "method": g.name, "params": salt(sampleShape(g.notif, variant, full))})
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(7))
	n := len(out)
	for i := 0; i < n; i++ {
		f := out[i]
		for k := 0; k < 4; k++ {
			b := append([]byte(nil), f.frame...)
			if len(b) < 2 {
				break
			}
			at := rng.Intn(len(b))
			switch k {
			case 0:
				b = append(b[:at], b[at+1:]...)
			case 1:
				j := rng.Intn(len(b))
				b[at], b[j] = b[j], b[at]
			case 2:
				b[at] = `{}[]",:0an\ `[rng.Intn(12)]
			case 3:
				// a value of another type where a string was
				b = []byte(strings.Replace(string(b), `":"`, `":{"q":1}`+fmt.Sprint(rng.Intn(2))+`,"z":"`, 1))
			}
			out = append(out, benchFrame{f.dir, b, f.method})
		}
	}
	return out
}

// TestFrameIndexSameVerdicts: validation that skips values through the
// frame index reports exactly what validation that scans them reports, on
// valid and broken frames alike.
func TestFrameIndexSameVerdicts(t *testing.T) {
	defer func() { noFrameIndex = false }()
	for _, name := range []string{"acp", "mcp", "jsonrpc"} {
		src := name
		if name == "jsonrpc" {
			src = "acp"
		}
		p, _ := Lookup(name)
		fs := indexCorpus(t, src)
		differ := 0
		for _, f := range fs {
			info := p.Classify(f.dir, f.frame)
			if info.Kind == Response {
				info.Method = f.method
			}
			noFrameIndex = true
			want := p.Validate(f.dir, f.frame, info)
			noFrameIndex = false
			got := p.Validate(f.dir, f.frame, info)
			if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%s %s: with the index %v, without %v", name, f.frame, got, want)
				if differ++; differ > 5 {
					t.FailNow()
				}
			}
		}
		if len(fs) < 500 {
			t.Fatalf("%s: only %d frames", name, len(fs))
		}
	}
}

// TestClassifyIndexed: classification through an index of the frame gives
// Classify's answer, for every protocol (those without an indexed path
// fall back to Classify).
func TestClassifyIndexed(t *testing.T) {
	var idx jsonscan.Index
	for _, name := range Names() {
		p, _ := Lookup(name)
		for _, src := range []string{"acp", "mcp"} {
			for _, f := range indexCorpus(t, src) {
				if !json.Valid(f.frame) {
					continue
				}
				idx.Build(f.frame)
				if got, want := ClassifyIndexed(p, f.dir, f.frame, &idx), p.Classify(f.dir, f.frame); got != want {
					t.Fatalf("%s: ClassifyIndexed(%s) = %+v, Classify %+v", name, f.frame, got, want)
				}
			}
		}
	}
}

// TestFrameClassifiedIndexed: a Session given the caller's index of each
// frame reports exactly what one without it reports.
func TestFrameClassifiedIndexed(t *testing.T) {
	var idx jsonscan.Index
	for _, name := range []string{"acp", "mcp", "jsonrpc", "raw"} {
		src := name
		if name == "jsonrpc" || name == "raw" {
			src = "acp"
		}
		p, _ := Lookup(name)
		plain, indexed := NewSession(p), NewSession(p)
		for n, f := range indexCorpus(t, src) {
			if !json.Valid(f.frame) {
				continue
			}
			info := p.Classify(f.dir, f.frame)
			idx.Build(f.frame)
			i1, v1 := plain.FrameClassified(uint64(n+1), f.dir, f.frame, info)
			i2, v2 := indexed.FrameClassifiedIndexed(uint64(n+1), f.dir, f.frame, info, &idx)
			if i1 != i2 || !reflect.DeepEqual(v1, v2) {
				t.Fatalf("%s %s: indexed %+v %v, plain %+v %v", name, f.frame, i2, v2, i1, v1)
			}
		}
		if e1, e2 := plain.End(), indexed.End(); !reflect.DeepEqual(e1, e2) {
			t.Fatalf("%s: End differs: %v vs %v", name, e2, e1)
		}
	}
}

package protocol

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
)

// Benchmarks of the JSON-RPC family over distinct frames: every ACP/MCP
// frame of ../shared/traffic plus frames generated from our catalogues
// (each method, several union variants, minimal and full bodies, fresh ids
// and strings), so no frame repeats within a pass. One op is one pass over
// all frames; frames/s and MB/s are per frame and per byte.
//
//	go test ./protocol/ -run '^$' -bench 'Classify|Validate|Session' -benchtime 2x

type benchFrame struct {
	dir    Dir
	frame  []byte
	method string // for responses: the request's method (as a Session gives it)
}

func rpcBenchFrames(b *testing.B, proto string) []benchFrame {
	b.Helper()
	var out []benchFrame
	caps := captureIns(proto + "-*.in")
	p, _ := Lookup(proto)
	for _, in := range caps {
		name := in[:len(in)-len(".in")]
		seq := interleave(p, readLines(b, in), readLines(b, name+".out"))
		s := NewSession(p)
		for i, f := range seq {
			info, _ := s.Frame(uint64(i+1), f.Dir, f.Frame)
			out = append(out, benchFrame{f.Dir, f.Frame, info.Method})
		}
	}
	type gen struct {
		name               string
		req, result, notif shape
		dir                Dir
	}
	var gens []gen
	switch proto {
	case "acp":
		for m, am := range acpMethods() {
			d := FromParent
			if am.side == acpClientSide {
				d = FromChild
			}
			gens = append(gens, gen{m, am.req, am.result, am.notif, d})
		}
	case "mcp":
		for m, mm := range mcpMethods() {
			d := FromParent
			if mm.from == mcpFromServer {
				d = FromChild
			}
			gens = append(gens, gen{m, mm.req, mm.result, mm.notif, d})
		}
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i].name < gens[j].name })
	id := 0
	for _, g := range gens {
		for variant := 0; variant < 6; variant++ {
			for _, full := range []bool{false, true} {
				id++
				add := func(d Dir, msg map[string]any) {
					js, err := json.Marshal(msg)
					if err != nil {
						b.Fatal(err)
					}
					out = append(out, benchFrame{d, js, g.name})
				}
				salt := func(v any) any {
					if m, ok := v.(map[string]any); ok {
						m["_meta"] = map[string]any{"n": fmt.Sprintf("frame-%d-%d", id, variant)}
					}
					return v
				}
				if g.req != nil {
					add(g.dir, map[string]any{"jsonrpc": "2.0", "id": id, "method": g.name, "params": salt(sampleShape(g.req, variant, full))})
					add(1-g.dir, map[string]any{"jsonrpc": "2.0", "id": id, "result": salt(sampleShape(g.result, variant, full))})
				}
				if g.notif != nil {
					add(g.dir, map[string]any{"jsonrpc": "2.0", "method": g.name, "params": salt(sampleShape(g.notif, variant, full))})
				}
			}
		}
	}
	return out
}

func benchTotal(fs []benchFrame) int64 {
	var n int64
	for _, f := range fs {
		n += int64(len(f.frame))
	}
	return n
}

func BenchmarkClassify(b *testing.B) {
	for _, name := range []string{"acp", "mcp", "jsonrpc", "raw"} {
		b.Run(name, func(b *testing.B) {
			var fs []benchFrame
			switch name {
			case "acp", "mcp":
				fs = rpcBenchFrames(b, name)
			default: // generic protocols: every JSON-RPC frame we have
				fs = append(rpcBenchFrames(b, "acp"), rpcBenchFrames(b, "mcp")...)
			}
			p, _ := Lookup(name)
			b.SetBytes(benchTotal(fs))
			b.ReportAllocs()
			b.ResetTimer()
			sink := 0
			for i := 0; i < b.N; i++ {
				for _, f := range fs {
					sink += len(p.Classify(f.dir, f.frame).ID)
				}
			}
			b.ReportMetric(float64(b.N)*float64(len(fs))/b.Elapsed().Seconds(), "frames/s")
			if sink == 0 && name != "raw" {
				b.Fatal("no ids found")
			}
		})
	}
}

func BenchmarkValidate(b *testing.B) {
	for _, name := range []string{"acp", "mcp", "jsonrpc"} {
		b.Run(name, func(b *testing.B) {
			src := name
			if name == "jsonrpc" {
				src = "acp"
			}
			fs := rpcBenchFrames(b, src)
			p, _ := Lookup(name)
			infos := make([]Info, len(fs))
			for i, f := range fs {
				infos[i] = p.Classify(f.dir, f.frame)
				if infos[i].Kind == Response {
					infos[i].Method = f.method
				}
			}
			b.SetBytes(benchTotal(fs))
			b.ReportAllocs()
			b.ResetTimer()
			errs := 0
			for i := 0; i < b.N; i++ {
				for j, f := range fs {
					for _, v := range p.Validate(f.dir, f.frame, infos[j]) {
						if v.Severity == SevError {
							errs++
						}
					}
				}
			}
			b.ReportMetric(float64(b.N)*float64(len(fs))/b.Elapsed().Seconds(), "frames/s")
			if errs != 0 {
				b.Fatalf("%d errors on valid frames", errs)
			}
		})
	}
}

// BenchmarkSession is the whole per-frame cost in a recorder or check:
// JSON syntax check, classification, handshake and pairing, validation.
func BenchmarkSession(b *testing.B) {
	for _, name := range []string{"acp", "mcp"} {
		b.Run(name, func(b *testing.B) {
			fs := rpcBenchFrames(b, name)
			p, _ := Lookup(name)
			b.SetBytes(benchTotal(fs))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := NewSession(p)
				for j, f := range fs {
					s.Frame(uint64(j+1), f.dir, f.frame)
				}
				s.End()
			}
			b.ReportMetric(float64(b.N)*float64(len(fs))/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

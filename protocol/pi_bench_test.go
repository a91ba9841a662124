package protocol

import (
	"path/filepath"
	"testing"
)

// Benchmarks of the four event-style protocols over the distinct frames of
// their catalogue sessions (testdata/<name>/*.session). One op is one pass
// over every frame of the protocol's sessions; frames/s and MB/s are per
// frame and per byte of frame.

func benchSteps(b *testing.B, name string) ([]evStep, int64) {
	b.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", name, "*.session"))
	var steps []evStep
	var n int64
	for _, f := range files {
		for _, st := range loadSession(b, f) {
			steps = append(steps, st)
			n += int64(len(st.frame))
		}
	}
	if len(steps) == 0 {
		b.Fatalf("no frames for %s", name)
	}
	return steps, n
}

func benchClassify(b *testing.B, p Protocol) {
	steps, n := benchSteps(b, p.Name())
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	var sink int
	for i := 0; i < b.N; i++ {
		for _, st := range steps {
			sink += len(p.Classify(st.dir, st.frame).Method)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(steps))/b.Elapsed().Seconds(), "frames/s")
	if sink == 0 {
		b.Fatal("nothing classified")
	}
}

func benchValidate(b *testing.B, p Protocol) {
	steps, n := benchSteps(b, p.Name())
	infos := make([]Info, len(steps))
	for i, st := range steps {
		infos[i] = p.Classify(st.dir, st.frame)
	}
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	bad := 0
	for i := 0; i < b.N; i++ {
		for j, st := range steps {
			bad += len(p.Validate(st.dir, st.frame, infos[j]))
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(steps))/b.Elapsed().Seconds(), "frames/s")
	if bad != 0 {
		b.Fatalf("%d violations in valid sessions", bad)
	}
}

func BenchmarkSynapsClassify(b *testing.B)     { benchClassify(b, synapsProto{}) }
func BenchmarkSynapsValidate(b *testing.B)     { benchValidate(b, synapsProto{}) }
func BenchmarkBrainwiresClassify(b *testing.B) { benchClassify(b, brainwiresProto{}) }
func BenchmarkBrainwiresValidate(b *testing.B) { benchValidate(b, brainwiresProto{}) }
func BenchmarkOpiClassify(b *testing.B)        { benchClassify(b, opiProto{}) }
func BenchmarkOpiValidate(b *testing.B)        { benchValidate(b, opiProto{}) }
func BenchmarkPiClassify(b *testing.B)         { benchClassify(b, piProto{}) }
func BenchmarkPiValidate(b *testing.B)         { benchValidate(b, piProto{}) }

// BenchmarkEventSession is the whole per-frame cost (JSON syntax check,
// classification, handshake and pairing, validation) of the event-style
// protocols over their catalogue sessions; one op is one Session over every
// session file of the protocol, in order.
func BenchmarkEventSession(b *testing.B) {
	for _, name := range []string{"synaps", "brainwires", "opi", "pi"} {
		b.Run(name, func(b *testing.B) {
			steps, n := benchSteps(b, name)
			p, err := Lookup(name)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(n)
			b.ReportAllocs()
			b.ResetTimer()
			errs := 0
			for i := 0; i < b.N; i++ {
				s := NewSession(p)
				for j, st := range steps {
					_, vs := s.Frame(uint64(j+1), st.dir, st.frame)
					for _, v := range vs {
						if v.Severity == SevError {
							errs++
						}
					}
				}
				s.End()
			}
			b.ReportMetric(float64(b.N)*float64(len(steps))/b.Elapsed().Seconds(), "frames/s")
			if errs != 0 {
				b.Fatalf("%d error-level violations on valid sessions", errs)
			}
		})
	}
}

package main

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
)

// pct returns the q-quantile (0..1) of sorted by nearest rank.
func pct(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func sortedCopy(v []int64) []int64 {
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// spread is a median with its min and max over repetitions.
type spread struct {
	Med, Min, Max float64
	N             int
}

func spreadOf(v []float64) spread {
	var clean []float64
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			clean = append(clean, x)
		}
	}
	if len(clean) == 0 {
		return spread{Med: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	sort.Float64s(clean)
	n := len(clean)
	med := clean[n/2]
	if n%2 == 0 {
		med = (clean[n/2-1] + clean[n/2]) / 2
	}
	return spread{Med: med, Min: clean[0], Max: clean[n-1], N: n}
}

func (s spread) ok() bool { return !math.IsNaN(s.Med) }

// fmtS formats a spread as "med [min–max]" with the given precision.
func (s spread) fmt(prec int) string {
	if !s.ok() {
		return "–"
	}
	if s.N == 1 || s.Min == s.Max {
		return fmt.Sprintf("%.*f", prec, s.Med)
	}
	return fmt.Sprintf("%.*f [%.*f–%.*f]", prec, s.Med, prec, s.Min, prec, s.Max)
}

// zstdMeasure compresses data on one core at SpeedFastest. With flushEvery
// > 0 the encoder is flushed every flushEvery bytes (as a recorder that
// writes a batch whenever it goes idle), else data goes through as one
// stream. It returns MB/s and compressed/raw.
func zstdMeasure(data []byte, flushEvery int) (mbps, ratio float64, err error) {
	mbps, _, ratio, err = zstdMeasureCPU(data, flushEvery)
	return
}

// zstdMeasureCPU is zstdMeasure that also returns MB per CPU second of the
// compressing thread, which a loaded machine disturbs less than wall time.
func zstdMeasureCPU(data []byte, flushEvery int) (mbps, cpuMBps, ratio float64, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	var cw countWriter
	enc, err := zstd.NewWriter(&cw, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return 0, 0, 0, err
	}
	t0 := time.Now()
	if flushEvery <= 0 {
		if _, err := enc.Write(data); err != nil {
			return 0, 0, 0, err
		}
	} else {
		for off := 0; off < len(data); off += flushEvery {
			end := min(off+flushEvery, len(data))
			if _, err := enc.Write(data[off:end]); err != nil {
				return 0, 0, 0, err
			}
			if err := enc.Flush(); err != nil {
				return 0, 0, 0, err
			}
		}
	}
	if err := enc.Close(); err != nil {
		return 0, 0, 0, err
	}
	el := time.Since(t0)
	cpu := time.Duration(threadCPU() - cpu0)
	mb := float64(len(data)) / 1e6
	return mb / el.Seconds(), mb / cpu.Seconds(), float64(cw.n) / float64(len(data)), nil
}

// threadCPU returns the calling thread's CPU time in ns.
func threadCPU() int64 {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

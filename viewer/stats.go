package viewer

import (
	"math"
	"slices"
)

// Stats are the counts and latencies of a cassette (or of what was read of it).
type Stats struct {
	Records    int
	Frames     int
	In, Out    int
	Stderr     int
	Events     int
	Violations int
	Orphans    int   // responses to no known request
	Duration   int64 // ns, time of the last record
	Ended      bool  // an end record was seen: unanswered requests are final
	// ValidationStopped is the record at which the recorder stopped
	// validating (a recorder.validation-stopped violation; 0: it did not):
	// the findings stored after it, and at the session's end, are missing.
	ValidationStopped uint64
	Protocol          string // from a meta record (the detected protocol)
	Methods           map[string]*MethodStats
	Unanswered        []Unanswered
}

// MethodStats counts one method's frames per direction and its latencies
// (request to response).
type MethodStats struct {
	Method   string
	In, Out  int
	Requests int
	Latency  Latency
}

// Unanswered is a request without a response.
type Unanswered struct {
	N      uint64
	T      int64
	Method string
}

// Latency collects durations and answers percentiles. It keeps the first
// exactSamples values exactly (so small sessions get exact nearest-rank
// percentiles) and, past that, only a log-scale histogram whose buckets are
// 2% wide, so memory stays bounded however long the cassette.
type Latency struct {
	n        int
	min, max int64
	exact    []int64
	buckets  []uint32 // buckets[i] counts values v with bucketOf(v) == i
}

const exactSamples = 4096

// bucketGrowth is the ratio between consecutive histogram bucket bounds.
const bucketGrowth = 1.02

var logGrowth = math.Log(bucketGrowth)

func bucketOf(v int64) int {
	if v < 1 {
		return 0
	}
	return int(math.Log(float64(v))/logGrowth) + 1
}

// bucketValue is a representative value of bucket i (its geometric middle).
func bucketValue(i int) int64 {
	if i == 0 {
		return 0
	}
	return int64(math.Exp((float64(i-1) + 0.5) * logGrowth))
}

// Add records one duration in ns.
func (l *Latency) Add(v int64) {
	if l.n == 0 || v < l.min {
		l.min = v
	}
	if l.n == 0 || v > l.max {
		l.max = v
	}
	l.n++
	if l.exact != nil || l.n <= exactSamples {
		if len(l.exact) < exactSamples {
			l.exact = append(l.exact, v)
			return
		}
		// Spill the exact samples into the histogram once.
		for _, e := range l.exact {
			l.bucket(e)
		}
		l.exact = nil
	}
	l.bucket(v)
}

func (l *Latency) bucket(v int64) {
	b := bucketOf(v)
	if b >= len(l.buckets) {
		l.buckets = append(l.buckets, make([]uint32, b+1-len(l.buckets))...)
	}
	l.buckets[b]++
}

// Count is the number of durations added.
func (l *Latency) Count() int { return l.n }

// Max is the largest duration (exact).
func (l *Latency) Max() int64 { return l.max }

// Clone returns an independent copy.
func (l Latency) Clone() Latency {
	l.exact = slices.Clone(l.exact)
	l.buckets = slices.Clone(l.buckets)
	return l
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100): exact
// while at most exactSamples values were added, else within 2%, and always
// between the smallest and largest value.
func (l *Latency) Percentile(p float64) int64 {
	if l.n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(l.n)))
	rank = max(1, min(rank, l.n))
	if l.exact != nil && len(l.exact) == l.n {
		s := slices.Clone(l.exact)
		slices.Sort(s)
		return s[rank-1]
	}
	seen := 0
	for i, c := range l.buckets {
		seen += int(c)
		if seen >= rank {
			return max(l.min, min(l.max, bucketValue(i)))
		}
	}
	return l.max
}

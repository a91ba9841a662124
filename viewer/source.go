// Package viewer is rpctap's terminal inspector: a Store over a cassette
// (append-only, bounded memory), a Follower that notices new records, pure
// render functions, a virtual tview table over the Store, and the App that
// puts them on a tcell.Screen the caller provides (a real terminal, or a
// SimulationScreen in tests).
//
// Layers, each importing only the ones before it:
//
//	Source   -> records by position (cassette.Index, or MemSource in tests)
//	Store    -> row summaries, pairing, violation marks, stats (analysis.go)
//	render   -> pure functions: record -> cells, JSON -> coloured text,
//	            transcript folding, stats tables
//	table    -> tview.TableContent over the Store (and a filter)
//	App      -> tview widgets, keys, follow
package viewer

import (
	"sync"

	"github.com/rpctap/rpctap/cassette"
)

// Source gives records by position. Position i is record number i (the
// header is 0). A Source only ever grows: Refresh picks up records appended
// since the last call. Implementations need not be safe for concurrent use;
// the Store serialises calls.
type Source interface {
	// Len is the number of complete records known.
	Len() int
	// Records returns up to n records starting at position from. The
	// returned slice must not be modified by the caller.
	Records(from, n int) ([]cassette.Record, error)
	// Refresh looks for records appended since the last call.
	Refresh() error
}

// Ender is implemented by sources that know whether the cassette was closed
// cleanly (it has an end record) and whether its tail was cut off.
type Ender interface {
	// Ended reports an end record was read.
	Ended() bool
	// Truncated returns a message such as "truncated after record 812"
	// when the file ends in an incomplete or undecodable frame, else "".
	Truncated() string
}

// MemSource is a Source over records held in memory. It is safe for
// concurrent use: tests append from one goroutine while the viewer reads.
type MemSource struct {
	mu      sync.Mutex
	all     []cassette.Record // appended, maybe not yet visible
	visible int               // what Refresh has published
	trunc   string
}

// NewMemSource returns a source whose records are all visible.
func NewMemSource(recs ...cassette.Record) *MemSource {
	m := &MemSource{}
	m.Append(recs...)
	m.visible = len(m.all)
	return m
}

// Append adds records; they become visible at the next Refresh. Record
// numbers are assigned from the position.
func (m *MemSource) Append(recs ...cassette.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		r.N = uint64(len(m.all))
		m.all = append(m.all, r)
	}
}

// Len implements Source.
func (m *MemSource) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.visible
}

// Records implements Source.
func (m *MemSource) Records(from, n int) ([]cassette.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if from < 0 {
		from = 0
	}
	end := min(from+n, m.visible)
	if from >= end {
		return nil, nil
	}
	return m.all[from:end:end], nil
}

// Refresh implements Source.
func (m *MemSource) Refresh() error {
	m.mu.Lock()
	m.visible = len(m.all)
	m.mu.Unlock()
	return nil
}

// Ended implements Ender.
func (m *MemSource) Ended() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.visible > 0 && m.all[m.visible-1].K == cassette.KindEnd
}

// Truncated implements Ender.
func (m *MemSource) Truncated() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.trunc
}

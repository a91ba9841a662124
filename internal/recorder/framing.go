package recorder

import "github.com/rpctap/rpctap/internal/framing"

// MaxLine is the longest message the recorder holds whole
// (framing.MaxMessage). A longer one is recorded as a run of records with
// Part set, each at most MaxLine bytes, followed by the record that carries
// the rest (and the line ending), so the recorder's memory per stream stays
// bounded however long a message grows. Splitting itself is package
// framing's job: lines, or Content-Length messages, per direction.
const MaxLine = framing.MaxMessage

// keepBigFrame: the validator keeps one copy of a large frame up to this
// capacity for the next one (agent sessions send ~1 MiB frames again and
// again); larger copies go to the garbage collector.
const keepBigFrame = 2 << 20

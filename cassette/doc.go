// Package cassette reads and writes rpctap cassettes: a zstd stream of JSON
// lines (a header record, then one record per frame, stderr line, process
// event and violation, and an end record on clean close), with skippable
// index frames for random access. The format is specified in
// docs/cassette-format.md; this package is its reference implementation.
//
//   - Writer (Create, NewWriter) is what the recorder uses: Append records,
//     Flush when its queue goes idle (one write system call per batch, so
//     what the other side has read survives kill -9), Close at the end.
//   - Reader (Open, NewReader) streams a cassette from start to end with
//     memory bounded by one zstd frame; replay and check use it.
//   - Index (OpenIndex, BuildIndex) gives records by number and time without
//     decompressing the file, follows a file being written (Refresh), and
//     keeps decoded frames in a bounded LRU cache; the viewer uses it.
//   - NewLineRecord, SplitEOL, Record.Payload and Record.Line convert between
//     the bytes of a line and its record, exactly.
//
// Concurrency and blocking: Writer and Reader are for one goroutine each and
// start none; they block only in the Write or Read of the file or stream
// under them (a full disk that blocks, a pipe with no data yet). Index is
// safe for concurrent use behind one mutex, taken by every method and never
// held while calling out, so it cannot deadlock. The zstd decoder is used
// only through DecodeAll (no decoder goroutines).
//
// A Reader on a pipe returns a frame's records once the whole frame has
// arrived (frames close within about 1 s or 1 MiB) or the pipe ends; on a
// file that is still being written, it returns everything up to the end of
// the file, including the complete blocks of the open frame, and then a
// *TruncatedError. To follow a growing file use Index.Refresh.
package cassette

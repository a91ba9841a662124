package cassette

import "encoding/json"

// FormatName is the "format" field of every header record.
const FormatName = "rpctap-cassette"

// Version of the cassette format written by this package. A reader accepts any
// minor version of its own major and refuses a newer major, naming both.
const (
	VersionMajor = 1
	VersionMinor = 2
)

// Kind is what a record describes (its "k" field).
type Kind string

const (
	KindHeader    Kind = "header"    // always record 0
	KindFrame     Kind = "frame"     // one line (frame) on stdin ("in") or stdout ("out")
	KindStderr    Kind = "stderr"    // one line the child wrote to stderr
	KindEvent     Kind = "event"     // a process or connection event; see Event*
	KindViolation Kind = "violation" // a protocol violation found while recording
	KindMeta      Kind = "meta"      // late facts about the session (the detected protocol)
	KindEnd       Kind = "end"       // written on clean close; its absence means the tap was cut off
)

// Dir is the direction of a frame or stderr line.
type Dir string

const (
	DirIn  Dir = "in"  // parent -> child (the child's stdin)
	DirOut Dir = "out" // child -> parent (the child's stdout)
	DirErr Dir = "err" // the child's stderr
)

// Event names (the "ev" field of an event record).
const (
	EventStart     = "start"      // child started: Argv, Cwd, PID
	EventStdinEOF  = "stdin-eof"  // the parent closed the child's stdin
	EventSignal    = "signal"     // rpctap forwarded Signal to the child
	EventExit      = "exit"       // the child exited: Exit, or Signal if it died of one
	EventGap       = "gap"        // Bytes of direction Dir were forwarded but not recorded (lossy mode, or the recorder fell over)
	EventConnOpen  = "conn-open"  // socket mode: connection Conn accepted and dialled upstream
	EventConnClose = "conn-close" // socket mode: connection Conn closed
	EventWarning   = "warning"    // rpctap's own trouble, Msg says what
	EventFault     = "fault"      // record --fault changed a frame (format 1.2: the frame record after it; 1.1: the one before), Msg says how
	EventIntercept = "intercept"  // format 1.2: what an intercepting tap did with the frame before it (act, held, bp, orig); see docs/intercept.md
)

// Header is record 0 of every cassette.
type Header struct {
	Format   string   `json:"format"`  // FormatName
	Version  string   `json:"version"` // "MAJOR.MINOR"
	Rpctap   string   `json:"rpctap,omitempty"`
	Created  string   `json:"created"`            // wall-clock start, RFC 3339 with nanoseconds
	Mode     string   `json:"mode,omitempty"`     // "stdio" (default) or "socket"
	Protocol string   `json:"protocol,omitempty"` // detected or forced protocol; a later meta record may set it
	Argv     []string `json:"argv,omitempty"`
	Cwd      string   `json:"cwd,omitempty"`
	Listen   string   `json:"listen,omitempty"`   // socket mode
	Upstream string   `json:"upstream,omitempty"` // socket mode
	Redacted bool     `json:"redacted,omitempty"` // secrets were replaced before writing
	// Control is the control socket of an intercepting recording (record
	// --intercept; format 1.2): `rpctap view` attaches to it while the
	// session runs.
	Control string `json:"control,omitempty"`
	// Portable, on a portable cassette (record --portable, rpctap
	// normalize), names each placeholder family the frames may hold and what
	// it stands for ("${RPCTAP_CWD}": "the session's working directory").
	Portable map[string]string `json:"portable,omitempty"`
	// Imported, on a cassette `rpctap import` made from another program's
	// log, says so: its frames were rebuilt from the log, not read from a
	// wire, so they are not the bytes that were sent (format 1.2).
	Imported *Imported `json:"imported,omitempty"`
	// Deep, on a recording made with `record --deep` (format 1.2), says
	// that the tap rewrote the stdio mcpServers of ACP session/new and
	// session/load requests so that each MCP server the agent spawns is
	// recorded too, into linked cassettes (their Parent names this one).
	Deep bool `json:"deep,omitempty"`
	// Parent, on a linked cassette (format 1.2), names the recording whose
	// frame started this one: an MCP server that an ACP agent spawned from
	// the mcpServers of a session/new or session/load request that a
	// `record --deep` tap rewrote.
	Parent *Parent `json:"parent,omitempty"`
}

// Parent links a cassette to the recording whose request started it
// (record --deep). The ACP session id is only known from the response,
// after the servers have started, so the link names the request; readers
// resolve the session through the request's response in the parent.
type Parent struct {
	// Cassette is the parent cassette's file name (its base name: linked
	// cassettes are written into the parent's directory).
	Cassette string `json:"cassette"`
	// Request is the id of the session/new or session/load request whose
	// mcpServers started this recording, verbatim JSON (1, "a").
	Request json.RawMessage `json:"request"`
	// Method is that request's method: "session/new", "session/load",
	// "session/fork" or "session/resume".
	Method string `json:"method,omitempty"`
	// Server is the name of the mcpServers entry ("name" member).
	Server string `json:"server,omitempty"`
}

// Imported describes the log a cassette was imported from.
type Imported struct {
	Format string `json:"format"`         // the log's format: zed-acp, vscode-lsp, lsp-devtools, jsonl
	From   string `json:"from,omitempty"` // the log's file name
	// Clock is what the record times come from: "wall" (the log's
	// timestamps), "time-of-day" (times without a date, dated from the
	// file), or "none" (the log has no times; every record has t 0).
	Clock string `json:"clock"`
}

// Record is one line of a cassette's decompressed content.
//
// Build frame and stderr records with NewLineRecord (or SetPayload), which
// picks the payload form; Payload and Line give the original bytes back.
//
// Field names are short because they repeat on every line; the JSON form is
// normative and documented in docs/cassette-format.md. Times are nanoseconds
// since the session started, all on one monotonic clock, and records appear
// in the order the tap read their bytes.
type Record struct {
	N    uint64 `json:"n"`              // record number; the header is 0, then 1, 2, ...
	T    int64  `json:"t"`              // ns since start (monotonic)
	K    Kind   `json:"k"`              // what the record is
	Conn int    `json:"conn,omitempty"` // socket mode: connection number (1, 2, ...); 0 in stdio mode
	D    Dir    `json:"d,omitempty"`    // frame, stderr, gap: direction

	// Payload of frame and stderr records: exactly one of the three is set.
	// JSON holds the line verbatim when it is valid JSON, valid UTF-8 and has
	// no surrounding white space; Text holds any other valid UTF-8 line
	// (HasText distinguishes an empty line); B64 holds anything else.
	JSON    json.RawMessage `json:"json,omitempty"`
	Text    string          `json:"text,omitempty"`
	HasText bool            `json:"-"`
	B64     []byte          `json:"b64,omitempty"`
	// Hdr is the header block that preceded the payload on a stream framed
	// by Content-Length (LSP's base protocol, also DAP), verbatim up to and
	// including the empty line that ends it ("Content-Length: 52\r\n\r\n");
	// "" on newline-delimited streams. The message on the wire is Hdr, then
	// the payload, then EOL (which is "" for such messages). A message longer
	// than the recorder holds whole carries Hdr on its first part only.
	Hdr string `json:"hdr,omitempty"`
	// EOL is the line ending that followed the payload: "\n" (the default,
	// omitted in JSON), "\r\n", or "" for a last line with no newline
	// (written as "eol":"").
	EOL string `json:"eol"`
	// Part is true when the line was longer than the recorder holds whole;
	// the next record of the same direction and connection continues it.
	Part     bool `json:"part,omitempty"`
	Redacted bool `json:"redacted,omitempty"` // secrets in the payload were replaced
	// RedactedAt lists where the recorder's secret rules replaced a value:
	// the JSON pointer of each, in the order of the frame ("" for a token
	// in a line that is not JSON). Format 1.2; absent on older cassettes
	// and on records only the portable stage changed.
	RedactedAt []string `json:"redactedAt,omitempty"`
	// Icpt (format 1.2) marks a frame an intercepting tap sent: "edit" (sent
	// instead of the original), "inject" (the user's own), "rewrite" (a
	// --rewrite rule changed it), or "forward", "timeout", "release" (held,
	// then sent unchanged). The intercept event right after it says more;
	// its ref is this frame.
	Icpt string `json:"icpt,omitempty"`

	// Classification of a frame by the protocol layer (cheap, done at record time).
	Kind   string          `json:"kind,omitempty"`   // request, response, notification, event, handshake, invalid
	Method string          `json:"method,omitempty"` // method, type or command
	ID     json.RawMessage `json:"id,omitempty"`     // the frame's id, verbatim

	// Event records.
	Ev     string   `json:"ev,omitempty"`
	Argv   []string `json:"argv,omitempty"`
	Cwd    string   `json:"cwd,omitempty"`
	PID    int      `json:"pid,omitempty"`
	Exit   *int     `json:"exit,omitempty"`   // exit code
	Signal string   `json:"signal,omitempty"` // e.g. "SIGTERM"
	Bytes  int64    `json:"bytes,omitempty"`  // gap size
	Msg    string   `json:"msg,omitempty"`

	// Intercept events (format 1.2, ev "intercept"): what an intercepting
	// tap (record --intercept, --rewrite) did with a frame of direction D.
	// Ref is the frame record that was sent (0 when nothing was: a drop, a
	// taken answer).
	Act      string          `json:"act,omitempty"`       // forward, edit, drop, timeout, release, inject, take, rewrite
	Held     int64           `json:"held,omitempty"`      // ns the frame was held
	BP       string          `json:"bp,omitempty"`        // the breakpoint ("N EXPR") or rule that held or changed it
	Orig     json.RawMessage `json:"orig,omitempty"`      // the frame as the other side sent it (verbatim JSON), when something else or nothing was sent
	OrigText string          `json:"orig_text,omitempty"` // the same when it is not JSON

	// Violation records.
	Ref      uint64 `json:"ref,omitempty"`  // the record the violation (or intercept event) is about
	Code     string `json:"code,omitempty"` // stable violation code, e.g. "acp.missing-field"
	Severity string `json:"sev,omitempty"`  // error, warning, info
	Pointer  string `json:"ptr,omitempty"`  // JSON pointer into the frame

	// Header (record 0) and meta records.
	Header   *Header `json:"-"`
	Protocol string  `json:"protocol,omitempty"` // meta: the detected protocol

	// End record: counts, for a quick summary without reading everything.
	Records uint64 `json:"records,omitempty"`

	// checked is set when JSON was chosen by SetPayload (or decoded from a
	// cassette), so the encoder need not validate it a second time.
	checked bool
}

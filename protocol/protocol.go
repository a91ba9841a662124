// Package protocol judges frames: given a direction and the bytes of one
// frame (one line, without its line ending) it says what the frame is and
// what is wrong with it. It is pure: no I/O, no clocks, no goroutines, so the
// recorder, `rpctap check`, replay and the viewer all get the same verdicts.
//
// Two levels of checks:
//   - frame shape (Protocol.Validate): required fields, JSON types, enums,
//     unknown methods; unknown fields are allowed, as serde and the SDKs allow;
//   - session rules (Session): handshake first, ids paired per direction,
//     responses to unknown ids, duplicate in-flight ids, requests unanswered
//     at the end, frames over the protocol's size limit, non-JSON on stdout.
//
// The Session is generic: a protocol steers it through optional interfaces
// (state.go): Handshaker (which frame opens the session and from which
// side), MultiHandshaker (both sides open with a handshake, each checked on
// its own), HandshakeExempter (frames allowed before it), Pairer (how a
// response names its request, when the per-direction id default does not
// fit; by id, or queued first in, first out by name for requests without an
// id) and NonJSONAccepter (raw). NewDetector picks a protocol from a
// session's first frames. Codes and severities: docs/protocols.md.
//
// What rpctap says about a protocol's frames (a summary, streamed chunks,
// failures, prompt turns, the child's surface, telemetry facts) is also the
// protocol's own, behind small optional interfaces (summary.go,
// transcript.go, surface.go) that each protocol implements in its own files
// (acp_summary.go, ...); Summarize, IsChunk, StreamsInto, Failed,
// Transcript, SurfaceOf and CallFactsOf take the session's protocol and ask
// it. A session of a protocol without them gets the generic JSON-RPC
// behaviour only.
package protocol

// Dir is the direction a frame travelled.
type Dir uint8

const (
	FromParent Dir = iota // parent -> child: the child's stdin (cassette "in")
	FromChild             // child -> parent: the child's stdout (cassette "out")
)

func (d Dir) String() string {
	if d == FromParent {
		return "in"
	}
	return "out"
}

// Kind is the role of a frame in its protocol.
type Kind string

const (
	Request      Kind = "request"      // expects a response (has an id in JSON-RPC; a command in synaps/opi/pi)
	Response     Kind = "response"     // answers a request (result or error)
	Notification Kind = "notification" // one-way message from either side
	Event        Kind = "event"        // one-way message from the child in event-style protocols (synaps, opi, pi, brainwires)
	Handshake    Kind = "handshake"    // the protocol's opening frame (synaps ready, opi rpc_ready, brainwires Handshake)
	Invalid      Kind = "invalid"      // not JSON, or not a frame of this protocol
)

// Info is the cheap classification of a frame.
type Info struct {
	Kind   Kind
	Method string // JSON-RPC method, synaps/opi/pi "type" or command; for responses, the request's method when the Session knows it
	ID     string // the id exactly as it appears in the frame (`1`, `"s1"`), "" when the frame has none
}

// Severity of a violation.
type Severity string

const (
	SevError   Severity = "error"   // the peer on the other side may break on this frame
	SevWarning Severity = "warning" // legal but suspicious (late handshake, slow answer)
	SevInfo    Severity = "info"
)

// Violation is one finding. Code is stable ("acp.missing-field",
// "session.unknown-response-id") and documented in docs/protocols.md.
type Violation struct {
	Code     string
	Severity Severity
	Record   uint64 // cassette record number of the frame (0 when unknown)
	Pointer  string // JSON pointer into the frame ("" for the whole frame)
	Message  string // for a person: what is wrong and, where possible, what was expected
}

// Protocol is one protocol's rules for single frames. Implementations are
// stateless and safe for concurrent use.
type Protocol interface {
	// Name is the protocol's stable name: "acp", "mcp", "jsonrpc", "synaps",
	// "brainwires", "opi", "pi", "raw", or "schema" for a user schema.
	Name() string
	// Classify is cheap enough to call on every frame while recording.
	// frame is one line without its line ending and may be anything.
	Classify(dir Dir, frame []byte) Info
	// Validate checks the frame's shape; info is Classify's answer.
	// Record numbers in the result are left 0; Session fills them in.
	Validate(dir Dir, frame []byte, info Info) []Violation
	// MaxFrame is the protocol's frame size limit in bytes, 0 for none.
	MaxFrame() int
}

// DirOf reads a direction in its cassette spelling: "in" is FromParent,
// anything else ("out") FromChild. It is the one conversion between the
// on-disk form (cassette.Dir) and this type.
func DirOf(s string) Dir {
	if s == "in" {
		return FromParent
	}
	return FromChild
}

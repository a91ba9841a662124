package protocol

import (
	"fmt"
	"strconv"

	"github.com/rpctap/rpctap/internal/framing"
)

// dapProto is the Debug Adapter Protocol: its own JSON messages (not
// JSON-RPC) framed by Content-Length headers like LSP. The parent is the
// development tool (client), the child the debug adapter. Every message has
// "seq" and "type" (request, response, event); a response names its request
// by "request_seq" and carries "command" and "success". The adapter may send
// reverse requests (runInTerminal, startDebugging) that the client answers.
type dapProto struct{}

func (dapProto) Name() string          { return "dap" }
func (dapProto) MaxFrame() int         { return 0 }
func (dapProto) Framing() framing.Mode { return framing.ContentLength }

// Wire: a request's id is its seq, a response names it in request_seq;
// sequence numbers differ from run to run; progress events are chatter. The numbers a debug adapter
// makes up and the client sends back are learnt by field: a thread's id
// (lldb-vscode uses the debuggee's OS thread id), a stack frame's, the
// variablesReference and sourceReference handles ("valid only while the
// program is suspended"), a breakpoint's id, and process ids (the adapter's
// debuggee, the client's runInTerminal answer).
func (dapProto) Wire() Wire {
	return Wire{Style: StyleDAP, RequestID: "seq", ResponseID: "request_seq", Volatile: []string{"/seq"},
		// Progress reports come as the adapter's work happens to be timed:
		// lldb-vscode sends a progressEnd (for symbol loading) in some
		// runs and not in others.
		Chatter: []string{"progressStart", "progressUpdate", "progressEnd"},
		// "output: The output to report." The debuggee's output is a byte
		// stream per category, cut into events as it happens to be read
		// (debugpy sends "result 42\n" as one event or as "result" and
		// " 42\n"); "category: ... If not specified ..., 'console' is
		// assumed."
		// console is the debugger's own "informational output ... (as
		// opposed to the debuggee)": its log. lldb-vscode 14 (Debian 12)
		// writes a Python traceback there in some runs and to its stderr
		// in the others.
		Stream: StreamEvent{Method: "output", Body: "body", Text: "output", Key: "category", DefaultKey: "console",
			Log: []string{"console"}},
		Invented: []Invented{
			{"/**/threadId", "threadId"},
			{"/body/threads/*/id", "threadId"},
			{"/**/frameId", "frameId"},
			{"/body/stackFrames/*/id", "frameId"},
			{"/**/variablesReference", "variablesReference"},
			{"/**/sourceReference", "sourceReference"},
			{"/body/breakpoints/*/id", "breakpointId"},
			{"/body/breakpoint/id", "breakpointId"},
			{"/**/processId", "processId"},
			{"/body/systemProcessId", "processId"},
			{"/body/shellProcessId", "processId"},
		}}
}

// dapFields are the members of a DAP message that matter.
type dapFields struct {
	object                    bool
	seq, typ, command, event  []byte
	requestSeq, success, body []byte
	arguments, message        []byte
}

// dapMembers are the members scanDAP picks, in dapFields' order.
var dapMembers = []string{"seq", "type", "command", "event", "request_seq", "success", "body", "arguments", "message"}

func scanDAP(frame []byte) dapFields {
	var v [9][]byte
	f := dapFields{object: pickMembers(frame, dapMembers, v[:])}
	f.seq, f.typ, f.command, f.event, f.requestSeq = v[0], v[1], v[2], v[3], v[4]
	f.success, f.body, f.arguments, f.message = v[5], v[6], v[7], v[8]
	return f
}

// Classify: a request's id is its seq, a response's id its request_seq, so
// the Session's default per-direction pairing pairs them.
func (dapProto) Classify(_ Dir, frame []byte) Info {
	f := scanDAP(frame)
	if !f.object {
		return Info{Kind: Invalid}
	}
	typ, _ := rawString(f.typ)
	switch typ {
	case "request":
		cmd, _ := rawString(f.command)
		return Info{Kind: Request, Method: cmd, ID: string(f.seq)}
	case "response":
		cmd, _ := rawString(f.command)
		return Info{Kind: Response, Method: cmd, ID: string(f.requestSeq)}
	case "event":
		ev, _ := rawString(f.event)
		return Info{Kind: Event, Method: ev}
	}
	return Info{Kind: Invalid}
}

// Handshake: "the development tool ... sends an initialize request to the
// debug adapter" first.
func (dapProto) HandshakeDir() Dir { return FromParent }
func (dapProto) IsHandshake(_ Dir, info Info) bool {
	return info.Kind == Request && info.Method == "initialize"
}

// Validate checks the ProtocolMessage base shapes of the DAP specification:
// seq (number), type; Request: command (string), arguments?; Event: event
// (string), body?; Response: request_seq (number), success (boolean),
// command (string), message?, body?.
func (dapProto) Validate(_ Dir, frame []byte, info Info) []Violation {
	var vs []Violation
	add := func(code, ptr, format string, a ...any) {
		vs = append(vs, Violation{Code: code, Severity: SevError, Pointer: ptr, Message: fmt.Sprintf(format, a...)})
	}
	f := scanDAP(frame)
	if !f.object {
		add("dap.not-object", "", "a DAP message must be a JSON object")
		return vs
	}
	if f.seq == nil || !isInteger(f.seq) {
		add("dap.bad-seq", "/seq", "seq must be an integer sequence number, got %s", orMissing(f.seq))
	}
	typ, _ := rawString(f.typ)
	str := func(raw []byte, name string) {
		if raw == nil || jsonType(raw) != "string" {
			add("dap.missing-field", "/"+name, "a %s needs %q (a string), got %s", typ, name, orMissing(raw))
		}
	}
	switch typ {
	case "request":
		str(f.command, "command")
		if f.arguments != nil && jsonType(f.arguments) != "object" && jsonType(f.arguments) != "array" {
			add("dap.bad-arguments", "/arguments", "arguments must be an object, got %s", jsonType(f.arguments))
		}
	case "event":
		str(f.event, "event")
	case "response":
		str(f.command, "command")
		if f.requestSeq == nil || !isInteger(f.requestSeq) {
			add("dap.bad-request-seq", "/request_seq", "a response needs request_seq (the seq of its request), got %s", orMissing(f.requestSeq))
		}
		if f.success == nil || jsonType(f.success) != "boolean" {
			add("dap.missing-field", "/success", "a response needs success (a boolean), got %s", orMissing(f.success))
		}
		if f.message != nil && jsonType(f.message) != "string" {
			add("dap.missing-field", "/message", "message must be a string, got %s", jsonType(f.message))
		}
	default:
		add("dap.bad-type", "/type", `type must be "request", "response" or "event", got %s`, orMissing(f.typ))
	}
	return vs
}

func orMissing(raw []byte) string {
	if raw == nil {
		return "nothing"
	}
	return excerpt(raw, 30)
}

// sniffDAP: a message with "seq" and "type":"request" and a "command" and no
// "jsonrpc" is DAP; initialize with adapterID is DAP for sure.
func sniffDAP(_ Dir, frame []byte) int {
	f := scanDAP(frame)
	if !f.object || f.seq == nil || f.typ == nil || hasMember(frame, "jsonrpc") {
		return 0
	}
	typ, _ := rawString(f.typ)
	cmd, _ := rawString(f.command)
	switch {
	case typ == "request" && cmd == "initialize" && memberOf(f.arguments, "adapterID") != nil:
		return sureScore
	case typ == "request" || typ == "response" || typ == "event":
		return 90
	}
	return 0
}

func init() { register(dapProto{}, 20, sniffDAP) }

// ---- lifecycle ----

func (dapProto) NewLifecycle() Lifecycle { return &dapLife{} }

type dapLife struct {
	lastSeq      [2]int64
	seqSeen      [2]bool
	seqs         [2]dapSeqs
	rec          uint64 // the record of the frame Frame is looking at
	initAnswered bool
}

// dapSeqs sums up one side's sequence numbers for dap.seq-order, which is
// reported once per side at the end of the session: an adapter that gets
// seq wrong gets it wrong on every message (lldb-vscode 14 sends seq 0 on
// all of them), and one finding per frame would bury everything else.
type dapSeqs struct {
	messages, wrong int
	first           Violation // about the first message out of sequence
	same            bool      // every message so far had the same seq
	seq             int64     // that seq
}

func (l *dapLife) noteRecord(rec uint64) { l.rec = rec }

// DAP lifecycle codes.
const (
	CodeDAPSeq              = "dap.seq-order"
	CodeDAPInitializedEarly = "dap.initialized-early"
)

func (l *dapLife) Frame(dir Dir, info Info, frame []byte) []Violation {
	var vs []Violation
	f := scanDAP(frame)
	if seq, err := strconv.ParseInt(string(f.seq), 10, 64); err == nil {
		// "seq: Sequence number of the message (also known as message
		// ID). The seq for the first message sent by a client or debug
		// adapter is 1, and for each subsequent message is 1 greater than
		// the previous message sent by that actor."
		sq := &l.seqs[dir]
		want := l.lastSeq[dir] + 1
		if seq != want {
			if sq.wrong == 0 {
				msg := fmt.Sprintf("the %s's first message has seq %d; a side's first message has seq 1", dapSide(dir), seq)
				if l.seqSeen[dir] {
					msg = fmt.Sprintf("seq %d from the %s after its seq %d; the next should be %d", seq, dapSide(dir), l.lastSeq[dir], want)
				}
				sq.first = Violation{Code: CodeDAPSeq, Severity: SevWarning, Pointer: "/seq", Record: l.rec, Message: msg}
			}
			sq.wrong++
		}
		sq.same = sq.messages == 0 || sq.same && seq == sq.seq
		sq.seq = seq
		sq.messages++
		l.lastSeq[dir], l.seqSeen[dir] = seq, true
	}
	if dir == FromChild {
		switch {
		case info.Kind == Response && info.Method == "initialize":
			l.initAnswered = true
		case info.Kind == Event && info.Method == "initialized" && !l.initAnswered:
			// "A debug adapter is expected to send this event when it is
			// ready to accept configuration requests (but not before the
			// initialize request has finished)."
			vs = append(vs, Violation{Code: CodeDAPInitializedEarly, Severity: SevError,
				Message: "the initialized event came before the initialize request finished (its response)"})
		}
	}
	return vs
}

// End reports dap.seq-order once per side that broke it, at its first
// message out of sequence, with how many were.
func (l *dapLife) End() []Violation {
	var vs []Violation
	for _, d := range [2]Dir{FromParent, FromChild} {
		sq := l.seqs[d]
		if sq.wrong == 0 {
			continue
		}
		v := sq.first
		if sq.wrong > 1 {
			all := ""
			if sq.same {
				all = fmt.Sprintf(", every one with seq %d", sq.seq)
			}
			v.Message = fmt.Sprintf("%d of the %s's %d messages were out of sequence%s; here the first: %s", sq.wrong, dapSide(d), sq.messages, all, v.Message)
		}
		vs = append(vs, v)
	}
	return vs
}

// dapSide names a side as DAP does.
func dapSide(d Dir) string {
	if d == FromParent {
		return "client"
	}
	return "debug adapter"
}

package protocol

import (
	"fmt"
	"sync"

	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/internal/redact"
)

// mcpProto is the Model Context Protocol over stdio: JSON-RPC 2.0, the
// parent is the MCP client, the child the server; both sides send requests
// (sampling, roots, elicitation come from the server).
type mcpProto struct{}

func (mcpProto) Name() string  { return "mcp" }
func (mcpProto) MaxFrame() int { return 0 }

// Wire: _meta, progress tokens, the client's pid and version differ from
// run to run.
func (mcpProto) Wire() Wire {
	return Wire{Style: StyleJSONRPC, RequestID: "id", ResponseID: "id", Volatile: []string{
		"/params/_meta", "/result/_meta", "/params/progressToken", "/params/processId", "/params/clientInfo/version"},
		Chatter: []string{"notifications/message", "notifications/progress"}}
}

func (mcpProto) Classify(_ Dir, frame []byte) Info { return classifyRPC(frame) }
func (mcpProto) classifiesRPC()                    {}

// NotSecret: MCP's progress token (Progress): a requester "includes a
// progressToken in the request metadata"; "Progress tokens MUST be a string
// or integer value" and "can be chosen by the client using any means, but
// MUST be unique across all active requests"; notifications/progress
// carries it back in params.progressToken. A correlation id, not a
// credential.
func (mcpProto) NotSecret() []redact.Field {
	return []redact.Field{
		{Pointer: "/params/_meta/progressToken"},
		{Method: "notifications/progress", Pointer: "/params/progressToken"},
	}
}

// The client opens with initialize (or, in the stateless 2026 draft, with
// server/discover); ping may come before it.
func (mcpProto) HandshakeDir() Dir { return FromParent }
func (mcpProto) IsHandshake(_ Dir, info Info) bool {
	return info.Kind == Request && (info.Method == "initialize" || info.Method == "server/discover")
}
func (mcpProto) AllowedBeforeHandshake(_ Dir, info Info) bool { return info.Method == "ping" }

// CodeMCPUnknownMethod is info: MCP has no reserved extension namespace
// and adds methods often; peers answer -32601.
const CodeMCPUnknownMethod = "mcp.unknown-method"

// CodeMCPUnknownMethodRefused is a warning on the -32601 answer to a
// request whose method MCP does not define: JSON-RPC 2.0's "-32601 Method
// not found: The method does not exist / is not available" from the peer,
// on a method not in MCP either, is proof on the wire that the request was
// not understood (a typo such as tools/run), not a newer revision's method.
const CodeMCPUnknownMethodRefused = "mcp.unknown-method-refused"

// CancelledID: notifications/cancelled names the sender's own request in
// params.requestId; MCP (Cancellation): "The receiver of a cancellation
// notification SHOULD NOT send a response for the cancelled request", so the
// request is not left unanswered, and "the sender of the cancellation
// notification SHOULD ignore any response to the request that arrives
// afterward", so a response that crossed it is accepted.
func (mcpProto) CancelledID(_ Dir, info Info, frame []byte) (string, bool) {
	if info.Method != "notifications/cancelled" {
		return "", false
	}
	id := nestedMember(frame, "params", "requestId")
	if id == nil {
		return "", false
	}
	return string(id), true
}

func (mcpProto) Validate(dir Dir, frame []byte, info Info) []Violation {
	return mcpValidate(dir, frame, info, nil)
}

func (mcpProto) validateIndexed(dir Dir, frame []byte, info Info, idx *jsonscan.Index) []Violation {
	return mcpValidate(dir, frame, info, idx)
}

func mcpValidate(dir Dir, frame []byte, info Info, idx *jsonscan.Index) []Violation {
	vs := validateRPCMethods(dir, frame, info, mcpCatalogue(), idx)
	// Info, not an error: MCP reserves no namespace for extensions and each
	// specification version adds methods (2026-07-28 added server/discover),
	// so a method this catalogue does not know may be valid for the peers;
	// a peer that does not know it answers -32601, which check shows.
	for i := range vs {
		if vs[i].Code == CodeMCPUnknownMethod {
			vs[i].Severity = SevInfo
		}
	}
	if info.Kind == Response && info.Method != "" && string(nestedMember(frame, "error", "code")) == "-32601" {
		if _, known := mcpMethods()[info.Method]; !known {
			vs = append(vs, Violation{Code: CodeMCPUnknownMethodRefused, Severity: SevWarning, Pointer: "/error/code",
				Message: fmt.Sprintf("the %s refused %q with -32601 (Method not found), and MCP has no such method either: the request was not understood (a misspelt method?)", peerOf(dir), info.Method)})
		}
	}
	return vs
}

// peerOf names the MCP side that sent a frame going dir.
func peerOf(dir Dir) string {
	if dir == FromChild {
		return "server"
	}
	return "client"
}

// sniffMCP: initialize with a date-string protocolVersion (ACP's is an
// integer) or server/discover is MCP for sure; MCP method names hint.
func sniffMCP(_ Dir, frame []byte) int { return sniffJSONRPC(frame, sniffMCPFrame) }

func sniffMCPFrame(m string, f *rpcFields) int {
	switch {
	case m == "initialize" && f.params != nil:
		if jsonType(memberOf(f.params, "protocolVersion")) == "string" {
			return sureScore
		}
		if memberOf(f.params, "capabilities") != nil && memberOf(f.params, "clientInfo") != nil {
			return 90
		}
		return 0
	case m == "server/discover":
		return sureScore
	case m == "notifications/initialized", m == "tools/list", m == "tools/call", m == "resources/list",
		m == "resources/read", m == "prompts/list", m == "prompts/get", m == "sampling/createMessage", m == "roots/list":
		return 80
	}
	if f.result != nil && jsonType(memberOf(f.result, "protocolVersion")) == "string" && memberOf(f.result, "serverInfo") != nil {
		return sureScore
	}
	return 0
}

func init() { register(mcpProto{}, 20, sniffMCP) }

// mcpCatalogue is built once (see acpCatalogue).
var mcpCatalogue = sync.OnceValue(func() rpcCatalogue {
	shapes := make(map[string]rpcMethodShapes, len(mcpMethods()))
	for m, mm := range mcpMethods() {
		shapes[m] = rpcMethodShapes{req: mm.req, result: mm.result, notif: mm.notif, allowed: mm.from.allows, side: mm.from.String()}
	}
	return rpcCatalogue{
		prefix: "mcp",
		lookup: func(m string) (rpcMethodShapes, bool) {
			ms, ok := shapes[m]
			return ms, ok
		},
		paramsMissing: true,
		paramsOptional: func(m string) bool {
			mm := mcpMethods()[m]
			s := mm.req
			if s == nil {
				s = mm.notif
			}
			return !hasRequired(s)
		},
	}
})

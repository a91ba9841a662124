package protocol

import (
	"strings"
	"sync"

	"github.com/rpctap/rpctap/internal/jsonscan"
)

// acpProto is the Agent Client Protocol (seed 003; upstream schema v0.10.3
// and v0.13.0, stable and unstable methods). The parent is the ACP client
// (editor), the child the agent. Both sides issue request ids.
type acpProto struct{}

func (acpProto) Name() string  { return "acp" }
func (acpProto) MaxFrame() int { return 0 }

// Wire: session ids and the working directory differ from run to run.
func (acpProto) Wire() Wire {
	return Wire{Style: StyleJSONRPC, RequestID: "id", ResponseID: "id", Volatile: []string{
		"/params/sessionId", "/result/sessionId", "/params/cwd", "/params/_meta", "/result/_meta"}}
}

func (acpProto) Classify(_ Dir, frame []byte) Info { return classifyRPC(frame) }
func (acpProto) classifiesRPC()                    {}

// HandshakeDir and IsHandshake: the client opens with initialize.
func (acpProto) HandshakeDir() Dir { return FromParent }
func (acpProto) IsHandshake(_ Dir, info Info) bool {
	return info.Kind == Request && info.Method == "initialize"
}

func (acpProto) Validate(dir Dir, frame []byte, info Info) []Violation {
	return validateRPCMethods(dir, frame, info, acpCatalogue(), nil)
}

func (acpProto) validateIndexed(dir Dir, frame []byte, info Info, idx *jsonscan.Index) []Violation {
	return validateRPCMethods(dir, frame, info, acpCatalogue(), idx)
}

// acpCatalogue is built once: building the shapes per frame allocated a
// closure for every validated frame.
var acpCatalogue = sync.OnceValue(func() rpcCatalogue {
	shapes := make(map[string]rpcMethodShapes, len(acpMethods()))
	for m, am := range acpMethods() {
		shapes[m] = rpcMethodShapes{req: am.req, result: am.result, notif: am.notif, allowed: am.side.allows, side: am.side.String()}
	}
	return rpcCatalogue{
		prefix: "acp",
		lookup: func(m string) (rpcMethodShapes, bool) {
			ms, ok := shapes[m]
			return ms, ok
		},
		// rpc.rs: a method starting with "_" is an extension method; its
		// params pass through untouched.
		extension:     func(m string) bool { return strings.HasPrefix(m, "_") },
		paramsMissing: true,
	}
})

func (s acpSide) String() string {
	switch s {
	case acpAgentSide:
		return "the client (parent) sends it to the agent"
	case acpClientSide:
		return "the agent (child) sends it to the client"
	}
	return "either side sends it"
}

// sniffACP: an initialize whose protocolVersion is an integer is ACP for
// sure (MCP's is a date string); ACP-only method names are a strong hint.
func sniffACP(_ Dir, frame []byte) int { return sniffJSONRPC(frame, sniffACPFrame) }

func sniffACPFrame(m string, f *rpcFields) int {
	if m == "initialize" && f.params != nil {
		pv := memberOf(f.params, "protocolVersion")
		if jsonType(pv) == "number" {
			return sureScore
		}
		if memberOf(f.params, "clientCapabilities") != nil {
			return 90
		}
		return 0
	}
	switch m {
	case "session/new", "session/prompt", "session/update", "session/request_permission", "session/load",
		"session/cancel", "fs/read_text_file", "fs/write_text_file", "terminal/create":
		return 80
	}
	if f.result != nil {
		// An initialize result with an integer protocolVersion and agentCapabilities.
		if jsonType(memberOf(f.result, "protocolVersion")) == "number" && memberOf(f.result, "agentCapabilities") != nil {
			return sureScore
		}
	}
	return 0
}

// memberOf returns the raw value of key in the object raw, nil if absent.
func memberOf(raw []byte, key string) []byte { return memberOfIn(nil, raw, key) }

// memberOfIn is memberOf skipping values through x (nil: by scanning them).
func memberOfIn(x *frameIndex, raw []byte, key string) []byte {
	var out []byte
	forEachMemberIn(x, raw, func(k, v []byte) bool {
		if string(k) == key {
			out = v
			return false
		}
		return true
	})
	return out
}

func init() { register(acpProto{}, 20, sniffACP) }

// rpcMethodShapes are one method's shapes in a JSON-RPC catalogue.
type rpcMethodShapes struct {
	req, result, notif shape
	allowed            func(Dir) bool
	side               string
}

// rpcCatalogue is what validateRPCMethods needs from acp or mcp.
type rpcCatalogue struct {
	prefix        string
	lookup        func(method string) (rpcMethodShapes, bool)
	extension     func(method string) bool // methods the protocol reserves for extensions
	paramsMissing bool                     // known methods require params (ACP's rpc.rs)
	// paramsOptional names methods whose params may be absent even when
	// paramsMissing is set.
	paramsOptional func(method string) bool
}

// checkerPool recycles shape checkers (their pointer and violation
// buffers) across frames. validateRPCMethods copies the violations out
// (append onto the envelope's) before the checker goes back.
var checkerPool = sync.Pool{New: func() any { return &shapeChecker{ptr: make([]byte, 0, 128), x: &frameIndex{}} }}

// indexedValidator is implemented by protocols whose Validate can use an
// index of the frame made by the caller (Session.FrameClassifiedIndexed).
type indexedValidator interface {
	validateIndexed(dir Dir, frame []byte, info Info, idx *jsonscan.Index) []Violation
}

// validateRPCMethods checks the envelope, then params/result against the
// catalogue. idx, when not nil, indexes frame (else it is indexed here).
func validateRPCMethods(dir Dir, frame []byte, info Info, cat rpcCatalogue, idx *jsonscan.Index) []Violation {
	c := checkerPool.Get().(*shapeChecker)
	c.prefix, c.vs, c.ptr = cat.prefix, c.vs[:0], c.ptr[:0]
	// One index of the frame serves the envelope scan and every level of
	// the shape checks below it.
	if idx != nil {
		c.x.frame, c.x.idx, c.x.on = frame, idx, true
	} else {
		c.x.build(frame)
	}
	defer func() {
		c.x.reset()
		checkerPool.Put(c)
	}()
	vs, f := validateEnvelopeIn(c.x, frame, envelopeOpts{})
	if !f.object {
		return vs
	}
	switch info.Kind {
	case Request, Notification:
		m := info.Method
		if f.method == nil || jsonType(f.method) != "string" {
			return vs
		}
		ms, known := cat.lookup(m)
		if !known {
			if cat.extension != nil && cat.extension(m) {
				return vs
			}
			c.addAt("unknown-method", "/method", "unknown %s method %q", cat.prefix, m)
			return append(vs, c.vs...)
		}
		if ms.allowed != nil && !ms.allowed(dir) {
			c.addAt("wrong-direction", "/method", "%q sent by the %s, but %s", m, sideName(dir), ms.side)
		}
		s := ms.req
		if info.Kind == Notification {
			s = ms.notif
		}
		if s == nil {
			want := "a notification (no id)"
			if info.Kind == Notification {
				want = "a request (with an id)"
			}
			c.addAt("wrong-kind", "", "%q must be sent as %s", m, want)
			return append(vs, c.vs...)
		}
		if f.params == nil {
			if cat.paramsMissing && (cat.paramsOptional == nil || !cat.paramsOptional(m)) {
				c.addAt("missing-params", "/params", "%q requires params (%s)", m, s.describe())
			}
			return append(vs, c.vs...)
		}
		c.ptr = append(c.ptr, "/params"...)
		s.check(c, f.params)
	case Response:
		if f.result == nil || info.Method == "" {
			return vs // errors are checked by the envelope; unknown request method: nothing more to say
		}
		ms, known := cat.lookup(info.Method)
		if !known || ms.result == nil {
			return vs
		}
		c.ptr = append(c.ptr, "/result"...)
		ms.result.check(c, f.result)
	}
	return append(vs, c.vs...)
}

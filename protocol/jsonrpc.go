package protocol

import (
	"fmt"
	"strconv"
	"sync"
)

// JSON-RPC 2.0 (https://www.jsonrpc.org/specification): the envelope shared
// by acp, mcp and the generic "jsonrpc" protocol. The envelope checks report
// "jsonrpc.*" codes whichever of the three protocols judges the frame; the
// method-level checks of acp and mcp report their own prefixes.

// rpcFields are the raw top-level members of a JSON-RPC frame that matter
// for classification. A nil slice means the member is absent.
type rpcFields struct {
	object  bool // the frame is a JSON object (as far as the scanner saw)
	jsonrpc []byte
	method  []byte
	id      []byte
	params  []byte
	result  []byte
	err     []byte
}

// scanRPC extracts the JSON-RPC members of frame without decoding it.
func scanRPC(frame []byte) rpcFields { return scanRPCMembers(frame, false) }

// scanRPCMembers scans the top-level members. With early set it stops as
// soon as the kind is certain (method and id seen, or result/error and id
// seen), so a large params or result at the end is not walked; the fields
// after that point are left unset. Classification uses it; validation
// scans everything.
func scanRPCMembers(frame []byte, early bool) rpcFields { return scanRPCMembersIn(nil, frame, early) }

// scanRPCMembersIn is scanRPCMembers skipping values through x (nil: by
// scanning them).
func scanRPCMembersIn(x *frameIndex, frame []byte, early bool) rpcFields {
	var f rpcFields
	f.object = forEachMemberIn(x, frame, func(k, v []byte) bool {
		switch string(k) {
		case "jsonrpc":
			f.jsonrpc = v
		case "method":
			f.method = v
		case "id":
			f.id = v
		case "params":
			f.params = v
		case "result":
			f.result = v
		case "error":
			f.err = v
		}
		return !early || f.id == nil || (f.method == nil && f.result == nil && f.err == nil)
	})
	return f
}

// is20 reports whether the frame says "jsonrpc":"2.0".
func (f *rpcFields) is20() bool { return string(f.jsonrpc) == `"2.0"` }

// classifyRPC is the JSON-RPC classification: a method with an id is a
// request, a method without one a notification, result or error a response.
func classifyRPC(frame []byte) Info {
	f := scanRPCMembers(frame, true)
	return f.info()
}

// classifyRPCIn is classifyRPC skipping values through x.
func classifyRPCIn(x *frameIndex, frame []byte) Info {
	f := scanRPCMembersIn(x, frame, true)
	return f.info()
}

func (f *rpcFields) info() Info {
	if !f.object {
		return Info{Kind: Invalid}
	}
	id := idString(f.id)
	if f.method != nil {
		m, ok := methodString(f.method)
		if !ok {
			return Info{Kind: Invalid, ID: id}
		}
		if f.id != nil {
			return Info{Kind: Request, Method: m, ID: id}
		}
		return Info{Kind: Notification, Method: m}
	}
	if f.result != nil || f.err != nil {
		return Info{Kind: Response, ID: id}
	}
	return Info{Kind: Invalid, ID: id}
}

// knownMethods interns the method names of the catalogues so that
// classifying a frame with a known method allocates nothing for it. Each
// protocol's catalogue (Cataloguer) is added when it registers, so this
// file names none of them. It is built on first use, not at init: building
// it builds every catalogue, which every rpctap process would pay at start
// (the tap, which classifies nothing, and --version included).
var knownMethods = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, c := range cataloguers {
		for _, name := range c.Catalogue() {
			m[name] = name
		}
	}
	return m
})

// cataloguers are the registered protocols with a catalogue (register, at
// init).
var cataloguers []Cataloguer

// smallIDs interns the ids 0..1023, the ones most sessions use.
var smallIDs [1024]string

func init() {
	for i := range smallIDs {
		smallIDs[i] = strconv.Itoa(i)
	}
}

func methodString(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		if m, ok := knownMethods()[string(raw[1:len(raw)-1])]; ok {
			return m, true
		}
	}
	return rawString(raw)
}

func idString(raw []byte) string {
	if len(raw) > 0 && len(raw) <= 4 && (raw[0] != '0' || len(raw) == 1) {
		n := 0
		for _, c := range raw {
			if c < '0' || c > '9' {
				return string(raw)
			}
			n = n*10 + int(c-'0')
		}
		if n < len(smallIDs) {
			return smallIDs[n]
		}
	}
	return string(raw)
}

// sniffJSONRPC is the common start of the JSON-RPC protocols' sniffs: a
// JSON-RPC 2.0 object goes to judge with its method ("" for a response);
// anything else scores 0.
func sniffJSONRPC(frame []byte, judge func(method string, f *rpcFields) int) int {
	f := scanRPC(frame)
	if !f.object || !f.is20() {
		return 0
	}
	m, _ := rawString(f.method)
	return judge(m, &f)
}

// looksJSONRPC20 is the detector's fallback test.
func looksJSONRPC20(frame []byte) bool {
	f := scanRPC(frame)
	return f.object && f.is20() && (f.method != nil || f.result != nil || f.err != nil)
}

// envelopeOpts tunes the envelope checks to a protocol.
type envelopeOpts struct {
	paramsObject bool // params, when present, must be an object (ACP, MCP); plain JSON-RPC also allows arrays
}

// validateEnvelope checks the JSON-RPC 2.0 envelope of a frame that is
// valid JSON. It returns the violations and the scanned fields.
func validateEnvelope(frame []byte, opts envelopeOpts) ([]Violation, rpcFields) {
	return validateEnvelopeIn(nil, frame, opts)
}

// validateEnvelopeIn is validateEnvelope scanning the frame through x
// (nil: without an index).
func validateEnvelopeIn(x *frameIndex, frame []byte, opts envelopeOpts) ([]Violation, rpcFields) {
	var vs []Violation
	add := func(code string, sev Severity, ptr, format string, a ...any) {
		vs = append(vs, Violation{Code: code, Severity: sev, Pointer: ptr, Message: fmt.Sprintf(format, a...)})
	}
	t := jsonType(frame)
	if t == "array" {
		add("jsonrpc.batch", SevError, "", "a JSON-RPC batch (array) is not accepted here; send one message per line")
		return vs, rpcFields{}
	}
	f := scanRPCMembersIn(x, frame, false)
	if t != "object" || !f.object {
		add("jsonrpc.not-object", SevError, "", "a JSON-RPC message must be a JSON object, got %s", orUnknown(t))
		return vs, f
	}
	switch {
	case f.jsonrpc == nil:
		add("jsonrpc.bad-version", SevError, "/jsonrpc", `missing "jsonrpc":"2.0"`)
	case !f.is20():
		add("jsonrpc.bad-version", SevError, "/jsonrpc", `"jsonrpc" must be the string "2.0", got %s`, excerpt(f.jsonrpc, 40))
	}
	if f.id != nil {
		switch jsonType(f.id) {
		case "string", "null":
		case "number":
			if !isInteger(f.id) {
				add("jsonrpc.fractional-id", SevWarning, "/id", "id %s has a fractional part; JSON-RPC ids should be integers or strings", f.id)
			}
		default:
			add("jsonrpc.bad-id", SevError, "/id", "id must be a string, a number or null, got %s", jsonType(f.id))
		}
	}
	if f.method != nil {
		if jsonType(f.method) != "string" {
			add("jsonrpc.bad-method", SevError, "/method", "method must be a string, got %s", jsonType(f.method))
		}
		if f.result != nil || f.err != nil {
			add("jsonrpc.mixed-message", SevError, "", "a message with a method must not carry result or error")
		}
		if f.params != nil {
			pt := jsonType(f.params)
			switch {
			case pt == "object":
			case pt == "array" && !opts.paramsObject:
			case pt == "null":
				// Some peers (gopls) send "params":null; the spec says omit it.
				add("jsonrpc.null-params", SevWarning, "/params", `params is null; omit it instead`)
			default:
				want := "an object or an array"
				if opts.paramsObject {
					want = "an object"
				}
				add("jsonrpc.bad-params", SevError, "/params", "params must be %s, got %s", want, pt)
			}
		}
		if string(f.id) == "null" {
			add("jsonrpc.null-request-id", SevWarning, "/id", "a request with id null cannot be told apart from an unknown-id error response")
		}
		return vs, f
	}
	// Response (or nothing at all).
	switch {
	case f.result != nil && f.err != nil:
		add("jsonrpc.result-and-error", SevError, "", "a response must carry either result or error, not both")
	case f.result == nil && f.err == nil:
		add("jsonrpc.no-method-or-result", SevError, "", "not a request, notification or response: no method, result or error")
		return vs, f
	}
	if f.id == nil {
		add("jsonrpc.missing-id", SevError, "/id", "a response must carry the id of its request (null when it was unknown)")
	} else if string(f.id) == "null" && f.err == nil {
		add("jsonrpc.null-result-id", SevError, "/id", "a successful response must carry its request's id, not null (only error responses may)")
	}
	if f.err != nil {
		vs = append(vs, validateErrorObject(f.err)...)
	}
	return vs, f
}

// validateErrorObject checks a JSON-RPC error object:
// {"code": integer, "message": string, "data"?: any}.
func validateErrorObject(raw []byte) []Violation {
	var vs []Violation
	if jsonType(raw) != "object" {
		return []Violation{{Code: "jsonrpc.bad-error", Severity: SevError, Pointer: "/error",
			Message: fmt.Sprintf("error must be an object {code, message, data?}, got %s", jsonType(raw))}}
	}
	var code, msg []byte
	forEachMember(raw, func(k, v []byte) bool {
		switch string(k) {
		case "code":
			code = v
		case "message":
			msg = v
		}
		return true
	})
	switch {
	case code == nil:
		vs = append(vs, Violation{Code: "jsonrpc.bad-error", Severity: SevError, Pointer: "/error/code", Message: "error object has no code"})
	case !isInteger(code):
		vs = append(vs, Violation{Code: "jsonrpc.bad-error", Severity: SevError, Pointer: "/error/code", Message: fmt.Sprintf("error code must be an integer, got %s", excerpt(code, 40))})
	}
	switch {
	case msg == nil:
		vs = append(vs, Violation{Code: "jsonrpc.bad-error", Severity: SevError, Pointer: "/error/message", Message: "error object has no message"})
	case jsonType(msg) != "string":
		vs = append(vs, Violation{Code: "jsonrpc.bad-error", Severity: SevError, Pointer: "/error/message", Message: fmt.Sprintf("error message must be a string, got %s", jsonType(msg))})
	}
	return vs
}

func orUnknown(s string) string {
	if s == "" {
		return "something that is not JSON"
	}
	return s
}

// jsonrpcProto is the generic JSON-RPC 2.0 protocol: envelope and pairing
// only, any method.
type jsonrpcProto struct{}

func (jsonrpcProto) Name() string                      { return "jsonrpc" }
func (jsonrpcProto) MaxFrame() int                     { return 0 }
func (jsonrpcProto) Classify(_ Dir, frame []byte) Info { return classifyRPC(frame) }
func (jsonrpcProto) classifiesRPC()                    {}
func (jsonrpcProto) Validate(_ Dir, frame []byte, _ Info) []Violation {
	vs, _ := validateEnvelope(frame, envelopeOpts{})
	return vs
}

func (jsonrpcProto) Wire() Wire {
	return Wire{Style: StyleJSONRPC, RequestID: "id", ResponseID: "id", Volatile: []string{
		"/params/processId", "/params/_meta", "/result/_meta"}}
}

func init() {
	// No sniff: the Detector falls back to jsonrpc when no specific
	// protocol claims a JSON-RPC 2.0 session.
	register(jsonrpcProto{}, 0, nil)
}

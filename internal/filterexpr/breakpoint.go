package filterexpr

import (
	"fmt"
	"strings"

	"github.com/rpctap/rpctap/cassette"
)

// ParseBreakpoint parses expr as a breakpoint: a filter the intercepting tap
// tests on each frame the moment it is read, before anything after it
// exists. Terms whose answer needs a later frame or a finished validation
// are refused with a message saying why: slow> (how long a request waited
// for its answer, which a later frame tells), v and violations (findings come from the
// validator, after the frame was forwarded), and kind: of a record that is
// not a frame (stderr, violation, header, meta, end: the tap holds frames
// only). err is accepted and means what the frame itself says: a JSON-RPC
// error, a failed result in the protocol's own way (an MCP isError), or a
// frame that is not valid JSON.
//
// An empty expression is refused too: it would hold every frame.
func ParseBreakpoint(expr string) (Filter, error) {
	if strings.TrimSpace(expr) == "" {
		return Filter{}, fmt.Errorf("an empty breakpoint would hold every frame; name what to hold (m:tools/call, dir:in, kind:response & m=initialize)")
	}
	for _, w := range strings.Fields(strings.ReplaceAll(expr, "&", " ")) {
		lw := strings.ToLower(strings.TrimLeft(w, "!"))
		switch {
		case strings.HasPrefix(lw, "slow>"):
			return Filter{}, fmt.Errorf("%s cannot be a breakpoint: it asks how long a request waited for its answer, which a later frame tells; break on the answer by its method instead (kind:response & m=METHOD)", w)
		case lw == "v" || lw == "violations" || lw == "kind:violation":
			return Filter{}, fmt.Errorf("%s cannot be a breakpoint: findings come from validation, which finishes after the frame was forwarded", w)
		case lw == "-aux" || lw == "aux" || lw == "kind:stderr" || lw == "kind:header" || lw == "kind:meta" || lw == "kind:end":
			return Filter{}, fmt.Errorf("%s cannot be a breakpoint: the tap holds frames only", w)
		}
	}
	return Parse(expr)
}

// Frame builds the record a breakpoint or rewrite rule is tested on, for a
// frame the tap has just read: its direction, its payload (one line without
// its ending, or a Content-Length body), and the protocol's classification.
// method, when the frame is a response that names none, is its request's
// method (the tap pairs them as the viewer does); pass it as MatchInfo.Method.
func Frame(d cassette.Dir, payload []byte, kind, method, id string) cassette.Record {
	r := cassette.NewLineRecord(cassette.KindFrame, d, payload, "\n")
	r.Kind, r.Method = kind, method
	if id != "" {
		r.ID = []byte(id)
	}
	return r
}

package replay

import (
	"github.com/rpctap/rpctap/protocol"
)

// dialect is what replay must know about a protocol's wire to stand in for
// one side: how frames are classified, where ids live, how a request is
// refused, and which fields differ from run to run. All of it is the
// protocol package's (protocol.Wire, declared in each protocol's own file);
// this adapter only maps its answers onto replay's Frame.
type dialect struct {
	name string // the protocol name as given ("acp", "mcp", "synaps", ...)
	w    protocol.Wire
	// ignore lists the default ignore patterns (see Ignore).
	ignore []string
}

// Frame kinds used by replay (the protocol package's names, plus "text" for
// a line that is not a JSON object).
const (
	kindRequest      = "request"
	kindResponse     = "response"
	kindNotification = "notification"
	kindEvent        = "event"
	kindHandshake    = "handshake"
	kindText         = "text"
)

func dialectFor(name string) dialect {
	w := protocol.WireOf(name)
	return dialect{name: name, w: w, ignore: w.Volatile}
}

// classify fills in kind, method and id of f, a frame travelling in
// direction fromParent, from the top-level members of its bytes (no full
// decoding: a 1 MiB frame costs one scan). For responses the method is left
// empty; the engine fills it in from the request the response answers.
func (d dialect) classify(f *Frame, fromParent bool) {
	c := d.w.Classify(f.Raw, f.json, fromParent)
	f.Kind, f.Method, f.ID = kindName(c.Kind), c.Method, c.ID
}

// kindName maps a protocol kind onto replay's (Invalid is "text").
func kindName(k protocol.Kind) string {
	if k == protocol.Invalid || k == "" {
		return kindText
	}
	return string(k)
}

// chatter reports whether f is a notification the protocol marks as chatter
// (protocol.Wire.Chatter): matched when it comes, never waited for, never
// missed.
func (d dialect) chatter(f *Frame) bool {
	k := protocol.Kind(f.Kind)
	return d.w.IsChatter(k, f.Method)
}

// idKeyed reports whether responses of this dialect are tied to requests by
// an id member (the engine maps live and recorded ids).
func (d dialect) idKeyed() bool { return d.w.Keyed() }

// responseID is the member of a response that names its request ("id";
// DAP's "request_seq"), "" when responses name none.
func (d dialect) responseID() string { return d.w.ResponseID }

// refusal returns the frame that answers req (a live request nobody recorded)
// in the protocol's own error form, or nil when the protocol has none (a
// notification, a response, a protocol without ids).
func (d dialect) refusal(req *Frame, msg string, known bool) []byte {
	k := protocol.Kind(req.Kind)
	if req.Kind == kindText {
		k = protocol.Invalid
	}
	return d.w.Refusal(protocol.WireFrame{Kind: k, Method: req.Method, ID: req.ID}, msg, known)
}

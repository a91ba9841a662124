package intercept

import (
	"encoding/json"
	"fmt"
)

// CancelFor builds the message that cancels request (one frame of
// protocol proto), as its protocol spells it:
//
//	acp  session/cancel with the request's params.sessionId (ACP cancels a
//	     session's prompt turn, not a request by id)
//	mcp  notifications/cancelled with requestId (and a reason)
//	lsp  $/cancelRequest with the request's id
//
// Other protocols have no cancel message rpctap can build (DAP's cancel
// is itself a request, numbered by seq).
func CancelFor(proto string, request []byte) ([]byte, error) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			SessionID json.RawMessage `json:"sessionId"`
		} `json:"params"`
	}
	if err := json.Unmarshal(request, &req); err != nil || req.Method == "" {
		return nil, fmt.Errorf("cancel: not a JSON-RPC request")
	}
	msg := map[string]any{"jsonrpc": "2.0"}
	switch proto {
	case "acp":
		if len(req.Params.SessionID) == 0 {
			return nil, fmt.Errorf("cancel: %s has no params.sessionId; ACP cancels a session's prompt (session/cancel)", req.Method)
		}
		msg["method"] = "session/cancel"
		msg["params"] = map[string]any{"sessionId": req.Params.SessionID}
	case "mcp":
		if len(req.ID) == 0 {
			return nil, fmt.Errorf("cancel: a notification cannot be cancelled")
		}
		msg["method"] = "notifications/cancelled"
		msg["params"] = map[string]any{"requestId": req.ID, "reason": "cancelled by rpctap"}
	case "lsp":
		if len(req.ID) == 0 {
			return nil, fmt.Errorf("cancel: a notification cannot be cancelled")
		}
		msg["method"] = "$/cancelRequest"
		msg["params"] = map[string]any{"id": req.ID}
	default:
		return nil, fmt.Errorf("cancel: rpctap builds no cancel message for %s sessions (acp, mcp, lsp)", orDash(proto))
	}
	return json.Marshal(msg)
}

// Cancel forwards held request n and right behind it, in the same
// direction, the protocol's message that cancels it (CancelFor): the
// receiver sees the request, then its cancellation, as when the sender
// gives up on it.
func (s *Session) Cancel(n int) error {
	var held *Held
	for _, h := range s.HeldFrames() {
		if h.N == n {
			held = &h
			break
		}
	}
	if held == nil {
		return fmt.Errorf("%w: %d", ErrNoHeld, n)
	}
	if held.Kind != "request" {
		return fmt.Errorf("cancel: held frame %d is a %s, not a request", n, orDash(held.Kind))
	}
	c, err := CancelFor(s.Protocol(), []byte(held.Frame))
	if err != nil {
		return err
	}
	return s.resolve(n, verdict{act: ActForward, after: c})
}

package viewer

import (
	"encoding/json"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
)

// Classifier fills in Kind, Method and ID of frame records that the recorder
// left unclassified (old cassettes, or a protocol it did not know then).
type Classifier struct {
	p protocol.Protocol
}

// NewClassifier uses the named protocol when it is registered, else a
// generic JSON-RPC / "type"-tagged guess.
func NewClassifier(protocolName string) *Classifier {
	c := &Classifier{}
	if protocolName != "" {
		if p, err := protocol.Lookup(protocolName); err == nil {
			c.p = p
		}
	}
	return c
}

// Fill classifies r in place when it is an unclassified frame.
func (c *Classifier) Fill(r *cassette.Record) {
	if c == nil || r.K != cassette.KindFrame || r.Kind != "" {
		return
	}
	if r.JSON == nil {
		r.Kind = string(protocol.Invalid)
		return
	}
	dir := protocol.DirOf(string(r.D))
	if c.p != nil {
		info := c.p.Classify(dir, r.JSON)
		r.Kind, r.Method = string(info.Kind), info.Method
		if info.ID != "" {
			r.ID = json.RawMessage(info.ID)
		}
		return
	}
	guess(r)
}

// guess classifies the common envelopes without knowing the protocol:
// JSON-RPC (method/id/result/error) and "type"-tagged frames with an
// optional id and command (synaps, opi, pi).
func guess(r *cassette.Record) {
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
		Type    string          `json:"type"`
		Command string          `json:"command"`
	}
	if json.Unmarshal(r.JSON, &env) != nil {
		r.Kind = string(protocol.Invalid)
		return
	}
	hasID := len(env.ID) > 0 && string(env.ID) != "null"
	if hasID {
		r.ID = env.ID
	}
	switch {
	case env.Method != "" && hasID:
		r.Kind, r.Method = string(protocol.Request), env.Method
	case env.Method != "":
		r.Kind, r.Method = string(protocol.Notification), env.Method
	case env.Type == "response":
		r.Kind, r.Method = string(protocol.Response), env.Command
	case env.Result != nil || env.Error != nil:
		r.Kind = string(protocol.Response)
	case env.Type != "" && r.D == cassette.DirIn:
		r.Kind, r.Method = string(protocol.Request), env.Type
	case env.Type != "":
		r.Kind, r.Method = string(protocol.Event), env.Type
	default:
		r.Kind = string(protocol.Invalid)
	}
}

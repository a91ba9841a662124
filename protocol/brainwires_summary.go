package protocol

import "encoding/json"

// What rpctap says about brainwires frames beyond their rules
// (brainwires.go): error messages, failed results.

// Catalogue: the ViewerMessage and AgentMessage types of brainwires.go's
// table.
func (brainwiresProto) Catalogue() []string {
	return catalogueOf(brainwiresCat().table.in, brainwiresCat().table.out)
}

func (brainwiresProto) Summarize(_ Dir, _ Info, frame []byte) string {
	if str(memberOf(frame, "type")) == "error" {
		return quoteWords(jsonText(memberOf(frame, "message")))
	}
	return ""
}

// Failed: an "error" message from the agent; a slash command or lock
// result with "success": false.
func (brainwiresProto) Failed(dir Dir, _ Info, frame []byte) bool {
	return (dir == FromChild && str(memberOf(frame, "type")) == "error") || string(memberOf(frame, "success")) == "false"
}

func (brainwiresProto) NewTranscriptFolder() TranscriptFolder { return brainwiresFolder{} }

// brainwiresFolder notes the agent's errors.
type brainwiresFolder struct{}

func (brainwiresFolder) Fold(tr *Transcript, r TranscriptFrame) {
	var f struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
	}
	if decodeLoose(r.JSON, &f) && f.Type == "error" {
		tr.Append(r, EntryNote, "", "error: "+clip(messageText(f.Message), 200), false)
	}
}

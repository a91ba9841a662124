package protocol

// rawProto judges nothing: every frame passes, JSON or not, with no pairing
// and no handshake. It is the detector's last resort and `--protocol raw`.
type rawProto struct{}

func (rawProto) Name() string                           { return "raw" }
func (rawProto) MaxFrame() int                          { return 0 }
func (rawProto) Classify(Dir, []byte) Info              { return Info{} }
func (rawProto) Validate(Dir, []byte, Info) []Violation { return nil }
func (rawProto) AcceptsNonJSON() bool                   { return true }

func init() { register(rawProto{}, -1, nil) }

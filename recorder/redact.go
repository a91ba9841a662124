package recorder

// redactor replaces secrets in a frame before it is written. The live
// session is never altered: only the copy in the cassette.
type redactor interface {
	redact(frame []byte) (out []byte, changed bool)
}

// newRedactor builds the redactor for opts. The redact package is being
// written in parallel; until it lands this returns nil (no redaction) and
// the cassette header does not claim redaction. TODO(redact): switch to the
// redact package's API here.
func newRedactor(opts RedactOptions) redactor { return nil }

// redact applies the recorder's redactor to a payload.
func (r *Recorder) redact(payload []byte) ([]byte, bool) {
	if r.redactor == nil || r.opts.Redact.Off {
		return payload, false
	}
	return r.redactor.redact(payload)
}

// Redacting reports whether the recorder replaces secrets (the cassette
// header's "redacted" field should say the same).
func Redacting(opts RedactOptions) bool { return !opts.Off && newRedactor(opts) != nil }
